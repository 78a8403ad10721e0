//! The sandbox dialect, `.agents/hooks.json`: named groups in file order, each with `enabled`
//! and the `pre_tool_execution` / `post_tool_execution` rule lists, and (for `hookbox hook`)
//! rule lists under an agent's own event name that hookbox has no counterpart for
//! (`"BeforeModel": […]`), run and decided by this dialect's rules.
//!
//! Every group is listed, enabled or not, and every group is checked; only enabled groups
//! produce bindings.

use serde_json::{Map, Value};

use super::GroupInfo;
use super::mode;
use super::path::JsonPath;
use super::report::Report;
use super::rule::{self, Scope};
use super::sdk;
use super::suggest::did_you_mean;
use crate::agent_event::AgentEvent;
use crate::binding::Binding;
use crate::event::{Dialect, HookEvent};
use crate::handler::OnError;

/// The keys of a group.
pub(super) const GROUP_KEYS: [&str; 4] = [
    "enabled",
    "pre_tool_execution",
    "post_tool_execution",
    "mode",
];

/// Every key a group may hold: [`GROUP_KEYS`], then the agents' own events.
pub(super) fn group_key_names() -> impl Iterator<Item = &'static str> {
    GROUP_KEYS.into_iter().chain(AgentEvent::names())
}

/// The groups and the enabled groups' bindings of a sandbox-dialect document whose matchers
/// can match `tools`.
pub(super) fn read(
    document: &Map<String, Value>,
    report: &mut Report,
    tools: &[String],
    on_error: OnError,
) -> (Vec<GroupInfo>, Vec<Binding>) {
    let mut groups = Vec::new();
    let mut bindings = Vec::new();
    for (name, value) in document {
        let path = JsonPath::root().key(name);
        let Some(group) = report.object(value, &path) else {
            continue;
        };
        let (enabled, group_bindings) = read_group(report, name, group, &path, tools, on_error);
        groups.push(GroupInfo {
            name: name.clone(),
            enabled,
        });
        if enabled {
            bindings.extend(group_bindings);
        }
    }
    (groups, bindings)
}

/// Whether the group `name` at `path` is enabled, and its bindings in file order.
fn read_group(
    report: &mut Report,
    name: &str,
    group: &Map<String, Value>,
    path: &JsonPath,
    tools: &[String],
    on_error: OnError,
) -> (bool, Vec<Binding>) {
    let mut enabled = true;
    let mut shadow = false;
    let mut bindings = Vec::new();
    for (key, value) in group {
        let at = path.key(key);
        let event = match key.as_str() {
            "enabled" => {
                enabled = report.boolean(value, &at).unwrap_or(enabled);
                continue;
            }
            "mode" => {
                shadow = mode::is_shadow(report, value, &at);
                continue;
            }
            "pre_tool_execution" => HookEvent::PreToolExecution,
            "post_tool_execution" => HookEvent::PostToolExecution,
            other if let Some(event) = AgentEvent::find(other, Dialect::Sandbox) => {
                HookEvent::Agent(event)
            }
            other if sdk::is_event_name(other) => {
                report_sdk_event(report, &at, other);
                continue;
            }
            other => {
                let known: Vec<&str> = group_key_names().collect();
                report.unknown_key(&at, other, &known);
                continue;
            }
        };
        let scope = Scope {
            dialect: Dialect::Sandbox,
            event,
            group: Some(name),
            tools,
            on_error,
        };
        bindings.extend(rule::read_list(report, value, &at, scope));
    }
    for binding in &mut bindings {
        binding.shadow = shadow;
    }
    (enabled, bindings)
}

/// Reports a Claude-style event name used as a group key.
fn report_sdk_event(report: &mut Report, path: &JsonPath, name: &str) {
    let mut hint = format!(
        "`{name}` is an event of Claude-style settings; this file is in the sandbox dialect \
         (.agents/hooks.json), whose events are `pre_tool_execution`, `post_tool_execution` \
         and the agents' own events without a hookbox counterpart"
    );
    if let Some(event) = did_you_mean(name, GROUP_KEYS[1..3].iter().copied()) {
        hint.push_str(&format!(": did you mean `{event}`?"));
    }
    report.error(
        path,
        format!("unknown key `{name}`; it is ignored"),
        Some(hint),
    );
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::diagnostic::Severity;

    #[test]
    fn disabled_groups_are_listed_and_checked_but_not_bound() {
        let document = json!({
            "off": {"enabled": false, "pre_tool_execution": [{"hooks": [{"type": "command"}]}]},
            "on": {"post_tool_execution": [{"hooks": [{"type": "command", "command": "x"}]}]},
        });
        let mut report = Report::new("hooks.json");
        let (groups, bindings) = read(
            document.as_object().unwrap(),
            &mut report,
            &[],
            OnError::Allow,
        );
        assert_eq!(
            groups,
            [
                GroupInfo {
                    name: "off".into(),
                    enabled: false
                },
                GroupInfo {
                    name: "on".into(),
                    enabled: true
                },
            ]
        );
        assert_eq!(bindings.len(), 1);
        assert_eq!(bindings[0].origin.group.as_deref(), Some("on"));
        let diagnostics = report.into_diagnostics();
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(
            diagnostics[0].json_path,
            "$.off.pre_tool_execution[0].hooks[0]"
        );
    }

    #[test]
    fn agents_own_events_are_group_keys() {
        let document = json!({"gate": {
            "BeforeModel": [{"hooks": [{"type": "command", "command": "x"}]}],
            "beforeTabFileRead": [{"hooks": [{"type": "command", "command": "y"}]}],
            "BeforeModle": [],
        }});
        let mut report = Report::new("hooks.json");
        let (_, bindings) = read(
            document.as_object().unwrap(),
            &mut report,
            &[],
            OnError::Allow,
        );
        let events: Vec<_> = bindings.iter().map(|b| b.event).collect();
        assert_eq!(
            events,
            ["BeforeModel", "beforeTabFileRead"]
                .map(|name| HookEvent::Agent(AgentEvent::find(name, Dialect::Sandbox).unwrap()))
        );
        assert_eq!(bindings[0].handler.timeout().as_secs(), 30);
        let diagnostics = report.into_diagnostics();
        assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
        assert_eq!(diagnostics[0].json_path, "$.gate.BeforeModle");
        assert_eq!(
            diagnostics[0].hint.as_deref(),
            Some("did you mean `BeforeModel`?")
        );
    }

    #[test]
    fn claude_event_in_a_group_points_at_the_sandbox_names() {
        let document = json!({"gate": {"PreToolUse": []}});
        let mut report = Report::new("hooks.json");
        read(
            document.as_object().unwrap(),
            &mut report,
            &[],
            OnError::Allow,
        );
        let diagnostics = report.into_diagnostics();
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].severity, Severity::Error);
        assert_eq!(diagnostics[0].json_path, "$.gate.PreToolUse");
        let hint = diagnostics[0].hint.as_deref().unwrap();
        assert!(hint.contains("sandbox dialect"), "{hint}");
        assert!(
            hint.contains("did you mean `pre_tool_execution`?"),
            "{hint}"
        );
    }
}
