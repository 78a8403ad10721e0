//! Compaction: how big a conversation is, and the request that asks the model to summarise it.

use hookbox_llm::{Conversation, Message, content_text};

/// The instruction the summarising request runs with.
const SUMMARY_SYSTEM: &str = "You summarise a conversation between a user and a coding agent so \
that the agent can continue the work from the summary alone. Keep the user's requests, the \
decisions made, file names, commands run and their outcomes, and what remains to do. Answer \
with the summary only.";

/// The first line of the message that replaces a compacted history.
pub(crate) const SUMMARY_PREFIX: &str =
    "This session continues an earlier conversation, which was compacted. Summary:";

/// A rough token count of `conversation` (four bytes per token), enough to decide when to
/// compact without a tokenizer.
pub(crate) fn estimate_tokens(conversation: &Conversation) -> u64 {
    let bytes: usize = conversation
        .messages
        .iter()
        .map(|message| match message {
            Message::User { text } => text.len(),
            Message::Assistant { text, tool_calls } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|call| call.name.len() + call.args.to_string().len())
                        .sum::<usize>()
            }
            Message::ToolResult(result) => content_text(&result.content).len(),
        })
        .sum();
    (bytes as u64).div_ceil(4)
}

/// The request that asks the model for a summary of `conversation`, following the user's
/// `instructions` (from `/compact …`) when given.
pub(crate) fn summary_request(conversation: &Conversation, instructions: &str) -> Conversation {
    let mut transcript = String::new();
    for message in &conversation.messages {
        match message {
            Message::User { text } => transcript.push_str(&format!("User: {text}\n\n")),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    transcript.push_str(&format!("Agent: {text}\n\n"));
                }
                for call in tool_calls {
                    transcript.push_str(&format!(
                        "Agent called {} with {}\n\n",
                        call.name, call.args
                    ));
                }
            }
            Message::ToolResult(result) => transcript.push_str(&format!(
                "Result of {}{}: {}\n\n",
                result.name,
                if result.is_error { " (error)" } else { "" },
                content_text(&result.content)
            )),
        }
    }
    if !instructions.is_empty() {
        transcript.push_str(&format!("Instructions for the summary: {instructions}\n"));
    }
    let mut request = Conversation::new(Some(SUMMARY_SYSTEM.to_owned()));
    request.push_user(transcript);
    request
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use hookbox_llm::{ToolCall, ToolResult};

    #[test]
    fn the_summary_request_holds_the_whole_history() {
        let mut conversation = Conversation::new(Some("be brief".into()));
        conversation.push_user("list files");
        conversation.messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "t1".into(),
                name: "Bash".into(),
                args: json!({"command": "ls"}),
            }],
        });
        conversation.push_tool_result(ToolResult {
            call_id: "t1".into(),
            name: "Bash".into(),
            content: json!("a.txt"),
            is_error: false,
        });
        let request = summary_request(&conversation, "focus on files");
        let Some(Message::User { text }) = request.messages.first() else {
            panic!("one user message expected");
        };
        for needle in ["User: list files", "Bash", "a.txt", "focus on files"] {
            assert!(text.contains(needle), "{needle} missing from {text}");
        }
        assert!(estimate_tokens(&conversation) > 0);
    }
}
