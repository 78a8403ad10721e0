//! What a session tells its user: the messages of the SDK message stream, in the shapes the
//! Python agent SDKs parse (`system`, `assistant`, `user`, `result`).

use hookbox_hooks::TraceEntry;
use serde::Serialize;
use serde_json::{Value, json};

/// The `system` subtype of a hook failure.
const HOOK_RESPONSE: &str = "hook_response";

/// One block of an assistant or user message.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSubtype {
    /// The model answered, or a hook stopped the session on purpose (`continue: false`).
    Success,
    /// The turn limit was reached.
    ErrorMaxTurns,
    /// The model failed, the prompt was blocked, or the query was interrupted.
    ErrorDuringExecution,
}

/// A tool call that was not allowed to run.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// A note for the user: a hook's `systemMessage`, a hook that failed
    /// ([`SessionMessage::hook_failure`]), a notification, a compaction.
    System {
        /// `hook_system_message`, `hook_response`, `notification` or `compact_boundary`.
        subtype: String,
        /// The details.
        data: Value,
    },
    /// How the query ended.
    Result(QueryResult),
}

impl SessionMessage {
    /// The `system` / `hook_response` message for a hook run that failed (crash, timeout,
    /// bad output, spawn failure…), so that no failure goes unseen; `None` for a run that did
    /// not fail. Field names follow Claude Code's `hook_response` (`hook_event`, `hook_name`,
    /// `outcome`, `exit_code`, `output`); `outcome` is `error` when the call went on anyway
    /// (fail-open) and `blocked` when the failure blocked it; `cause` says what went wrong,
    /// `handler` and `source` which hook it was.
    pub fn hook_failure(entry: &TraceEntry) -> Option<Self> {
        let failure = entry.failure.as_ref()?;
        let event = entry.event.name();
        let outcome = if entry.failed_closed {
            "blocked"
        } else {
            "error"
        };
        let cause = failure.to_string();
        Some(Self::System {
            subtype: HOOK_RESPONSE.into(),
            data: json!({
                "hook_event": event,
                "hook_name": format!("{event}:{}", entry.matcher.as_deref().unwrap_or("*")),
                "outcome": outcome,
                "fail_open": !entry.failed_closed,
                "cause": cause,
                "output": cause,
                "exit_code": entry.exit_code,
                "handler": {"type": entry.handler, "label": entry.label},
                "source": {"file": entry.origin.source, "json_path": entry.origin.json_path},
            }),
        })
    }

    /// The warning line for a [`hook_failure`](Self::hook_failure) message (for stderr);
    /// `None` for any other message.
    pub fn hook_failure_warning(&self) -> Option<String> {
        let Self::System { subtype, data } = self else {
            return None;
        };
        if subtype != HOOK_RESPONSE {
            return None;
        }
        let text = |key: &str| data.get(key).and_then(Value::as_str).unwrap_or_default();
        let handler = data.pointer("/handler/label").and_then(Value::as_str);
        let source = data.pointer("/source/file").and_then(Value::as_str);
        let consequence = if data.get("fail_open") == Some(&Value::Bool(true)) {
            "failed open: the call went on as if it had not run"
        } else {
            "failed closed: the call was blocked"
        };
        Some(format!(
            "warning: {} hook `{}` ({}) {consequence}: {}",
            text("hook_event"),
            handler.unwrap_or_default(),
            source.unwrap_or_default(),
            text("cause"),
        ))
    }

    /// The message as one stream-json line object, stamped with `session_id` and `uuid`.
    pub fn to_wire(&self, session_id: &str, uuid: &str) -> Value {
        match self {
            Self::Init {
                cwd,
                model,
                tools,
                permission_mode,
                agents,
            } => json!({
                "type": "system", "subtype": "init", "uuid": uuid, "session_id": session_id,
                "cwd": cwd, "model": model, "tools": tools, "mcp_servers": [],
                "permissionMode": permission_mode, "agents": agents, "apiKeySource": "none",
                "slash_commands": ["compact"], "output_style": "default",
                "claude_code_version": env!("CARGO_PKG_VERSION"),
            }),
            Self::Assistant {
                id,
                model,
                content,
                parent_tool_use_id,
            } => json!({
                "type": "assistant",
                "message": {"id": id, "type": "message", "role": "assistant", "model": model, "content": content},
                "parent_tool_use_id": parent_tool_use_id, "session_id": session_id, "uuid": uuid,
            }),
            Self::User {
                content,
                parent_tool_use_id,
                tool_use_result,
            } => {
                let mut message = json!({
                    "type": "user",
                    "message": {"role": "user", "content": content},
                    "parent_tool_use_id": parent_tool_use_id, "session_id": session_id, "uuid": uuid,
                });
                if let Some(result) = tool_use_result {
                    message["tool_use_result"] = result.clone();
                }
                message
            }
            Self::System { subtype, data } => {
                let mut message = json!({"type": "system", "subtype": subtype, "uuid": uuid, "session_id": session_id});
                if let (Value::Object(message), Value::Object(data)) = (&mut message, data) {
                    for (key, value) in data {
                        message.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
                message
            }
            Self::Result(result) => json!({
                "type": "result", "subtype": result.subtype, "is_error": result.is_error,
                "duration_ms": result.duration_ms, "duration_api_ms": result.duration_api_ms,
                "num_turns": result.num_turns, "result": result.result,
                "stop_reason": result.stop_reason, "session_id": session_id, "uuid": uuid,
                "total_cost_usd": 0.0,
                "usage": {"input_tokens": result.usage.0, "output_tokens": result.usage.1},
                "errors": result.errors, "permission_denials": result.permission_denials,
            }),
        }
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
            Self::System { subtype, data } => write!(f, "[{subtype}] {data}"),
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
