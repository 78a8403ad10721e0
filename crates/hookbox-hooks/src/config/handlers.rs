//! One handler object (`{"type": "command", …}` or `{"type": "http", …}`), in either dialect.
//!
//! A handler that cannot run as written (no or unknown `type`, no `command`, a bad `url`, a bad
//! `timeout`) is reported and left out. Unknown keys and a bad `on_error` are reported and
//! ignored. In the SDK dialect, Claude Code handler fields hookbox does not implement are
//! warnings that say what ignoring them means, and the Claude handler types hookbox cannot run
//! are errors, so nothing that would silently never fire goes unmentioned.
//!
//! (Over 600 lines with its unit tests, on purpose: about 480 lines of checks, one per handler
//! field in both dialects, read best side by side with the tests that pin their messages.)

use std::time::Duration;

use serde_json::{Map, Value};

use super::path::JsonPath;
use super::report::{Report, quoted_list};
use super::suggest::did_you_mean;
use super::{delivery, headers, timeout};
use crate::event::{Dialect, HookEvent};
use crate::handler::{CommandHandler, Handler, HttpHandler, OnError};

/// Claude Code handler types that hookbox cannot run.
const UNSUPPORTED_TYPES: [&str; 3] = ["prompt", "agent", "mcp_tool"];

/// What the surrounding document says about the handlers it holds.
#[derive(Debug, Clone, Copy)]
pub(super) struct Context {
    /// The dialect being read.
    pub(super) dialect: Dialect,
    /// The event the handler is bound to.
    pub(super) event: HookEvent,
    /// The timeout when the handler sets none.
    pub(super) default_timeout: Duration,
    /// What a failure means when the handler does not say.
    pub(super) default_on_error: OnError,
}

/// The handler at `path`, or `None` (with errors reported) when it cannot run as written.
pub(super) fn read(
    report: &mut Report,
    value: &Value,
    path: &JsonPath,
    context: Context,
) -> Option<Handler> {
    let handler = report.object(value, path)?;
    let kind = read_kind(report, handler, path, context.dialect)?;
    vet_keys(report, handler, path, kind, context.dialect);
    let timeout = match handler.get("timeout") {
        Some(value) => timeout::read(report, value, &path.key("timeout"), context.dialect),
        None => Some(context.default_timeout),
    };
    let on_error = read_on_error(report, handler, path, context);
    match kind {
        Kind::Command => {
            let command = read_command(report, handler, path);
            Some(Handler::Command(CommandHandler {
                command: command?,
                timeout: timeout?,
                on_error,
            }))
        }
        Kind::Http => {
            let url = read_url(report, handler, path);
            let headers = handler
                .get("headers")
                .map(|value| headers::read(report, value, &path.key("headers")))
                .unwrap_or_default();
            let (delivery, signing_credential) =
                delivery::read(report, handler, path, context.event);
            Some(Handler::Http(HttpHandler {
                url: url?,
                headers,
                timeout: timeout?,
                on_error,
                delivery,
                signing_credential,
            }))
        }
    }
}

/// The two handler types both dialects share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `"type": "command"`.
    Command,
    /// `"type": "http"`.
    Http,
}

impl Kind {
    /// The `type` value.
    fn name(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Http => "http",
        }
    }

    /// The other kind.
    fn other(self) -> Self {
        match self {
            Self::Command => Self::Http,
            Self::Http => Self::Command,
        }
    }

    /// The keys hookbox reads on handlers of this kind.
    fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Command => &["type", "command", "timeout", "on_error"],
            Self::Http => &[
                "type",
                "url",
                "headers",
                "timeout",
                "on_error",
                "delivery",
                "signing_credential",
            ],
        }
    }

    /// Claude Code fields of this kind that hookbox accepts but does not implement:
    /// `(key, what ignoring it means, what to do)`.
    fn ignored_claude_fields(self) -> &'static [(&'static str, &'static str, &'static str)] {
        match self {
            Self::Command => &[
                IF,
                STATUS_MESSAGE,
                ONCE,
                (
                    "async",
                    "the hook runs synchronously and its decision counts",
                    "remove `async`, or make the hook fast",
                ),
                (
                    "asyncRewake",
                    "the hook runs synchronously",
                    "remove `asyncRewake`",
                ),
                (
                    "shell",
                    "the command runs with /bin/sh -c",
                    "write the command for POSIX sh, or call the interpreter explicitly",
                ),
                (
                    "args",
                    "the hook runs via sh -c with `command` alone, without these arguments",
                    "put the whole command line, arguments included, in `command`",
                ),
            ],
            Self::Http => &[
                IF,
                STATUS_MESSAGE,
                ONCE,
                (
                    "allowedEnvVars",
                    "environment variables in header values are not expanded",
                    "inject secrets with the environment's `network.allowlist[].transform`",
                ),
            ],
        }
    }
}

/// Claude's `if` handler field.
const IF: (&str, &str, &str) = (
    "if",
    "the hook runs for every match of the matcher",
    "narrow the `matcher`, or check the tool input inside the hook",
);
/// Claude's `statusMessage` handler field.
const STATUS_MESSAGE: (&str, &str, &str) = (
    "statusMessage",
    "no status message is shown",
    "remove `statusMessage`",
);
/// Claude's `once` handler field.
const ONCE: (&str, &str, &str) = (
    "once",
    "the hook runs every time it matches",
    "remove `once`",
);

/// The handler's `type`, or `None` with an error.
fn read_kind(
    report: &mut Report,
    handler: &Map<String, Value>,
    path: &JsonPath,
    dialect: Dialect,
) -> Option<Kind> {
    let Some(value) = handler.get("type") else {
        let hint = if handler.contains_key("command") {
            r#"add "type": "command""#
        } else if handler.contains_key("url") {
            r#"add "type": "http""#
        } else {
            "`type` is `command` or `http`"
        };
        report.error(
            path,
            "handler has no `type`; it is left out",
            Some(hint.to_owned()),
        );
        return None;
    };
    let at = path.key("type");
    match report.string(value, &at)? {
        "command" => Some(Kind::Command),
        "http" => Some(Kind::Http),
        name if dialect == Dialect::Sdk && UNSUPPORTED_TYPES.contains(&name) => {
            report.error(
                &at,
                format!("`{name}` hooks are not supported by hookbox; the handler is left out"),
                Some("it would never run: rewrite it as a `command` or `http` hook".to_owned()),
            );
            None
        }
        name => {
            let hint = match did_you_mean(name, ["command", "http"]) {
                Some(kind) => format!("did you mean `{kind}`?"),
                None => "`type` is `command` or `http`".to_owned(),
            };
            report.error(
                &at,
                format!("unknown handler type `{name}`; the handler is left out"),
                Some(hint),
            );
            None
        }
    }
}

/// Reports every key of a `kind` handler that hookbox does not read.
fn vet_keys(
    report: &mut Report,
    handler: &Map<String, Value>,
    path: &JsonPath,
    kind: Kind,
    dialect: Dialect,
) {
    for (key, value) in handler {
        let claude_on_failure = key == ON_FAILURE && dialect == Dialect::Sdk;
        if kind.fields().contains(&key.as_str()) || claude_on_failure {
            continue;
        }
        let at = path.key(key);
        let ignored = kind
            .ignored_claude_fields()
            .iter()
            .find(|(field, _, _)| field == key)
            .filter(|_| dialect == Dialect::Sdk);
        if let Some((_, meaning, hint)) = ignored {
            if !matches!(value, Value::Null | Value::Bool(false)) {
                report.warning(
                    &at,
                    format!("`{key}` is not implemented by hookbox and is ignored: {meaning}"),
                    Some((*hint).to_owned()),
                );
            }
        } else if kind.other().fields().contains(&key.as_str()) {
            report.error(
                &at,
                format!(
                    "`{key}` is not a field of {} handlers; it is ignored",
                    kind.name()
                ),
                Some(format!(
                    "`{key}` belongs to `{}` handlers; {} handlers take {}",
                    kind.other().name(),
                    kind.name(),
                    quoted_list(kind.fields()),
                )),
            );
        } else {
            report.unknown_key(&at, key, kind.fields());
        }
    }
}

/// Claude Code's handler field for the failure policy (`"continue"` or `"block"`).
const ON_FAILURE: &str = "onFailure";

/// The handler's `on_error` (default `allow`), or in the SDK dialect Claude's `onFailure`
/// (`"block"` is `on_error: "deny"`), warning when the event cannot block anyway.
fn read_on_error(
    report: &mut Report,
    handler: &Map<String, Value>,
    path: &JsonPath,
    context: Context,
) -> OnError {
    let event = context.event;
    if let (Some(value), Dialect::Sdk) = (handler.get(ON_FAILURE), context.dialect) {
        let at = path.key(ON_FAILURE);
        let on_error = match report.string(value, &at) {
            Some("continue") => Some(OnError::Allow),
            Some("block") => Some(OnError::Deny),
            Some(other) => {
                report.error(
                    &at,
                    format!("unknown `onFailure` value `{other}`; `continue` is used"),
                    Some(
                        "`onFailure` is `continue` (fail open, the default) or `block` (fail \
                         closed: a crash, timeout or unreadable reply blocks)"
                            .to_owned(),
                    ),
                );
                None
            }
            None => None,
        };
        if handler.contains_key("on_error") {
            report.error(
                &path.key("on_error"),
                "both `on_error` and `onFailure` are set; `onFailure` is used",
                Some("keep one of them".to_owned()),
            );
        }
        warn_if_cannot_block(report, &at, on_error.is_some(), event);
        return on_error.unwrap_or(context.default_on_error);
    }
    let Some(value) = handler.get("on_error") else {
        return context.default_on_error;
    };
    let at = path.key("on_error");
    let on_error = match report.string(value, &at) {
        Some("allow") => Some(OnError::Allow),
        Some("deny") => Some(OnError::Deny),
        Some(other) => {
            report.error(
                &at,
                format!("unknown `on_error` value `{other}`; `allow` is used"),
                Some(
                    "`on_error` is `allow` (fail open, the default) or `deny` (fail closed: a \
                     crash, timeout or unreadable reply blocks)"
                        .to_owned(),
                ),
            );
            None
        }
        None => None,
    };
    warn_if_cannot_block(report, &at, on_error.is_some(), event);
    on_error.unwrap_or(context.default_on_error)
}

/// A document's top-level `on_error` (`value`, at `$.on_error`): its handlers' default,
/// `default` when it is not `allow` or `deny` (reported).
pub(super) fn read_default_on_error(
    report: &mut Report,
    value: &Value,
    default: OnError,
) -> OnError {
    let at = JsonPath::root().key("on_error");
    match report.string(value, &at) {
        Some("allow") => OnError::Allow,
        Some("deny") => OnError::Deny,
        Some(other) => {
            report.error(
                &at,
                format!("unknown top-level `on_error` value `{other}`"),
                Some(
                    "`on_error` here is every handler's default: `allow` (fail open) or `deny` \
                     (fail closed: a hook that cannot start, crashes, times out or answers \
                     nonsense blocks)"
                        .to_owned(),
                ),
            );
            default
        }
        None => default,
    }
}

/// Warns that the failure policy at `path` (when `set`) has no effect on `event`.
fn warn_if_cannot_block(report: &mut Report, path: &JsonPath, set: bool, event: HookEvent) {
    if set && !event.can_block() {
        let key = path.to_string();
        let key = key.rsplit('.').next().unwrap_or("on_error").to_owned();
        report.warning(
            path,
            format!("`{key}` has no effect here: {event} hooks cannot block"),
            Some(format!("remove `{key}`")),
        );
    }
}

/// A command handler's `command`, or `None` with an error.
fn read_command(
    report: &mut Report,
    handler: &Map<String, Value>,
    path: &JsonPath,
) -> Option<String> {
    let Some(value) = handler.get("command") else {
        report.error(
            path,
            "command handler has no `command`; it is left out",
            Some(
                "add the shell command line to run, e.g. \"command\": \
                 \"python3 /.agents/hooks-scripts/gate.py\""
                    .to_owned(),
            ),
        );
        return None;
    };
    let at = path.key("command");
    let command = report.string(value, &at)?;
    if command.trim().is_empty() {
        report.error(
            &at,
            "`command` is empty; the handler is left out",
            Some("give the shell command line to run".to_owned()),
        );
        return None;
    }
    Some(command.to_owned())
}

/// An http handler's `url`, or `None` with an error.
fn read_url(report: &mut Report, handler: &Map<String, Value>, path: &JsonPath) -> Option<String> {
    let hint = || {
        Some("http hooks POST the event to a URL such as https://hooks.example.com/gate".to_owned())
    };
    let Some(value) = handler.get("url") else {
        report.error(path, "http handler has no `url`; it is left out", hint());
        return None;
    };
    let at = path.key("url");
    let url = report.string(value, &at)?;
    if !is_http_url(url) {
        report.error(
            &at,
            format!("`{url}` is not an http:// or https:// URL; the handler is left out"),
            hint(),
        );
        return None;
    }
    if !url.to_ascii_lowercase().starts_with("https://") {
        report.error(
            &at,
            format!(
                "`{url}` is a plain http:// URL: hookbox sends hook events over HTTPS only, so \
                 this hook fails at run time (open, unless it fails closed)"
            ),
            Some(format!(
                "use https://{}",
                url.get("http://".len()..).unwrap_or_default()
            )),
        );
    }
    Some(url.to_owned())
}

/// Whether `url` is `http://` or `https://` followed by something, without whitespace.
fn is_http_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"));
    rest.is_some_and(|rest| !rest.is_empty() && !rest.starts_with('/'))
        && !url.chars().any(char::is_whitespace)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::config::delivery::DURABLE_EVENTS;
    use crate::diagnostic::{Diagnostic, Severity};
    use crate::handler::Delivery;

    fn context(dialect: Dialect, event: HookEvent) -> Context {
        Context {
            dialect,
            event,
            default_timeout: Duration::from_secs(30),
            default_on_error: OnError::Allow,
        }
    }

    fn read_one(value: Value, context: Context) -> (Option<Handler>, Vec<Diagnostic>) {
        let mut report = Report::new("test");
        let handler = read(&mut report, &value, &JsonPath::root(), context);
        (handler, report.into_diagnostics())
    }

    #[test]
    fn command_handler_with_defaults() {
        let (handler, diagnostics) = read_one(
            json!({"type": "command", "command": "true"}),
            context(Dialect::Sandbox, HookEvent::PreToolExecution),
        );
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        let Some(Handler::Command(command)) = handler else {
            panic!("{handler:?}");
        };
        assert_eq!(command.command, "true");
        assert_eq!(command.timeout, Duration::from_secs(30));
        assert_eq!(command.on_error, OnError::Allow);
    }

    #[test]
    fn http_handler_in_full() {
        let (handler, diagnostics) = read_one(
            json!({"type": "http", "url": "https://x.example/h", "headers": {"X-A": "1"},
                   "timeout": 0.5, "on_error": "deny"}),
            context(Dialect::Sdk, HookEvent::PreToolUse),
        );
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        let Some(Handler::Http(http)) = handler else {
            panic!("{handler:?}");
        };
        assert_eq!(http.headers, [("X-A".to_owned(), "1".to_owned())]);
        assert_eq!(http.timeout, Duration::from_millis(500));
        assert_eq!(http.on_error, OnError::Deny);
    }

    #[test]
    fn claude_fields_warn_in_sdk_and_fail_in_sandbox() {
        let value = json!({"type": "command", "command": "x", "if": "Bash(git *)", "async": true});
        let (handler, diagnostics) =
            read_one(value.clone(), context(Dialect::Sdk, HookEvent::PreToolUse));
        assert!(handler.is_some());
        assert_eq!(diagnostics.len(), 2);
        assert!(diagnostics.iter().all(|d| d.severity == Severity::Warning));
        assert!(diagnostics[0].message.contains("runs for every match"));
        assert!(diagnostics[1].message.contains("synchronously"));
        let (handler, diagnostics) = read_one(
            value,
            context(Dialect::Sandbox, HookEvent::PreToolExecution),
        );
        assert!(handler.is_some());
        assert!(diagnostics.iter().all(|d| d.severity == Severity::Error));
        assert_eq!(diagnostics.len(), 2);
    }

    #[test]
    fn unrunnable_handlers_are_left_out() {
        let sdk = context(Dialect::Sdk, HookEvent::Stop);
        for (value, path, phrase) in [
            (json!({"command": "x"}), "$", r#"add "type": "command""#),
            (
                json!({"type": "prompt", "prompt": "?"}),
                "$.type",
                "not supported by hookbox",
            ),
            (
                json!({"type": "comand"}),
                "$.type",
                "did you mean `command`?",
            ),
            (
                json!({"type": "command", "command": " "}),
                "$.command",
                "is empty",
            ),
            (
                json!({"type": "http", "url": "ftp://x"}),
                "$.url",
                "not an http",
            ),
            (
                json!({"type": "http", "url": "https://"}),
                "$.url",
                "not an http",
            ),
            (json!({"type": "http"}), "$", "has no `url`"),
            (
                json!({"type": "command", "command": "x", "timeout": -1}),
                "$.timeout",
                "positive",
            ),
        ] {
            let (handler, diagnostics) = read_one(value.clone(), sdk);
            assert!(handler.is_none(), "{value}");
            let found = diagnostics.iter().any(|d| {
                d.severity == Severity::Error
                    && d.json_path == path
                    && (d.message.contains(phrase)
                        || d.hint.as_deref().is_some_and(|h| h.contains(phrase)))
            });
            assert!(found, "{value}: {diagnostics:#?}");
        }
    }

    #[test]
    fn misplaced_fields_name_their_owner() {
        let (_, diagnostics) = read_one(
            json!({"type": "command", "command": "x", "url": "https://x"}),
            context(Dialect::Sandbox, HookEvent::PreToolExecution),
        );
        assert_eq!(diagnostics.len(), 1);
        assert!(
            diagnostics[0]
                .hint
                .as_deref()
                .unwrap_or_default()
                .contains("belongs to `http`")
        );
    }

    #[test]
    fn at_least_once_is_read_on_post_events_only() {
        let http =
            json!({"type": "http", "url": "https://x.example/a", "delivery": "at_least_once"});
        for event in DURABLE_EVENTS {
            let (handler, diagnostics) = read_one(http.clone(), context(event.dialect(), event));
            assert!(diagnostics.is_empty(), "{event}: {diagnostics:#?}");
            let Some(Handler::Http(read)) = handler else {
                panic!("{handler:?}");
            };
            assert_eq!(read.delivery, Delivery::AtLeastOnce, "{event}");
        }
        for event in [
            HookEvent::PreToolExecution,
            HookEvent::PreToolUse,
            HookEvent::UserPromptSubmit,
        ] {
            let (handler, diagnostics) = read_one(http.clone(), context(event.dialect(), event));
            let Some(Handler::Http(read)) = handler else {
                panic!("{handler:?}");
            };
            assert_eq!(read.delivery, Delivery::FireAndForget, "{event}");
            assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
            let diagnostic = &diagnostics[0];
            assert_eq!(diagnostic.severity, Severity::Error);
            assert_eq!(diagnostic.json_path, "$.delivery");
            assert!(diagnostic.message.contains(event.name()), "{diagnostic:?}");
            let hint = diagnostic.hint.as_deref().unwrap_or_default();
            assert!(
                hint.contains("`post_tool_execution`") && hint.contains("`SessionEnd`"),
                "{hint}"
            );
        }
    }

    #[test]
    fn a_signing_credential_signs_durable_deliveries_only() {
        let post = context(Dialect::Sdk, HookEvent::PostToolUse);
        let handler = |extra: Value| {
            let mut handler = json!({"type": "http", "url": "https://x.example/a"});
            handler
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            let (read, diagnostics) = read_one(handler, post);
            let Some(Handler::Http(read)) = read else {
                panic!("{read:?}");
            };
            (read.signing_credential, diagnostics)
        };
        let (signing, diagnostics) =
            handler(json!({"delivery": "at_least_once", "signing_credential": "audit-key"}));
        assert_eq!(signing.as_deref(), Some("audit-key"));
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        let (signing, diagnostics) = handler(json!({"signing_credential": "audit-key"}));
        assert_eq!(signing, None);
        assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
        assert_eq!(diagnostics[0].severity, Severity::Warning);
        assert_eq!(diagnostics[0].json_path, "$.signing_credential");
        let (signing, diagnostics) =
            handler(json!({"delivery": "at_least_once", "signing_credential": ""}));
        assert_eq!(signing, None);
        assert_eq!(diagnostics[0].severity, Severity::Error, "{diagnostics:#?}");
        let (signing, diagnostics) =
            handler(json!({"delivery": "at_least_once", "signing_credential": 7}));
        assert_eq!(signing, None);
        assert_eq!(diagnostics[0].severity, Severity::Error, "{diagnostics:#?}");
    }

    #[test]
    fn bad_delivery_values_and_places_are_errors() {
        let post = context(Dialect::Sandbox, HookEvent::PostToolExecution);
        let (handler, diagnostics) = read_one(
            json!({"type": "http", "url": "https://x.example/a", "delivery": "exactly_once"}),
            post,
        );
        assert!(matches!(
            handler,
            Some(Handler::Http(HttpHandler {
                delivery: Delivery::FireAndForget,
                ..
            }))
        ));
        assert_eq!(diagnostics.len(), 1);
        assert!(
            diagnostics[0]
                .message
                .contains("unknown `delivery` value `exactly_once`")
        );
        let (_, diagnostics) = read_one(
            json!({"type": "command", "command": "x", "delivery": "at_least_once"}),
            post,
        );
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].severity, Severity::Error);
        assert!(
            diagnostics[0]
                .hint
                .as_deref()
                .unwrap_or_default()
                .contains("belongs to `http`")
        );
    }

    #[test]
    fn on_error_on_a_post_hook_warns() {
        let (handler, diagnostics) = read_one(
            json!({"type": "command", "command": "x", "on_error": "deny"}),
            context(Dialect::Sandbox, HookEvent::PostToolExecution),
        );
        assert!(handler.is_some());
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].severity, Severity::Warning);
        assert!(diagnostics[0].message.contains("cannot block"));
    }
}
