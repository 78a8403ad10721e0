//! The steps of an interaction, typed (`user_input`, `model_output`, tool calls and their
//! results), and their translation to a model conversation. Their Interactions API JSON is
//! the server's.

use hookbox_llm::{Conversation, Media, Message, ToolCall, ToolResult};

/// One step of an interaction: what the user said, what the model answered or called, what a
/// call returned. The input of a run, the history before it and what the loop makes.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The user's input: its text parts joined, and its inline images and documents.
    UserInput {
        /// The text.
        text: String,
        /// The inline images and documents.
        media: Vec<Media>,
    },
    /// Text the model answered.
    ModelOutput(String),
    /// A tool call the model made.
    Call(ToolCall),
    /// The result of a call, as the model gets it back.
    Result(ToolResult),
}

impl Step {
    /// A `user_input` step with text only.
    pub fn user_text(text: &str) -> Self {
        Self::UserInput {
            text: text.to_owned(),
            media: Vec::new(),
        }
    }
}

/// Appends the meaning of `steps` (a history, or new input) to `conversation`.
///
/// Consecutive model output and calls form one assistant message; results and user input
/// close it.
pub(crate) fn extend_conversation(conversation: &mut Conversation, steps: &[Step]) {
    let mut assistant: Option<(String, Vec<ToolCall>)> = None;
    for step in steps {
        match step {
            Step::ModelOutput(text) => assistant.get_or_insert_default().0.push_str(text),
            Step::Call(call) => assistant.get_or_insert_default().1.push(call.clone()),
            Step::UserInput { text, media } => {
                close_assistant(conversation, &mut assistant);
                conversation.push_user_with_media(text.clone(), media.clone());
            }
            Step::Result(result) => {
                close_assistant(conversation, &mut assistant);
                conversation.push_tool_result(result.clone());
            }
        }
    }
    close_assistant(conversation, &mut assistant);
}

/// Adds the assistant message being gathered, if any, to `conversation`.
fn close_assistant(
    conversation: &mut Conversation,
    assistant: &mut Option<(String, Vec<ToolCall>)>,
) {
    if let Some((text, tool_calls)) = assistant.take() {
        conversation.messages.push(Message::Assistant {
            text,
            tool_calls,
            thinking: Vec::new(),
        });
    }
}

#[cfg(test)]
mod tests {
    use hookbox_llm::Attachment;
    use serde_json::json;

    use super::*;

    #[test]
    fn output_and_calls_form_one_assistant_message_that_results_and_input_close() {
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            args: json!({"path": "a"}),
        };
        let result = ToolResult {
            call_id: "c1".into(),
            name: "read_file".into(),
            content: json!("x"),
            is_error: false,
        };
        let image = Media {
            mime_type: "image/png".into(),
            data: "iVBO".into(),
        };
        let steps = [
            Step::UserInput {
                text: "look".into(),
                media: vec![image.clone()],
            },
            Step::ModelOutput("Let me ".into()),
            Step::ModelOutput("read it.".into()),
            Step::Call(call.clone()),
            Step::Result(result.clone()),
            Step::ModelOutput("Done.".into()),
        ];
        let mut conversation = Conversation::new(None);
        extend_conversation(&mut conversation, &steps);
        assert_eq!(
            conversation.messages,
            [
                Message::User {
                    text: "look".into()
                },
                Message::Assistant {
                    text: "Let me read it.".into(),
                    tool_calls: vec![call],
                    thinking: Vec::new(),
                },
                Message::ToolResult(result),
                Message::Assistant {
                    text: "Done.".into(),
                    tool_calls: Vec::new(),
                    thinking: Vec::new(),
                },
            ]
        );
        assert_eq!(
            conversation.attachments,
            [Attachment {
                message: 0,
                media: image
            }]
        );
    }
}
