//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`): OpenAI itself and
//! the servers that copy it (Ollama, vLLM, llama.cpp). Tools go out as `tools` of type
//! `function`; calls come back as `tool_calls` (arguments are a JSON *string*); results go back
//! as role `tool` messages. Streaming is SSE of `chat.completion.chunk`s with `delta.content`
//! and `delta.tool_calls` fragments keyed by `index`, ended by `data: [DONE]`.

use serde_json::{Map, Value, json};

use super::http_model::{Flow, StreamAssembler, Wire, WireError, event_json};
use super::sse::SseEvent;
use super::types::content_text;
use super::{
    Conversation, Delta, FinishReason, Message, ModelReply, ToolCall, ToolDeclaration, Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The OpenAI chat completions wire format.
pub(crate) struct OpenAiWire {
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f64>,
}

impl Wire for OpenAiWire {
    fn url(&self, _stream: bool) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn body(&self, conversation: &Conversation, tools: &[ToolDeclaration], stream: bool) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = &conversation.system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for (index, message) in conversation.messages.iter().enumerate() {
            messages.push(match message {
                Message::User { text } if conversation.media_of(index).next().is_some() => {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"type": "text", "text": text}));
                    }
                    for (n, media) in conversation.media_of(index).enumerate() {
                        parts.push(if media.is_document() {
                            json!({"type": "file", "file": {
                                "filename": format!("document-{}.pdf", n + 1),
                                "file_data": media.data_url(),
                            }})
                        } else {
                            json!({"type": "image_url", "image_url": {"url": media.data_url()}})
                        });
                    }
                    json!({"role": "user", "content": parts})
                }
                Message::User { text } => json!({"role": "user", "content": text}),
                Message::Assistant {
                    text, tool_calls, ..
                } => {
                    let mut out = json!({
                        "role": "assistant",
                        "content": if text.is_empty() { Value::Null } else { json!(text) },
                    });
                    if !tool_calls.is_empty() {
                        out["tool_calls"] = tool_calls
                            .iter()
                            .map(|call| {
                                json!({
                                    "id": call.id,
                                    "type": "function",
                                    "function": {"name": call.name, "arguments": call.args.to_string()},
                                })
                            })
                            .collect();
                    }
                    out
                }
                Message::ToolResult(result) => {
                    let text = content_text(&result.content);
                    let content = if result.is_error {
                        format!("Error: {text}")
                    } else {
                        text
                    };
                    json!({"role": "tool", "tool_call_id": result.call_id, "content": content})
                }
            });
        }
        let mut body = json!({"model": self.model, "messages": messages});
        if !tools.is_empty() {
            body["tools"] = tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    }})
                })
                .collect();
        }
        if let Some(max_tokens) = self.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if let Some(temperature) = self.temperature {
            body["temperature"] = json!(temperature);
        }
        if stream {
            body["stream"] = json!(true);
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    fn parse(&self, body: &Value) -> Result<ModelReply, WireError> {
        let choice = body
            .pointer("/choices/0")
            .ok_or_else(|| malformed("no `choices[0]`"))?;
        let message = choice
            .get("message")
            .ok_or_else(|| malformed("no `choices[0].message`"))?;
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let mut tool_calls = Vec::new();
        for (index, call) in message
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .ok_or_else(|| malformed(&format!("tool_calls[{index}] has no function.name")))?;
            let arguments = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let id = call.get("id").and_then(Value::as_str);
            tool_calls.push(tool_call(index, id, name, arguments)?);
        }
        Ok(ModelReply {
            finish: finish_reason(
                choice.get("finish_reason").and_then(Value::as_str),
                &tool_calls,
            ),
            text,
            tool_calls,
            thinking: Vec::new(),
            usage: usage(body.get("usage")),
        })
    }

    fn assembler(&self) -> Box<dyn StreamAssembler> {
        Box::<OpenAiStream>::default()
    }
}

/// A streamed tool call being assembled.
#[derive(Debug, Default)]
struct PartialCall {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Assembles `chat.completion.chunk` events.
#[derive(Debug, Default)]
struct OpenAiStream {
    text: String,
    calls: Vec<(u64, PartialCall)>,
    finish: Option<String>,
    usage: Usage,
    done: bool,
}

impl StreamAssembler for OpenAiStream {
    fn event(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Flow, WireError> {
        if event.data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Flow::Done);
        }
        let chunk = event_json(&event)?;
        if let Some(error) = chunk.get("error") {
            let message = error.get("message").and_then(Value::as_str);
            return Err(WireError::Reported(
                message.map_or_else(|| error.to_string(), str::to_owned),
            ));
        }
        if chunk.get("usage").is_some_and(Value::is_object) {
            self.usage = usage(chunk.get("usage"));
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return Ok(Flow::Continue);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(Flow::Continue);
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            on_delta(Delta::Text(text));
            self.text.push_str(text);
        }
        for fragment in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = fragment.get("index").and_then(Value::as_u64).unwrap_or(0);
            let position = match self.calls.iter().position(|(i, _)| *i == index) {
                Some(position) => position,
                None => {
                    self.calls.push((index, PartialCall::default()));
                    self.calls.len() - 1
                }
            };
            let call = &mut self.calls[position].1;
            if let Some(id) = fragment.get("id").and_then(Value::as_str) {
                call.id = Some(id.to_owned());
            }
            if let Some(name) = fragment.pointer("/function/name").and_then(Value::as_str) {
                call.name.push_str(name);
            }
            if let Some(arguments) = fragment
                .pointer("/function/arguments")
                .and_then(Value::as_str)
            {
                call.arguments.push_str(arguments);
            }
        }
        Ok(Flow::Continue)
    }

    fn finish(self: Box<Self>) -> Result<ModelReply, WireError> {
        if !self.done && self.finish.is_none() {
            return Err(malformed(
                "the stream ended without a finish_reason or `data: [DONE]`",
            ));
        }
        let mut tool_calls = Vec::new();
        for (index, (_, call)) in self.calls.iter().enumerate() {
            if call.name.is_empty() {
                return Err(malformed(&format!(
                    "streamed tool call {index} has no name"
                )));
            }
            tool_calls.push(tool_call(
                index,
                call.id.as_deref(),
                &call.name,
                &call.arguments,
            )?);
        }
        Ok(ModelReply {
            finish: finish_reason(self.finish.as_deref(), &tool_calls),
            text: self.text,
            tool_calls,
            thinking: Vec::new(),
            usage: self.usage,
        })
    }
}

fn tool_call(
    index: usize,
    id: Option<&str>,
    name: &str,
    arguments: &str,
) -> Result<ToolCall, WireError> {
    let args = if arguments.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(arguments).map_err(|error| {
            malformed(&format!(
                "the arguments of tool call `{name}` are not JSON ({error}): {arguments}"
            ))
        })?
    };
    Ok(ToolCall {
        id: id.map_or_else(|| format!("call_{index}"), str::to_owned),
        name: name.to_owned(),
        args,
    })
}

fn finish_reason(reason: Option<&str>, tool_calls: &[ToolCall]) -> FinishReason {
    match reason {
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::MaxTokens,
        Some("content_filter") => FinishReason::ContentFilter,
        _ if !tool_calls.is_empty() => FinishReason::ToolCalls,
        Some("stop") | None => FinishReason::Stop,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

fn usage(usage: Option<&Value>) -> Usage {
    let count = |field: &str| usage.and_then(|u| u.get(field)).and_then(Value::as_u64);
    Usage {
        input_tokens: count("prompt_tokens"),
        output_tokens: count("completion_tokens"),
    }
}

fn malformed(reason: &str) -> WireError {
    WireError::Malformed(reason.to_owned())
}
