//! How a query ends: its [`End`], the counters kept over it, and the `result` message made
//! from both.

use std::time::Instant;

use hookbox_hooks::HookOutcome;
use hookbox_llm::ToolCall;
use serde_json::Value;

use super::messages::{PermissionDenial, QueryResult, ResultSubtype, TerminalReason};

/// How a query (or a sub-agent's run) ended.
pub(super) enum End {
    Answered(String),
    Stopped(String),
    MaxTurns,
    /// Interrupted while the model answered (`false`) or during tool calls (`true`).
    Interrupted {
        in_tools: bool,
    },
    Failed(String),
    /// The model's API failed (`status`: the HTTP status, when it answered).
    ApiFailed {
        message: String,
        status: Option<u16>,
    },
    PromptBlocked(String),
    /// A command the session runs itself (`/compact`, `/clear`) ran; the text is its note.
    Command(String),
    /// The prompt was a slash command the session does not know (the text says which).
    UnknownCommand(String),
    /// The model gave output matching the output schema (`text`: its last text).
    Structured {
        text: String,
        output: Value,
    },
    /// The model missed the output schema too many times (the message says how).
    StructuredMissed(String),
}

/// Counters over one query.
#[derive(Default)]
pub(super) struct Stats {
    pub(super) turns: u32,
    pub(super) api_ms: u64,
    pub(super) input_tokens: u64,
    pub(super) output_tokens: u64,
    pub(super) denials: Vec<PermissionDenial>,
}

pub(super) fn stop_reason(outcome: &HookOutcome) -> String {
    outcome
        .stop_reason
        .clone()
        .or_else(|| outcome.reason.clone())
        .unwrap_or_else(|| "a hook stopped the session".to_owned())
}

pub(super) fn denial(call: &ToolCall, input: &Value) -> PermissionDenial {
    PermissionDenial {
        tool_name: call.name.clone(),
        tool_use_id: call.id.clone(),
        tool_input: input.clone(),
    }
}

pub(super) fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The `result` message for how the query ended.
pub(super) fn result(end: End, stats: Stats, started: Instant) -> QueryResult {
    let terminal_reason = match &end {
        End::Answered(_) | End::Structured { .. } => Some(TerminalReason::Completed),
        End::StructuredMissed(_) => Some(TerminalReason::StructuredOutputRetryExhausted),
        End::Stopped(_) => Some(TerminalReason::HookStopped),
        End::MaxTurns => Some(TerminalReason::MaxTurns),
        End::Interrupted { in_tools: false } => Some(TerminalReason::AbortedStreaming),
        End::Interrupted { in_tools: true } => Some(TerminalReason::AbortedTools),
        End::ApiFailed { .. } => Some(TerminalReason::ApiError),
        End::Failed(_) | End::PromptBlocked(_) | End::Command(_) | End::UnknownCommand(_) => None,
    };
    let mut api_error_status = None;
    let mut structured_output = None;
    let (subtype, is_error, text, stop_reason, errors) = match end {
        End::Answered(text) | End::Command(text) | End::UnknownCommand(text) => {
            (ResultSubtype::Success, false, Some(text), None, Vec::new())
        }
        End::Structured { text, output } => {
            structured_output = Some(output);
            (ResultSubtype::Success, false, Some(text), None, Vec::new())
        }
        End::StructuredMissed(message) => (
            ResultSubtype::ErrorMaxStructuredOutputRetries,
            true,
            None,
            None,
            vec![message],
        ),
        End::Stopped(reason) => (
            ResultSubtype::Success,
            false,
            Some(reason.clone()),
            Some(reason),
            Vec::new(),
        ),
        End::MaxTurns => (
            ResultSubtype::ErrorMaxTurns,
            true,
            None,
            None,
            vec![format!(
                "the model did not finish within {} turns",
                stats.turns
            )],
        ),
        End::Interrupted { .. } => (
            ResultSubtype::ErrorDuringExecution,
            true,
            None,
            None,
            vec!["interrupted".to_owned()],
        ),
        End::Failed(error) => (
            ResultSubtype::ErrorDuringExecution,
            true,
            None,
            None,
            vec![error],
        ),
        // As Claude Code: the loop itself completed, so `success` with `is_error`, the
        // "API Error: …" text in `result` and no `errors`.
        End::ApiFailed { message, status } => {
            api_error_status = status;
            (
                ResultSubtype::Success,
                true,
                Some(format!("API Error: {message}")),
                None,
                Vec::new(),
            )
        }
        End::PromptBlocked(reason) => {
            let message = format!("the prompt was blocked by a UserPromptSubmit hook: {reason}");
            (
                ResultSubtype::ErrorDuringExecution,
                true,
                Some(message.clone()),
                None,
                vec![message],
            )
        }
    };
    QueryResult {
        subtype,
        is_error,
        result: text,
        num_turns: stats.turns,
        duration_ms: millis(started),
        duration_api_ms: stats.api_ms,
        usage: (stats.input_tokens, stats.output_tokens),
        stop_reason,
        errors,
        permission_denials: stats.denials,
        terminal_reason,
        api_error_status,
        structured_output,
    }
}
