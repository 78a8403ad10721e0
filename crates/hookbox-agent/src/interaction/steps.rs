//! Interactions API steps (`user_input`, `model_output`, `code_execution_call`, …) and their
//! translation to and from a model conversation.

use serde_json::{Value, json};

use hookbox_env::CODE_EXECUTION;
use hookbox_llm::{Conversation, Media, Message, ToolCall, ToolResult};

/// A `user_input` step with one text part.
pub fn user_input(text: &str) -> Value {
    json!({"type": "user_input", "content": [{"type": "text", "text": text}]})
}

/// A `model_output` step with one text part.
pub fn model_output(text: &str) -> Value {
    json!({"type": "model_output", "content": [{"type": "text", "text": text}]})
}

/// A step the agent loop makes, typed; [`render`] turns it into Interactions API JSON.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Step<'a> {
    /// Text the model answered.
    ModelOutput(&'a str),
    /// A tool call the model made.
    Call(&'a ToolCall),
    /// The result of `call`, as the model gets it back.
    Result {
        /// The call answered.
        call: &'a ToolCall,
        /// What the model gets back.
        content: &'a Value,
        /// Whether the call failed or was refused.
        is_error: bool,
    },
}

/// `step` as an Interactions API step: `model_output`; `code_execution_call` /
/// `code_execution_result` for code, `function_call` / `function_result` for every other tool.
/// The one place the loop's steps meet the wire format.
pub(crate) fn render(step: Step<'_>) -> Value {
    match step {
        Step::ModelOutput(text) => model_output(text),
        Step::Call(call) if call.name == CODE_EXECUTION => {
            json!({"type": "code_execution_call", "id": call.id, "arguments": call.args})
        }
        Step::Call(call) => {
            json!({"type": "function_call", "id": call.id, "name": call.name, "arguments": call.args})
        }
        Step::Result {
            call,
            content,
            is_error,
        } if call.name == CODE_EXECUTION => {
            let text = match content {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            json!({"type": "code_execution_result", "call_id": call.id, "result": text, "is_error": is_error})
        }
        Step::Result {
            call,
            content,
            is_error,
        } => {
            json!({"type": "function_result", "call_id": call.id, "name": call.name, "result": content, "is_error": is_error})
        }
    }
}

/// The text of a step's `content` list (text parts joined), if it has one.
fn content_text(step: &Value) -> Option<String> {
    let parts = step.get("content")?.as_array()?;
    let text: String = parts
        .iter()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    Some(text)
}

/// Appends the meaning of `steps` (a history, or new input) to `conversation`.
///
/// Consecutive model output and calls form one assistant message; results answer them. Step
/// types without a model meaning (thoughts, unknown ones) are skipped.
pub(crate) fn extend_conversation(conversation: &mut Conversation, steps: &[Value]) {
    let mut pending: Option<(String, Vec<ToolCall>)> = None;
    for step in steps {
        let kind = step.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "model_output" => {
                let text = content_text(step).unwrap_or_default();
                pending.get_or_insert_default().0.push_str(&text);
            }
            "code_execution_call" | "function_call" => {
                let call = ToolCall {
                    id: string(step, "id"),
                    name: tool_name(kind, step),
                    args: step.get("arguments").cloned().unwrap_or(Value::Null),
                };
                pending.get_or_insert_default().1.push(call);
            }
            "user_input" | "code_execution_result" | "function_result" => {
                if let Some((text, tool_calls)) = pending.take() {
                    conversation
                        .messages
                        .push(Message::Assistant { text, tool_calls });
                }
                if kind == "user_input" {
                    conversation
                        .push_user_with_media(content_text(step).unwrap_or_default(), media(step));
                } else {
                    conversation.push_tool_result(ToolResult {
                        call_id: string(step, "call_id"),
                        name: tool_name(kind, step),
                        content: step.get("result").cloned().unwrap_or(Value::Null),
                        is_error: step
                            .get("is_error")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    });
                }
            }
            _ => {}
        }
    }
    if let Some((text, tool_calls)) = pending {
        conversation
            .messages
            .push(Message::Assistant { text, tool_calls });
    }
}

/// The inline images and documents of a step's `content` list (checked when the request was).
fn media(step: &Value) -> Vec<Media> {
    step.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(content_media)
        .collect()
}

/// The media of one `image` or `document` content object: `data` + `mime_type`, or a
/// `data:<mime>;base64,<data>` `uri`.
pub(crate) fn content_media(part: &Value) -> Option<Media> {
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
pub fn parse_data_uri(uri: &str) -> Option<(&str, &str)> {
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

    #[test]
    fn code_steps_and_function_steps_render_as_their_wire_types() {
        let code = call(CODE_EXECUTION);
        assert_eq!(
            render(Step::Call(&code)),
            json!({"type": "code_execution_call", "id": "c1", "arguments": {"code": "ls"}})
        );
        assert_eq!(
            render(Step::Result {
                call: &code,
                content: &json!("a.txt\n"),
                is_error: false
            }),
            json!({"type": "code_execution_result", "call_id": "c1", "result": "a.txt\n", "is_error": false})
        );
        let read = call("read_file");
        assert_eq!(
            render(Step::Call(&read)),
            json!({"type": "function_call", "id": "c1", "name": "read_file", "arguments": {"code": "ls"}})
        );
        assert_eq!(
            render(Step::Result {
                call: &read,
                content: &json!({"content": "x"}),
                is_error: true
            }),
            json!({"type": "function_result", "call_id": "c1", "name": "read_file", "result": {"content": "x"}, "is_error": true})
        );
        assert_eq!(render(Step::ModelOutput("hi")), model_output("hi"));
    }
}
