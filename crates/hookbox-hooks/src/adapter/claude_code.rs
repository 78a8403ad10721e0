//! Claude Code: its hook event JSON in, its `hookSpecificOutput` JSON and exit codes out
//! (`/work/shared/reference/claude-hooks.md` §1 and §3). Claude Code's own names and shapes are
//! the SDK dialect's, so a Claude-style policy sees the event exactly as Claude Code sent it.

use serde_json::{Map, Value, json};

use super::{Agent, Translated, text, vocabulary};
use crate::event::{Dialect, HookEvent};
use crate::input::EventInput;
use crate::outcome::{Decision, HookOutcome};

/// Exit code that blocks what a blockable event announces (stderr becomes the reason).
pub(super) const BLOCKING_EXIT: u8 = 2;
/// Exit code of a non-blocking error: the action proceeds, the first stderr line is shown.
pub(super) const NON_BLOCKING_EXIT: u8 = 1;

/// Reads one hook event of Claude Code, or of `agent` speaking its format. Events hookbox has
/// no counterpart for (`TaskCreated`, `CwdChanged`…) are passed through under their own names.
pub(super) fn translate(agent: Agent, payload: Map<String, Value>) -> Result<Translated, String> {
    let name = text(&payload, "hook_event_name")
        .ok_or("the hook input has no `hook_event_name` string")?;
    let cwd = text(&payload, "cwd").map(str::to_owned);
    let Some(event) = HookEvent::from_name(name).filter(|event| event.dialect() == Dialect::Sdk)
    else {
        return Ok(Translated::unmapped(agent, name.to_owned(), payload, cwd));
    };
    if event.matcher_field() == Some("tool_name") {
        if text(&payload, "tool_name").is_none() {
            return Err(format!("the {name} input has no `tool_name` string"));
        }
        if !payload.get("tool_input").is_some_and(Value::is_object) {
            return Err(format!("the {name} input has no `tool_input` object"));
        }
    }
    Ok(Translated {
        agent,
        event: Some(event),
        native_event: name.to_owned(),
        native_tool: text(&payload, "tool_name").map(str::to_owned),
        sandbox: vocabulary::sandbox_event(agent.name(), event, &payload),
        sdk: Some(EventInput::sdk_payload(event, payload)),
        cwd,
        session: None,
    })
}

/// Claude Code's JSON answer (empty: no output at all) for `outcome` on `event`.
pub(super) fn answer(event: Option<HookEvent>, outcome: &HookOutcome) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(event) = event else {
        return out;
    };
    let mut specific = Map::new();
    let reason = outcome.reason.as_deref();
    match event {
        HookEvent::PreToolUse => {
            let decision = match outcome.decision {
                Decision::Deny | Decision::Block => Some("deny"),
                Decision::Ask => Some("ask"),
                Decision::Allow => outcome.explicit.then_some("allow"),
            };
            if let Some(decision) = decision {
                specific.insert("permissionDecision".into(), decision.into());
                if let Some(reason) = reason {
                    specific.insert("permissionDecisionReason".into(), reason.into());
                }
            }
            if let Some(input) = &outcome.updated_input
                && !outcome.decision.is_blocking()
            {
                specific.insert("updatedInput".into(), input.clone());
            }
        }
        HookEvent::PermissionRequest => {
            let decision = match outcome.decision {
                Decision::Deny | Decision::Block => {
                    Some(json!({"behavior": "deny", "message": reason.unwrap_or_default()}))
                }
                Decision::Allow if outcome.explicit => {
                    let mut allow = json!({"behavior": "allow"});
                    if let Some(input) = &outcome.updated_input {
                        allow["updatedInput"] = input.clone();
                    }
                    Some(allow)
                }
                // `ask` and no opinion both leave the decision to the user's prompt.
                Decision::Allow | Decision::Ask => None,
            };
            if let Some(decision) = decision {
                specific.insert("decision".into(), decision);
            }
        }
        HookEvent::UserPromptSubmit
        | HookEvent::PostToolUse
        | HookEvent::PostToolUseFailure
        | HookEvent::Stop
        | HookEvent::SubagentStop
        | HookEvent::PreCompact
            if outcome.decision.is_blocking() =>
        {
            out.insert("decision".into(), "block".into());
            out.insert("reason".into(), reason.unwrap_or_default().into());
        }
        _ => {}
    }
    if let Some(context) = &outcome.additional_context
        && event.takes_context()
    {
        specific.insert("additionalContext".into(), context.clone().into());
    }
    if let Some(output) = &outcome.updated_tool_output
        && event == HookEvent::PostToolUse
    {
        specific.insert("updatedToolOutput".into(), output.clone());
    }
    super::common_output(&mut out, event.name(), specific, outcome);
    out
}
