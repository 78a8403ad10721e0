//! The fake Gemini API: `POST /v1beta/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`, key in `x-goog-api-key`.

use serde_json::{Value, json};

use super::{FAKE_INPUT_TOKENS, FAKE_OUTPUT_TOKENS, FakeToolCall, at, is_base64, text_pieces};
use crate::RecordedRequest;

pub(super) fn check(
    request: &RecordedRequest,
    body: &Value,
    model: &str,
    key: &str,
) -> Result<bool, String> {
    let plain = format!("/v1beta/models/{model}:generateContent");
    let streamed = format!("/v1beta/models/{model}:streamGenerateContent?alt=sse");
    let stream = if request.path == plain {
        false
    } else if request.path == streamed {
        true
    } else {
        return Err(format!(
            "unexpected path `{}` (expected `{plain}` or `{streamed}`)",
            request.path
        ));
    };
    if request.header("x-goog-api-key") != Some(key) {
        return Err("missing or wrong x-goog-api-key header".to_owned());
    }
    let contents = body
        .get("contents")
        .and_then(Value::as_array)
        .filter(|contents| !contents.is_empty())
        .ok_or("`contents` must be a non-empty array")?;
    let mut called: Vec<String> = Vec::new();
    for (index, content) in contents.iter().enumerate() {
        let here = at("contents", index);
        let role = content.get("role").and_then(Value::as_str);
        if !matches!(role, Some("user" | "model")) {
            return Err(format!("{here}.role must be \"user\" or \"model\""));
        }
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .filter(|parts| !parts.is_empty())
            .ok_or(format!("{here}.parts must be a non-empty array"))?;
        let mut answered = Vec::new();
        for (part_index, part) in parts.iter().enumerate() {
            let here = at(&format!("{here}.parts"), part_index);
            let kinds: Vec<&str> = [
                "text",
                "functionCall",
                "functionResponse",
                "inline_data",
                "inlineData",
            ]
            .into_iter()
            .filter(|kind| part.get(*kind).is_some())
            .collect();
            match kinds.as_slice() {
                ["text"] if part["text"].is_string() => {}
                [kind @ ("inline_data" | "inlineData")] if role == Some("user") => {
                    let blob = &part[*kind];
                    let mime = blob
                        .get("mime_type")
                        .or_else(|| blob.get("mimeType"))
                        .and_then(Value::as_str);
                    let data = blob.get("data").and_then(Value::as_str);
                    if mime.is_none_or(str::is_empty) || !data.is_some_and(is_base64) {
                        return Err(format!("{here}.{kind} needs `mime_type` and base64 `data`"));
                    }
                }
                ["functionCall"] if role == Some("model") => {
                    let call = &part["functionCall"];
                    let name = call.get("name").and_then(Value::as_str);
                    if name.is_none() || !call.get("args").is_some_and(Value::is_object) {
                        return Err(format!(
                            "{here}.functionCall needs `name` and object `args`"
                        ));
                    }
                    called.push(name.unwrap_or_default().to_owned());
                }
                ["functionResponse"] if role == Some("user") => {
                    let response = &part["functionResponse"];
                    let name = response
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    if !response.get("response").is_some_and(Value::is_object) {
                        return Err(format!(
                            "{here}.functionResponse.response must be an object"
                        ));
                    }
                    if !called.iter().any(|call| call == name) {
                        return Err(format!(
                            "{here}.functionResponse `{name}` answers no functionCall of the previous model turn"
                        ));
                    }
                    answered.push(name.to_owned());
                }
                _ => {
                    return Err(format!(
                        "{here} must hold exactly one of text, functionCall (model), functionResponse (user)"
                    ));
                }
            }
        }
        if role == Some("user") {
            called.clear();
        }
    }
    if let Some(system) = body.get("systemInstruction")
        && !system
            .pointer("/parts/0/text")
            .is_some_and(Value::is_string)
    {
        return Err("systemInstruction must be {\"parts\": [{\"text\": …}]}".to_owned());
    }
    if let Some(tools) = body.get("tools") {
        let declarations = tools
            .pointer("/0/functionDeclarations")
            .and_then(Value::as_array)
            .ok_or("tools must be [{\"functionDeclarations\": [...]}]")?;
        for (index, declaration) in declarations.iter().enumerate() {
            if !declaration.get("name").is_some_and(Value::is_string)
                || !declaration.get("parameters").is_some_and(Value::is_object)
            {
                return Err(format!(
                    "{} needs `name` and object `parameters`",
                    at("functionDeclarations", index)
                ));
            }
        }
    }
    Ok(stream)
}

fn call_part(call: &FakeToolCall) -> Value {
    let mut function_call = json!({"name": call.name, "args": call.args});
    if !call.id.is_empty() {
        function_call["id"] = json!(call.id);
    }
    json!({"functionCall": function_call})
}

fn response(model: &str, parts: Vec<Value>, finish: bool) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    let mut response = json!({"candidates": [candidate.clone()], "modelVersion": model});
    if finish {
        candidate["finishReason"] = json!("STOP");
        response["candidates"] = json!([candidate]);
        response["usageMetadata"] = json!({
            "promptTokenCount": FAKE_INPUT_TOKENS,
            "candidatesTokenCount": FAKE_OUTPUT_TOKENS,
            "totalTokenCount": FAKE_INPUT_TOKENS + FAKE_OUTPUT_TOKENS,
        });
    }
    response
}

pub(super) fn reply(model: &str, thinking: &str, text: &str, calls: &[FakeToolCall]) -> Value {
    let mut parts = Vec::new();
    if !thinking.is_empty() {
        parts.push(json!({"text": thinking, "thought": true}));
    }
    if !text.is_empty() {
        parts.push(json!({"text": text}));
    }
    parts.extend(calls.iter().map(call_part));
    response(model, parts, true)
}

pub(super) fn stream(
    model: &str,
    thinking: &str,
    text: &str,
    calls: &[FakeToolCall],
) -> Vec<String> {
    let thoughts = text_pieces(thinking)
        .into_iter()
        .map(|piece| json!({"text": piece, "thought": true}));
    let texts = text_pieces(text)
        .into_iter()
        .map(|piece| json!({"text": piece}));
    let mut responses: Vec<Value> = thoughts
        .chain(texts)
        .map(|part| response(model, vec![part], false))
        .collect();
    // Gemini sends function calls whole, in the last response with the finish reason.
    responses.push(response(model, calls.iter().map(call_part).collect(), true));
    responses
        .into_iter()
        .map(|response| format!("data: {response}\r\n\r\n"))
        .collect()
}

pub(super) fn error(status: u16, message: &str) -> Value {
    let code = match status {
        400 => "INVALID_ARGUMENT",
        401 | 403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": code}})
}
