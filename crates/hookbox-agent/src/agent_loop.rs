//! The one agent loop, driven by both the Interactions agent ([`crate::interaction::Agent`])
//! and SDK sessions ([`crate::session::Session`]): a model turn, then the turn's tool calls one
//! after another (each through permissions and hooks), their results back into the
//! conversation, then the next turn; until the model answers without calling a tool.
//!
//! What differs between the two agents are the points on that loop, which each fills in as
//! its [`LoopPoints`]: what happens before a turn (turn limit, compaction), how the model is
//! asked (streamed or not, interruptible or not) and what its reply shows the user (steps or
//! messages), what an answer without tool calls means (`Stop` hooks), whether the turn's calls
//! may run at all (a token budget), and how one call runs (sandbox tools through the
//! environment's hooks, or coding tools through `PreToolUse`, permissions and `PostToolUse`).
//! The loop keeps the conversation valid: every call the model made gets a result, even when
//! the loop stops before running it.

use serde_json::{Value, json};

use hookbox_llm::{Conversation, ModelReply, ToolCall, ToolResult};

/// What one tool call came to.
pub(crate) enum Called<End> {
    /// The client runs it (an Interactions `function` tool): the run ends with this once the
    /// turn's other calls have run.
    ByClient(End),
    /// The model gets `content` back; with `end`, the loop stops here and the turn's later
    /// calls do not run.
    Done {
        /// The result the model sees.
        content: Value,
        /// Whether the call failed (or was refused).
        is_error: bool,
        /// How the run ends, when this call ended it.
        end: Option<End>,
    },
}

/// What an answer without tool calls leads to.
pub(crate) enum Answered<End> {
    /// The run ends.
    End(End),
    /// The run goes on with this user message (a `Stop` hook's feedback) and another turn.
    Continue(String),
}

/// The lifecycle points of one agent's runs on the loop.
pub(crate) trait LoopPoints {
    /// How a run ends.
    type End;

    /// Before each model turn (the turn limit, compaction): `Some` ends the run.
    async fn before_turn(&mut self, conversation: &mut Conversation) -> Option<Self::End>;

    /// One model turn: the model's reply, shown to the user as the agent shows replies, or how
    /// the run ends when the model cannot answer.
    async fn ask(&mut self, conversation: &Conversation) -> Result<ModelReply, Self::End>;

    /// The model answered without calling a tool.
    async fn answered(&mut self, reply: &ModelReply) -> Answered<Self::End>;

    /// The model called tools: `Some` ends the run before any of them runs (a token budget).
    fn before_calls(&mut self) -> Option<Self::End>;

    /// Runs one tool call the model made.
    async fn call(&mut self, call: &ToolCall) -> Called<Self::End>;
}

/// The result of a call the loop did not run because an earlier one ended the run.
const NOT_RUN: &str = "not run: the session stopped first";

/// Runs `points`' agent on `conversation` until one of its points ends the run.
pub(crate) async fn run<P: LoopPoints>(points: &mut P, conversation: &mut Conversation) -> P::End {
    loop {
        if let Some(end) = points.before_turn(conversation).await {
            return end;
        }
        let reply = match points.ask(conversation).await {
            Ok(reply) => reply,
            Err(end) => return end,
        };
        conversation.push_reply(&reply);
        if reply.tool_calls.is_empty() {
            match points.answered(&reply).await {
                Answered::End(end) => return end,
                Answered::Continue(feedback) => {
                    conversation.push_user(feedback);
                    continue;
                }
            }
        }
        if let Some(end) = points.before_calls() {
            return end;
        }
        let mut by_client = None;
        for (index, call) in reply.tool_calls.iter().enumerate() {
            let (content, is_error, end) = match points.call(call).await {
                Called::ByClient(end) => {
                    by_client = Some(end);
                    continue;
                }
                Called::Done {
                    content,
                    is_error,
                    end,
                } => (content, is_error, end),
            };
            conversation.push_tool_result(result_for(call, content, is_error));
            if let Some(end) = end {
                // Every call gets an answer, so the history stays valid for the next run.
                for skipped in &reply.tool_calls[index + 1..] {
                    conversation.push_tool_result(result_for(skipped, json!(NOT_RUN), true));
                }
                return end;
            }
        }
        if let Some(end) = by_client {
            return end;
        }
    }
}

/// The conversation's record of `call`'s result.
fn result_for(call: &ToolCall, content: Value, is_error: bool) -> ToolResult {
    ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content,
        is_error,
    }
}

#[cfg(test)]
mod tests {
    use hookbox_llm::{FinishReason, Message, Usage};

    use super::*;

    /// Plays scripted replies; tool `stop` ends the run, `client` is the client's, `fail`
    /// fails; a first plain answer is sent back once with feedback.
    struct Script {
        replies: Vec<ModelReply>,
        calls: Vec<String>,
        feedback_given: bool,
        budget_left: u32,
    }

    fn reply(text: &str, calls: &[&str]) -> ModelReply {
        ModelReply {
            text: text.to_owned(),
            tool_calls: calls
                .iter()
                .enumerate()
                .map(|(index, name)| ToolCall {
                    id: format!("{name}-{index}"),
                    name: (*name).to_owned(),
                    args: json!({}),
                })
                .collect(),
            thinking: Vec::new(),
            finish: FinishReason::Stop,
            usage: Usage::default(),
        }
    }

    impl LoopPoints for Script {
        type End = String;

        async fn before_turn(&mut self, _conversation: &mut Conversation) -> Option<String> {
            self.replies.is_empty().then(|| "out of turns".to_owned())
        }

        async fn ask(&mut self, _conversation: &Conversation) -> Result<ModelReply, String> {
            Ok(self.replies.remove(0))
        }

        async fn answered(&mut self, reply: &ModelReply) -> Answered<String> {
            if self.feedback_given {
                Answered::End(format!("answered {}", reply.text))
            } else {
                self.feedback_given = true;
                Answered::Continue("keep going".to_owned())
            }
        }

        fn before_calls(&mut self) -> Option<String> {
            let spent = self.budget_left == 0;
            self.budget_left = self.budget_left.saturating_sub(1);
            spent.then(|| "over budget".to_owned())
        }

        async fn call(&mut self, call: &ToolCall) -> Called<String> {
            self.calls.push(call.name.clone());
            match call.name.as_str() {
                "client" => Called::ByClient("requires action".to_owned()),
                "stop" => Called::Done {
                    content: json!("stopped"),
                    is_error: true,
                    end: Some("stopped by a call".to_owned()),
                },
                name => Called::Done {
                    content: json!(format!("{name} ran")),
                    is_error: name == "fail",
                    end: None,
                },
            }
        }
    }

    fn script(replies: Vec<ModelReply>) -> Script {
        Script {
            replies,
            calls: Vec::new(),
            feedback_given: false,
            budget_left: 10,
        }
    }

    fn results(conversation: &Conversation) -> Vec<(String, Value, bool)> {
        conversation
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some((
                    result.call_id.clone(),
                    result.content.clone(),
                    result.is_error,
                )),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn calls_run_in_order_and_their_results_feed_the_next_turn() {
        let mut points = script(vec![
            reply("", &["a", "fail"]),
            reply("first", &[]),
            reply("second", &[]),
        ]);
        let mut conversation = Conversation::new(None);
        let end = run(&mut points, &mut conversation).await;
        assert_eq!(end, "answered second");
        assert_eq!(points.calls, ["a", "fail"]);
        assert_eq!(
            results(&conversation),
            [
                ("a-0".to_owned(), json!("a ran"), false),
                ("fail-1".to_owned(), json!("fail ran"), true),
            ]
        );
        // The answer's feedback went back to the model as a user message.
        assert!(
            conversation
                .messages
                .iter()
                .any(|message| matches!(message, Message::User { text } if text == "keep going"))
        );
    }

    #[tokio::test]
    async fn a_call_that_ends_the_run_leaves_the_later_calls_answered_but_not_run() {
        let mut points = script(vec![reply("", &["a", "stop", "b"])]);
        let mut conversation = Conversation::new(None);
        assert_eq!(
            run(&mut points, &mut conversation).await,
            "stopped by a call"
        );
        assert_eq!(points.calls, ["a", "stop"]);
        assert_eq!(
            results(&conversation)[2],
            ("b-2".to_owned(), json!(NOT_RUN), true)
        );
    }

    #[tokio::test]
    async fn client_calls_end_the_run_after_the_turns_other_calls() {
        let mut points = script(vec![reply("", &["client", "a"])]);
        let mut conversation = Conversation::new(None);
        assert_eq!(run(&mut points, &mut conversation).await, "requires action");
        assert_eq!(points.calls, ["client", "a"]);
        assert_eq!(results(&conversation).len(), 1);
    }

    #[tokio::test]
    async fn the_points_end_runs_before_turns_and_before_calls() {
        let mut points = script(vec![reply("", &["a"])]);
        points.budget_left = 0;
        let mut conversation = Conversation::new(None);
        assert_eq!(run(&mut points, &mut conversation).await, "over budget");
        assert!(points.calls.is_empty());

        let mut points = script(vec![reply("", &["a"])]);
        assert_eq!(
            run(&mut points, &mut Conversation::new(None)).await,
            "out of turns"
        );
    }
}
