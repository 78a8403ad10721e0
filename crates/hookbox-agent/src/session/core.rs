//! One session's state and its query loop: prompt hooks, model turns, tool calls through
//! `PreToolUse` → permissions ([`permit`](super::permit)) → tool → `PostToolUse` /
//! `PostToolUseFailure`, and `Stop` hooks. Sub-agents ([`subagent`](super::subagent)) and
//! compaction ([`compact`](super::compact)) are steps of this loop kept in their own files.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hookbox_env::CodingTools;
use hookbox_hooks::{
    Dispatcher, EventInput, HookOutcome, SdkEvent, SessionContext, SubagentRef, ToolUse,
};
use serde_json::Value;
use tokio::sync::Notify;

use super::SubagentDefinition;
use super::compact::{compact_command, estimate_tokens};
use super::emit::{
    Emitter, Transcript, TranscriptPlace, place_transcript, subagent_transcript_path,
};
use super::mcp::McpTools;
use super::messages::{CompactTrigger, ContentBlock, HookFailure, SessionMessage};
use super::outcome::{End, Stats, denial, millis, result, stop_reason};
use super::partial::PartialStream;
use super::permissions::{PermissionMode, PermissionPrompt};
use super::permit::Permit;
use super::slash::{KNOWN, is_clear, unknown_command};
use super::structured::{self, OutputSchema};
use super::tools::{TASK, declarations};
use crate::agent_loop::{self, Answered, Called, LoopPoints};
use hookbox_llm::{Conversation, Delta, Model, ModelReply, ToolCall, ToolDeclaration};
use hookbox_store::{json_kind, new_uuid};

/// `Stop` blocks in a row after which the session stops anyway (Claude Code's cap).
const MAX_STOP_BLOCKS: u32 = 8;

/// What the running query and the session's controller share.
pub(crate) struct Shared {
    /// The session's current id (a new one after `/clear`).
    pub(crate) session_id: Mutex<String>,
    pub(crate) mode: Mutex<PermissionMode>,
    pub(crate) model: Mutex<Arc<dyn Model>>,
    pub(crate) interrupted: AtomicBool,
    pub(crate) interrupt: Notify,
}

impl Shared {
    pub(crate) fn session_id(&self) -> String {
        self.session_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn mode(&self) -> PermissionMode {
        *self.mode.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn model(&self) -> Arc<dyn Model> {
        Arc::clone(&self.model.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The fixed parts of a session.
pub(crate) struct Core {
    pub(crate) session_id: String,
    pub(crate) cwd: String,
    pub(crate) transcript_path: String,
    pub(crate) transcript: Option<Transcript>,
    /// Where transcripts go, for the new session after `/clear`.
    pub(crate) transcript_place: Option<TranscriptPlace>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) tools: CodingTools,
    /// The coding tools offered to the model: all but the disallowed ones.
    pub(crate) tool_names: Vec<&'static str>,
    /// Whether `Task` is offered: the session has sub-agents and `Task` is not disallowed.
    pub(crate) offers_task: bool,
    /// The MCP tools of the session.
    pub(crate) mcp: McpTools,
    /// The MCP tools offered to the model: all but the disallowed ones.
    pub(crate) mcp_names: Vec<String>,
    /// Whether `Bash` runs without asking: it runs in the sandbox and the settings did not
    /// turn `sandbox.autoAllowBashIfSandboxed` off.
    pub(crate) auto_allow_bash: bool,
    pub(crate) allowed: Vec<String>,
    pub(crate) disallowed: Vec<String>,
    pub(crate) agents: BTreeMap<String, SubagentDefinition>,
    pub(crate) max_turns: u32,
    pub(crate) compact_threshold: u64,
    /// Whether model turns are also sent as stream events while they stream.
    pub(crate) partial_messages: bool,
    /// The extended-thinking budget of every agent's turns.
    pub(crate) thinking_budget: Option<u32>,
    /// The schema the query's final output must match, if any.
    pub(crate) output: Option<OutputSchema>,
    pub(crate) prompt: Option<Arc<dyn PermissionPrompt>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) conversation: Conversation,
    /// Whether the session resumed an earlier conversation (`SessionStart` says `resume`).
    pub(crate) resumed: bool,
    pub(crate) started: bool,
}

/// Who is running a loop: the main agent, or a sub-agent started by a `Task` call.
pub(super) struct Runner {
    /// `(agent_id, agent_type)` of a sub-agent; `None` for the main agent.
    pub(super) agent: Option<(String, String)>,
    /// The `Task` call that started a sub-agent.
    pub(super) parent_tool_use_id: Option<String>,
    /// The tools it offers the model.
    pub(super) declarations: Vec<ToolDeclaration>,
    /// A sub-agent's own model (`None`: the session's current one).
    pub(super) model: Option<Arc<dyn Model>>,
}

impl Runner {
    fn offers(&self, tool: &str) -> bool {
        self.declarations
            .iter()
            .any(|declaration| declaration.name == tool)
    }

    /// The sub-agent events fired for it happen in; `None` for the main agent.
    pub(super) fn subagent_ref(&self) -> Option<SubagentRef<'_>> {
        self.agent
            .as_ref()
            .map(|(agent_id, agent_type)| SubagentRef {
                agent_id,
                agent_type,
            })
    }
}

/// `call` as tool events describe it, with the input it has at that event.
fn tool_use<'a>(call: &'a ToolCall, input: &'a Value) -> ToolUse<'a> {
    ToolUse {
        tool_name: &call.name,
        tool_input: input,
        tool_use_id: &call.id,
    }
}

/// What a tool call gave back.
struct CallDone {
    text: String,
    is_error: bool,
    response: Option<Value>,
    end: Option<End>,
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
    /// Runs one query to its `result` message.
    pub(crate) async fn query(
        &mut self,
        prompt: String,
        stream: tokio::sync::mpsc::UnboundedSender<SessionMessage>,
    ) {
        let started = Instant::now();
        self.shared.interrupted.store(false, Ordering::SeqCst);
        let end = if is_clear(&prompt) {
            self.clear(&stream).await
        } else {
            let mut transcript = self.transcript.take();
            let mut out = Emitter {
                session_id: &self.session_id,
                stream: stream.clone(),
                transcript: transcript.as_mut(),
            };
            let mut conversation = std::mem::take(&mut self.conversation);
            let mut stats = Stats::default();
            let end = self
                .query_inner(&prompt, &mut conversation, &mut out, &mut stats)
                .await;
            drop(out);
            self.conversation = conversation;
            self.transcript = transcript;
            (end, stats)
        };
        self.started = true;
        let mut transcript = self.transcript.take();
        let mut out = Emitter {
            session_id: &self.session_id,
            stream,
            transcript: transcript.as_mut(),
        };
        let idle = SdkEvent::Notification {
            message: "hookbox is waiting for your input",
            notification_type: "idle_prompt",
            title: None,
        };
        self.fire(idle, &mut out).await;
        let (end, stats) = end;
        out.emit(SessionMessage::Result(result(end, stats, started)));
        drop(out);
        self.transcript = transcript;
    }

    /// `/clear`: `SessionEnd` (`clear`) for the session so far, then a fresh conversation
    /// under a new id (and a new transcript), `SessionStart` (`clear`) and a
    /// [`SessionMessage::ConversationReset`]. The model is not asked anything.
    async fn clear(
        &mut self,
        stream: &tokio::sync::mpsc::UnboundedSender<SessionMessage>,
    ) -> (End, Stats) {
        let mut transcript = self.transcript.take();
        let mut out = Emitter {
            session_id: &self.session_id,
            stream: stream.clone(),
            transcript: transcript.as_mut(),
        };
        if !self.started {
            self.start(&mut out).await;
        }
        self.fire(SdkEvent::SessionEnd { reason: "clear" }, &mut out)
            .await;
        drop(out);
        let previous_session_id = std::mem::replace(&mut self.session_id, new_uuid());
        *self
            .shared
            .session_id
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = self.session_id.clone();
        // The history goes; the system prompt and the thinking budget stay.
        self.conversation.messages.clear();
        self.conversation.attachments.clear();
        let note = match place_transcript(self.transcript_place.as_ref(), &self.session_id) {
            Ok((transcript, path)) => {
                self.transcript = transcript;
                self.transcript_path = path;
                "Conversation cleared".to_owned()
            }
            Err(err) => {
                self.transcript = None;
                self.transcript_path = String::new();
                format!("Conversation cleared; its new transcript cannot be created: {err}")
            }
        };
        let mut transcript = self.transcript.take();
        let mut out = Emitter {
            session_id: &self.session_id,
            stream: stream.clone(),
            transcript: transcript.as_mut(),
        };
        let model = self.shared.model();
        let start = SdkEvent::SessionStart {
            source: "clear",
            model: model.label(),
        };
        self.fire(start, &mut out).await;
        out.emit(SessionMessage::ConversationReset {
            previous_session_id,
            session_id: self.session_id.clone(),
        });
        drop(out);
        self.transcript = transcript;
        (End::Command(note), Stats::default())
    }

    /// The session's start, before its first query: `SessionStart` and the `Init` message.
    /// Returns the context `SessionStart` hooks added for the model.
    async fn start(&self, out: &mut Emitter<'_>) -> Vec<String> {
        let model = self.shared.model();
        let start = SdkEvent::SessionStart {
            source: if self.resumed { "resume" } else { "startup" },
            model: model.label(),
        };
        let start = self.fire(start, out).await;
        out.emit(SessionMessage::Init {
            cwd: self.cwd.clone(),
            model: model.label().to_owned(),
            tools: self
                .main_runner()
                .declarations
                .into_iter()
                .map(|d| d.name)
                .collect(),
            permission_mode: self.shared.mode().name().to_owned(),
            agents: self.agents.keys().cloned().collect(),
            mcp_servers: self
                .mcp
                .servers()
                .iter()
                .map(|server| (server.name.clone(), server.status().to_owned()))
                .collect(),
        });
        start.additional_context.into_iter().collect()
    }

    /// Fires `SessionEnd` (its output is ignored: the session is over either way); returns
    /// the messages it produced (hook failures, `systemMessage`s).
    pub(crate) async fn end(&mut self, reason: &str) -> Vec<SessionMessage> {
        let (stream, mut messages) = tokio::sync::mpsc::unbounded_channel();
        let mut transcript = self.transcript.take();
        let mut out = Emitter {
            session_id: &self.session_id,
            stream,
            transcript: transcript.as_mut(),
        };
        self.fire(SdkEvent::SessionEnd { reason }, &mut out).await;
        drop(out);
        self.transcript = transcript;
        let mut produced = Vec::new();
        while let Ok(message) = messages.try_recv() {
            produced.push(message);
        }
        produced
    }

    async fn query_inner(
        &self,
        prompt: &str,
        conversation: &mut Conversation,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> End {
        let mut context = Vec::new();
        if !self.started {
            context = self.start(out).await;
        }
        if let Some(instructions) = compact_command(prompt) {
            return match self
                .compact(
                    conversation,
                    CompactTrigger::Manual,
                    instructions,
                    out,
                    stats,
                )
                .await
            {
                Ok(note) => End::Command(note),
                Err(end) => end,
            };
        }
        if let Some(command) = unknown_command(prompt, &KNOWN) {
            return End::UnknownCommand(format!("Unknown command: {command}"));
        }
        let submitted = self.fire(SdkEvent::UserPromptSubmit { prompt }, out).await;
        if !submitted.continue_ {
            return End::Stopped(stop_reason(&submitted));
        }
        if submitted.decision.is_blocking() {
            return End::PromptBlocked(
                submitted
                    .reason
                    .unwrap_or_else(|| "no reason given".to_owned()),
            );
        }
        context.extend(submitted.additional_context);
        let mut text = prompt.to_owned();
        for context in context {
            text.push_str("\n\n");
            text.push_str(&context);
        }
        conversation.push_user(text);
        self.run_loop(&self.main_runner(), conversation, out, stats)
            .await
    }

    fn main_runner(&self) -> Runner {
        Runner {
            agent: None,
            parent_tool_use_id: None,
            declarations: declarations(&self.tool_names, self.offers_task.then_some(&self.agents))
                .into_iter()
                .chain(
                    self.mcp
                        .declarations(self.mcp_names.iter().map(String::as_str)),
                )
                .chain(self.output.as_ref().map(OutputSchema::declaration))
                .collect(),
            model: None,
        }
    }

    /// Fires `fired` with the session's common fields; passes any `systemMessage` on to the
    /// user.
    pub(super) async fn fire(&self, fired: SdkEvent<'_>, out: &mut Emitter<'_>) -> HookOutcome {
        let event = fired.event();
        if !self.dispatcher.hooks().has_event(event) {
            return HookOutcome::default();
        }
        let context = SessionContext {
            session_id: self.session_id.clone(),
            transcript_path: self.transcript_path.clone(),
            cwd: self.cwd.clone(),
            permission_mode: self.shared.mode().name().to_owned(),
        };
        let outcome = self
            .dispatcher
            .dispatch(&EventInput::sdk(&context, fired))
            .await;
        for entry in &outcome.trace {
            if let Some(failure) = HookFailure::from_trace(entry) {
                out.emit(SessionMessage::HookFailed(failure));
            }
        }
        if let Some(message) = &outcome.system_message {
            out.emit(SessionMessage::HookSystemMessage {
                event,
                message: message.clone(),
            });
        }
        outcome
    }

    /// Runs `work` unless the query is interrupted first (`None` then).
    pub(super) async fn interruptible<F: Future>(&self, work: F) -> Option<F::Output> {
        let notified = self.shared.interrupt.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if self.shared.interrupted.load(Ordering::SeqCst) {
            return None;
        }
        tokio::select! {
            output = work => Some(output),
            () = notified => None,
        }
    }

    /// Model turns on the agent loop until the model answers (and the `Stop` hooks let it
    /// stop), a hook stops the session, the turn limit, an interrupt or a model failure.
    pub(super) async fn run_loop(
        &self,
        runner: &Runner,
        conversation: &mut Conversation,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> End {
        let mut run = SessionRun {
            core: self,
            runner,
            out,
            stats,
            stop_blocks: 0,
            last_text: String::new(),
            output_misses: 0,
        };
        agent_loop::run(&mut run, conversation).await
    }

    /// One tool call: `PreToolUse`, permissions, the tool, then `PostToolUse` or
    /// `PostToolUseFailure`.
    async fn tool_call(
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
        let mut done = self
            .after_pre_tool_use(runner, call, &pre, out, stats)
            .await;
        // A PreToolUse hook's context reaches the model with the call's result, whatever it
        // was (as PostToolUse context does).
        if let Some(context) = &pre.additional_context {
            done.text.push_str(&format!("\n\n{context}"));
        }
        done
    }

    /// The rest of a tool call once `PreToolUse` gave `pre`: its stop or deny, permissions,
    /// the tool, `PostToolUse` / `PostToolUseFailure`.
    async fn after_pre_tool_use(
        &self,
        runner: &Runner,
        call: &ToolCall,
        pre: &HookOutcome,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> CallDone {
        if !pre.continue_ {
            let reason = stop_reason(pre);
            return CallDone {
                end: Some(End::Stopped(reason.clone())),
                ..CallDone::error(format!("Stopped by a PreToolUse hook: {reason}"))
            };
        }
        let mut input = pre
            .updated_input
            .clone()
            .unwrap_or_else(|| call.args.clone());
        if pre.decision.is_blocking() {
            stats.denials.push(denial(call, &input));
            return CallDone::error(
                pre.reason
                    .clone()
                    .unwrap_or_else(|| format!("{} was blocked by a PreToolUse hook", call.name)),
            );
        }
        match self.permit(runner, call, input, pre, out).await {
            Permit::Run(allowed) => input = allowed,
            Permit::Deny(message) => {
                stats.denials.push(denial(call, &call.args));
                return CallDone::error(message);
            }
            Permit::Stop(end, message) => {
                return CallDone {
                    end: Some(end),
                    ..CallDone::error(message)
                };
            }
        }
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

/// One agent's run on the agent loop: the main agent's query, or a sub-agent's task.
struct SessionRun<'r, 'e> {
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

impl<'r> SessionRun<'r, '_> {
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
