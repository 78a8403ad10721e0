//! Partial messages (Claude Code's `--include-partial-messages`): while the model answers, its
//! text goes out as Anthropic-style stream events (`message_start`, `content_block_start` /
//! `_delta` / `_stop`, `message_delta`, `message_stop`), whatever the provider. Text and
//! thinking (`text_delta`, `thinking_delta`) arrive as the provider streams them; tool calls are
//! sent whole once the reply is complete (their `input_json_delta` carries the whole input).

use hookbox_llm::{Delta, FinishReason, ModelReply};
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

use super::messages::SessionMessage;

/// The stream events of one model turn, sent to the session's stream (not to its transcript,
/// as Claude Code does not record them either).
pub(crate) struct PartialStream {
    stream: UnboundedSender<SessionMessage>,
    parent_tool_use_id: Option<String>,
    /// The index of the next content block.
    next_index: u64,
    /// The block being streamed, if one is open: its index and whether it is thinking.
    open: Option<(u64, bool)>,
}

impl PartialStream {
    /// Starts a turn: sends `message_start` for message `id` of `model`.
    pub(crate) fn start(
        stream: UnboundedSender<SessionMessage>,
        parent_tool_use_id: Option<String>,
        id: &str,
        model: &str,
    ) -> Self {
        let partial = Self {
            stream,
            parent_tool_use_id,
            next_index: 0,
            open: None,
        };
        partial.send(json!({"type": "message_start", "message": {
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }}));
        partial
    }

    /// A piece of the answer's text or thinking, as the provider streamed it: it goes to the
    /// open block of its kind, or a new one.
    pub(crate) fn delta(&mut self, delta: Delta<'_>) {
        let (piece, thinking) = match delta {
            Delta::Text(piece) => (piece, false),
            Delta::Thinking(piece) => (piece, true),
        };
        if piece.is_empty() {
            return;
        }
        let index = match self.open {
            Some((index, open_thinking)) if open_thinking == thinking => index,
            _ => {
                self.close();
                let index = self.open_block(if thinking {
                    json!({"type": "thinking", "thinking": "", "signature": ""})
                } else {
                    json!({"type": "text", "text": ""})
                });
                self.open = Some((index, thinking));
                index
            }
        };
        let delta = if thinking {
            json!({"type": "thinking_delta", "thinking": piece})
        } else {
            json!({"type": "text_delta", "text": piece})
        };
        self.send(json!({"type": "content_block_delta", "index": index, "delta": delta}));
    }

    /// Closes the open block, if any.
    fn close(&mut self) {
        if let Some((index, _)) = self.open.take() {
            self.send(json!({"type": "content_block_stop", "index": index}));
        }
    }

    /// Ends the turn with its complete `reply`: closes the open block, sends each tool call as
    /// a block, then `message_delta` (stop reason, usage) and `message_stop`.
    pub(crate) fn finish(mut self, reply: &ModelReply) {
        self.close();
        for call in &reply.tool_calls {
            let index = self.open_block(
                json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
            );
            self.send(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": call.args.to_string()}}));
            self.send(json!({"type": "content_block_stop", "index": index}));
        }
        self.send(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(&reply.finish), "stop_sequence": null},
        "usage": {
            "input_tokens": reply.usage.input_tokens.unwrap_or(0),
            "output_tokens": reply.usage.output_tokens.unwrap_or(0),
        }}));
        self.send(json!({"type": "message_stop"}));
    }

    fn open_block(&mut self, content_block: Value) -> u64 {
        let index = self.next_index;
        self.next_index += 1;
        self.send(json!({"type": "content_block_start", "index": index,
            "content_block": content_block}));
        index
    }

    /// Sends one event; a reader that went away does not stop the session.
    fn send(&self, event: Value) {
        let _ = self.stream.send(SessionMessage::StreamEvent {
            event,
            parent_tool_use_id: self.parent_tool_use_id.clone(),
        });
    }
}

/// Claude's `stop_reason` for `finish`.
fn stop_reason(finish: &FinishReason) -> &str {
    match finish {
        FinishReason::Stop => "end_turn",
        FinishReason::ToolCalls => "tool_use",
        FinishReason::MaxTokens => "max_tokens",
        FinishReason::ContentFilter => "refusal",
        FinishReason::Other(other) => other,
    }
}
