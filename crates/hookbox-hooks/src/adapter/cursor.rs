//! Cursor: its hook event JSON in, its flat snake_case answer and exit codes out. Built from
//! Cursor's hooks documentation (cursor.com/docs/agent/hooks), not from recorded payloads.
//! Each event and tool is read as its Claude Code counterpart, so one Claude-style policy
//! serves both agents and a sandbox-dialect policy sees the seeds' names.

use serde_json::{Map, Value};

use super::{Renames, Translated, arguments, rename, text};
use crate::event::HookEvent;
use crate::outcome::{Decision, HookOutcome};

/// Exit code that blocks the action (as `permission: "deny"` would).
pub(super) const BLOCKING_EXIT: u8 = 2;
/// Exit code of a failed hook: Cursor lets the action proceed (unless `failClosed`).
pub(super) const NON_BLOCKING_EXIT: u8 = 1;

/// Where a Cursor event's tool call is in its input.
#[derive(Clone, Copy)]
enum Call {
    /// Not a tool event.
    None,
    /// `tool_name` + `tool_input` (the generic `preToolUse`/`postToolUse` events).
    Generic,
    /// A shell command: `command` at the top level.
    Shell,
    /// An MCP tool: `tool_name` + `tool_input` (an object, or a JSON string of one).
    Mcp,
    /// A file read: `file_path` at the top level.
    Read,
    /// A file edit: `file_path` and `edits` at the top level.
    Edit,
}

/// Cursor event → its Claude Code counterpart and where its tool call is. Cursor's other
/// events (`afterAgentResponse`, `afterAgentThought`, Tab hooks) have none: they are passed
/// through under their own names.
const EVENTS: [(&str, HookEvent, Call); 16] = [
    ("preToolUse", HookEvent::PreToolUse, Call::Generic),
    ("postToolUse", HookEvent::PostToolUse, Call::Generic),
    (
        "postToolUseFailure",
        HookEvent::PostToolUseFailure,
        Call::Generic,
    ),
    ("beforeShellExecution", HookEvent::PreToolUse, Call::Shell),
    ("afterShellExecution", HookEvent::PostToolUse, Call::Shell),
    ("beforeMCPExecution", HookEvent::PreToolUse, Call::Mcp),
    ("afterMCPExecution", HookEvent::PostToolUse, Call::Mcp),
    ("beforeReadFile", HookEvent::PreToolUse, Call::Read),
    ("afterFileEdit", HookEvent::PostToolUse, Call::Edit),
    (
        "beforeSubmitPrompt",
        HookEvent::UserPromptSubmit,
        Call::None,
    ),
    ("stop", HookEvent::Stop, Call::None),
    ("sessionStart", HookEvent::SessionStart, Call::None),
    ("sessionEnd", HookEvent::SessionEnd, Call::None),
    ("subagentStart", HookEvent::SubagentStart, Call::None),
    ("subagentStop", HookEvent::SubagentStop, Call::None),
    ("preCompact", HookEvent::PreCompact, Call::None),
];

/// Cursor tool (generic events) → Claude Code tool, with its renamed arguments. Every other
/// tool (`Grep`, `Delete`, `Task`, MCP tools…) keeps its name and arguments.
const TOOLS: [(&str, &str, Renames); 3] = [
    ("Shell", "Bash", &[]),
    ("Read", "Read", &[("path", "file_path")]),
    ("Write", "Write", &[("path", "file_path")]),
];

/// The argument renames of the agent's tool `tool` (none for a tool it keeps as it is).
pub(super) fn renames(tool: &str) -> Renames {
    TOOLS
        .iter()
        .find(|(cursor, ..)| *cursor == tool)
        .map_or(&[], |&(_, _, renames)| renames)
}

/// The permission events: Cursor reads `permission` from their answer.
const PERMISSION_EVENTS: [&str; 5] = [
    "preToolUse",
    "beforeShellExecution",
    "beforeMCPExecution",
    "beforeReadFile",
    "beforeTabFileRead",
];

/// Reads one Cursor hook event as its Claude Code counterpart.
pub(super) fn translate(mut payload: Map<String, Value>) -> Result<Translated, String> {
    let name = text(&payload, "hook_event_name")
        .ok_or("the hook input has no `hook_event_name` string")?
        .to_owned();
    // Shell events carry `cwd`; the others only the workspace roots.
    let cwd = text(&payload, "cwd")
        .or_else(|| payload.get("workspace_roots")?.get(0)?.as_str())
        .map(str::to_owned);
    let Some(&(_, event, call)) = EVENTS.iter().find(|(cursor, ..)| *cursor == name) else {
        return Ok(Translated::unmapped(
            super::Agent::Cursor,
            name,
            payload,
            cwd,
        ));
    };
    if let Some(conversation) = payload.get("conversation_id").cloned() {
        payload.entry("session_id").or_insert(conversation);
    }
    let missing = |field: &str, kind: &str| format!("the {name} input has no `{field}` {kind}");
    let (tool, claude, input) = match call {
        Call::None => (None, None, None),
        Call::Generic => {
            let tool = text(&payload, "tool_name")
                .ok_or_else(|| missing("tool_name", "string"))?
                .to_owned();
            let mut input = arguments(payload.remove("tool_input"))
                .ok_or_else(|| missing("tool_input", "object"))?;
            let claude = match TOOLS.iter().find(|(cursor, ..)| *cursor == tool) {
                Some(&(_, claude, renames)) => {
                    rename(&mut input, renames, false);
                    claude.to_owned()
                }
                None => tool.clone(),
            };
            (Some(tool), Some(claude), Some(input))
        }
        Call::Shell => {
            let command = text(&payload, "command").ok_or_else(|| missing("command", "string"))?;
            let input = Map::from_iter([("command".to_owned(), command.into())]);
            (
                Some("Shell".to_owned()),
                Some("Bash".to_owned()),
                Some(input),
            )
        }
        Call::Mcp => {
            let tool = text(&payload, "tool_name")
                .ok_or_else(|| missing("tool_name", "string"))?
                .to_owned();
            let input = arguments(payload.remove("tool_input"))
                .ok_or_else(|| missing("tool_input", "object (or JSON string of one)"))?;
            (Some(tool.clone()), Some(tool), Some(input))
        }
        Call::Read | Call::Edit => {
            let path = text(&payload, "file_path").ok_or_else(|| missing("file_path", "string"))?;
            let mut input = Map::from_iter([("file_path".to_owned(), path.into())]);
            let claude = if matches!(call, Call::Read) {
                "Read"
            } else {
                input.insert(
                    "edits".into(),
                    payload.get("edits").cloned().unwrap_or_default(),
                );
                "Edit"
            };
            (
                Some(claude.to_owned()),
                Some(claude.to_owned()),
                Some(input),
            )
        }
    };
    if let (Some(claude), Some(input)) = (claude, input) {
        payload.insert("tool_name".into(), claude.into());
        payload.insert("tool_input".into(), Value::Object(input));
    }
    // What the tool returned, under Claude Code's name.
    let response = ["tool_output", "output", "result_json"]
        .into_iter()
        .find_map(|field| payload.get(field).cloned());
    if let (HookEvent::PostToolUse, Some(response)) = (event, response) {
        payload.insert("tool_response".into(), response);
    }
    if event == HookEvent::PostToolUseFailure
        && let Some(error) = payload.get("error_message").cloned()
    {
        payload.insert("error".into(), error);
    }
    Ok(Translated::claude_shaped(
        super::Agent::Cursor,
        name,
        tool,
        event,
        payload,
        cwd,
    ))
}

/// Cursor's JSON answer (empty: no output at all) for `outcome` on `translated`.
pub(super) fn answer(translated: &Translated, outcome: &HookOutcome) -> Map<String, Value> {
    let mut out = Map::new();
    if translated.event.is_none() {
        return out;
    }
    let native = translated.native_event.as_str();
    let blocking = outcome.decision.is_blocking();
    if PERMISSION_EVENTS.contains(&native) {
        // Cursor enforces `ask` only on shell and MCP calls.
        let asks = matches!(native, "beforeShellExecution" | "beforeMCPExecution");
        let denied;
        let outcome = if outcome.decision == Decision::Ask && !asks {
            denied = super::ask_as_deny(outcome, &format!("Cursor's {native} hook"));
            &denied
        } else {
            outcome
        };
        let permission = match outcome.decision {
            Decision::Deny | Decision::Block => Some("deny"),
            Decision::Ask => Some("ask"),
            Decision::Allow => outcome.explicit.then_some("allow"),
        };
        if let Some(permission) = permission {
            out.insert("permission".into(), permission.into());
            if let Some(reason) = &outcome.reason {
                out.insert("user_message".into(), reason.clone().into());
                out.insert("agent_message".into(), reason.clone().into());
            }
        }
        if let (Some(input), Some(tool), "preToolUse", false) = (
            &outcome.updated_input,
            &translated.native_tool,
            native,
            outcome.decision.is_blocking(),
        ) {
            out.insert("updated_input".into(), cursor_input(tool, input));
        }
    } else if native == "beforeSubmitPrompt" && blocking {
        out.insert("continue".into(), false.into());
        if let Some(reason) = &outcome.reason {
            out.insert("user_message".into(), reason.clone().into());
        }
    } else if matches!(native, "stop" | "subagentStop") && blocking {
        // A blocked stop is Claude Code's "keep going, because…": Cursor's follow-up message.
        let reason = outcome.reason.clone().unwrap_or_default();
        out.insert("followup_message".into(), reason.into());
    }
    if let Some(context) = &outcome.additional_context
        && matches!(native, "sessionStart" | "postToolUse" | "subagentStart")
    {
        out.insert("additional_context".into(), context.clone().into());
    }
    out
}

/// The deny answer of a permission event, with `message` for the user and the model (a
/// failure that must fail closed).
pub(super) fn denial(message: &str) -> Map<String, Value> {
    let message = Value::String(message.trim_end().to_owned());
    Map::from_iter([
        ("permission".to_owned(), "deny".into()),
        ("user_message".to_owned(), message.clone()),
        ("agent_message".to_owned(), message),
    ])
}

/// A Claude-shaped `updated_input` in Cursor tool `tool`'s argument names.
fn cursor_input(tool: &str, input: &Value) -> Value {
    let (Some(&(_, _, renames)), Value::Object(fields)) =
        (TOOLS.iter().find(|(cursor, ..)| *cursor == tool), input)
    else {
        return input.clone();
    };
    let mut fields = fields.clone();
    rename(&mut fields, renames, true);
    Value::Object(fields)
}
