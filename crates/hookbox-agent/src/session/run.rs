//! One agent's run on the agent loop ([`crate::agent_loop`]): the points where a session's
//! query (or a sub-agent's task) fires its hooks, streams, compacts and calls tools.

use std::sync::Arc;
use std::time::Instant;

use hookbox_hooks::SdkEvent;
use hookbox_llm::{Conversation, Delta, ModelReply, ToolCall};
use hookbox_store::new_uuid;
use serde_json::Value;

use super::compact::estimate_tokens;
use super::core::{Core, Runner};
use super::emit::{Emitter, subagent_transcript_path};
use super::messages::{CompactTrigger, ContentBlock, SessionMessage};
use super::outcome::{End, Stats, millis, stop_reason};
use super::partial::PartialStream;
use super::structured::{self, OutputSchema};
use crate::agent_loop::{Answered, Called, LoopPoints};

/// `Stop` blocks in a row after which the session stops anyway (Claude Code's cap).
const MAX_STOP_BLOCKS: u32 = 8;

/// One agent's run on the agent loop: the main agent's query, or a sub-agent's task.
pub(super) struct SessionRun<'r, 'e> {
    core: &'r Core,
    runner: &'r Runner,
    out: &'r mut Emitter<'e>,
    stats: &'r mut Stats,
    /// `Stop` blocks in a row.
    stop_blocks: u32,
    /// The text of the model's last turn.
    last_text: String,
    /// Misses of the output schema so far (non-matching `StructuredOutput` calls, answers
    /// without one).
    output_misses: u32,
}

impl<'r, 'e> SessionRun<'r, 'e> {
    /// `runner`'s run for `core`, writing to `out` and counting in `stats`.
    pub(super) fn new(
        core: &'r Core,
        runner: &'r Runner,
        out: &'r mut Emitter<'e>,
        stats: &'r mut Stats,
    ) -> Self {
        Self {
            core,
            runner,
            out,
            stats,
            stop_blocks: 0,
            last_text: String::new(),
            output_misses: 0,
        }
    }

    /// The output schema, for the main agent of a session that has one.
    fn output(&self) -> Option<&'r OutputSchema> {
        self.core
            .output
            .as_ref()
            .filter(|_| self.runner.agent.is_none())
    }

    /// Counts a miss of the output schema: `Some` ends the query once there were too many.
    fn output_missed(&mut self, max_attempts: u32, error: &str) -> Option<End> {
        self.output_misses += 1;
        (self.output_misses >= max_attempts).then(|| {
            End::StructuredMissed(format!(
                "Failed to provide valid structured output after {} attempts \u{2014} last StructuredOutput error: {error}",
                self.output_misses
            ))
        })
    }

    /// A `StructuredOutput` call of the main agent: ends the query when its input matches.
    fn structured_output(&mut self, output: &OutputSchema, call: &ToolCall) -> Called<End> {
        let max_attempts = output.max_attempts;
        let (text, is_error, end) = match output.check(&call.args) {
            Ok(()) => (
                structured::ACCEPTED.to_owned(),
                false,
                Some(End::Structured {
                    text: self.last_text.clone(),
                    output: call.args.clone(),
                }),
            ),
            Err(error) => {
                let end = self.output_missed(max_attempts, &error);
                (error, true, end)
            }
        };
        self.out.emit(SessionMessage::User {
            content: vec![ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: text.clone(),
                is_error,
            }],
            parent_tool_use_id: None,
            tool_use_result: None,
        });
        Called::Done {
            content: Value::String(text),
            is_error,
            end,
        }
    }
}

impl LoopPoints for SessionRun<'_, '_> {
    type End = End;

    async fn before_turn(&mut self, conversation: &mut Conversation) -> Option<End> {
        if self.stats.turns >= self.core.max_turns {
            return Some(End::MaxTurns);
        }
        if self.runner.agent.is_none()
            && estimate_tokens(conversation) > self.core.compact_threshold
        {
            return self
                .core
                .compact(conversation, CompactTrigger::Auto, "", self.out, self.stats)
                .await
                .err();
        }
        None
    }

    async fn ask(&mut self, conversation: &Conversation) -> Result<ModelReply, End> {
        let model = match &self.runner.model {
            Some(model) => Arc::clone(model),
            None => self.core.shared.model(),
        };
        let asked = Instant::now();
        let id = format!("msg_{}", new_uuid().replace('-', ""));
        let mut partial = self.core.partial_messages.then(|| {
            PartialStream::start(
                self.out.stream.clone(),
                self.runner.parent_tool_use_id.clone(),
                &id,
                model.label(),
            )
        });
        let answer = match partial.as_mut() {
            Some(partial) => {
                let mut on_delta = |delta: Delta<'_>| partial.delta(delta);
                self.core
                    .interruptible(model.complete_streaming(
                        conversation,
                        &self.runner.declarations,
                        &mut on_delta,
                    ))
                    .await
            }
            None => {
                self.core
                    .interruptible(model.complete(conversation, &self.runner.declarations))
                    .await
            }
        };
        let reply = match answer {
            None => return Err(End::Interrupted { in_tools: false }),
            Some(Err(err)) => {
                let status = match &err {
                    hookbox_llm::ModelError::Api { status, .. } => Some(*status),
                    _ => None,
                };
                return Err(End::ApiFailed {
                    message: err.to_string(),
                    status,
                });
            }
            Some(Ok(reply)) => reply,
        };
        if let Some(partial) = partial {
            partial.finish(&reply);
        }
        self.stats.api_ms += millis(asked);
        self.stats.turns += 1;
        self.last_text.clone_from(&reply.text);
        self.stats.input_tokens += reply.usage.input_tokens.unwrap_or(0);
        self.stats.output_tokens += reply.usage.output_tokens.unwrap_or(0);
        let mut content: Vec<ContentBlock> = reply
            .thinking
            .iter()
            .map(|thinking| ContentBlock::Thinking {
                thinking: thinking.text.clone(),
                signature: thinking.signature.clone(),
            })
            .collect();
        if !reply.text.is_empty() {
            content.push(ContentBlock::Text {
                text: reply.text.clone(),
            });
        }
        content.extend(reply.tool_calls.iter().map(|call| ContentBlock::ToolUse {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.args.clone(),
        }));
        self.out.emit(SessionMessage::Assistant {
            id,
            model: model.label().to_owned(),
            content,
            parent_tool_use_id: self.runner.parent_tool_use_id.clone(),
        });
        Ok(reply)
    }

    /// `Stop` (`SubagentStop` for a sub-agent) hooks: they may keep the agent going, up to
    /// [`MAX_STOP_BLOCKS`] times in a row, or stop the session.
    async fn answered(&mut self, reply: &ModelReply) -> Answered<End> {
        if let Some(max_attempts) = self.output().map(|output| output.max_attempts) {
            let error = "the model answered without calling StructuredOutput";
            return match self.output_missed(max_attempts, error) {
                Some(end) => Answered::End(end),
                None => Answered::Continue(structured::REMINDER.to_owned()),
            };
        }
        let (stop_hook_active, last_assistant_message) = (self.stop_blocks > 0, &reply.text);
        let agent_transcript_path = self
            .runner
            .subagent_ref()
            .and_then(|agent| {
                subagent_transcript_path(
                    self.core.transcript_place.as_ref(),
                    &self.core.session_id,
                    agent.agent_id,
                )
            })
            .unwrap_or_else(|| self.core.transcript_path.clone());
        let stop = match self.runner.subagent_ref() {
            None => SdkEvent::Stop {
                stop_hook_active,
                last_assistant_message,
            },
            Some(agent) => SdkEvent::SubagentStop {
                agent,
                agent_transcript_path: &agent_transcript_path,
                stop_hook_active,
                last_assistant_message,
            },
        };
        let event = stop.event();
        let stop = self.core.fire(stop, self.out).await;
        if !stop.continue_ {
            return Answered::End(End::Stopped(stop_reason(&stop)));
        }
        if stop.decision.is_blocking() && self.stop_blocks < MAX_STOP_BLOCKS {
            self.stop_blocks += 1;
            return Answered::Continue(format!(
                "{event} hook feedback: {}",
                stop.reason.unwrap_or_else(|| "keep going".to_owned())
            ));
        }
        Answered::End(End::Answered(reply.text.clone()))
    }

    fn before_calls(&mut self) -> Option<End> {
        None
    }

    async fn call(&mut self, call: &ToolCall) -> Called<End> {
        if call.name == structured::TOOL
            && let Some(output) = self.output()
        {
            return self.structured_output(output, call);
        }
        let done = self
            .core
            .tool_call(self.runner, call, self.out, self.stats)
            .await;
        let content = Value::String(done.text.clone());
        self.out.emit(SessionMessage::User {
            content: vec![ContentBlock::ToolResult {
                tool_use_id: call.id.clone(),
                content: done.text,
                is_error: done.is_error,
            }],
            parent_tool_use_id: self.runner.parent_tool_use_id.clone(),
            tool_use_result: done.response,
        });
        Called::Done {
            content,
            is_error: done.is_error,
            end: done.end,
        }
    }
}
