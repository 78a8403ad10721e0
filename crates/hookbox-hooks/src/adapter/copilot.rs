//! GitHub Copilot (CLI and coding agent): its hook event JSON in, its `permissionDecision`
//! answer out. Built from GitHub's hooks configuration reference
//! (docs.github.com/en/copilot/reference/hooks-configuration), not from recorded payloads.
//! Copilot's input does not name its event, so the command line does (`--event`, written by
//! `hookbox install copilot`), else a `hookEventName` field.

use serde_json::{Map, Value};

use super::{Agent, Renames, Translated, arguments, rename, text};
use crate::event::HookEvent;
use crate::outcome::{Decision, HookOutcome};

/// Copilot's exit code, denial or not: a denial is said in JSON (its documented way), and a
/// non-zero exit from `preToolUse` is reported to deny the call, so failures that must not
/// block exit 0 with the message on stderr.
pub(super) const EXIT: u8 = 0;

/// Copilot event → its Claude Code counterpart. `errorOccurred` has none: it is passed
/// through under its own name.
const EVENTS: [(&str, HookEvent); 7] = [
    ("preToolUse", HookEvent::PreToolUse),
    ("postToolUse", HookEvent::PostToolUse),
    ("userPromptSubmitted", HookEvent::UserPromptSubmit),
    ("sessionStart", HookEvent::SessionStart),
    ("sessionEnd", HookEvent::SessionEnd),
    ("agentStop", HookEvent::Stop),
    ("subagentStop", HookEvent::SubagentStop),
];

/// Copilot tool → Claude Code tool, with its renamed arguments. Every other tool keeps its
/// name and arguments.
const TOOLS: [(&str, &str, Renames); 4] = [
    ("bash", "Bash", &[]),
    ("view", "Read", &[("path", "file_path")]),
    (
        "create",
        "Write",
        &[("path", "file_path"), ("file_text", "content")],
    ),
    (
        "edit",
        "Edit",
        &[
            ("path", "file_path"),
            ("old_str", "old_string"),
            ("new_str", "new_string"),
        ],
    ),
];

/// The argument renames of the agent's tool `tool` (none for a tool it keeps as it is).
pub(super) fn renames(tool: &str) -> Renames {
    TOOLS
        .iter()
        .find(|(copilot, ..)| *copilot == tool)
        .map_or(&[], |&(_, _, renames)| renames)
}

/// Reads one Copilot hook event (named `event`, else by its `hookEventName`) as its Claude
/// Code counterpart.
pub(super) fn translate(
    mut payload: Map<String, Value>,
    event: Option<&str>,
) -> Result<Translated, String> {
    let name = event
        .or_else(|| text(&payload, "hookEventName"))
        .ok_or(
            "the hook input names no event: run `hookbox hook copilot --event EVENT` \
             (`hookbox install copilot` writes it)",
        )?
        .to_owned();
    let cwd = text(&payload, "cwd").map(str::to_owned);
    let Some(&(_, mut event)) = EVENTS.iter().find(|(copilot, _)| *copilot == name) else {
        return Ok(Translated::unmapped(Agent::Copilot, name, payload, cwd));
    };
    if let Some(session) = payload.get("sessionId").cloned() {
        payload.entry("session_id").or_insert(session);
    }
    let mut native_tool = None;
    if matches!(event, HookEvent::PreToolUse | HookEvent::PostToolUse) {
        let tool = text(&payload, "toolName")
            .ok_or_else(|| format!("the {name} input has no `toolName` string"))?
            .to_owned();
        let mut input = arguments(payload.remove("toolArgs")).ok_or_else(|| {
            format!("the {name} input has no `toolArgs` object (or JSON string of one)")
        })?;
        let claude = match TOOLS.iter().find(|(copilot, ..)| *copilot == tool) {
            Some(&(_, claude, renames)) => {
                rename(&mut input, renames, false);
                claude.to_owned()
            }
            None => tool.clone(),
        };
        payload.insert("tool_name".into(), claude.into());
        payload.insert("tool_input".into(), Value::Object(input));
        if let Some(result) = payload.get("toolResult").cloned() {
            if result.get("resultType").and_then(Value::as_str) == Some("failure") {
                let message = result.get("textResultForLlm").and_then(Value::as_str);
                let message = message.unwrap_or("the tool failed").to_owned();
                payload.insert("error".into(), message.into());
                event = HookEvent::PostToolUseFailure;
            }
            payload.insert("tool_response".into(), result);
        }
        native_tool = Some(tool);
    }
    if event == HookEvent::SessionStart {
        // Copilot's `new` is Claude Code's `startup`.
        let source = match text(&payload, "source") {
            Some("resume") => "resume",
            _ => "startup",
        };
        payload.insert("source".into(), source.into());
    }
    Ok(Translated::claude_shaped(
        Agent::Copilot,
        name,
        native_tool,
        event,
        payload,
        cwd,
    ))
}

/// Copilot's JSON answer (empty: no output at all) for `outcome` on `translated`: only
/// `preToolUse` answers are read.
pub(super) fn answer(translated: &Translated, outcome: &HookOutcome) -> Map<String, Value> {
    let mut out = Map::new();
    if translated.event != Some(HookEvent::PreToolUse) {
        return out;
    }
    let decision = match outcome.decision {
        Decision::Deny | Decision::Block => Some("deny"),
        Decision::Ask => Some("ask"),
        Decision::Allow => outcome.explicit.then_some("allow"),
    };
    if let Some(decision) = decision {
        out.insert("permissionDecision".into(), decision.into());
        if let Some(reason) = &outcome.reason {
            out.insert("permissionDecisionReason".into(), reason.clone().into());
        }
    }
    if let (Some(Value::Object(input)), Some(tool), false) = (
        &outcome.updated_input,
        &translated.native_tool,
        outcome.decision.is_blocking(),
    ) {
        let mut fields = input.clone();
        if let Some(&(_, _, renames)) = TOOLS.iter().find(|(copilot, ..)| copilot == tool) {
            rename(&mut fields, renames, true);
        }
        out.insert("modifiedArgs".into(), Value::Object(fields));
    }
    if let Some(context) = &outcome.additional_context {
        out.insert("additionalContext".into(), context.clone().into());
    }
    out
}

/// The `preToolUse` deny answer with `message` (a failure that must fail closed).
pub(super) fn denial(message: &str) -> Map<String, Value> {
    Map::from_iter([
        ("permissionDecision".to_owned(), "deny".into()),
        (
            "permissionDecisionReason".to_owned(),
            message.trim_end().to_owned().into(),
        ),
    ])
}
