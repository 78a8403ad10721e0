//! OpenAI Codex: its hooks take Claude Code's input and output shapes (`tool_name` `Bash` with
//! `tool_input.command`, `hookSpecificOutput.permissionDecision`, exit 2 blocks), except that a
//! PreToolUse `ask` is not supported: Codex reports it as a hook failure and **runs the call**.
//! So an `ask` is answered as a deny, with a reason that says a person must approve it.

use serde_json::{Map, Value};

use super::claude_code;
use crate::event::HookEvent;
use crate::outcome::{Decision, HookOutcome};

/// Codex's answer for `outcome` on `event`.
pub(super) fn answer(event: Option<HookEvent>, outcome: &HookOutcome) -> Map<String, Value> {
    if event == Some(HookEvent::PreToolUse) && outcome.decision == Decision::Ask {
        return claude_code::answer(event, &super::ask_as_deny(outcome, "Codex hooks"));
    }
    claude_code::answer(event, outcome)
}
