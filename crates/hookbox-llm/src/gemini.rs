//! Gemini `generateContent` (`POST {base_url}/models/{model}:generateContent`, key in
//! `x-goog-api-key`). Tools go out as `tools[].functionDeclarations`; calls come back as
//! `functionCall` parts of the `model` content; results go back as `functionResponse` parts
//! (`response` is an object: `{"output": …}` or `{"error": …}` unless the result already is an
//! object). Streaming is `:streamGenerateContent?alt=sse`: SSE whose every `data:` is a whole
//! `GenerateContentResponse` carrying the next parts; the stream's end is the end.

use serde_json::{Map, Value, json};

use super::http_model::{Flow, StreamAssembler, Wire, WireError, event_json};
use super::sse::SseEvent;
use super::{
    Conversation, Delta, FinishReason, Message, ModelReply, Thinking, ToolCall, ToolDeclaration,
    Usage,
};

/// The default base URL.
pub(crate) const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// Prefix of tool call ids hookbox makes up when Gemini gives none; such ids are not sent back.
const LOCAL_ID_PREFIX: &str = "hookbox-gemini-call-";

/// The Gemini wire format.
pub(crate) struct GeminiWire {
    pub(crate) base_url: String,
    pub(crate) model: String,
    pub(crate) max_tokens: Option<u32>,
    pub(crate) temperature: Option<f64>,
}

impl Wire for GeminiWire {
    fn url(&self, stream: bool) -> String {
        let model = self.model.strip_prefix("models/").unwrap_or(&self.model);
        if stream {
            format!(
                "{}/models/{model}:streamGenerateContent?alt=sse",
                self.base_url
            )
        } else {
            format!("{}/models/{model}:generateContent", self.base_url)
        }
    }

    fn body(&self, conversation: &Conversation, tools: &[ToolDeclaration], _stream: bool) -> Value {
        let mut contents: Vec<(&str, Vec<Value>)> = Vec::new();
        for (index, message) in conversation.messages.iter().enumerate() {
            let (role, parts) = match message {
                Message::User { text } => {
                    let mut parts = Vec::new();
                    let media: Vec<Value> = conversation
                        .media_of(index)
                        .map(|media| {
                            json!({"inline_data": {"mime_type": media.mime_type, "data": media.data}})
                        })
                        .collect();
                    if !text.is_empty() || media.is_empty() {
                        parts.push(json!({"text": text}));
                    }
                    parts.extend(media);
                    ("user", parts)
                }
                Message::Assistant {
                    text, tool_calls, ..
                } => {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"text": text}));
                    }
                    parts.extend(tool_calls.iter().map(|call| {
                        let mut function_call = json!({"name": call.name, "args": call.args});
                        if !call.id.starts_with(LOCAL_ID_PREFIX) {
                            function_call["id"] = json!(call.id);
                        }
                        json!({"functionCall": function_call})
                    }));
                    ("model", parts)
                }
                Message::ToolResult(result) => {
                    let response = match (&result.content, result.is_error) {
                        (content, true) => json!({"error": content}),
                        (Value::Object(object), false) => Value::Object(object.clone()),
                        (content, false) => json!({"output": content}),
                    };
                    let mut function_response = json!({"name": result.name, "response": response});
                    if !result.call_id.starts_with(LOCAL_ID_PREFIX) {
                        function_response["id"] = json!(result.call_id);
                    }
                    ("user", vec![json!({"functionResponse": function_response})])
                }
            };
            match contents.last_mut() {
                Some((last_role, last_parts)) if *last_role == role => last_parts.extend(parts),
                _ => contents.push((role, parts)),
            }
        }
        let contents: Vec<Value> = contents
            .into_iter()
            .map(|(role, parts)| json!({"role": role, "parts": parts}))
            .collect();
        let mut body = json!({"contents": contents});
        if let Some(system) = &conversation.system {
            body["systemInstruction"] = json!({"parts": [{"text": system}]});
        }
        if !tools.is_empty() {
            let declarations: Vec<Value> = tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters,
                    })
                })
                .collect();
            body["tools"] = json!([{"functionDeclarations": declarations}]);
        }
        let mut generation = Map::new();
        if let Some(max_tokens) = self.max_tokens {
            generation.insert("maxOutputTokens".to_owned(), json!(max_tokens));
        }
        if let Some(temperature) = self.temperature {
            generation.insert("temperature".to_owned(), json!(temperature));
        }
        if let Some(budget) = conversation.thinking_budget {
            generation.insert(
                "thinkingConfig".to_owned(),
                json!({"thinkingBudget": budget, "includeThoughts": true}),
            );
        }
        if !generation.is_empty() {
            body["generationConfig"] = Value::Object(generation);
        }
        body
    }

    fn parse(&self, body: &Value) -> Result<ModelReply, WireError> {
        let mut assembler = GeminiStream::default();
        assembler.response(body, &mut |_: Delta<'_>| {})?;
        Box::new(assembler).finish()
    }

    fn assembler(&self) -> Box<dyn StreamAssembler> {
        Box::<GeminiStream>::default()
    }
}

/// Accumulates `GenerateContentResponse`s (one for `generateContent`, many when streamed).
#[derive(Debug, Default)]
struct GeminiStream {
    text: String,
    /// The thought summaries (`thought: true` parts), joined.
    thinking: String,
    tool_calls: Vec<ToolCall>,
    finish: Option<String>,
    block_reason: Option<String>,
    usage: Usage,
    responses: usize,
}

impl GeminiStream {
    fn response(
        &mut self,
        response: &Value,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<(), WireError> {
        if let Some(error) = response.get("error") {
            let message = error.get("message").and_then(Value::as_str);
            return Err(WireError::Reported(
                message.map_or_else(|| error.to_string(), str::to_owned),
            ));
        }
        if !response.is_object() {
            return Err(malformed("a response is not a JSON object"));
        }
        self.responses += 1;
        if let Some(reason) = response
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            self.block_reason = Some(reason.to_owned());
        }
        if let Some(metadata) = response.get("usageMetadata") {
            let count = |field: &str| metadata.get(field).and_then(Value::as_u64);
            self.usage = Usage {
                input_tokens: count("promptTokenCount"),
                output_tokens: count("candidatesTokenCount"),
            };
        }
        let Some(candidate) = response.pointer("/candidates/0") else {
            return Ok(());
        };
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(reason.to_owned());
        }
        let parts = candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for part in parts {
            let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
            match part.get("text").and_then(Value::as_str) {
                Some(text) if thought => {
                    on_delta(Delta::Thinking(text));
                    self.thinking.push_str(text);
                }
                Some(text) => {
                    on_delta(Delta::Text(text));
                    self.text.push_str(text);
                }
                None => {}
            }
            if thought {
                continue;
            }
            if let Some(call) = part.get("functionCall") {
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| malformed("a functionCall part has no `name`"))?;
                let id = call.get("id").and_then(Value::as_str).map_or_else(
                    || format!("{LOCAL_ID_PREFIX}{}", self.tool_calls.len()),
                    str::to_owned,
                );
                self.tool_calls.push(ToolCall {
                    id,
                    name: name.to_owned(),
                    args: call
                        .get("args")
                        .cloned()
                        .unwrap_or_else(|| Value::Object(Map::new())),
                });
            }
        }
        Ok(())
    }
}

impl StreamAssembler for GeminiStream {
    fn event(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Flow, WireError> {
        self.response(&event_json(&event)?, on_delta)?;
        Ok(Flow::Continue)
    }

    fn finish(self: Box<Self>) -> Result<ModelReply, WireError> {
        if self.responses == 0 {
            return Err(malformed("the stream held no response"));
        }
        if self.finish.is_none() && self.tool_calls.is_empty() && self.text.is_empty() {
            if self.block_reason.is_some() {
                return Ok(ModelReply {
                    text: String::new(),
                    tool_calls: Vec::new(),
                    thinking: Vec::new(),
                    finish: FinishReason::ContentFilter,
                    usage: self.usage,
                });
            }
            return Err(malformed("no `candidates` with content"));
        }
        let finish = match self.finish.as_deref() {
            _ if !self.tool_calls.is_empty() => FinishReason::ToolCalls,
            Some("STOP") | None => FinishReason::Stop,
            Some("MAX_TOKENS") => FinishReason::MaxTokens,
            Some(
                "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII"
                | "IMAGE_SAFETY",
            ) => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        let thinking = if self.thinking.is_empty() {
            Vec::new()
        } else {
            vec![Thinking {
                text: self.thinking,
                signature: String::new(),
            }]
        };
        Ok(ModelReply {
            text: self.text,
            tool_calls: self.tool_calls,
            thinking,
            finish,
            usage: self.usage,
        })
    }
}

fn malformed(reason: &str) -> WireError {
    WireError::Malformed(reason.to_owned())
}
