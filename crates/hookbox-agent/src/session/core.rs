//! One session's state and its query loop: prompt hooks, model turns, tool calls through
//! `PreToolUse` → permissions → tool → `PostToolUse`/`PostToolUseFailure`, `Stop` hooks,
//! sub-agents and compaction.

use std::collections::BTreeMap;
use std::fs::File;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hookbox_env::CodingTools;
use hookbox_hooks::{Decision, Dispatcher, EventInput, HookEvent, HookOutcome, SessionContext};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use super::SubagentDefinition;
use super::compact::{SUMMARY_PREFIX, estimate_tokens, summary_request};
use super::emit::Emitter;
use super::messages::{ContentBlock, PermissionDenial, QueryResult, ResultSubtype, SessionMessage};
use super::permissions::{
    EDITS, PermissionAnswer, PermissionMode, PermissionPrompt, PermissionQuery, Rule, Rules,
};
use super::tools::{TASK, declarations};
use hookbox_llm::{Conversation, Model, ToolCall, ToolDeclaration, ToolResult};
use hookbox_store::new_uuid;

/// `Stop` blocks in a row after which the session stops anyway (Claude Code's cap).
const MAX_STOP_BLOCKS: u32 = 8;

/// What the running query and the session's controller share.
pub(crate) struct Shared {
    pub(crate) mode: Mutex<PermissionMode>,
    pub(crate) model: Mutex<Arc<dyn Model>>,
    pub(crate) interrupted: AtomicBool,
    pub(crate) interrupt: Notify,
}

impl Shared {
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
    pub(crate) transcript: Option<File>,
    pub(crate) dispatcher: Dispatcher,
    pub(crate) tools: CodingTools,
    pub(crate) tool_names: Vec<&'static str>,
    pub(crate) sandboxed: bool,
    pub(crate) allowed: Vec<String>,
    pub(crate) disallowed: Vec<String>,
    pub(crate) agents: BTreeMap<String, SubagentDefinition>,
    pub(crate) max_turns: u32,
    pub(crate) compact_threshold: u64,
    pub(crate) prompt: Option<Arc<dyn PermissionPrompt>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) conversation: Conversation,
    pub(crate) started: bool,
}

/// How a query (or a sub-agent's run) ended.
enum End {
    Answered(String),
    Stopped(String),
    MaxTurns,
    Interrupted,
    Failed(String),
    PromptBlocked(String),
    Compacted(String),
}

/// Counters over one query.
#[derive(Default)]
struct Stats {
    turns: u32,
    api_ms: u64,
    input_tokens: u64,
    output_tokens: u64,
    denials: Vec<PermissionDenial>,
}

/// Who is running a loop: the main agent, or a sub-agent started by a `Task` call.
struct Runner {
    agent: Option<(String, String)>,
    parent_tool_use_id: Option<String>,
    declarations: Vec<ToolDeclaration>,
}

impl Runner {
    fn offers(&self, tool: &str) -> bool {
        self.declarations
            .iter()
            .any(|declaration| declaration.name == tool)
    }

    /// `agent_id` / `agent_type`, on events fired for a sub-agent.
    fn agent_fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        if let Some((id, kind)) = &self.agent {
            fields.insert("agent_id".into(), id.clone().into());
            fields.insert("agent_type".into(), kind.clone().into());
        }
        fields
    }

    fn tool_fields(&self, call: &ToolCall, input: &Value) -> Map<String, Value> {
        let mut fields = self.agent_fields();
        fields.insert("tool_name".into(), call.name.clone().into());
        fields.insert("tool_input".into(), input.clone());
        fields.insert("tool_use_id".into(), call.id.clone().into());
        fields
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

/// The permission system's verdict on one call.
enum Permit {
    Run(Value),
    Deny(String),
    Stop(End, String),
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
        let mut transcript = self.transcript.take();
        let mut out = Emitter {
            session_id: &self.session_id,
            stream,
            transcript: transcript.as_mut(),
        };
        let mut stats = Stats::default();
        let mut conversation = std::mem::take(&mut self.conversation);
        let end = self
            .query_inner(&prompt, &mut conversation, &mut out, &mut stats)
            .await;
        self.conversation = conversation;
        self.started = true;
        let mut fields = Map::new();
        fields.insert("message".into(), "hookbox is waiting for your input".into());
        fields.insert("notification_type".into(), "idle_prompt".into());
        self.fire(HookEvent::Notification, fields, &mut out).await;
        out.emit(SessionMessage::Result(result(end, stats, started)));
        drop(out);
        self.transcript = transcript;
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
        let mut fields = Map::new();
        fields.insert("reason".into(), reason.into());
        self.fire(HookEvent::SessionEnd, fields, &mut out).await;
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
            let mut fields = Map::new();
            fields.insert("source".into(), "startup".into());
            fields.insert("model".into(), self.shared.model().label().into());
            let start = self.fire(HookEvent::SessionStart, fields, out).await;
            context.extend(start.additional_context);
            out.emit(SessionMessage::Init {
                cwd: self.cwd.clone(),
                model: self.shared.model().label().to_owned(),
                tools: self
                    .main_runner()
                    .declarations
                    .into_iter()
                    .map(|d| d.name)
                    .collect(),
                permission_mode: self.shared.mode().name().to_owned(),
                agents: self.agents.keys().cloned().collect(),
            });
        }
        if let Some(instructions) = compact_command(prompt) {
            return match self
                .compact(conversation, "manual", instructions, out, stats)
                .await
            {
                Ok(note) => End::Compacted(note),
                Err(end) => end,
            };
        }
        let mut fields = Map::new();
        fields.insert("prompt".into(), prompt.into());
        let submitted = self.fire(HookEvent::UserPromptSubmit, fields, out).await;
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
            declarations: declarations(&self.tool_names, !self.agents.is_empty()),
        }
    }

    /// Fires `event` with the session's common fields plus `fields`; passes any
    /// `systemMessage` on to the user.
    async fn fire(
        &self,
        event: HookEvent,
        fields: Map<String, Value>,
        out: &mut Emitter<'_>,
    ) -> HookOutcome {
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
            .dispatch(&EventInput::sdk(event, &context, fields))
            .await;
        for entry in &outcome.trace {
            if let Some(message) = SessionMessage::hook_failure(entry) {
                out.emit(message);
            }
        }
        if let Some(message) = &outcome.system_message {
            out.emit(SessionMessage::System {
                subtype: "hook_system_message".into(),
                data: json!({"message": message, "hook_event_name": event.name()}),
            });
        }
        outcome
    }

    /// Runs `work` unless the query is interrupted first (`None` then).
    async fn interruptible<F: Future>(&self, work: F) -> Option<F::Output> {
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

    /// Model turns until the model answers (and the `Stop` hooks let it stop), a hook stops
    /// the session, the turn limit, an interrupt or a model failure.
    async fn run_loop(
        &self,
        runner: &Runner,
        conversation: &mut Conversation,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> End {
        let mut stop_blocks = 0;
        loop {
            if stats.turns >= self.max_turns {
                return End::MaxTurns;
            }
            if runner.agent.is_none()
                && estimate_tokens(conversation) > self.compact_threshold
                && let Err(end) = self.compact(conversation, "auto", "", out, stats).await
            {
                return end;
            }
            let model = self.shared.model();
            let asked = Instant::now();
            let reply = match self
                .interruptible(model.complete(conversation, &runner.declarations))
                .await
            {
                None => return End::Interrupted,
                Some(Err(err)) => return End::Failed(format!("the model failed: {err}")),
                Some(Ok(reply)) => reply,
            };
            stats.api_ms += millis(asked);
            stats.turns += 1;
            stats.input_tokens += reply.usage.input_tokens.unwrap_or(0);
            stats.output_tokens += reply.usage.output_tokens.unwrap_or(0);
            conversation.push_reply(&reply);
            let mut content = Vec::new();
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
            out.emit(SessionMessage::Assistant {
                id: format!("msg_{}", new_uuid().replace('-', "")),
                model: model.label().to_owned(),
                content,
                parent_tool_use_id: runner.parent_tool_use_id.clone(),
            });
            if reply.tool_calls.is_empty() {
                let (event, mut fields) = match &runner.agent {
                    None => (HookEvent::Stop, Map::new()),
                    Some(_) => {
                        let mut fields = runner.agent_fields();
                        fields.insert(
                            "agent_transcript_path".into(),
                            self.transcript_path.clone().into(),
                        );
                        (HookEvent::SubagentStop, fields)
                    }
                };
                fields.insert("stop_hook_active".into(), (stop_blocks > 0).into());
                fields.insert("last_assistant_message".into(), reply.text.clone().into());
                let stop = self.fire(event, fields, out).await;
                if !stop.continue_ {
                    return End::Stopped(stop_reason(&stop));
                }
                if stop.decision.is_blocking() && stop_blocks < MAX_STOP_BLOCKS {
                    stop_blocks += 1;
                    conversation.push_user(format!(
                        "{event} hook feedback: {}",
                        stop.reason.unwrap_or_else(|| "keep going".to_owned())
                    ));
                    continue;
                }
                return End::Answered(reply.text);
            }
            for (index, call) in reply.tool_calls.iter().enumerate() {
                let done = self.tool_call(runner, call, out, stats).await;
                conversation.push_tool_result(ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: json!(done.text),
                    is_error: done.is_error,
                });
                out.emit(SessionMessage::User {
                    content: vec![ContentBlock::ToolResult {
                        tool_use_id: call.id.clone(),
                        content: done.text,
                        is_error: done.is_error,
                    }],
                    parent_tool_use_id: runner.parent_tool_use_id.clone(),
                    tool_use_result: done.response,
                });
                if let Some(end) = done.end {
                    // Every call gets an answer, so the history stays valid for the next query.
                    for skipped in &reply.tool_calls[index + 1..] {
                        conversation.push_tool_result(ToolResult {
                            call_id: skipped.id.clone(),
                            name: skipped.name.clone(),
                            content: json!("not run: the session stopped first"),
                            is_error: true,
                        });
                    }
                    return end;
                }
            }
        }
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
        let pre = self
            .fire(
                HookEvent::PreToolUse,
                runner.tool_fields(call, &call.args),
                out,
            )
            .await;
        if !pre.continue_ {
            let reason = stop_reason(&pre);
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
        match self.permit(runner, call, input, &pre, out).await {
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
        } else {
            match self
                .interruptible(self.tools.call(&call.name, &input))
                .await
            {
                Some(outcome) => Ok((outcome.text, outcome.response, outcome.error)),
                None => Err(End::Interrupted),
            }
        };
        let mut fields = runner.tool_fields(call, &input);
        let (mut done, post) = match ran {
            Ok((text, response, None)) => {
                fields.insert("tool_response".into(), response.clone());
                let post = self.fire(HookEvent::PostToolUse, fields, out).await;
                let done = CallDone {
                    text,
                    is_error: false,
                    response: Some(response),
                    end: None,
                };
                (done, post)
            }
            Ok((text, response, Some(error))) => {
                fields.insert("error".into(), error.into());
                fields.insert("is_interrupt".into(), false.into());
                let post = self.fire(HookEvent::PostToolUseFailure, fields, out).await;
                let done = CallDone {
                    response: Some(response),
                    ..CallDone::error(text)
                };
                (done, post)
            }
            Err(End::Interrupted) => {
                fields.insert("error".into(), "interrupted".into());
                fields.insert("is_interrupt".into(), true.into());
                self.fire(HookEvent::PostToolUseFailure, fields, out).await;
                return CallDone {
                    end: Some(End::Interrupted),
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

    /// The permission system: rules, then `PermissionRequest` hooks, then the prompt.
    async fn permit(
        &self,
        runner: &Runner,
        call: &ToolCall,
        input: Value,
        pre: &HookOutcome,
        out: &mut Emitter<'_>,
    ) -> Permit {
        let protected = EDITS
            .contains(&call.name.as_str())
            .then(|| input.get("file_path").and_then(Value::as_str))
            .flatten()
            .and_then(|path| self.tools.protected(path));
        let rules = Rules {
            mode: self.shared.mode(),
            allowed: &self.allowed,
            disallowed: &self.disallowed,
            sandboxed: self.sandboxed,
            protected: protected.as_deref(),
        };
        let hook_allowed = pre.explicit && pre.decision == Decision::Allow;
        let reason = match rules.decide(&call.name, hook_allowed, pre.decision == Decision::Ask) {
            Rule::Allow => return Permit::Run(input),
            Rule::Deny(message) => return Permit::Deny(message),
            Rule::Ask(reason) => pre.reason.clone().unwrap_or(reason),
        };
        let mut fields = runner.agent_fields();
        fields.insert("tool_name".into(), call.name.clone().into());
        fields.insert("tool_input".into(), input.clone());
        fields.insert("permission_suggestions".into(), json!([]));
        let request = self.fire(HookEvent::PermissionRequest, fields, out).await;
        if !request.continue_ {
            let reason = stop_reason(&request);
            return Permit::Stop(End::Stopped(reason.clone()), reason);
        }
        if request.explicit {
            match request.decision {
                Decision::Allow => {
                    return Permit::Run(request.updated_input.clone().unwrap_or(input));
                }
                Decision::Deny | Decision::Block => {
                    return Permit::Deny(request.reason.clone().unwrap_or_else(|| {
                        format!("{} was denied by a PermissionRequest hook", call.name)
                    }));
                }
                Decision::Ask => {}
            }
        }
        let Some(prompt) = &self.prompt else {
            return Permit::Deny(format!(
                "{reason}, and this session cannot ask anyone: it has no can_use_tool callback \
                 and no PermissionRequest hook allowed the call. Allow it with allowed_tools, a \
                 permission mode, a PermissionRequest hook or a can_use_tool callback."
            ));
        };
        let mut fields = Map::new();
        fields.insert(
            "message".into(),
            format!("hookbox needs your permission to use {}", call.name).into(),
        );
        fields.insert("notification_type".into(), "permission_prompt".into());
        fields.insert("title".into(), "Permission needed".into());
        self.fire(HookEvent::Notification, fields, out).await;
        let query = PermissionQuery {
            tool_name: call.name.clone(),
            input: input.clone(),
            tool_use_id: call.id.clone(),
            decision_reason: reason,
            agent_id: runner.agent.as_ref().map(|(id, _)| id.clone()),
        };
        match self.interruptible(prompt.can_use_tool(query)).await {
            None => Permit::Stop(End::Interrupted, "Interrupted by the user".to_owned()),
            Some(PermissionAnswer::Allow { updated_input }) => {
                Permit::Run(updated_input.unwrap_or(input))
            }
            Some(PermissionAnswer::Deny {
                message,
                interrupt: true,
            }) => Permit::Stop(End::Interrupted, message),
            Some(PermissionAnswer::Deny { message, .. }) => Permit::Deny(message),
        }
    }

    /// Runs a `Task` call: `SubagentStart`, the sub-agent's own loop (its tools through the same
    /// hooks, with `agent_id`/`agent_type`), `SubagentStop` in place of `Stop`.
    async fn subagent(
        &self,
        call: &ToolCall,
        input: &Value,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> Result<(String, Value, Option<String>), End> {
        let kind = input
            .get("subagent_type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let task = input
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(definition) = self.agents.get(kind) else {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            let error = format!(
                "no sub-agent named `{kind}`; this session's agents: {}",
                known.join(", ")
            );
            return Ok((error.clone(), json!({"error": error}), Some(error)));
        };
        let agent_id = format!("agent_{}", new_uuid().replace('-', ""));
        let tool_names: Vec<&'static str> = self
            .tool_names
            .iter()
            .copied()
            .filter(|name| {
                definition
                    .tools
                    .as_ref()
                    .is_none_or(|tools| tools.iter().any(|tool| tool == name))
            })
            .collect();
        let sub = Runner {
            agent: Some((agent_id.clone(), kind.to_owned())),
            parent_tool_use_id: Some(call.id.clone()),
            declarations: declarations(&tool_names, false),
        };
        let start = self
            .fire(HookEvent::SubagentStart, sub.agent_fields(), out)
            .await;
        let mut conversation = Conversation::new(Some(definition.prompt.clone()));
        let mut text = task.to_owned();
        if let Some(context) = start.additional_context {
            text.push_str(&format!("\n\n{context}"));
        }
        conversation.push_user(text);
        match self.run_loop(&sub, &mut conversation, out, stats).await {
            End::Answered(answer) => Ok((
                answer.clone(),
                json!({"agent_id": agent_id, "agent_type": kind, "content": [{"type": "text", "text": answer}]}),
                None,
            )),
            End::MaxTurns => {
                let error = "the sub-agent ran out of turns".to_owned();
                Ok((
                    error.clone(),
                    json!({"agent_id": agent_id, "error": error}),
                    Some(error),
                ))
            }
            End::Failed(error) => Ok((
                error.clone(),
                json!({"agent_id": agent_id, "error": error}),
                Some(error),
            )),
            end => Err(end),
        }
    }

    /// Compacts `conversation`: `PreCompact` (which may block), then the model's summary
    /// replaces the history. Returns a note for the user.
    async fn compact(
        &self,
        conversation: &mut Conversation,
        trigger: &str,
        instructions: &str,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> Result<String, End> {
        let mut fields = Map::new();
        fields.insert("trigger".into(), trigger.into());
        fields.insert("custom_instructions".into(), instructions.into());
        let pre = self.fire(HookEvent::PreCompact, fields, out).await;
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
            None => return Err(End::Interrupted),
            Some(Err(err)) => return Err(End::Failed(format!("compaction failed: {err}"))),
            Some(Ok(reply)) => reply,
        };
        stats.api_ms += millis(asked);
        stats.input_tokens += summary.usage.input_tokens.unwrap_or(0);
        stats.output_tokens += summary.usage.output_tokens.unwrap_or(0);
        let mut compacted = Conversation::new(conversation.system.clone());
        compacted.push_user(format!("{SUMMARY_PREFIX}\n\n{}", summary.text));
        *conversation = compacted;
        out.emit(SessionMessage::System {
            subtype: "compact_boundary".into(),
            data: json!({"compact_metadata": {"trigger": trigger, "pre_tokens": pre_tokens}}),
        });
        Ok(format!(
            "Conversation compacted ({trigger}); about {pre_tokens} tokens summarised"
        ))
    }
}

/// `/compact` or `/compact INSTRUCTIONS` → the instructions.
fn compact_command(prompt: &str) -> Option<&str> {
    let rest = prompt.trim().strip_prefix("/compact")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

fn stop_reason(outcome: &HookOutcome) -> String {
    outcome
        .stop_reason
        .clone()
        .or_else(|| outcome.reason.clone())
        .unwrap_or_else(|| "a hook stopped the session".to_owned())
}

fn denial(call: &ToolCall, input: &Value) -> PermissionDenial {
    PermissionDenial {
        tool_name: call.name.clone(),
        tool_use_id: call.id.clone(),
        tool_input: input.clone(),
    }
}

fn millis(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The `result` message for how the query ended.
fn result(end: End, stats: Stats, started: Instant) -> QueryResult {
    let (subtype, is_error, text, stop_reason, errors) = match end {
        End::Answered(text) | End::Compacted(text) => {
            (ResultSubtype::Success, false, Some(text), None, Vec::new())
        }
        End::Stopped(reason) => (
            ResultSubtype::Success,
            false,
            Some(reason.clone()),
            Some(reason),
            Vec::new(),
        ),
        End::MaxTurns => (
            ResultSubtype::ErrorMaxTurns,
            true,
            None,
            None,
            vec![format!(
                "the model did not finish within {} turns",
                stats.turns
            )],
        ),
        End::Interrupted => (
            ResultSubtype::ErrorDuringExecution,
            true,
            None,
            None,
            vec!["interrupted".to_owned()],
        ),
        End::Failed(error) => (
            ResultSubtype::ErrorDuringExecution,
            true,
            None,
            None,
            vec![error],
        ),
        End::PromptBlocked(reason) => {
            let message = format!("the prompt was blocked by a UserPromptSubmit hook: {reason}");
            (
                ResultSubtype::ErrorDuringExecution,
                true,
                Some(message.clone()),
                None,
                vec![message],
            )
        }
    };
    QueryResult {
        subtype,
        is_error,
        result: text,
        num_turns: stats.turns,
        duration_ms: millis(started),
        duration_api_ms: stats.api_ms,
        usage: (stats.input_tokens, stats.output_tokens),
        stop_reason,
        errors,
        permission_denials: stats.denials,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
