//! The create body's `input`: a string, content, a list of content or a list of steps, with
//! inline media checked (type, base64) and kept as given.

use serde_json::{Map, Value, json};

use hookbox_store::json_kind;

use super::{boolean, invalid, object, string};
use crate::service::ServiceError;
use crate::service::steps::parse_data_uri;

/// `input`: a string, one content object, a list of content objects, or a list of steps.
pub(super) fn parse_input(value: &Value) -> Result<Vec<Value>, ServiceError> {
    match value {
        Value::String(text) => Ok(vec![json!({
            "type": "user_input",
            "content": [{"type": "text", "text": text}],
        })]),
        Value::Object(map) if is_step_type(map) => Ok(vec![parse_step(value, "$.input")?]),
        Value::Object(_) => Ok(vec![json!({
            "type": "user_input",
            "content": [parse_content(value, "$.input")?],
        })]),
        Value::Array(items) if items.is_empty() => Err(invalid("$.input", "empty list")),
        Value::Array(items) => {
            let steps = items
                .iter()
                .filter(|item| item.as_object().is_some_and(is_step_type))
                .count();
            if steps == items.len() {
                items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| parse_step(item, &format!("$.input[{index}]")))
                    .collect()
            } else if steps == 0 {
                let content = items
                    .iter()
                    .enumerate()
                    .map(|(index, item)| parse_content(item, &format!("$.input[{index}]")))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(vec![json!({"type": "user_input", "content": content})])
            } else {
                Err(invalid(
                    "$.input",
                    "mixes steps and content objects; give either a list of steps or a list of \
                     content",
                ))
            }
        }
        other => Err(invalid(
            "$.input",
            format!(
                "expected a string, content or a list, got {}",
                json_kind(other)
            ),
        )),
    }
}

/// Whether an input object is a step rather than content.
fn is_step_type(map: &Map<String, Value>) -> bool {
    map.get("type")
        .and_then(Value::as_str)
        .is_some_and(|kind| !matches!(kind, "text" | "image" | "audio" | "video" | "document"))
}

/// One input step: `user_input` or `function_result`.
fn parse_step(value: &Value, path: &str) -> Result<Value, ServiceError> {
    let map = object(value, path)?;
    let kind = map.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "user_input" => {
            let content_path = format!("{path}.content");
            let content = match map.get("content") {
                Some(Value::Array(parts)) => parts
                    .iter()
                    .enumerate()
                    .map(|(index, part)| parse_content(part, &format!("{content_path}[{index}]")))
                    .collect::<Result<Vec<_>, _>>()?,
                Some(part @ Value::Object(_)) => vec![parse_content(part, &content_path)?],
                Some(other) => {
                    return Err(invalid(
                        &content_path,
                        format!("expected a list of content, got {}", json_kind(other)),
                    ));
                }
                None => return Err(invalid(&content_path, "missing")),
            };
            Ok(json!({"type": "user_input", "content": content}))
        }
        "function_result" => {
            let call_id = match map.get("call_id") {
                Some(value) => string(value, &format!("{path}.call_id"))?,
                None => {
                    return Err(invalid(
                        &format!("{path}.call_id"),
                        "missing; give the `id` of the function_call step this answers",
                    ));
                }
            };
            let Some(result) = map.get("result") else {
                return Err(invalid(&format!("{path}.result"), "missing"));
            };
            let mut step = json!({"type": "function_result", "call_id": call_id, "result": result});
            if let Some(name) = map.get("name") {
                step["name"] = string(name, &format!("{path}.name"))?.into();
            }
            if let Some(is_error) = map.get("is_error") {
                step["is_error"] = boolean(Some(is_error), &format!("{path}.is_error"))?.into();
            }
            Ok(step)
        }
        other => Err(invalid(
            &format!("{path}.type"),
            format!(
                "input step type `{other}` is not accepted; give user_input or function_result"
            ),
        )),
    }
}

/// One content object: text, or an inline image or PDF document. Media is kept as given.
pub(super) fn parse_content(value: &Value, path: &str) -> Result<Value, ServiceError> {
    let map = object(value, path)?;
    let kind = match map.get("type") {
        Some(kind) => string(kind, &format!("{path}.type"))?,
        None => "text".to_owned(),
    };
    match kind.as_str() {
        "text" => {
            let text = match map.get("text") {
                Some(text) => string(text, &format!("{path}.text"))?,
                None => return Err(invalid(&format!("{path}.text"), "missing")),
            };
            Ok(json!({"type": "text", "text": text}))
        }
        "image" | "document" => {
            check_media(map, &kind, path)?;
            Ok(value.clone())
        }
        other => Err(invalid(
            &format!("{path}.type"),
            format!(
                "content type `{other}` is not supported; hookbox agents take text, image and \
                 document (PDF) input"
            ),
        )),
    }
}

/// Checks an `image` or `document` content object: inline `data` (base64) with `mime_type`,
/// or a `data:` `uri`.
fn check_media(map: &Map<String, Value>, kind: &str, path: &str) -> Result<(), ServiceError> {
    let given_type = map
        .get("mime_type")
        .map(|value| string(value, &format!("{path}.mime_type")))
        .transpose()?;
    let (mime_type, mime_path) = match (map.get("data"), map.get("uri")) {
        (Some(data), _) => {
            let data_path = format!("{path}.data");
            check_base64(&string(data, &data_path)?, &data_path)?;
            match given_type {
                Some(mime) => (mime, format!("{path}.mime_type")),
                None => {
                    return Err(invalid(
                        &format!("{path}.mime_type"),
                        format!(
                            "missing; give the {kind}'s MIME type (e.g. {})",
                            if kind == "image" {
                                "image/png"
                            } else {
                                "application/pdf"
                            }
                        ),
                    ));
                }
            }
        }
        (None, Some(uri)) => {
            let uri_path = format!("{path}.uri");
            let uri = string(uri, &uri_path)?;
            if !uri.starts_with("data:") {
                return Err(invalid(
                    &uri_path,
                    "only inline data is supported: give `data` (base64) with `mime_type`, or \
                     a `data:<mime type>;base64,<data>` URI; hookbox does not fetch URLs or files",
                ));
            }
            let Some((uri_type, data)) = parse_data_uri(&uri) else {
                return Err(invalid(
                    &uri_path,
                    "a `data:` URI must be `data:<mime type>;base64,<data>`",
                ));
            };
            check_base64(data, &uri_path)?;
            match given_type {
                Some(mime) => (mime, format!("{path}.mime_type")),
                None => (uri_type.to_owned(), uri_path),
            }
        }
        (None, None) => {
            return Err(invalid(
                &format!("{path}.data"),
                format!("missing; give the {kind} inline as `data` (base64) with `mime_type`"),
            ));
        }
    };
    let fits = match kind {
        "image" => mime_type.starts_with("image/"),
        _ => mime_type == "application/pdf",
    };
    if !fits {
        return Err(invalid(
            &mime_path,
            format!(
                "`{mime_type}` is not {}",
                if kind == "image" {
                    "an image type (image/…)"
                } else {
                    "supported for documents; only PDF (application/pdf) is"
                }
            ),
        ));
    }
    Ok(())
}

/// Checks that `data` is standard base64 (padding optional).
fn check_base64(data: &str, path: &str) -> Result<(), ServiceError> {
    if data.is_empty() {
        return Err(invalid(path, "empty; give the base64 of the content"));
    }
    let body = data.trim_end_matches('=');
    let padding = data.len() - body.len();
    if let Some((at, bad)) = body
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '+' || *c == '/'))
    {
        return Err(invalid(
            path,
            format!(
                "not valid base64: character {bad:?} at offset {at} (expected A-Z, a-z, 0-9, \
                 + and /, then up to two `=`)"
            ),
        ));
    }
    let valid_length = if padding == 0 {
        body.len() % 4 != 1
    } else {
        padding <= 2 && data.len().is_multiple_of(4)
    };
    if !valid_length {
        return Err(invalid(
            path,
            format!(
                "not valid base64: {} characters with {padding} `=` is not a whole number of \
                 bytes",
                data.len()
            ),
        ));
    }
    Ok(())
}
