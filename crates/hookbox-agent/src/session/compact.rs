//! Compaction: how big a conversation is, the request that asks the model to summarise it, and
//! the session step that replaces the history with that summary (`PreCompact` first).

use std::time::Instant;

use hookbox_hooks::SdkEvent;
use hookbox_llm::{Conversation, Message, content_text};

use super::core::Core;
use super::emit::Emitter;
use super::messages::{CompactTrigger, SessionMessage};
use super::outcome::{End, Stats, millis, stop_reason};

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
            Message::Assistant {
                text, tool_calls, ..
            } => {
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
            Message::Assistant {
                text, tool_calls, ..
            } => {
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

impl Core {
    /// Compacts `conversation`: `PreCompact` (which may block), then the model's summary
    /// replaces the history. Returns a note for the user.
    pub(super) async fn compact(
        &self,
        conversation: &mut Conversation,
        trigger: CompactTrigger,
        instructions: &str,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> Result<String, End> {
        let pre = SdkEvent::PreCompact {
            trigger: trigger.as_str(),
            custom_instructions: instructions,
        };
        let pre = self.fire(pre, out).await;
        if !pre.continue_ {
            return Err(End::Stopped(stop_reason(&pre)));
        }
        if pre.decision.is_blocking() {
            return Ok(format!(
                "Compaction was blocked by a PreCompact hook: {}",
                pre.reason.unwrap_or_else(|| "no reason given".to_owned())
            ));
        }
        if conversation.messages.is_empty() {
            return Ok("Nothing to compact yet".to_owned());
        }
        let pre_tokens = estimate_tokens(conversation);
        let request = summary_request(conversation, instructions);
        let asked = Instant::now();
        let summary = match self
            .interruptible(self.shared.model().complete(&request, &[]))
            .await
        {
            None => return Err(End::Interrupted { in_tools: false }),
            Some(Err(err)) => return Err(End::Failed(format!("compaction failed: {err}"))),
            Some(Ok(reply)) => reply,
        };
        stats.api_ms += millis(asked);
        stats.input_tokens += summary.usage.input_tokens.unwrap_or(0);
        stats.output_tokens += summary.usage.output_tokens.unwrap_or(0);
        // The history goes; the system prompt and the thinking budget stay.
        conversation.messages.clear();
        conversation.attachments.clear();
        let summary = format!("{SUMMARY_PREFIX}\n\n{}", summary.text);
        conversation.push_user(summary.clone());
        out.emit(SessionMessage::CompactBoundary {
            trigger,
            pre_tokens,
            summary,
        });
        Ok(format!(
            "Conversation compacted ({}); about {pre_tokens} tokens summarised",
            trigger.as_str()
        ))
    }
}

/// `/compact` or `/compact INSTRUCTIONS` → the instructions.
pub(super) fn compact_command(prompt: &str) -> Option<&str> {
    let rest = prompt.trim().strip_prefix("/compact")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
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
            thinking: Vec::new(),
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

    #[test]
    fn compact_commands() {
        assert_eq!(compact_command("/compact"), Some(""));
        assert_eq!(
            compact_command(" /compact keep the file names "),
            Some("keep the file names")
        );
        assert_eq!(compact_command("/compaction"), None);
        assert_eq!(compact_command("please /compact"), None);
    }
}
