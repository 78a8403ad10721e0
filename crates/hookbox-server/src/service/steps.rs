//! The Interactions API steps (`docs/wire/interactions-api.md`) of the agent's typed
//! [`Step`]s: [`render`] makes the JSON of a step the agent made, [`parse`] reads a stored or
//! requested step back for the agent.

use serde_json::{Value, json};

use hookbox_agent::interaction::Step;
use hookbox_env::CODE_EXECUTION;
use hookbox_llm::{Media, ToolCall, ToolResult};

/// `step` as an Interactions API step: `user_input` and `model_output` with their content;
/// `code_execution_call` / `code_execution_result` for code, `function_call` /
/// `function_result` for every other tool.
///
/// Input steps are stored as the request gave them (checked), not rendered back.
pub(crate) fn render(step: &Step) -> Value {
    match step {
        Step::UserInput { text, media } => {
            let mut content = vec![json!({"type": "text", "text": text})];
            content.extend(media.iter().map(|media| {
                let kind = if media.is_document() {
                    "document"
                } else {
                    "image"
                };
                json!({"type": kind, "mime_type": media.mime_type, "data": media.data})
            }));
            json!({"type": "user_input", "content": content})
        }
        Step::ModelOutput(text) => {
            json!({"type": "model_output", "content": [{"type": "text", "text": text}]})
        }
        Step::Call(call) if call.name == CODE_EXECUTION => {
            json!({"type": "code_execution_call", "id": call.id, "arguments": call.args})
        }
        Step::Call(call) => {
            json!({"type": "function_call", "id": call.id, "name": call.name, "arguments": call.args})
        }
        Step::Result(result) if result.name == CODE_EXECUTION => {
            let text = match &result.content {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            json!({"type": "code_execution_result", "call_id": result.call_id, "result": text, "is_error": result.is_error})
        }
        Step::Result(result) => {
            json!({"type": "function_result", "call_id": result.call_id, "name": result.name, "result": result.content, "is_error": result.is_error})
        }
    }
}

/// A stored or requested Interactions API step as the agent's [`Step`]; `None` for step types
/// without a meaning to the model (thoughts, unknown ones). Missing fields read as empty.
pub(crate) fn parse(step: &Value) -> Option<Step> {
    let kind = step.get("type").and_then(Value::as_str)?;
    let parsed = match kind {
        "user_input" => Step::UserInput {
            text: content_text(step),
            media: content(step).filter_map(content_media).collect(),
        },
        "model_output" => Step::ModelOutput(content_text(step)),
        "code_execution_call" | "function_call" => Step::Call(ToolCall {
            id: string(step, "id"),
            name: tool_name(kind, step),
            args: step.get("arguments").cloned().unwrap_or(Value::Null),
        }),
        "code_execution_result" | "function_result" => Step::Result(ToolResult {
            call_id: string(step, "call_id"),
            name: tool_name(kind, step),
            content: step.get("result").cloned().unwrap_or(Value::Null),
            is_error: step
                .get("is_error")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }),
        _ => return None,
    };
    Some(parsed)
}

/// The parts of a step's `content` list.
fn content(step: &Value) -> impl Iterator<Item = &Value> {
    step.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// The text parts of a step's `content`, joined.
fn content_text(step: &Value) -> String {
    content(step)
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// The media of one `image` or `document` content object: `data` + `mime_type`, or a
/// `data:<mime>;base64,<data>` `uri`.
fn content_media(part: &Value) -> Option<Media> {
    let kind = part.get("type").and_then(Value::as_str)?;
    if !matches!(kind, "image" | "document") {
        return None;
    }
    let given_type = part.get("mime_type").and_then(Value::as_str);
    if let Some(data) = part.get("data").and_then(Value::as_str) {
        return Some(Media {
            mime_type: given_type?.to_owned(),
            data: data.to_owned(),
        });
    }
    let (uri_type, data) = parse_data_uri(part.get("uri").and_then(Value::as_str)?)?;
    Some(Media {
        mime_type: given_type.unwrap_or(uri_type).to_owned(),
        data: data.to_owned(),
    })
}

/// `data:<mime>;base64,<data>` as `(mime, data)`.
pub(crate) fn parse_data_uri(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let mime = header.strip_suffix(";base64")?;
    Some((mime, data))
}

/// The tool a call or result step is about: `code_execution` for code steps, else its `name`.
fn tool_name(kind: &str, step: &Value) -> String {
    if kind.starts_with(CODE_EXECUTION) {
        CODE_EXECUTION.to_owned()
    } else {
        string(step, "name")
    }
}

/// The string at `key` of `step`, empty when missing.
fn string(step: &Value, key: &str) -> String {
    step.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            args: json!({"code": "ls"}),
        }
    }

    fn result(name: &str, content: Value, is_error: bool) -> Step {
        Step::Result(ToolResult {
            call_id: "c1".into(),
            name: name.into(),
            content,
            is_error,
        })
    }

    #[test]
    fn code_steps_and_function_steps_render_as_their_wire_types() {
        assert_eq!(
            render(&Step::Call(call(CODE_EXECUTION))),
            json!({"type": "code_execution_call", "id": "c1", "arguments": {"code": "ls"}})
        );
        assert_eq!(
            render(&result(CODE_EXECUTION, json!("a.txt\n"), false)),
            json!({"type": "code_execution_result", "call_id": "c1", "result": "a.txt\n", "is_error": false})
        );
        assert_eq!(
            render(&Step::Call(call("read_file"))),
            json!({"type": "function_call", "id": "c1", "name": "read_file", "arguments": {"code": "ls"}})
        );
        assert_eq!(
            render(&result("read_file", json!({"content": "x"}), true)),
            json!({"type": "function_result", "call_id": "c1", "name": "read_file", "result": {"content": "x"}, "is_error": true})
        );
        assert_eq!(
            render(&Step::ModelOutput("hi".into())),
            json!({"type": "model_output", "content": [{"type": "text", "text": "hi"}]})
        );
    }

    #[test]
    fn what_render_makes_parses_back_to_the_same_step() {
        let steps = [
            Step::user_text("hi"),
            Step::UserInput {
                text: "look".into(),
                media: vec![Media {
                    mime_type: "image/png".into(),
                    data: "iVBO".into(),
                }],
            },
            Step::ModelOutput("ok".into()),
            Step::Call(call(CODE_EXECUTION)),
            result(CODE_EXECUTION, json!("a.txt\n"), false),
            Step::Call(call("read_file")),
            result("read_file", json!({"content": "x"}), true),
        ];
        for step in steps {
            assert_eq!(parse(&render(&step)), Some(step));
        }
    }

    #[test]
    fn requested_steps_parse_with_their_defaults_and_data_uris() {
        let input = json!({"type": "user_input", "content": [
            {"type": "text", "text": "a"},
            {"type": "image", "uri": "data:image/png;base64,iVBO"},
            {"type": "text", "text": "b"},
            {"type": "document", "mime_type": "application/pdf", "data": "JVBE"}
        ]});
        assert_eq!(
            parse(&input),
            Some(Step::UserInput {
                text: "ab".into(),
                media: vec![
                    Media {
                        mime_type: "image/png".into(),
                        data: "iVBO".into()
                    },
                    Media {
                        mime_type: "application/pdf".into(),
                        data: "JVBE".into()
                    },
                ],
            })
        );
        assert_eq!(
            parse(&json!({"type": "function_result", "call_id": "c1", "result": 42})),
            Some(result("", json!(42), false))
        );
        assert_eq!(parse(&json!({"type": "thought", "summary": []})), None);
        assert_eq!(parse_data_uri("data:image/png,iVBO"), None);
    }
}
