//! One tool call of a session: `PreToolUse` hooks, the permission rules, the tool, then
//! `PostToolUse` or `PostToolUseFailure` (with `updatedToolOutput`).

use hookbox_hooks::{HookOutcome, SdkEvent, ToolUse};
use hookbox_llm::ToolCall;
use hookbox_store::json_kind;
use serde_json::Value;

use super::core::{Core, Runner};
use super::emit::Emitter;
use super::messages::SessionMessage;
use super::outcome::{End, Stats, denial, stop_reason};
use super::permit::Permit;
use super::tools::TASK;

/// `call` as tool events describe it, with the input it has at that event.
fn tool_use<'a>(call: &'a ToolCall, input: &'a Value) -> ToolUse<'a> {
    ToolUse {
        tool_name: &call.name,
        tool_input: input,
        tool_use_id: &call.id,
    }
}

/// What the gates make of one round of a tool call.
enum Gate {
    /// Run this input: every gate saw it as it is.
    Run(Value),
    /// The permission system rewrote `gated`, the input `PreToolUse` let through, to
    /// `rewritten`.
    Again { gated: Value, rewritten: Value },
    /// The call ends here, with this result.
    Refused(CallDone),
}

/// What a tool call gave back.
pub(super) struct CallDone {
    /// What the model sees.
    pub(super) text: String,
    /// Whether the call failed.
    pub(super) is_error: bool,
    /// The tool's output, as hooks and the SDK see it.
    pub(super) response: Option<Value>,
    /// How the query ends because of this call, if it does.
    pub(super) end: Option<End>,
}

impl CallDone {
    fn error(text: String) -> Self {
        Self {
            text,
            is_error: true,
            response: None,
            end: None,
        }
    }
}

impl Core {
    /// One tool call: `PreToolUse`, permissions, the tool, then `PostToolUse` or
    /// `PostToolUseFailure`.
    pub(super) async fn tool_call(
        &self,
        runner: &Runner,
        call: &ToolCall,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> CallDone {
        if !runner.offers(&call.name) {
            return CallDone::error(format!("No such tool available: {}", call.name));
        }
        if !call.args.is_object() {
            return CallDone::error(format!(
                "The input of {} must be a JSON object, not {}",
                call.name, call.args
            ));
        }
        let pre = SdkEvent::PreToolUse {
            agent: runner.subagent_ref(),
            tool: tool_use(call, &call.args),
        };
        let pre = self.fire(pre, out).await;
        let mut context = pre.additional_context.clone();
        let gated = match self
            .gate(runner, call, &call.args, None, &pre, out, stats)
            .await
        {
            Gate::Run(input) => Ok(input),
            Gate::Refused(done) => Err(done),
            // The permission stage rewrote the call: the rewrite goes through `PreToolUse` and
            // the permission system once more (nobody is asked again about it as it is), and
            // what they would rewrite it to then is dropped: what runs is what both judged.
            Gate::Again { rewritten, .. } => {
                let pre = SdkEvent::PreToolUse {
                    agent: runner.subagent_ref(),
                    tool: tool_use(call, &rewritten),
                };
                let pre = self.fire(pre, out).await;
                context.clone_from(&pre.additional_context);
                match self
                    .gate(runner, call, &rewritten, Some(&rewritten), &pre, out, stats)
                    .await
                {
                    Gate::Run(input) | Gate::Again { gated: input, .. } => Ok(input),
                    Gate::Refused(done) => Err(done),
                }
            }
        };
        let mut done = match gated {
            Ok(input) => self.run_gated(runner, call, input, out, stats).await,
            Err(done) => done,
        };
        // A PreToolUse hook's context reaches the model with the call's result, whatever it
        // was (as PostToolUse context does).
        if let Some(context) = &context {
            done.text.push_str(&format!("\n\n{context}"));
        }
        done
    }

    /// What `PreToolUse`'s outcome `pre` on `input` and then the permission system make of
    /// the call: run an input both saw as it is, gate the input the permission system rewrote
    /// it to again (so `PreToolUse` gates see it too), or refuse. `approved` is the input the
    /// permission stage rewrote the call to in the round before, if it did.
    #[expect(
        clippy::too_many_arguments,
        reason = "one round's state, each read once"
    )]
    async fn gate(
        &self,
        runner: &Runner,
        call: &ToolCall,
        input: &Value,
        approved: Option<&Value>,
        pre: &HookOutcome,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> Gate {
        if !pre.continue_ {
            let reason = stop_reason(pre);
            return Gate::Refused(CallDone {
                end: Some(End::Stopped(reason.clone())),
                ..CallDone::error(format!("Stopped by a PreToolUse hook: {reason}"))
            });
        }
        let gated = pre.updated_input.clone().unwrap_or_else(|| input.clone());
        if pre.decision.is_blocking() {
            stats.denials.push(denial(call, &gated));
            return Gate::Refused(CallDone::error(pre.reason.clone().unwrap_or_else(|| {
                format!("{} was blocked by a PreToolUse hook", call.name)
            })));
        }
        let approved = approved == Some(&gated);
        match self
            .permit(runner, call, gated.clone(), approved, pre, out)
            .await
        {
            Permit::Run(allowed) if allowed == gated => Gate::Run(allowed),
            Permit::Run(rewritten) => Gate::Again { gated, rewritten },
            Permit::Deny(message) => {
                stats.denials.push(denial(call, &call.args));
                Gate::Refused(CallDone::error(message))
            }
            Permit::Stop(end, message) => Gate::Refused(CallDone {
                end: Some(end),
                ..CallDone::error(message)
            }),
        }
    }

    /// The tool run on `input`, which every gate saw, then `PostToolUse` /
    /// `PostToolUseFailure`.
    async fn run_gated(
        &self,
        runner: &Runner,
        call: &ToolCall,
        input: Value,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> CallDone {
        let ran = if call.name == TASK {
            Box::pin(self.subagent(call, &input, out, stats)).await
        } else if self.mcp.contains(&call.name) {
            match self.interruptible(self.mcp.call(&call.name, &input)).await {
                Some(outcome) => Ok(outcome),
                None => Err(End::Interrupted { in_tools: true }),
            }
        } else {
            // A path outside the session's directories got here only through an explicit allow
            // (the rules ask for it in every mode).
            let run = async {
                if self.tools.outside(&call.name, &input).is_some() {
                    self.tools.call_outside(&call.name, &input).await
                } else {
                    self.tools.call(&call.name, &input).await
                }
            };
            match self.interruptible(run).await {
                Some(outcome) => Ok((outcome.text, outcome.response, outcome.error)),
                None => Err(End::Interrupted { in_tools: true }),
            }
        };
        let (agent, tool) = (runner.subagent_ref(), tool_use(call, &input));
        let (mut done, post) = match ran {
            Ok((text, response, None)) => {
                let post = SdkEvent::PostToolUse {
                    agent,
                    tool,
                    tool_response: &response,
                };
                let post = self.fire(post, out).await;
                let mut done = CallDone {
                    text,
                    is_error: false,
                    response: Some(response),
                    end: None,
                };
                if let Some(replacement) = &post.updated_tool_output {
                    replace_output(&mut done, replacement, &call.name, out);
                }
                (done, post)
            }
            Ok((text, response, Some(error))) => {
                let post = SdkEvent::PostToolUseFailure {
                    agent,
                    tool,
                    error: &error,
                    is_interrupt: false,
                };
                let post = self.fire(post, out).await;
                let done = CallDone {
                    response: Some(response),
                    ..CallDone::error(text)
                };
                (done, post)
            }
            Err(End::Interrupted { .. }) => {
                let post = SdkEvent::PostToolUseFailure {
                    agent,
                    tool,
                    error: "interrupted",
                    is_interrupt: true,
                };
                self.fire(post, out).await;
                return CallDone {
                    end: Some(End::Interrupted { in_tools: true }),
                    ..CallDone::error("Interrupted by the user".to_owned())
                };
            }
            Err(end) => {
                return CallDone {
                    end: Some(end),
                    ..CallDone::error("The sub-agent did not finish".to_owned())
                };
            }
        };
        if let Some(context) = &post.additional_context {
            done.text.push_str(&format!("\n\n{context}"));
        }
        if post.decision.is_blocking() {
            done.text.push_str(&format!(
                "\n\nPostToolUse hook feedback: {}",
                post.reason.as_deref().unwrap_or("blocked")
            ));
        }
        if !post.continue_ {
            done.end = Some(End::Stopped(stop_reason(&post)));
        }
        done
    }
}

/// Applies a `PostToolUse` `updatedToolOutput`: an object whose keys are keys of the tool's
/// output, each with a value of the same JSON type (or `null`), replaces those fields; the
/// model then sees the whole new output as JSON. Anything else keeps the original output, as
/// in Claude Code, and the user is told why.
fn replace_output(done: &mut CallDone, replacement: &Value, tool: &str, out: &mut Emitter<'_>) {
    let Some(Value::Object(original)) = &mut done.response else {
        return;
    };
    let mismatch = match replacement {
        Value::Object(fields) => fields
            .iter()
            .find_map(|(key, value)| match original.get(key) {
                None => Some(format!("{tool}'s output has no field `{key}`")),
                Some(old) if !value.is_null() && json_kind(old) != json_kind(value) => {
                    Some(format!(
                        "`{key}` of {tool}'s output is {}, not {}",
                        json_kind(old),
                        json_kind(value)
                    ))
                }
                Some(_) => None,
            }),
        other => Some(format!("it is {}, not an object", json_kind(other))),
    };
    if let Some(why) = mismatch {
        out.emit(SessionMessage::HookSystemMessage {
            event: hookbox_hooks::HookEvent::PostToolUse,
            message: format!(
                "ignored a PostToolUse updatedToolOutput that does not have the shape of \
                 {tool}'s output ({why}); the model sees the original output"
            ),
        });
        return;
    }
    if let Value::Object(fields) = replacement {
        for (key, value) in fields {
            original.insert(key.clone(), value.clone());
        }
    }
    done.text = Value::Object(original.clone()).to_string();
}
