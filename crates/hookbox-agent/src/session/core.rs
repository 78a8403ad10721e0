//! One session's state and its query loop: prompt hooks, model turns on the agent loop
//! ([`run`](super::run)), tool calls through `PreToolUse` → permissions
//! ([`permit`](super::permit)) → tool → `PostToolUse` / `PostToolUseFailure`
//! ([`tool_call`](super::tool_call)), and `Stop` hooks. Sub-agents
//! ([`subagent`](super::subagent)) and compaction ([`compact`](super::compact)) are steps of
//! this loop kept in their own files.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use hookbox_env::CodingTools;
use hookbox_hooks::{Dispatcher, EventInput, HookOutcome, SdkEvent, SessionContext, SubagentRef};
use tokio::sync::Notify;

use super::SubagentDefinition;
use super::compact::compact_command;
use super::emit::{Emitter, Transcript, TranscriptPlace, place_transcript};
use super::mcp::McpTools;
use super::messages::{CompactTrigger, HookFailure, SessionMessage};
use super::outcome::{End, Stats, result, stop_reason};
use super::permissions::{PermissionMode, PermissionPrompt};
use super::run::SessionRun;
use super::slash::{KNOWN, is_clear, unknown_command};
use super::structured::OutputSchema;
use super::tools::declarations;
use crate::agent_loop::{self};
use hookbox_llm::{Conversation, Model, ToolDeclaration};
use hookbox_store::new_uuid;

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
    pub(super) fn offers(&self, tool: &str) -> bool {
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
        let mut run = SessionRun::new(self, runner, out, stats);
        agent_loop::run(&mut run, conversation).await
    }
}
