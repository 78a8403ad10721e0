//! The SDK dialect: Claude-style settings, `{"hooks": {EVENT: [{"matcher", "timeout",
//! "hooks"}]}}`, or the bare `{EVENT: […]}` of SDK options.
//!
//! In a settings file, keys other than `hooks` are not hook configuration and are ignored,
//! except `disableAllHooks`, which hookbox does not implement and so warns about.

use serde_json::{Map, Value};

use super::SHAPES_HINT;
use super::detect::is_sandbox_group;
use super::path::JsonPath;
use super::report::{Report, quoted_list};
use super::rule::{self, Scope};
use super::suggest::did_you_mean;
use crate::agent_event::AgentEvent;
use crate::binding::Binding;
use crate::event::{Dialect, HookEvent};
use crate::handler::OnError;

/// The Claude Code event hookbox cannot pass through: its hook must answer the worktree's
/// path, which no policy decision gives.
const WORKTREE_CREATE: &str = "WorktreeCreate";

/// Whether `name` is exactly an event of Claude-style settings, or of another agent's hooks
/// that `hookbox hook` passes through (bindable or not).
pub(super) fn is_event_name(name: &str) -> bool {
    sdk_event(name).is_some() || name == WORKTREE_CREATE
}

/// The bindings of an SDK-dialect document.
pub(super) fn read(
    document: &Map<String, Value>,
    report: &mut Report,
    on_error: OnError,
) -> Vec<Binding> {
    let Some((events, path)) = events(document, report) else {
        return Vec::new();
    };
    let mut bindings = Vec::new();
    for (name, value) in events {
        let at = path.key(name);
        let Some(event) = sdk_event(name) else {
            report_unknown_event(report, &at, name, value);
            continue;
        };
        let scope = Scope {
            dialect: Dialect::Sdk,
            event,
            group: None,
            tools: &[],
            on_error,
        };
        bindings.extend(rule::read_list(report, value, &at, scope));
    }
    bindings
}

/// The SDK-dialect event called `name`: one of hookbox's, or an agent's passed through.
fn sdk_event(name: &str) -> Option<HookEvent> {
    HookEvent::from_name(name)
        .filter(|event| event.dialect() == Dialect::Sdk)
        .or_else(|| AgentEvent::find(name, Dialect::Sdk).map(HookEvent::Agent))
}

/// The names of hookbox's SDK-dialect events.
fn hookbox_event_names() -> impl Iterator<Item = &'static str> {
    HookEvent::ALL
        .into_iter()
        .filter(|event| event.dialect() == Dialect::Sdk)
        .map(HookEvent::name)
}

/// The names an SDK-dialect document may bind: hookbox's events, then the agents' own.
pub(super) fn event_names() -> impl Iterator<Item = &'static str> {
    hookbox_event_names().chain(AgentEvent::names())
}

/// The object mapping event names to matcher lists, and its path: `hooks` in a settings file,
/// the document itself when bare. `None` when the document declares no hooks.
fn events<'d>(
    document: &'d Map<String, Value>,
    report: &mut Report,
) -> Option<(&'d Map<String, Value>, JsonPath)> {
    let root = JsonPath::root();
    if let Some(hooks) = document.get("hooks") {
        if document.get("disableAllHooks") == Some(&Value::Bool(true)) {
            report.warning(
                &root.key("disableAllHooks"),
                "`disableAllHooks` is not implemented by hookbox: the hooks below still run",
                Some("remove the hooks you want disabled".to_owned()),
            );
        }
        let path = root.key("hooks");
        return report.object(hooks, &path).map(|events| (events, path));
    }
    let bare = document
        .iter()
        .any(|(key, value)| is_event_name(key) || value.is_array() || is_sandbox_group(value));
    if bare {
        return Some((document, root));
    }
    report.warning(
        &root,
        "no `hooks` key: this document declares no hooks",
        Some(SHAPES_HINT.to_owned()),
    );
    None
}

/// Reports the key `name` at `path`, which is not an SDK-dialect event.
fn report_unknown_event(report: &mut Report, path: &JsonPath, name: &str, value: &Value) {
    let closest = did_you_mean(name, event_names()).map(|event| format!("did you mean `{event}`?"));
    let (message, hint) = if name == WORKTREE_CREATE {
        (
            format!(
                "`{name}` is a Claude Code event hookbox cannot pass through (its hook must \
                 answer the worktree's path); these hooks never run"
            ),
            Some("keep WorktreeCreate hooks in Claude Code's own settings".to_owned()),
        )
    } else if HookEvent::from_name(name).is_some() {
        (
            format!(
                "`{name}` is a sandbox-dialect event (.agents/hooks.json); these hooks never \
                 run here"
            ),
            closest,
        )
    } else if is_sandbox_group(value) {
        (
            format!("unknown event `{name}`; these hooks never run"),
            Some(format!(
                "`{name}` looks like a group of the sandbox dialect (.agents/hooks.json); \
                 this document is read as Claude-style settings"
            )),
        )
    } else {
        let events: Vec<&str> = hookbox_event_names().collect();
        (
            format!("unknown event `{name}`; these hooks never run"),
            closest.or_else(|| {
                Some(format!(
                    "the events are {}, or an event of Claude Code, Gemini CLI, Codex, Cursor \
                     or Copilot that has none of these names (docs/agent-adapters.md, \
                     \"Events passed through\")",
                    quoted_list(&events)
                ))
            }),
        )
    };
    report.error(path, message, hint);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::diagnostic::{Diagnostic, Severity};

    fn read_value(document: Value) -> (Vec<Binding>, Vec<Diagnostic>) {
        let mut report = Report::new("settings.json");
        let bindings = read(document.as_object().unwrap(), &mut report, OnError::Allow);
        (bindings, report.into_diagnostics())
    }

    #[test]
    fn settings_keys_other_than_hooks_are_ignored() {
        let (bindings, diagnostics) = read_value(json!({
            "permissions": {"allow": ["Bash"]},
            "model": "x",
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]},
        }));
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        assert_eq!(bindings.len(), 1);
        assert_eq!(bindings[0].event, HookEvent::Stop);
        assert_eq!(bindings[0].origin.json_path, "$.hooks.Stop[0].hooks[0]");
        assert_eq!(bindings[0].origin.group, None);
    }

    #[test]
    fn unknown_events_explain_themselves() {
        let (bindings, diagnostics) = read_value(json!({"hooks": {
            "pretooluse": [], "WorktreeCreate": [], "pre_tool_execution": [], "Whatever": [],
            "post_tool_execution": [], "BeforeModle": []
        }}));
        assert!(bindings.is_empty());
        let found: Vec<_> = diagnostics
            .iter()
            .map(|d| {
                (
                    d.severity,
                    d.json_path.as_str(),
                    d.message.as_str(),
                    d.hint.as_deref(),
                )
            })
            .collect();
        assert_eq!(found[0].1, "$.hooks.pretooluse");
        assert_eq!(found[0].3, Some("did you mean `PreToolUse`?"));
        assert!(found[1].2.contains("cannot pass through"));
        assert!(found[2].2.contains("sandbox-dialect event"));
        assert_eq!(found[2].3, Some("did you mean `PreToolUse`?"));
        assert!(
            found[3]
                .3
                .unwrap()
                .starts_with("the events are `PreToolUse`")
        );
        assert_eq!(found[4].3, Some("did you mean `PostToolUse`?"));
        assert_eq!(found[5].3, Some("did you mean `BeforeModel`?"));
        assert!(found.iter().all(|d| d.0 == Severity::Error));
    }

    #[test]
    fn agents_own_events_bind_under_their_names() {
        let (bindings, diagnostics) = read_value(json!({"hooks": {
            "BeforeModel": [{"hooks": [{"type": "command", "command": "a"}]}],
            "PostCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "b"}]}],
            "errorOccurred": [{"hooks": [{"type": "command", "command": "c"}]}],
        }}));
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        let events: Vec<_> = bindings.iter().map(|b| b.event).collect();
        assert_eq!(
            events,
            ["BeforeModel", "PostCompact", "errorOccurred"]
                .map(|name| HookEvent::Agent(AgentEvent::find(name, Dialect::Sdk).unwrap()))
        );
        assert_eq!(bindings[1].matcher.as_deref(), Some("auto"));
    }

    #[test]
    fn a_document_without_hooks_says_so() {
        let (bindings, diagnostics) = read_value(json!({"permissions": {}}));
        assert!(bindings.is_empty());
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].severity, Severity::Warning);
        assert_eq!(diagnostics[0].json_path, "$");
    }

    #[test]
    fn matcher_timeout_is_the_default_and_handler_timeout_wins() {
        let (bindings, diagnostics) = read_value(json!({"PreToolUse": [{
            "matcher": "Bash", "timeout": 5,
            "hooks": [
                {"type": "command", "command": "a"},
                {"type": "command", "command": "b", "timeout": 7},
            ],
        }]}));
        assert!(diagnostics.is_empty(), "{diagnostics:#?}");
        let timeouts: Vec<_> = bindings
            .iter()
            .map(|b| b.handler.timeout().as_secs())
            .collect();
        assert_eq!(timeouts, [5, 7]);
        assert_eq!(bindings[0].matcher.as_deref(), Some("Bash"));
    }

    #[test]
    fn matcher_on_an_event_without_one_is_ignored() {
        let (bindings, diagnostics) = read_value(json!({"hooks": {"UserPromptSubmit": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}]},
            {"matcher": "*", "hooks": [{"type": "command", "command": "b"}]},
        ]}}));
        assert_eq!(bindings.len(), 2);
        assert!(bindings.iter().all(|b| b.matcher.is_none()));
        assert_eq!(bindings[0].handler.timeout().as_secs(), 60);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].severity, Severity::Warning);
        assert!(diagnostics[0].message.contains("ignored for this event"));
    }
}
