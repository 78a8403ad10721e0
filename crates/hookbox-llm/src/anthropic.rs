//! Anthropic messages (`POST {base_url}/v1/messages`, `x-api-key`, `anthropic-version`). Tools
//! go out with an `input_schema`; calls come back as `tool_use` content blocks; results go back
//! as `tool_result` blocks in a user message (consecutive ones share a message, as the API
//! requires). Streaming is SSE: `message_start`, `content_block_start` / `_delta`
//! (`text_delta`, `input_json_delta`, `thinking_delta`, `signature_delta`) / `_stop`,
//! `message_delta` (stop reason, usage), `message_stop`, with `ping` and `error` events.
//! With a thinking budget the request asks for `thinking` (and leaves `temperature` out, which
//! the API refuses with thinking); thinking blocks come back with their signature and go back
//! first in their assistant message, as the API requires during tool use.

use serde_json::{Map, Value, json};

use super::http_model::{Flow, StreamAssembler, Wire, WireError, event_json};
use super::sse::SseEvent;
use super::types::content_text;
use super::{
    Conversation, Delta, FinishReason, Message, ModelReply, Thinking, ToolCall, ToolDeclaration,
    Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// The API version sent in `anthropic-version`.
pub(crate) const API_VERSION: &str = "2023-06-01";
/// `max_tokens` is required by the API; this is used when the configuration gives none.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The Anthropic messages wire format.
pub(crate) struct AnthropicWire {
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) max_tokens: u32,
    pub(crate) temperature: Option<f64>,
}

impl Wire for AnthropicWire {
    fn url(&self, _stream: bool) -> String {
        format!("{}/v1/messages", self.base_url)
    }

    fn body(&self, conversation: &Conversation, tools: &[ToolDeclaration], stream: bool) -> Value {
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        for (index, message) in conversation.messages.iter().enumerate() {
            let (role, blocks) = match message {
                Message::User { text } => {
                    let mut blocks: Vec<Value> = conversation
                        .media_of(index)
                        .map(|media| {
                            let kind = if media.is_document() {
                                "document"
                            } else {
                                "image"
                            };
                            json!({"type": kind, "source": {
                                "type": "base64",
                                "media_type": media.mime_type,
                                "data": media.data,
                            }})
                        })
                        .collect();
                    if !text.is_empty() || blocks.is_empty() {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    ("user", blocks)
                }
                Message::Assistant {
                    text,
                    tool_calls,
                    thinking,
                } => {
                    let mut blocks: Vec<Value> = thinking
                        .iter()
                        .map(|thinking| {
                            json!({"type": "thinking", "thinking": thinking.text,
                                "signature": thinking.signature})
                        })
                        .collect();
                    if !text.is_empty() {
                        blocks.push(json!({"type": "text", "text": text}));
                    }
                    blocks.extend(tool_calls.iter().map(|call| {
                        json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.args})
                    }));
                    ("assistant", blocks)
                }
                Message::ToolResult(result) => {
                    let mut block = json!({
                        "type": "tool_result",
                        "tool_use_id": result.call_id,
                        "content": content_text(&result.content),
                    });
                    if result.is_error {
                        block["is_error"] = json!(true);
                    }
                    ("user", vec![block])
                }
            };
            match messages.last_mut() {
                Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
                _ => messages.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let mut body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
        });
        if let Some(system) = &conversation.system {
            body["system"] = json!(system);
        }
        match conversation.thinking_budget {
            Some(budget) => {
                body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
                // `max_tokens` counts the thinking too and must exceed the budget.
                if self.max_tokens <= budget {
                    body["max_tokens"] = json!(budget.saturating_add(self.max_tokens));
                }
            }
            None => {
                if let Some(temperature) = self.temperature {
                    body["temperature"] = json!(temperature);
                }
            }
        }
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": tool.parameters,
                    })
                })
                .collect();
        }
        if stream {
            body["stream"] = json!(true);
        }
        body
    }

    fn parse(&self, body: &Value) -> Result<ModelReply, WireError> {
        let content = body
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| malformed("no `content` array"))?;
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        let mut thinking = Vec::new();
        for (index, block) in content.iter().enumerate() {
            let string = |name: &str| {
                block
                    .get(name)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            match block.get("type").and_then(Value::as_str) {
                Some("thinking") => thinking.push(Thinking {
                    text: string("thinking"),
                    signature: string("signature"),
                }),
                Some("text") => {
                    text.push_str(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                    );
                }
                Some("tool_use") => {
                    let field = |name: &str| {
                        block.get(name).and_then(Value::as_str).ok_or_else(|| {
                            malformed(&format!("content[{index}] (tool_use) has no `{name}`"))
                        })
                    };
                    tool_calls.push(ToolCall {
                        id: field("id")?.to_owned(),
                        name: field("name")?.to_owned(),
                        args: block
                            .get("input")
                            .cloned()
                            .unwrap_or_else(|| Value::Object(Map::new())),
                    });
                }
                _ => {} // redacted thinking and other blocks are not part of the reply
            }
        }
        let usage = body.get("usage");
        Ok(ModelReply {
            text,
            tool_calls,
            thinking,
            finish: finish_reason(body.get("stop_reason").and_then(Value::as_str)),
            usage: Usage {
                input_tokens: usage
                    .and_then(|u| u.get("input_tokens"))
                    .and_then(Value::as_u64),
                output_tokens: usage
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_u64),
            },
        })
    }

    fn assembler(&self) -> Box<dyn StreamAssembler> {
        Box::<AnthropicStream>::default()
    }
}

/// A content block being streamed.
#[derive(Debug)]
enum Block {
    Text(String),
    Thinking(Thinking),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Other,
}

/// Assembles Anthropic stream events.
#[derive(Debug, Default)]
struct AnthropicStream {
    blocks: Vec<(u64, Block)>,
    stop_reason: Option<String>,
    usage: Usage,
    stopped: bool,
}

impl AnthropicStream {
    fn block(&mut self, index: u64) -> Result<&mut Block, WireError> {
        self.blocks
            .iter_mut()
            .find(|(i, _)| *i == index)
            .map(|(_, block)| block)
            .ok_or_else(|| {
                malformed(&format!(
                    "a delta for content block {index}, which never started"
                ))
            })
    }
}

impl StreamAssembler for AnthropicStream {
    fn event(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Flow, WireError> {
        let data = event_json(&event)?;
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or_default();
        let index = data.get("index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "message_start" => {
                let usage = data.pointer("/message/usage");
                self.usage.input_tokens = usage
                    .and_then(|u| u.get("input_tokens"))
                    .and_then(Value::as_u64);
                self.usage.output_tokens = usage
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_u64);
            }
            "content_block_start" => {
                let start = data
                    .get("content_block")
                    .ok_or_else(|| malformed("content_block_start without `content_block`"))?;
                let text = |name: &str| {
                    start
                        .get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                let block = match start.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text(text("text")),
                    Some("thinking") => Block::Thinking(Thinking {
                        text: text("thinking"),
                        signature: text("signature"),
                    }),
                    Some("tool_use") => Block::ToolUse {
                        id: text("id"),
                        name: text("name"),
                        json: String::new(),
                    },
                    _ => Block::Other,
                };
                self.blocks.push((index, block));
            }
            "content_block_delta" => {
                let delta = data
                    .get("delta")
                    .ok_or_else(|| malformed("content_block_delta without `delta`"))?;
                let piece =
                    |name: &str| delta.get(name).and_then(Value::as_str).unwrap_or_default();
                match (
                    delta.get("type").and_then(Value::as_str),
                    self.block(index)?,
                ) {
                    (Some("text_delta"), Block::Text(text)) => {
                        let piece = piece("text");
                        on_delta(Delta::Text(piece));
                        text.push_str(piece);
                    }
                    (Some("thinking_delta"), Block::Thinking(thinking)) => {
                        let piece = piece("thinking");
                        on_delta(Delta::Thinking(piece));
                        thinking.text.push_str(piece);
                    }
                    (Some("signature_delta"), Block::Thinking(thinking)) => {
                        thinking.signature.push_str(piece("signature"));
                    }
                    (Some("input_json_delta"), Block::ToolUse { json, .. }) => {
                        json.push_str(piece("partial_json"));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(output) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = Some(output);
                }
            }
            "message_stop" => {
                self.stopped = true;
                return Ok(Flow::Done);
            }
            "error" => {
                let message = data
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .map_or_else(|| data.to_string(), str::to_owned);
                return Err(WireError::Reported(message));
            }
            _ => {} // ping, content_block_stop, and future event types
        }
        Ok(Flow::Continue)
    }

    fn finish(self: Box<Self>) -> Result<ModelReply, WireError> {
        if !self.stopped {
            return Err(malformed("the stream ended before `message_stop`"));
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        let mut thinking = Vec::new();
        for (_, block) in self.blocks {
            match block {
                Block::Text(piece) => text.push_str(&piece),
                Block::Thinking(block) => thinking.push(block),
                Block::ToolUse { id, name, json } => {
                    let args = if json.trim().is_empty() {
                        Value::Object(Map::new())
                    } else {
                        serde_json::from_str(&json).map_err(|error| {
                            malformed(&format!(
                                "the streamed input of tool call `{name}` is not JSON ({error})"
                            ))
                        })?
                    };
                    tool_calls.push(ToolCall { id, name, args });
                }
                Block::Other => {}
            }
        }
        Ok(ModelReply {
            text,
            tool_calls,
            thinking,
            finish: finish_reason(self.stop_reason.as_deref()),
            usage: self.usage,
        })
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        Some("end_turn" | "stop_sequence") | None => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::MaxTokens,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn malformed(reason: &str) -> WireError {
    WireError::Malformed(reason.to_owned())
}
