//! What a session tells its user: the messages of a session's stream, as typed values. Their
//! JSON is the interface's: `hookbox-stream-json` writes them in the shapes the Python agent
//! SDKs parse.

use hookbox_hooks::{HookEvent, Origin, TraceEntry};
use serde_json::Value;

/// One block of an assistant or user message.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// The model's extended thinking before it answered.
    Thinking {
        /// The thought (as the provider shows it).
        thinking: String,
        /// The provider's signature of it, empty when it gives none.
        signature: String,
    },
    /// Text from the model.
    Text {
        /// The text.
        text: String,
    },
    /// A tool call the model made.
    ToolUse {
        /// The call's id (`toolu_…`), which the result refers to.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments the model gave.
        input: Value,
    },
    /// The outcome of a tool call, as the model sees it.
    ToolResult {
        /// The id of the call this answers.
        tool_use_id: String,
        /// What the model sees.
        content: String,
        /// Whether the call failed, was denied or was blocked.
        is_error: bool,
    },
}

/// How a query ended, as the `result` message's `subtype`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultSubtype {
    /// The model answered, or a hook stopped the session on purpose (`continue: false`).
    Success,
    /// The turn limit was reached.
    ErrorMaxTurns,
    /// The model failed, the prompt was blocked, or the query was interrupted.
    ErrorDuringExecution,
    /// The model did not give output matching the session's output schema in time.
    ErrorMaxStructuredOutputRetries,
}

impl ResultSubtype {
    /// The subtype's name: `success`, `error_max_turns`, `error_during_execution`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::ErrorMaxTurns => "error_max_turns",
            Self::ErrorDuringExecution => "error_during_execution",
            Self::ErrorMaxStructuredOutputRetries => "error_max_structured_output_retries",
        }
    }
}

/// A tool call that was not allowed to run.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionDenial {
    /// The tool's name.
    pub tool_name: String,
    /// The call's id.
    pub tool_use_id: String,
    /// The input the call would have run with.
    pub tool_input: Value,
}

/// The last message of every query.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryResult {
    /// How the query ended.
    pub subtype: ResultSubtype,
    /// Whether it ended in an error.
    pub is_error: bool,
    /// The model's final answer (or the hook's stop reason).
    pub result: Option<String>,
    /// Model turns taken by this query.
    pub num_turns: u32,
    /// Wall time of the query.
    pub duration_ms: u64,
    /// Time spent waiting for the model.
    pub duration_api_ms: u64,
    /// Tokens read and written by the model in this query.
    pub usage: (u64, u64),
    /// Why the session stopped when a hook said `continue: false`.
    pub stop_reason: Option<String>,
    /// What went wrong, for error subtypes.
    pub errors: Vec<String>,
    /// Tool calls that were denied.
    pub permission_denials: Vec<PermissionDenial>,
    /// Why the query's loop ended (`None` when no loop ran: `/compact`, a blocked prompt, a
    /// failed compaction).
    pub terminal_reason: Option<TerminalReason>,
    /// The HTTP status of the model API call that failed, for
    /// [`TerminalReason::ApiError`] when the API answered.
    pub api_error_status: Option<u16>,
    /// The output matching the session's output schema, when it has one and the model gave it.
    pub structured_output: Option<Value>,
}

/// Why a query's loop ended: the `result` message's `terminal_reason`, with Claude Code's
/// names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerminalReason {
    /// The model answered and the `Stop` hooks let it stop.
    Completed,
    /// A hook said `continue: false`.
    HookStopped,
    /// The turn limit was reached.
    MaxTurns,
    /// Interrupted while the model was answering.
    AbortedStreaming,
    /// Interrupted during tool calls (a tool, a permission prompt).
    AbortedTools,
    /// The model's API failed (an error status, unreachable, a timeout, a malformed answer).
    ApiError,
    /// The model missed the output schema too many times.
    StructuredOutputRetryExhausted,
}

impl TerminalReason {
    /// The reason's name: `completed`, `hook_stopped`, `max_turns`, `aborted_streaming`,
    /// `aborted_tools`, `api_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::HookStopped => "hook_stopped",
            Self::MaxTurns => "max_turns",
            Self::AbortedStreaming => "aborted_streaming",
            Self::AbortedTools => "aborted_tools",
            Self::ApiError => "api_error",
            Self::StructuredOutputRetryExhausted => "structured_output_retry_exhausted",
        }
    }
}

/// One message of a session's stream.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionMessage {
    /// The session's first message: what it runs with.
    Init {
        /// The working directory.
        cwd: String,
        /// The model's label.
        model: String,
        /// The tools offered to the model.
        tools: Vec<String>,
        /// The permission mode at start.
        permission_mode: String,
        /// The names of the sub-agents the `Task` tool can start.
        agents: Vec<String>,
        /// The MCP servers: `(name, status)`, the status `connected` or `failed`.
        mcp_servers: Vec<(String, String)>,
    },
    /// A model turn.
    Assistant {
        /// The message id.
        id: String,
        /// The model's label.
        model: String,
        /// Text and tool calls, in order.
        content: Vec<ContentBlock>,
        /// The `Task` call whose sub-agent produced this, if any.
        parent_tool_use_id: Option<String>,
    },
    /// Tool results going back to the model.
    User {
        /// The tool results.
        content: Vec<ContentBlock>,
        /// The `Task` call whose sub-agent produced this, if any.
        parent_tool_use_id: Option<String>,
        /// The tool's structured response (Claude Code's `tool_use_result`).
        tool_use_result: Option<Value>,
    },
    /// A hook run that failed, so that no failure goes unseen.
    HookFailed(HookFailure),
    /// A hook's `systemMessage` for the user.
    HookSystemMessage {
        /// The event whose hook said it.
        event: HookEvent,
        /// What it said.
        message: String,
    },
    /// The conversation was compacted: a summary replaced the history.
    CompactBoundary {
        /// What started it.
        trigger: CompactTrigger,
        /// The estimated size of the history replaced, in tokens.
        pre_tokens: u64,
        /// The user message that now holds the history: the model's summary.
        summary: String,
    },
    /// `/clear` reset the conversation: the session goes on under a new id with an empty
    /// history (Claude Code's `conversation_reset`).
    ConversationReset {
        /// The id of the session that was reset.
        previous_session_id: String,
        /// The id of the fresh session, which every later message carries.
        session_id: String,
    },
    /// A piece of a model turn as it streams (`--include-partial-messages`): an
    /// Anthropic-style stream event (`message_start`, `content_block_delta`, …).
    StreamEvent {
        /// The event, as the Anthropic messages API streams it.
        event: Value,
        /// The `Task` call whose sub-agent produced this, if any.
        parent_tool_use_id: Option<String>,
    },
    /// How the query ended.
    Result(QueryResult),
}

impl SessionMessage {
    /// The warning line for a [`HookFailed`](Self::HookFailed) message (for stderr); `None`
    /// for any other message.
    pub fn hook_failure_warning(&self) -> Option<String> {
        match self {
            Self::HookFailed(failure) => Some(failure.warning()),
            _ => None,
        }
    }
}

/// What starts a compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTrigger {
    /// The user's `/compact`.
    Manual,
    /// The conversation grew over the session's threshold.
    Auto,
}

impl CompactTrigger {
    /// The trigger's name, as hooks receive it: `manual` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Manual => "manual",
            Self::Auto => "auto",
        }
    }
}

/// A hook run that failed (crash, timeout, bad output, spawn failure…): which hook, what went
/// wrong, and whether the call went on anyway (fail-open) or was blocked.
#[derive(Debug, Clone, PartialEq)]
pub struct HookFailure {
    /// The event it ran on.
    pub event: HookEvent,
    /// The binding's matcher as written (`None`: every value).
    pub matcher: Option<String>,
    /// `command`, `http` or `callback`.
    pub handler: &'static str,
    /// The command line, URL or callback name.
    pub label: String,
    /// Where it was declared.
    pub origin: Origin,
    /// What went wrong, for people.
    pub cause: String,
    /// The exit status of a command that exited by itself.
    pub exit_code: Option<i32>,
    /// Whether the failure blocked the call (`on_error: "deny"`, or an event that fails
    /// closed) rather than letting it go on.
    pub failed_closed: bool,
}

impl HookFailure {
    /// The failure `entry` records; `None` for a run that did not fail.
    pub fn from_trace(entry: &TraceEntry) -> Option<Self> {
        let failure = entry.failure.as_ref()?;
        Some(Self {
            event: entry.event,
            matcher: entry.matcher.clone(),
            handler: entry.handler,
            label: entry.label.clone(),
            origin: entry.origin.clone(),
            cause: failure.to_string(),
            exit_code: entry.exit_code,
            failed_closed: entry.failed_closed,
        })
    }

    /// One warning line for people (for stderr).
    pub fn warning(&self) -> String {
        let consequence = if self.failed_closed {
            "failed closed: the call was blocked"
        } else {
            "failed open: the call went on as if it had not run"
        };
        format!(
            "warning: {} hook `{}` ({}) {consequence}: {}",
            self.event.name(),
            self.label,
            self.origin.source,
            self.cause,
        )
    }
}

/// One human-readable line per message, for examples, logs and the demo.
impl std::fmt::Display for SessionMessage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Init { model, tools, .. } => {
                write!(f, "[init] model {model}, tools {}", tools.join(", "))
            }
            Self::Assistant { content, .. } | Self::User { content, .. } => {
                let parts: Vec<String> = content
                    .iter()
                    .map(|block| match block {
                        ContentBlock::Thinking { thinking, .. } => format!("[thinking] {thinking}"),
                        ContentBlock::Text { text } => format!("[assistant] {text}"),
                        ContentBlock::ToolUse { name, input, .. } => {
                            format!("[tool call] {name} {input}")
                        }
                        ContentBlock::ToolResult {
                            content, is_error, ..
                        } => format!(
                            "[tool {}] {}",
                            if *is_error { "error" } else { "result" },
                            content.trim_end()
                        ),
                    })
                    .collect();
                f.write_str(&parts.join("\n"))
            }
            Self::HookFailed(failure) => write!(f, "[hook failed] {}", failure.warning()),
            Self::HookSystemMessage { event, message } => {
                write!(f, "[{} hook] {message}", event.name())
            }
            Self::CompactBoundary {
                trigger,
                pre_tokens,
                ..
            } => write!(
                f,
                "[compacted] {} compaction of about {pre_tokens} tokens",
                trigger.as_str()
            ),
            Self::ConversationReset { session_id, .. } => {
                write!(
                    f,
                    "[cleared] the conversation goes on as session {session_id}"
                )
            }
            Self::StreamEvent { event, .. } => write!(f, "[stream] {event}"),
            Self::Result(result) => write!(
                f,
                "[result] {:?}{} after {} turn(s): {}",
                result.subtype,
                if result.is_error { " (error)" } else { "" },
                result.num_turns,
                result
                    .result
                    .clone()
                    .unwrap_or_else(|| result.errors.join("; "))
            ),
        }
    }
}
