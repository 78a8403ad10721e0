//! The fake Anthropic API: `POST /v1/messages`, `x-api-key`, `anthropic-version`.

use serde_json::{Value, json};

use super::{
    FAKE_INPUT_TOKENS, FAKE_OUTPUT_TOKENS, FakeToolCall, at, halves, is_base64, text_pieces,
};
use crate::RecordedRequest;

pub(super) fn check(
    request: &RecordedRequest,
    body: &Value,
    model: &str,
    key: &str,
) -> Result<bool, String> {
    if request.path != "/v1/messages" {
        return Err(format!(
            "unexpected path `{}` (expected `/v1/messages`)",
            request.path
        ));
    }
    if request.header("x-api-key") != Some(key) {
        return Err("missing or wrong x-api-key header".to_owned());
    }
    if request.header("anthropic-version").is_none() {
        return Err("missing anthropic-version header".to_owned());
    }
    if body.get("model").and_then(Value::as_str) != Some(model) {
        return Err(format!("`model` must be \"{model}\""));
    }
    if body
        .get("max_tokens")
        .and_then(Value::as_u64)
        .is_none_or(|max| max == 0)
    {
        return Err("`max_tokens` is required and must be a positive integer".to_owned());
    }
    if let Some(thinking) = body.get("thinking") {
        // The API's rules: a budget of at least 1024 below `max_tokens`, no temperature.
        let budget = thinking.get("budget_tokens").and_then(Value::as_u64);
        let max = body.get("max_tokens").and_then(Value::as_u64).unwrap_or(0);
        if thinking.get("type").and_then(Value::as_str) != Some("enabled")
            || budget.is_none_or(|budget| budget < 1024 || budget >= max)
        {
            return Err(
                "`thinking` must be {type: enabled, budget_tokens >= 1024, < max_tokens}"
                    .to_owned(),
            );
        }
        if body.get("temperature").is_some() {
            return Err("`temperature` may not be set with `thinking`".to_owned());
        }
    }
    if body.get("system").is_some_and(|system| !system.is_string()) {
        return Err("`system` must be a string".to_owned());
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .filter(|messages| !messages.is_empty())
        .ok_or("`messages` must be a non-empty array")?;
    let mut open_calls: Vec<String> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        let here = at("messages", index);
        let role = message.get("role").and_then(Value::as_str);
        let expected = if index % 2 == 0 { "user" } else { "assistant" };
        if role != Some(expected) {
            return Err(format!(
                "{here}.role must be \"{expected}\" (roles alternate, starting with user)"
            ));
        }
        let blocks = match message.get("content") {
            Some(Value::String(_)) => continue,
            Some(Value::Array(blocks)) if !blocks.is_empty() => blocks,
            _ => {
                return Err(format!(
                    "{here}.content must be a string or non-empty array"
                ));
            }
        };
        let mut called = Vec::new();
        for (block_index, block) in blocks.iter().enumerate() {
            let here = at(&format!("{here}.content"), block_index);
            match (block.get("type").and_then(Value::as_str), role) {
                (Some("thinking"), Some("assistant")) => {
                    if block_index != 0
                        || block.get("signature").and_then(Value::as_str) != Some(SIGNATURE)
                        || !block.get("thinking").is_some_and(Value::is_string)
                    {
                        return Err(format!(
                            "{here}: a thinking block must come first, with its thinking and the signature it was given"
                        ));
                    }
                }
                (Some("text"), _) => {
                    if block
                        .get("text")
                        .and_then(Value::as_str)
                        .is_none_or(str::is_empty)
                    {
                        return Err(format!("{here}: text blocks must not be empty"));
                    }
                }
                (Some(kind @ ("image" | "document")), Some("user")) => {
                    let source = &block["source"];
                    let valid = source.get("type").and_then(Value::as_str) == Some("base64")
                        && source
                            .get("media_type")
                            .and_then(Value::as_str)
                            .is_some_and(|mime| {
                                if kind == "image" {
                                    mime.starts_with("image/")
                                } else {
                                    mime == "application/pdf"
                                }
                            })
                        && source
                            .get("data")
                            .and_then(Value::as_str)
                            .is_some_and(is_base64);
                    if !valid {
                        return Err(format!(
                            "{here}: {kind} needs source {{type: base64, media_type, data}}"
                        ));
                    }
                }
                (Some("tool_use"), Some("assistant")) => {
                    let id = block.get("id").and_then(Value::as_str);
                    if id.is_none()
                        || !block.get("name").is_some_and(Value::is_string)
                        || !block.get("input").is_some_and(Value::is_object)
                    {
                        return Err(format!("{here}: tool_use needs id, name and object input"));
                    }
                    called.push(id.unwrap_or_default().to_owned());
                }
                (Some("tool_result"), Some("user")) => {
                    let id = block.get("tool_use_id").and_then(Value::as_str);
                    if !id.is_some_and(|id| open_calls.iter().any(|open| open == id)) {
                        return Err(format!(
                            "{here}: tool_use_id must name a tool_use of the previous assistant message"
                        ));
                    }
                    if block
                        .get("content")
                        .is_some_and(|c| !c.is_string() && !c.is_array())
                    {
                        return Err(format!(
                            "{here}: tool_result content must be a string or array"
                        ));
                    }
                }
                _ => return Err(format!("{here}: block type not allowed for this role")),
            }
        }
        open_calls = called;
    }
    for (index, tool) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if !tool.get("name").is_some_and(Value::is_string)
            || !tool.get("input_schema").is_some_and(Value::is_object)
        {
            return Err(format!(
                "{} needs name and object input_schema",
                at("tools", index)
            ));
        }
    }
    Ok(body.get("stream").and_then(Value::as_bool) == Some(true))
}

fn stop_reason(calls: &[FakeToolCall]) -> &'static str {
    if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

/// The signature of every fake thinking block.
const SIGNATURE: &str = "fake-signature";

pub(super) fn reply(model: &str, thinking: &str, text: &str, calls: &[FakeToolCall]) -> Value {
    let mut content = Vec::new();
    if !thinking.is_empty() {
        content.push(json!({"type": "thinking", "thinking": thinking, "signature": SIGNATURE}));
    }
    if !text.is_empty() {
        content.push(json!({"type": "text", "text": text}));
    }
    content.extend(calls.iter().map(
        |call| json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}),
    ));
    json!({
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason(calls),
        "stop_sequence": null,
        "usage": {"input_tokens": FAKE_INPUT_TOKENS, "output_tokens": FAKE_OUTPUT_TOKENS},
    })
}

pub(super) fn stream(
    model: &str,
    thinking: &str,
    text: &str,
    calls: &[FakeToolCall],
) -> Vec<String> {
    let event = |data: Value| {
        let kind = data["type"].as_str().unwrap_or_default().to_owned();
        format!("event: {kind}\ndata: {data}\n\n")
    };
    let mut events = vec![
        event(json!({"type": "message_start", "message": {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": FAKE_INPUT_TOKENS, "output_tokens": 1},
        }})),
        event(json!({"type": "ping"})),
    ];
    let mut index = 0;
    if !thinking.is_empty() {
        events.push(event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}})));
        for piece in text_pieces(thinking) {
            events.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": piece}})));
        }
        events.push(event(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": SIGNATURE}})));
        events.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    if !text.is_empty() {
        events.push(event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}})));
        for piece in text_pieces(text) {
            events.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": piece}})));
        }
        events.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    for call in calls {
        events.push(event(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}})));
        for piece in halves(&call.args.to_string()) {
            events.push(event(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        events.push(event(json!({"type": "content_block_stop", "index": index})));
        index += 1;
    }
    events.push(event(json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason(calls), "stop_sequence": null},
        "usage": {"output_tokens": FAKE_OUTPUT_TOKENS}})));
    events.push(event(json!({"type": "message_stop"})));
    events
}

pub(super) fn error(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    };
    json!({"type": "error", "error": {"type": kind, "message": message}})
}
