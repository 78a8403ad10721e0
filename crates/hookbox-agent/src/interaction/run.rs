//! The Interactions agent on the agent loop ([`crate::agent_loop`]): the model proposes tool
//! calls, each goes through the hooks and the sandbox, the results go back to the model, until
//! it answers, asks for a client-side function, runs out of turns or over its token budget.
//! Each point of the loop adds the steps it makes.

use std::sync::Arc;

use serde_json::{Value, json};

use super::call_record::CallRecord;
use super::steps::{Step, extend_conversation};
use crate::agent_loop::{self, Answered, Called, LoopPoints};
use crate::declarations::builtin_declarations;
use crate::tool_call::SandboxTools;
use hookbox_env::Vocabulary;
use hookbox_llm::{Conversation, Delta, Model, ModelReply, ToolCall, ToolDeclaration, ToolResult};

/// What a run reports as it goes.
#[derive(Debug, Clone, Copy)]
pub enum RunEvent<'a> {
    /// A new step, complete.
    Step(&'a Step),
    /// A piece of the text of the `model_output` step being produced (streaming runs only);
    /// the step follows as a [`RunEvent::Step`] whose text is the pieces joined.
    Text(&'a str),
    /// The audit record (hook traces, hook file problems, network decisions) of the step
    /// reported next (a built-in tool call's result step), as it is also kept in
    /// [`RunOutcome::records`]: reported before that step so that the two can be stored
    /// together, as the call completes.
    Record(&'a CallRecord),
}

/// How an interaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// The model answered.
    Completed,
    /// The model called a client-side `function` tool: the client runs it and continues.
    RequiresAction,
    /// The turn limit was reached before the model answered.
    Incomplete,
    /// The model could not be reached or answered badly, or a tool call's sandbox died under
    /// it.
    Failed,
}

impl RunStatus {
    /// The status's name: `completed`, `requires_action`, `incomplete`, `failed`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::RequiresAction => "requires_action",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
        }
    }
}

/// What to run: the model, the sandbox tools (when an environment is attached), client-side
/// function declarations, and limits.
pub struct Agent {
    /// The model.
    pub model: Arc<dyn Model>,
    /// The environment's tools, wrapped in its hooks; `None` without an environment.
    pub tools: Option<Arc<SandboxTools>>,
    /// Client-side `function` tools: calling one stops the loop with `requires_action`.
    pub functions: Vec<ToolDeclaration>,
    /// A system instruction, if any.
    pub system: Option<String>,
    /// Model turns allowed before the interaction ends `incomplete`.
    pub max_turns: u32,
    /// Tokens (input plus output, summed over the model calls) after which no further tool
    /// call or turn starts: the interaction ends `incomplete` with `budget_exceeded`. `None`:
    /// no limit.
    pub max_tokens: Option<u64>,
}

/// Tokens a run used, summed over its model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens of the model's input.
    pub input_tokens: u64,
    /// Tokens of the model's output.
    pub output_tokens: u64,
}

impl Usage {
    /// Input and output tokens together.
    pub fn total(self) -> u64 {
        self.input_tokens + self.output_tokens
    }
}

/// Why a run failed or is incomplete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    /// What kind of end it was.
    pub code: RunErrorCode,
    /// What happened, for people.
    pub message: String,
}

/// The kinds of [`RunError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunErrorCode {
    /// The turn limit was reached before the model answered.
    MaxTurns,
    /// The model could not be reached or answered badly.
    ModelError,
    /// The token budget was used up before the model's next tool calls.
    BudgetExceeded,
    /// A tool call's sandbox died under it (its warm sandbox's supervisor was killed): the
    /// call's result is an error, and the interaction ends `failed` rather than go on as if
    /// the call had only failed.
    SandboxLost,
}

impl RunErrorCode {
    /// The code's name: `max_turns`, `model_error`, `budget_exceeded`, `sandbox_lost`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTurns => "max_turns",
            Self::ModelError => "model_error",
            Self::BudgetExceeded => "budget_exceeded",
            Self::SandboxLost => "sandbox_lost",
        }
    }
}

/// The result of one run: its new steps (from the input on), status, token use, the audit
/// records of its built-in tool calls (`(step index, record)`) and, when it failed, why.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// How it ended.
    pub status: RunStatus,
    /// The steps of this interaction, input first.
    pub steps: Vec<Step>,
    /// Tokens used, summed over the model calls.
    pub usage: Usage,
    /// The record of each built-in tool call, with the index of its result step (in
    /// `steps`).
    pub records: Vec<(usize, CallRecord)>,
    /// Why it failed or is incomplete.
    pub error: Option<RunError>,
}

impl Agent {
    /// Runs one interaction: `history` (the steps of earlier interactions, oldest first) then
    /// `input` (this interaction's input steps). `on_step` sees each new step as it is made.
    pub async fn run(
        &self,
        history: &[Step],
        input: Vec<Step>,
        interaction_id: Option<&str>,
        on_step: &mut (dyn FnMut(&Step) + Send),
    ) -> RunOutcome {
        let mut on_event = |event: RunEvent<'_>| {
            if let RunEvent::Step(step) = event {
                on_step(step);
            }
        };
        self.run_with(history, input, interaction_id, false, &mut on_event)
            .await
    }

    /// Like [`run`](Self::run), asking the model with
    /// [`Model::complete_streaming`](hookbox_llm::Model::complete_streaming) and reporting the
    /// text of each `model_output` step as it arrives. Text streamed before a model failure
    /// becomes a `model_output` step.
    pub async fn run_streaming(
        &self,
        history: &[Step],
        input: Vec<Step>,
        interaction_id: Option<&str>,
        on_event: &mut (dyn FnMut(RunEvent<'_>) + Send),
    ) -> RunOutcome {
        self.run_with(history, input, interaction_id, true, on_event)
            .await
    }

    /// Like [`run`](Self::run) (or [`run_streaming`](Self::run_streaming) with `stream`),
    /// reporting every [`RunEvent`]: the steps, the streamed text and the record of each
    /// built-in tool call as it completes.
    pub async fn run_with(
        &self,
        history: &[Step],
        input: Vec<Step>,
        interaction_id: Option<&str>,
        stream: bool,
        on_event: &mut (dyn FnMut(RunEvent<'_>) + Send),
    ) -> RunOutcome {
        let mut conversation = Conversation::new(self.system.clone());
        extend_conversation(&mut conversation, history);
        extend_conversation(&mut conversation, &input);
        let mut declarations = if self.tools.is_some() {
            builtin_declarations(Vocabulary::Sandbox)
        } else {
            Vec::new()
        };
        declarations.extend(self.functions.iter().cloned());
        let mut run = InteractionRun {
            agent: self,
            interaction_id,
            stream,
            on_event,
            declarations,
            outcome: RunOutcome {
                status: RunStatus::Incomplete,
                steps: Vec::new(),
                usage: Usage::default(),
                records: Vec::new(),
                error: None,
            },
            turns: 0,
        };
        for step in input {
            run.push(step);
        }
        run.outcome.status = agent_loop::run(&mut run, &mut conversation).await;
        run.outcome
    }

    /// Runs one built-in tool call through the hooks; returns what the model gets back and
    /// whether the call's sandbox died under it. What the hooks and the egress proxy did goes
    /// to `record`.
    async fn call_tool(
        &self,
        call: &ToolCall,
        interaction_id: Option<&str>,
        record: &mut CallRecord,
    ) -> (Value, bool, bool) {
        let Some(tools) = &self.tools else {
            return (
                json!(format!(
                    "tool `{}` is not available: no environment is attached",
                    call.name
                )),
                true,
                false,
            );
        };
        let mut report = match tools
            .call(&call.name, call.args.clone(), interaction_id)
            .await
        {
            Ok(report) => report,
            Err(err) => return (json!(err.to_string()), true, false),
        };
        // Never silent: hooks that failed open and problems with the hook files are logged
        // (and kept in the call's record).
        report.log_hook_problems(&format!("interaction {}", interaction_id.unwrap_or("-")));
        // The egress proxy's decisions for this call (never header values) go to the same
        // record.
        *record = CallRecord {
            trace: std::mem::take(&mut report.trace),
            diagnostics: std::mem::take(&mut report.diagnostics),
            network: std::mem::take(&mut report.network),
        };
        let (content, is_error) = report.model_result();
        (content, is_error, report.sandbox_lost)
    }
}

/// One interaction on the agent loop: its steps, reported as they are made, and its counters.
struct InteractionRun<'a> {
    agent: &'a Agent,
    interaction_id: Option<&'a str>,
    /// Whether the model is asked with streaming, its text reported as it arrives.
    stream: bool,
    on_event: &'a mut (dyn FnMut(RunEvent<'_>) + Send),
    /// The sandbox tools (with an environment) and the client's functions.
    declarations: Vec<ToolDeclaration>,
    outcome: RunOutcome,
    turns: u32,
}

impl InteractionRun<'_> {
    /// Adds `step` to the interaction and reports it.
    fn push(&mut self, step: Step) {
        (self.on_event)(RunEvent::Step(&step));
        self.outcome.steps.push(step);
    }
}

impl LoopPoints for InteractionRun<'_> {
    type End = RunStatus;

    async fn before_turn(&mut self, _conversation: &mut Conversation) -> Option<RunStatus> {
        if self.turns >= self.agent.max_turns {
            self.outcome.error = Some(RunError {
                code: RunErrorCode::MaxTurns,
                message: format!(
                    "the model did not answer within {} turns",
                    self.agent.max_turns
                ),
            });
            return Some(RunStatus::Incomplete);
        }
        self.turns += 1;
        None
    }

    async fn ask(&mut self, conversation: &Conversation) -> Result<ModelReply, RunStatus> {
        let model = &self.agent.model;
        let answer = if self.stream {
            let mut streamed = String::new();
            let on_event = &mut *self.on_event;
            let mut on_delta = |delta: Delta<'_>| {
                if let Delta::Text(piece) = delta
                    && !piece.is_empty()
                {
                    streamed.push_str(piece);
                    on_event(RunEvent::Text(piece));
                }
            };
            let answer = model
                .complete_streaming(conversation, &self.declarations, &mut on_delta)
                .await;
            let rest = match &answer {
                Ok(reply) => reply.text.strip_prefix(streamed.as_str()).unwrap_or(""),
                Err(_) => "",
            };
            if !rest.is_empty() {
                (self.on_event)(RunEvent::Text(rest));
            }
            if answer.is_err() && !streamed.is_empty() {
                self.push(Step::ModelOutput(streamed));
            }
            answer
        } else {
            model.complete(conversation, &self.declarations).await
        };
        let reply = match answer {
            Ok(reply) => reply,
            Err(err) => {
                self.outcome.error = Some(RunError {
                    code: RunErrorCode::ModelError,
                    message: err.to_string(),
                });
                return Err(RunStatus::Failed);
            }
        };
        let usage = &mut self.outcome.usage;
        usage.input_tokens += reply.usage.input_tokens.unwrap_or(0);
        usage.output_tokens += reply.usage.output_tokens.unwrap_or(0);
        if !reply.text.is_empty() {
            self.push(Step::ModelOutput(reply.text.clone()));
        }
        Ok(reply)
    }

    async fn answered(&mut self, _reply: &ModelReply) -> Answered<RunStatus> {
        Answered::End(RunStatus::Completed)
    }

    fn before_calls(&mut self) -> Option<RunStatus> {
        let used = self.outcome.usage.total();
        let budget = self.agent.max_tokens.filter(|&budget| used > budget)?;
        self.outcome.error = Some(RunError {
            code: RunErrorCode::BudgetExceeded,
            message: format!(
                "the interaction used {used} tokens, more than its budget of {budget}; \
                 the model's next tool calls were not run"
            ),
        });
        Some(RunStatus::Incomplete)
    }

    async fn call(&mut self, call: &ToolCall) -> Called<RunStatus> {
        self.push(Step::Call(call.clone()));
        if self
            .agent
            .functions
            .iter()
            .any(|function| function.name == call.name)
        {
            return Called::ByClient(RunStatus::RequiresAction);
        }
        let mut record = CallRecord::default();
        let (content, is_error, sandbox_lost) = self
            .agent
            .call_tool(call, self.interaction_id, &mut record)
            .await;
        // The record belongs to the result step about to be pushed.
        (self.on_event)(RunEvent::Record(&record));
        let step_index = self.outcome.steps.len();
        self.outcome.records.push((step_index, record));
        self.push(Step::Result(ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.clone(),
            is_error,
        }));
        // A call whose sandbox died under it ends the interaction `failed`: it did not fail
        // for anything the model did, and an answer written after it would read `completed`.
        let end = sandbox_lost.then(|| {
            self.outcome.error = Some(RunError {
                code: RunErrorCode::SandboxLost,
                message: format!(
                    "the sandbox of tool call `{}` ({}) died during the call; the next call \
                     builds a new one: {}",
                    call.name,
                    call.id,
                    content.as_str().unwrap_or("no output")
                ),
            });
            RunStatus::Failed
        });
        Called::Done {
            content,
            is_error,
            end,
        }
    }
}
