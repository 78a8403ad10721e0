//! The fake OpenAI-compatible API: `POST /v1/chat/completions`, `authorization: Bearer`.

use serde_json::{Value, json};

use super::{
    FAKE_INPUT_TOKENS, FAKE_OUTPUT_TOKENS, FakeToolCall, at, halves, is_data_url, text_pieces,
};
use crate::RecordedRequest;

pub(super) fn check(
    request: &RecordedRequest,
    body: &Value,
    model: &str,
    key: Option<&str>,
) -> Result<bool, String> {
    if request.path != "/v1/chat/completions" {
        return Err(format!(
            "unexpected path `{}` (expected `/v1/chat/completions`)",
            request.path
        ));
    }
    let authorization = request.header("authorization");
    match key {
        Some(key) if authorization != Some(format!("Bearer {key}").as_str()) => {
            return Err("missing or wrong `authorization: Bearer` header".to_owned());
        }
        None if authorization.is_some() => {
            return Err("unexpected authorization header (this server takes no key)".to_owned());
        }
        _ => {}
    }
    if body.get("model").and_then(Value::as_str) != Some(model) {
        return Err(format!("`model` must be \"{model}\""));
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .filter(|messages| !messages.is_empty())
        .ok_or("`messages` must be a non-empty array")?;
    let mut open_calls: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let here = at("messages", index);
        let content = message.get("content");
        match message.get("role").and_then(Value::as_str) {
            Some("system") if index == 0 && content.is_some_and(Value::is_string) => {}
            Some("user") if content.is_some_and(Value::is_string) => {}
            Some("user") if content.is_some_and(Value::is_array) => {
                for (part_index, part) in content
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let here = at(&format!("{here}.content"), part_index);
                    let valid = match part.get("type").and_then(Value::as_str) {
                        Some("text") => part.get("text").is_some_and(Value::is_string),
                        Some("image_url") => part
                            .pointer("/image_url/url")
                            .and_then(Value::as_str)
                            .is_some_and(|url| is_data_url(url) || url.starts_with("https://")),
                        Some("file") => part
                            .pointer("/file/file_data")
                            .and_then(Value::as_str)
                            .is_some_and(is_data_url),
                        _ => false,
                    };
                    if !valid {
                        return Err(format!(
                            "{here} must be a text, image_url (data: or https URL) or file \
                             (file_data data: URL) part"
                        ));
                    }
                }
            }
            Some("assistant") => {
                if !content.is_some_and(|c| c.is_string() || c.is_null()) {
                    return Err(format!("{here}.content must be a string or null"));
                }
                open_calls.clear();
                for (call_index, call) in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let here = at(&format!("{here}.tool_calls"), call_index);
                    let id = call.get("id").and_then(Value::as_str);
                    let arguments = call.pointer("/function/arguments").and_then(Value::as_str);
                    let valid = id.is_some()
                        && call.get("type").and_then(Value::as_str) == Some("function")
                        && call.pointer("/function/name").is_some_and(Value::is_string)
                        && arguments.is_some_and(|a| serde_json::from_str::<Value>(a).is_ok());
                    if !valid {
                        return Err(format!(
                            "{here} needs id, type \"function\", function.name and function.arguments as a JSON string"
                        ));
                    }
                    open_calls.push(id.unwrap_or_default().to_owned());
                }
            }
            Some("tool") => {
                let id = message.get("tool_call_id").and_then(Value::as_str);
                if !id.is_some_and(|id| open_calls.iter().any(|open| open == id)) {
                    return Err(format!(
                        "{here}.tool_call_id must name a tool call of the previous assistant message"
                    ));
                }
                if !content.is_some_and(Value::is_string) {
                    return Err(format!("{here}.content must be a string"));
                }
            }
            _ => return Err(format!("{here} has an invalid role or content")),
        }
    }
    for (index, tool) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if tool.get("type").and_then(Value::as_str) != Some("function")
            || !tool.pointer("/function/name").is_some_and(Value::is_string)
            || !tool
                .pointer("/function/parameters")
                .is_some_and(Value::is_object)
        {
            return Err(format!(
                "{} must be {{\"type\":\"function\",\"function\":{{name, parameters}}}}",
                at("tools", index)
            ));
        }
    }
    Ok(body.get("stream").and_then(Value::as_bool) == Some(true))
}

fn usage() -> Value {
    json!({
        "prompt_tokens": FAKE_INPUT_TOKENS,
        "completion_tokens": FAKE_OUTPUT_TOKENS,
        "total_tokens": FAKE_INPUT_TOKENS + FAKE_OUTPUT_TOKENS,
    })
}

fn finish_reason(calls: &[FakeToolCall]) -> &'static str {
    if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    }
}

pub(super) fn reply(model: &str, text: &str, calls: &[FakeToolCall]) -> Value {
    let mut message = json!({
        "role": "assistant",
        "content": if text.is_empty() { Value::Null } else { json!(text) },
        "refusal": null,
    });
    if !calls.is_empty() {
        message["tool_calls"] = calls
            .iter()
            .map(|call| {
                json!({"id": call.id, "type": "function", "function": {
                    "name": call.name, "arguments": call.args.to_string(),
                }})
            })
            .collect();
    }
    json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason(calls)}],
        "usage": usage(),
    })
}

pub(super) fn stream(model: &str, text: &str, calls: &[FakeToolCall]) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        json!({
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        })
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for piece in text_pieces(text) {
        chunks.push(chunk(json!({"content": piece}), Value::Null));
    }
    for (index, call) in calls.iter().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": index, "id": call.id, "type": "function",
                "function": {"name": call.name, "arguments": ""}}]}),
            Value::Null,
        ));
        for piece in halves(&call.args.to_string()) {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    chunks.push(chunk(json!({}), json!(finish_reason(calls))));
    let mut usage_chunk = chunk(json!({}), Value::Null);
    usage_chunk["choices"] = json!([]);
    usage_chunk["usage"] = usage();
    chunks.push(usage_chunk);
    let mut events: Vec<String> = chunks
        .into_iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    events.push("data: [DONE]\n\n".to_owned());
    events
}

pub(super) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 | 404 => "invalid_request_error",
        401 => "authentication_error",
        429 => "rate_limit_exceeded",
        _ => "server_error",
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": null}})
}
