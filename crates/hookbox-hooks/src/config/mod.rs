//! Reading hook configuration files of both dialects into bindings and diagnostics.
//!
//! Nothing is silently dropped: every unknown key, wrong type, unknown event, missing field,
//! bad timeout or invalid matcher becomes a [`Diagnostic`] with its JSON path and a hint.
//!
//! * The **sandbox dialect** (`.agents/hooks.json`) is read by `sandbox`: named groups of
//!   `pre_tool_execution` / `post_tool_execution` rules; handler timeouts are whole seconds,
//!   30 by default.
//! * The **SDK dialect** (Claude-style `settings.json`, plugin `hooks/hooks.json`, or bare SDK
//!   options) is read by `sdk`: event → matcher groups → handlers; timeouts are seconds
//!   (fractions allowed), the handler's own winning over its matcher group's, 60 by default.
//!
//! Both share the rule (`rule`), handler (`handlers`), header, timeout and diagnostic
//! machinery. Duplicate keys, which JSON parsers resolve silently, are noticed while parsing
//! (`document`) and reported as warnings.

mod delivery;
mod detect;
mod document;
mod handlers;
mod headers;
mod mode;
mod path;
mod report;
mod rule;
mod sandbox;
mod sdk;
mod suggest;
mod timeout;

use hookbox_store::json_kind;
use serde_json::Value;

pub use self::suggest::did_you_mean;

use self::path::JsonPath;
use self::report::Report;
use crate::binding::Binding;
use crate::diagnostic::{Diagnostic, Severity};
use crate::event::Dialect;
use crate::handler::OnError;

/// The top-level key that sets the document's handlers' default `on_error`.
const ON_ERROR: &str = "on_error";

/// The hint given when a document is not a hook configuration at all.
const SHAPES_HINT: &str = "hookbox reads two shapes of hook configuration: sandbox hooks \
     (.agents/hooks.json), {\"my-group\": {\"pre_tool_execution\": [{\"matcher\": \
     \"code_execution\", \"hooks\": [{\"type\": \"command\", \"command\": \"…\"}]}]}}, and \
     Claude-style settings, {\"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": \
     [{\"type\": \"command\", \"command\": \"…\"}]}]}}";

/// A sandbox-dialect group as declared, enabled or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupInfo {
    /// The group's name (its key in the file).
    pub name: String,
    /// Whether it is enabled (`enabled` defaults to true).
    pub enabled: bool,
}

/// What one configuration document declares.
#[derive(Debug, Clone)]
pub struct ParsedConfig {
    /// The dialect it was read as.
    pub dialect: Dialect,
    /// Sandbox dialect: every group in file order; empty for the SDK dialect.
    pub groups: Vec<GroupInfo>,
    /// Bindings of the enabled parts, in file order.
    pub bindings: Vec<Binding>,
    /// Problems found; elements with errors are left out of `bindings` (or, for an invalid
    /// matcher, kept but never matching).
    pub diagnostics: Vec<Diagnostic>,
}

/// Parses one configuration document named `source` (a path or other label for messages).
///
/// The dialect is detected from the document's shape unless `dialect` forces it. A
/// sandbox-dialect matcher that matches none of `sandbox_tools` (the tools its hooks can fire
/// for, from the caller's tool registry) is warned about; with no tools given, none is. `Err`
/// means the document as a whole is unusable (not JSON, not an object, dialect not
/// recognisable).
pub fn parse(
    source: &str,
    text: &str,
    dialect: Option<Dialect>,
    sandbox_tools: &[String],
) -> Result<ParsedConfig, Diagnostic> {
    parse_failing(source, text, dialect, sandbox_tools, OnError::Allow)
}

/// [`parse`], with `on_error` what a failing handler means when neither it nor the document's
/// top-level `on_error` says (`hookbox hook --fail-closed`: deny).
pub fn parse_failing(
    source: &str,
    text: &str,
    dialect: Option<Dialect>,
    sandbox_tools: &[String],
    on_error: OnError,
) -> Result<ParsedConfig, Diagnostic> {
    let unusable = |message: String| Diagnostic {
        severity: Severity::Error,
        source: source.to_owned(),
        json_path: JsonPath::root().to_string(),
        message,
        hint: Some(SHAPES_HINT.to_owned()),
    };
    let document = document::read(text).map_err(|err| unusable(json_error_message(&err)))?;
    let Value::Object(map) = &document.value else {
        return Err(unusable(format!(
            "the top level must be an object, found {}",
            json_kind(&document.value)
        )));
    };
    let dialect = match dialect {
        Some(dialect) => dialect,
        None => detect::dialect(map).ok_or_else(|| {
            unusable("cannot tell which kind of hook configuration this is".to_owned())
        })?,
    };
    let mut report = Report::new(source);
    for (path, key) in &document.duplicates {
        report.warning(
            path,
            format!("duplicate key `{key}`: the later one wins"),
            Some("remove or rename one of them".to_owned()),
        );
    }
    // The document's own failure answer: its handlers' default.
    let mut map = map.clone();
    let on_error = match map.shift_remove(ON_ERROR) {
        Some(value) => handlers::read_default_on_error(&mut report, &value, on_error),
        None => on_error,
    };
    let (groups, bindings) = match dialect {
        Dialect::Sandbox => sandbox::read(&map, &mut report, sandbox_tools, on_error),
        Dialect::Sdk => (Vec::new(), sdk::read(&map, &mut report, on_error)),
    };
    Ok(ParsedConfig {
        dialect,
        groups,
        bindings,
        diagnostics: report.into_diagnostics(),
    })
}

/// "not valid JSON at line L, column C: what", from a `serde_json` error.
fn json_error_message(err: &serde_json::Error) -> String {
    let full = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    let what = full.strip_suffix(&position).unwrap_or(&full);
    format!(
        "not valid JSON at line {}, column {}: {what}",
        err.line(),
        err.column()
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::event::HookEvent;

    #[test]
    fn detects_and_reads_each_dialect() {
        let sandbox = parse(
            "hooks.json",
            r#"{"gate": {"pre_tool_execution": [{"matcher": "code_execution",
                "hooks": [{"type": "command", "command": "x", "timeout": 10}]}]}}"#,
            None,
            &[],
        )
        .unwrap();
        assert_eq!(sandbox.dialect, Dialect::Sandbox);
        assert!(sandbox.diagnostics.is_empty(), "{:#?}", sandbox.diagnostics);
        assert_eq!(sandbox.bindings[0].event, HookEvent::PreToolExecution);
        assert_eq!(sandbox.bindings[0].origin.source, "hooks.json");

        let sdk = parse(
            "settings.json",
            r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#,
            None,
            &[],
        )
        .unwrap();
        assert_eq!(sdk.dialect, Dialect::Sdk);
        assert!(sdk.groups.is_empty());
        assert_eq!(sdk.bindings.len(), 1);
    }

    #[test]
    fn unusable_documents() {
        for (text, phrase) in [
            (
                "{\n  \"a\": 1,\n}",
                "not valid JSON at line 3, column 1: trailing comma",
            ),
            ("", "not valid JSON at line 1, column 0"),
            ("[]", "the top level must be an object, found an array"),
            (r#"{"permissions": {}}"#, "cannot tell"),
        ] {
            let err = parse("x.json", text, None, &[]).unwrap_err();
            assert_eq!(err.json_path, "$");
            assert_eq!(err.severity, Severity::Error);
            assert!(err.message.contains(phrase), "{}", err.message);
            assert!(err.hint.as_deref().unwrap().contains("PreToolUse"));
        }
    }

    #[test]
    fn forcing_a_dialect_reports_mismatches_as_element_errors() {
        let text =
            r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}}"#;
        let parsed = parse("settings.json", text, Some(Dialect::Sandbox), &[]).unwrap();
        assert_eq!(parsed.dialect, Dialect::Sandbox);
        assert!(parsed.bindings.is_empty());
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].json_path, "$.hooks.PreToolUse");

        let text = r#"{"gate": {"pre_tool_execution": []}}"#;
        let parsed = parse("hooks.json", text, Some(Dialect::Sdk), &[]).unwrap();
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].json_path, "$.gate");
        assert!(
            parsed.diagnostics[0]
                .hint
                .as_deref()
                .unwrap()
                .contains("sandbox dialect")
        );
    }

    /// A document's top-level `on_error` is its handlers' default, in both dialects; a
    /// handler's own wins; the caller's default (`--fail-closed`) applies when neither says.
    /// Each row: the top-level value (if any), the caller's default, the handler's own (if
    /// any), and the handler's resulting `on_error`.
    #[test]
    fn a_top_level_on_error_is_the_default_of_the_documents_handlers() {
        use crate::handler::{Handler, OnError};
        let (allow, deny) = (OnError::Allow, OnError::Deny);
        let cases = [
            (None, allow, None, allow),
            (None, deny, None, deny),
            (Some("deny"), allow, None, deny),
            (Some("allow"), deny, None, allow),
            (Some("deny"), allow, Some("allow"), allow),
            (None, deny, Some("allow"), allow),
            (Some("allow"), allow, Some("deny"), deny),
        ];
        for (top, default, own, expected) in cases {
            let mut handler = json!({"type": "command", "command": "x"});
            if let Some(own) = own {
                handler["on_error"] = json!(own);
            }
            let sandbox = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [handler.clone()]}]}});
            let sdk = json!({"hooks": {"PreToolUse": [{"hooks": [handler]}]}});
            for mut document in [sandbox, sdk] {
                if let Some(top) = top {
                    document["on_error"] = json!(top);
                }
                let parsed =
                    parse_failing("p.json", &document.to_string(), None, &[], default).unwrap();
                assert!(parsed.diagnostics.is_empty(), "{:#?}", parsed.diagnostics);
                let Handler::Command(command) = &parsed.bindings[0].handler else {
                    panic!("not a command");
                };
                assert_eq!(command.on_error, expected, "{document} with {default:?}");
            }
        }
        let parsed = parse(
            "p.json",
            r#"{"on_error": "DENY", "g": {"enabled": true}}"#,
            None,
            &[],
        )
        .unwrap();
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].json_path, "$.on_error");
        assert_eq!(parsed.diagnostics[0].severity, Severity::Error);
    }

    #[test]
    fn duplicate_groups_warn() {
        let text = r#"{"g": {"enabled": true}, "g": {"enabled": false}}"#;
        let parsed = parse("hooks.json", text, None, &[]).unwrap();
        assert_eq!(
            parsed.groups,
            [GroupInfo {
                name: "g".into(),
                enabled: false
            }]
        );
        assert_eq!(parsed.diagnostics.len(), 1);
        assert_eq!(parsed.diagnostics[0].severity, Severity::Warning);
        assert_eq!(parsed.diagnostics[0].json_path, "$.g");
        assert!(parsed.diagnostics[0].message.contains("later one wins"));
    }
}
