//! Gemini CLI: its hook event JSON in (`docs/hooks/reference.md` of `@google/gemini-cli`
//! 0.61.0), its output JSON and exit codes out. Its events and tools are read as their Claude
//! Code counterparts, so one Claude-style policy serves both agents.

use serde_json::{Map, Value};

use super::{Renames, Translated, rename, text, vocabulary};
use crate::event::HookEvent;
use crate::input::EventInput;
use crate::outcome::{Decision, HookOutcome};

/// Exit code that blocks (BeforeTool: the tool; BeforeAgent: the turn; AfterAgent: retries).
pub(super) const BLOCKING_EXIT: u8 = 2;
/// Exit code of a non-blocking error ("Other: Warning").
pub(super) const NON_BLOCKING_EXIT: u8 = 1;

/// Gemini CLI event → its Claude Code counterpart. `BeforeModel`, `AfterModel` and
/// `BeforeToolSelection` have none: they are passed through under their own names.
const EVENTS: [(&str, HookEvent); 8] = [
    ("BeforeTool", HookEvent::PreToolUse),
    ("AfterTool", HookEvent::PostToolUse),
    ("BeforeAgent", HookEvent::UserPromptSubmit),
    ("AfterAgent", HookEvent::Stop),
    ("SessionStart", HookEvent::SessionStart),
    ("SessionEnd", HookEvent::SessionEnd),
    ("PreCompress", HookEvent::PreCompact),
    ("Notification", HookEvent::Notification),
];

/// Gemini CLI tool → Claude Code tool, with its renamed arguments. Every other tool keeps its
/// name and arguments (MCP tools are renamed from their `mcp_context`).
const TOOLS: [(&str, &str, Renames); 8] = [
    ("run_shell_command", "Bash", &[]),
    ("read_file", "Read", &[]),
    ("write_file", "Write", &[]),
    ("replace", "Edit", &[]),
    ("list_directory", "LS", &[("dir_path", "path")]),
    ("glob", "Glob", &[("dir_path", "path")]),
    ("grep_search", "Grep", &[("dir_path", "path")]),
    ("google_web_search", "WebSearch", &[]),
];

/// The argument renames of the agent's tool `tool` (none for a tool it keeps as it is).
pub(super) fn renames(tool: &str) -> Renames {
    TOOLS
        .iter()
        .find(|(gemini, ..)| *gemini == tool)
        .map_or(&[], |&(_, _, renames)| renames)
}

/// Reads one Gemini CLI hook event as its Claude Code counterpart.
pub(super) fn translate(mut payload: Map<String, Value>) -> Result<Translated, String> {
    let name = text(&payload, "hook_event_name")
        .ok_or("the hook input has no `hook_event_name` string")?
        .to_owned();
    let cwd = text(&payload, "cwd").map(str::to_owned);
    let Some(&(_, mut event)) = EVENTS.iter().find(|(gemini, _)| *gemini == name) else {
        return Ok(Translated::unmapped(
            super::Agent::GeminiCli,
            name,
            payload,
            cwd,
        ));
    };
    let mut native_tool = None;
    if matches!(event, HookEvent::PreToolUse | HookEvent::PostToolUse) {
        let tool = text(&payload, "tool_name")
            .ok_or_else(|| format!("the {name} input has no `tool_name` string"))?
            .to_owned();
        let Some(Value::Object(input)) = payload.remove("tool_input") else {
            return Err(format!("the {name} input has no `tool_input` object"));
        };
        let (claude, input) = claude_call(&tool, input, payload.get("mcp_context"));
        payload.insert("tool_name".into(), claude.into());
        payload.insert("tool_input".into(), Value::Object(input));
        if let Some(error) = payload
            .get("tool_response")
            .and_then(|response| response.get("error"))
            .filter(|error| !error.is_null())
        {
            let message = error.get("message").and_then(Value::as_str);
            let message = message.map_or_else(|| error.to_string(), str::to_owned);
            payload.insert("error".into(), message.into());
            event = HookEvent::PostToolUseFailure;
        }
        native_tool = Some(tool);
    }
    match event {
        HookEvent::Stop => {
            if let Some(response) = payload.get("prompt_response").cloned() {
                payload.insert("last_assistant_message".into(), response);
            }
        }
        HookEvent::Notification
            if text(&payload, "notification_type") == Some("ToolPermission") =>
        {
            payload.insert("notification_type".into(), "permission_prompt".into());
        }
        _ => {}
    }
    payload.insert("hook_event_name".into(), event.name().into());
    Ok(Translated {
        agent: super::Agent::GeminiCli,
        event: Some(event),
        native_event: name,
        native_tool,
        sandbox: vocabulary::sandbox_event("gemini-cli", event, &payload),
        sdk: Some(EventInput::sdk_payload(event, payload)),
        cwd,
        session: None,
    })
}

/// The Claude Code name and input of Gemini CLI tool `tool`.
fn claude_call(
    tool: &str,
    mut input: Map<String, Value>,
    mcp: Option<&Value>,
) -> (String, Map<String, Value>) {
    if let Some(&(_, claude, renames)) = TOOLS.iter().find(|(gemini, ..)| *gemini == tool) {
        rename(&mut input, renames, false);
        return (claude.to_owned(), input);
    }
    let server = mcp
        .and_then(|mcp| mcp.get("server_name"))
        .and_then(Value::as_str);
    let name = mcp
        .and_then(|mcp| mcp.get("tool_name"))
        .and_then(Value::as_str);
    match server.zip(name) {
        Some((server, name)) => (format!("mcp__{server}__{name}"), input),
        None => (tool.to_owned(), input),
    }
}

/// A Claude-shaped `updatedInput` in Gemini CLI tool `tool`'s argument names.
fn gemini_input(tool: &str, input: &Value) -> Value {
    let (Some(&(_, _, renames)), Value::Object(fields)) =
        (TOOLS.iter().find(|(gemini, ..)| *gemini == tool), input)
    else {
        return input.clone();
    };
    let mut fields = fields.clone();
    rename(&mut fields, renames, true);
    Value::Object(fields)
}

/// Gemini CLI's JSON answer (empty: no output at all) for `outcome` on `translated`.
pub(super) fn answer(translated: &Translated, outcome: &HookOutcome) -> Map<String, Value> {
    let mut out = Map::new();
    let Some(event) = translated.event else {
        return out;
    };
    let mut specific = Map::new();
    let blocking = outcome.decision.is_blocking();
    let decision = match (event, outcome.decision) {
        (_, Decision::Deny | Decision::Block) if event.can_block() => Some("deny"),
        (HookEvent::PreToolUse, Decision::Ask) => Some("ask"),
        (HookEvent::PreToolUse, Decision::Allow) if outcome.explicit => Some("allow"),
        _ => None,
    };
    if let Some(decision) = decision {
        out.insert("decision".into(), decision.into());
        if let Some(reason) = &outcome.reason {
            out.insert("reason".into(), reason.clone().into());
        }
    }
    if let (HookEvent::PreToolUse, Some(input), Some(tool), false) = (
        event,
        &outcome.updated_input,
        &translated.native_tool,
        blocking,
    ) {
        specific.insert("tool_input".into(), gemini_input(tool, input));
    }
    if let Some(context) = &outcome.additional_context
        && matches!(
            event,
            HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
                | HookEvent::UserPromptSubmit
                | HookEvent::SessionStart
        )
    {
        specific.insert("additionalContext".into(), context.clone().into());
    }
    super::common_output(&mut out, &translated.native_event, specific, outcome);
    out
}
