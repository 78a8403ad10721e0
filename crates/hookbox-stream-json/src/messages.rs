//! The stream-json JSON of a session's messages: the `system`, `assistant`, `user` and `result`
//! lines the Python agent SDKs parse (`docs/wire/sdk-control-protocol.md`), written from the
//! agent's typed [`SessionMessage`]s. A session's transcript entries share their `uuid` and
//! `message` (the `transcript` module).

use hookbox_agent::session::{ContentBlock, SessionMessage};
use serde_json::{Value, json};

/// `message` as one stream-json line object, stamped with `session_id` and `uuid`.
pub fn to_wire(message: &SessionMessage, session_id: &str, uuid: &str) -> Value {
    match message {
        SessionMessage::Init {
            cwd,
            model,
            tools,
            permission_mode,
            agents,
            mcp_servers,
        } => json!({
            "type": "system", "subtype": "init", "uuid": uuid, "session_id": session_id,
            "cwd": cwd, "model": model, "tools": tools,
            "mcp_servers": mcp_servers
                .iter()
                .map(|(name, status)| json!({"name": name, "status": status}))
                .collect::<Vec<_>>(),
            "permissionMode": permission_mode, "agents": agents, "apiKeySource": "none",
            "slash_commands": ["compact", "clear"], "output_style": "default",
            "claude_code_version": env!("CARGO_PKG_VERSION"),
        }),
        SessionMessage::Assistant {
            id,
            model,
            content,
            parent_tool_use_id,
        } => json!({
            "type": "assistant",
            "message": {
                "id": id, "type": "message", "role": "assistant", "model": model,
                "content": blocks(content),
            },
            "parent_tool_use_id": parent_tool_use_id, "session_id": session_id, "uuid": uuid,
        }),
        SessionMessage::User {
            content,
            parent_tool_use_id,
            tool_use_result,
        } => {
            let mut line = json!({
                "type": "user",
                "message": {"role": "user", "content": blocks(content)},
                "parent_tool_use_id": parent_tool_use_id, "session_id": session_id, "uuid": uuid,
            });
            if let Some(result) = tool_use_result {
                line["tool_use_result"] = result.clone();
            }
            line
        }
        SessionMessage::StreamEvent {
            event,
            parent_tool_use_id,
        } => json!({
            "type": "stream_event", "uuid": uuid, "session_id": session_id,
            "event": event, "parent_tool_use_id": parent_tool_use_id,
        }),
        // Field names follow Claude Code's `hook_response` (`hook_event`, `hook_name`,
        // `outcome`, `exit_code`, `output`); `outcome` is `error` when the call went on anyway
        // (fail-open) and `blocked` when the failure blocked it; `cause` says what went wrong,
        // `handler` and `source` which hook it was.
        SessionMessage::HookFailed(failure) => {
            let event = failure.event.name();
            let outcome = if failure.failed_closed {
                "blocked"
            } else {
                "error"
            };
            json!({
                "type": "system", "subtype": "hook_response", "uuid": uuid,
                "session_id": session_id,
                "hook_event": event,
                "hook_name": format!("{event}:{}", failure.matcher.as_deref().unwrap_or("*")),
                "outcome": outcome,
                "fail_open": !failure.failed_closed,
                "cause": failure.cause,
                "output": failure.cause,
                "exit_code": failure.exit_code,
                "handler": {"type": failure.handler, "label": failure.label},
                "source": {"file": failure.origin.source, "json_path": failure.origin.json_path},
            })
        }
        SessionMessage::HookSystemMessage { event, message } => json!({
            "type": "system", "subtype": "hook_system_message", "uuid": uuid,
            "session_id": session_id, "message": message, "hook_event_name": event.name(),
        }),
        SessionMessage::CompactBoundary {
            trigger,
            pre_tokens,
            ..
        } => json!({
            "type": "system", "subtype": "compact_boundary", "uuid": uuid,
            "session_id": session_id,
            "compact_metadata": {"trigger": trigger.as_str(), "pre_tokens": pre_tokens},
        }),
        // Claude Code's `conversation_reset`: the line carries the id of the session that was
        // reset; the fresh conversation's id is also the new session's.
        SessionMessage::ConversationReset {
            previous_session_id,
            session_id: new_session_id,
        } => json!({
            "type": "conversation_reset", "new_conversation_id": new_session_id,
            "uuid": uuid, "session_id": previous_session_id, "trigger": "clear",
        }),
        SessionMessage::Result(result) => {
            let denials: Vec<Value> = result
                .permission_denials
                .iter()
                .map(|denial| {
                    json!({
                        "tool_name": denial.tool_name, "tool_use_id": denial.tool_use_id,
                        "tool_input": denial.tool_input,
                    })
                })
                .collect();
            let mut line = json!({
                "type": "result", "subtype": result.subtype.as_str(), "is_error": result.is_error,
                "duration_ms": result.duration_ms, "duration_api_ms": result.duration_api_ms,
                "num_turns": result.num_turns, "result": result.result,
                "stop_reason": result.stop_reason, "session_id": session_id, "uuid": uuid,
                "total_cost_usd": 0.0,
                "usage": {"input_tokens": result.usage.0, "output_tokens": result.usage.1},
                "errors": result.errors, "permission_denials": denials,
            });
            // Absent, not null, when unknown: as Claude Code writes them.
            if let Some(reason) = result.terminal_reason {
                line["terminal_reason"] = json!(reason.as_str());
            }
            if let Some(status) = result.api_error_status {
                line["api_error_status"] = json!(status);
            }
            if let Some(output) = &result.structured_output {
                line["structured_output"] = output.clone();
            }
            line
        }
    }
}

/// The `content` array of an assistant or user message.
fn blocks(content: &[ContentBlock]) -> Vec<Value> {
    content
        .iter()
        .map(|block| match block {
            ContentBlock::Thinking {
                thinking,
                signature,
            } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
            ContentBlock::Text { text } => json!({"type": "text", "text": text}),
            ContentBlock::ToolUse { id, name, input } => {
                json!({"type": "tool_use", "id": id, "name": name, "input": input})
            }
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => json!({
                "type": "tool_result", "tool_use_id": tool_use_id, "content": content,
                "is_error": is_error,
            }),
        })
        .collect()
}

/// Takes the model's text and thinking out of stream-json line `line` when a sub-agent wrote
/// it (its `parent_tool_use_id` is set), for an SDK that did not ask for sub-agent text
/// (`forwardSubagentText`, as Claude Code does): a sub-agent's turns keep only their tool
/// calls, its tool results stay, and its stream events go. Whether anything is left to send.
pub fn without_subagent_text(line: &mut Value) -> bool {
    if line["parent_tool_use_id"].is_null() {
        return true;
    }
    match line["type"].as_str() {
        Some("stream_event") => false,
        Some("assistant") => match line
            .pointer_mut("/message/content")
            .and_then(Value::as_array_mut)
        {
            Some(blocks) => {
                blocks.retain(|block| {
                    !matches!(
                        block["type"].as_str(),
                        Some("text" | "thinking" | "redacted_thinking")
                    )
                });
                !blocks.is_empty()
            }
            None => true,
        },
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use hookbox_agent::session::{
        CompactTrigger, HookFailure, QueryResult, ResultSubtype, TerminalReason,
    };
    use hookbox_hooks::{HookEvent, Origin, Trust};

    use super::*;

    #[test]
    fn init_and_result_lines_carry_what_the_sdks_read() {
        let init = SessionMessage::Init {
            cwd: "/work".into(),
            model: "scripted".into(),
            tools: vec!["Bash".into()],
            permission_mode: "default".into(),
            agents: Vec::new(),
            mcp_servers: vec![("calc".into(), "connected".into())],
        };
        let line = to_wire(&init, "test-session", "u-1");
        assert_eq!(
            line["mcp_servers"],
            json!([{"name": "calc", "status": "connected"}])
        );
        assert_eq!(line["type"], "system");
        assert_eq!(line["subtype"], "init");
        for key in [
            "uuid",
            "session_id",
            "cwd",
            "model",
            "tools",
            "mcp_servers",
            "permissionMode",
        ] {
            assert!(line.get(key).is_some(), "init lacks {key}");
        }
        let result = SessionMessage::Result(QueryResult {
            subtype: ResultSubtype::ErrorMaxTurns,
            is_error: true,
            result: None,
            num_turns: 3,
            duration_ms: 5,
            duration_api_ms: 4,
            usage: (10, 2),
            stop_reason: None,
            errors: vec!["out of turns".into()],
            permission_denials: Vec::new(),
            terminal_reason: Some(TerminalReason::MaxTurns),
            api_error_status: None,
            structured_output: None,
        });
        let line = to_wire(&result, "test-session", "u-2");
        for key in [
            "subtype",
            "duration_ms",
            "duration_api_ms",
            "is_error",
            "num_turns",
            "session_id",
        ] {
            assert!(line.get(key).is_some(), "result lacks {key}");
        }
        assert_eq!(line["subtype"], "error_max_turns");
        assert_eq!(line["terminal_reason"], "max_turns");
        assert!(line.get("api_error_status").is_none(), "{line}");
        assert_eq!(
            line["usage"],
            json!({"input_tokens": 10, "output_tokens": 2})
        );
    }

    #[test]
    fn a_failed_hook_is_a_hook_response_naming_the_hook_and_its_outcome() {
        let failure = HookFailure {
            event: HookEvent::PreToolUse,
            matcher: Some("Bash".into()),
            handler: "command",
            label: "./gate.sh".into(),
            origin: Origin {
                source: "/p/.claude/settings.json".into(),
                group: None,
                json_path: "$.hooks.PreToolUse[0].hooks[0]".into(),
                trust: Trust::default(),
            },
            cause: "exited with status 1: broken".into(),
            exit_code: Some(1),
            failed_closed: false,
        };
        let line = to_wire(&SessionMessage::HookFailed(failure.clone()), "s", "u");
        assert_eq!(
            line,
            json!({
                "type": "system", "subtype": "hook_response", "uuid": "u", "session_id": "s",
                "hook_event": "PreToolUse", "hook_name": "PreToolUse:Bash", "outcome": "error",
                "fail_open": true, "cause": "exited with status 1: broken",
                "output": "exited with status 1: broken", "exit_code": 1,
                "handler": {"type": "command", "label": "./gate.sh"},
                "source": {
                    "file": "/p/.claude/settings.json",
                    "json_path": "$.hooks.PreToolUse[0].hooks[0]",
                },
            })
        );
        let blocked = HookFailure {
            matcher: None,
            failed_closed: true,
            ..failure
        };
        let line = to_wire(&SessionMessage::HookFailed(blocked), "s", "u");
        assert_eq!(line["outcome"], "blocked");
        assert_eq!(line["fail_open"], false);
        assert_eq!(line["hook_name"], "PreToolUse:*");
    }

    #[test]
    fn notes_for_the_user_are_system_lines() {
        let note = SessionMessage::HookSystemMessage {
            event: HookEvent::Stop,
            message: "hookbox paused".into(),
        };
        assert_eq!(
            to_wire(&note, "s", "u"),
            json!({
                "type": "system", "subtype": "hook_system_message", "uuid": "u",
                "session_id": "s", "message": "hookbox paused", "hook_event_name": "Stop",
            })
        );
        let boundary = SessionMessage::CompactBoundary {
            trigger: CompactTrigger::Auto,
            pre_tokens: 120,
            summary: "the summary".into(),
        };
        assert_eq!(
            to_wire(&boundary, "s", "u"),
            json!({
                "type": "system", "subtype": "compact_boundary", "uuid": "u", "session_id": "s",
                "compact_metadata": {"trigger": "auto", "pre_tokens": 120},
            })
        );
        let reset = SessionMessage::ConversationReset {
            previous_session_id: "old".into(),
            session_id: "new".into(),
        };
        assert_eq!(
            to_wire(&reset, "new", "u"),
            json!({
                "type": "conversation_reset", "new_conversation_id": "new", "uuid": "u",
                "session_id": "old", "trigger": "clear",
            })
        );
    }

    #[test]
    fn content_blocks_keep_their_order_and_fields() {
        let user = SessionMessage::User {
            content: vec![ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: "hi\n".into(),
                is_error: false,
            }],
            parent_tool_use_id: None,
            tool_use_result: Some(json!({"stdout": "hi\n"})),
        };
        let line = to_wire(&user, "s", "u");
        assert_eq!(
            line["message"]["content"],
            json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi\n", "is_error": false}])
        );
        assert_eq!(line["tool_use_result"], json!({"stdout": "hi\n"}));
        let assistant = SessionMessage::Assistant {
            id: "msg_1".into(),
            model: "m".into(),
            content: vec![
                ContentBlock::Text { text: "ok".into() },
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "Bash".into(),
                    input: json!({"command": "ls"}),
                },
            ],
            parent_tool_use_id: Some("toolu_0".into()),
        };
        let line = to_wire(&assistant, "s", "u");
        assert_eq!(
            line["message"]["content"],
            json!([
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
            ])
        );
        assert_eq!(line["parent_tool_use_id"], "toolu_0");
    }

    #[test]
    fn sub_agent_text_is_taken_out_unless_asked_for() {
        let mut main = json!({"type": "assistant", "parent_tool_use_id": null,
            "message": {"content": [{"type": "text", "text": "mine"}]}});
        assert!(without_subagent_text(&mut main));
        assert_eq!(main["message"]["content"][0]["text"], "mine");
        let mut turn = json!({"type": "assistant", "parent_tool_use_id": "toolu_0",
        "message": {"content": [
            {"type": "thinking", "thinking": "hm", "signature": ""},
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}},
        ]}});
        assert!(without_subagent_text(&mut turn));
        assert_eq!(
            turn["message"]["content"],
            json!([{"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}])
        );
        let mut answer = json!({"type": "assistant", "parent_tool_use_id": "toolu_0",
            "message": {"content": [{"type": "text", "text": "done"}]}});
        assert!(!without_subagent_text(&mut answer));
        let mut result = json!({"type": "user", "parent_tool_use_id": "toolu_0",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "toolu_1"}]}});
        assert!(without_subagent_text(&mut result));
        let mut event = json!({"type": "stream_event", "parent_tool_use_id": "toolu_0"});
        assert!(!without_subagent_text(&mut event));
    }
}
