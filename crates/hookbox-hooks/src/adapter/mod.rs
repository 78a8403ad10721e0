//! `hookbox hook AGENT`: the hook events of the agents people already run (Claude Code, Gemini
//! CLI, Codex, Cursor, GitHub Copilot), answered by one hookbox policy.
//!
//! Each agent's module translates its stdin into a [`Translated`] event (the event as a
//! Claude-style policy sees it, and, for tool events, as a sandbox-dialect policy sees it, see
//! [`vocabulary`]) and renders the merged [`HookOutcome`] back in the agent's own output format
//! and exit codes. [`evaluate`] is the one place the engine is called.

mod claude_code;
mod closure;
mod codex;
mod copilot;
mod cursor;
mod gemini_cli;
mod policy;
mod trust;
mod vocabulary;

use std::time::Duration;

use hookbox_store::NewDecision;
use serde_json::{Map, Value};

use crate::agent_event::AgentEvent;
use crate::dispatch::Dispatcher;
use crate::event::{Dialect, HookEvent};
use crate::handler::{Handler, OnError};
use crate::hookset::HookSet;
use crate::input::EventInput;
use crate::outcome::{Decision, HookOutcome};
use crate::rewrite::settle;
use crate::trace::{HandlerResult, TraceEntry};

pub(crate) use closure::PROJECT_VARIABLES;
pub use policy::{Fingerprint, Loaded, PolicyFiles};
pub use trust::{
    Change, ChangeKind, Distrust, Lapsed, PROJECT_POLICY, ProjectTrust, Recorded, TrustError,
    TrustStore, TrustedPolicy, Untrusted,
};

/// An agent whose hook events `hookbox hook` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    /// Anthropic's Claude Code (`settings.json` command hooks).
    ClaudeCode,
    /// Google's Gemini CLI (`settings.json` command hooks).
    GeminiCli,
    /// OpenAI's Codex (`hooks.json` / `[hooks]` command hooks, Claude Code's shapes).
    Codex,
    /// Cursor's agent (`.cursor/hooks.json` command hooks).
    Cursor,
    /// GitHub Copilot CLI and coding agent (`.github/hooks/*.json` command hooks).
    Copilot,
}

/// Argument renames between an agent's tool and its Claude Code counterpart: (the agent's
/// name, Claude Code's name).
type Renames = &'static [(&'static str, &'static str)];

/// One agent hook event, as each policy dialect sees it.
#[derive(Debug, Clone)]
pub struct Translated {
    /// The agent that sent the event.
    agent: Agent,
    /// The hookbox event (for an agent event without a hookbox counterpart, its pass-through
    /// [`HookEvent::Agent`] as a Claude-style policy binds it), or `None` for an event the
    /// agent does not publish (answered with no decision).
    event: Option<HookEvent>,
    /// The event's name in the agent's own vocabulary.
    native_event: String,
    /// The tool's name in the agent's own vocabulary, on tool events.
    native_tool: Option<String>,
    /// The event as a Claude-style (SDK-dialect) policy sees it.
    sdk: Option<EventInput>,
    /// The tool event as a sandbox-dialect policy sees it (seeds' tool names and shapes).
    sandbox: Option<EventInput>,
    /// The working directory the agent reported, if any.
    cwd: Option<String>,
    /// The agent's session id, if the event carried one.
    session: Option<String>,
}

impl Translated {
    /// Whether `hooks` has a handler for this event in either dialect; when it has none, the
    /// answer is known without starting a runtime or building runners.
    pub fn has_handlers(&self, hooks: &HookSet) -> bool {
        [&self.sandbox, &self.sdk]
            .into_iter()
            .flatten()
            .any(|input| !hooks.select(input.event(), input.match_value()).is_empty())
    }

    /// An event of `agent` that hookbox has no counterpart for. One the agent publishes is
    /// passed through under its own name: a policy of either dialect that names it sees
    /// `payload` as the agent sent it (with `hook_event_name` and `cwd` added when missing).
    /// Any other event no policy sees.
    fn unmapped(
        agent: Agent,
        native_event: String,
        mut payload: Map<String, Value>,
        cwd: Option<String>,
    ) -> Self {
        let published = |dialect| {
            AgentEvent::find(&native_event, dialect)
                .filter(|event| event.is_sent_by(agent))
                .map(HookEvent::Agent)
        };
        let (Some(sdk), Some(sandbox)) = (published(Dialect::Sdk), published(Dialect::Sandbox))
        else {
            return Self {
                agent,
                event: None,
                native_event,
                native_tool: None,
                sdk: None,
                sandbox: None,
                cwd,
                session: None,
            };
        };
        payload
            .entry("hook_event_name")
            .or_insert_with(|| Value::String(native_event.clone()));
        if let Some(cwd) = &cwd {
            payload
                .entry("cwd")
                .or_insert_with(|| Value::String(cwd.clone()));
        }
        Self {
            agent,
            event: Some(sdk),
            native_tool: text(&payload, "tool_name").map(str::to_owned),
            native_event,
            sandbox: Some(EventInput::sdk_payload(sandbox, payload.clone())),
            sdk: Some(EventInput::sdk_payload(sdk, payload)),
            cwd,
            session: None,
        }
    }

    /// This event with its Claude-shaped tool input replaced by `input` (a hook's rewrite),
    /// translated anew for the sandbox dialect.
    fn with_tool_input(&self, input: Value) -> Self {
        let Some(sdk) = &self.sdk else {
            return self.clone();
        };
        let sdk = sdk.with_tool_input(input);
        // Of the events hooks can rewrite, only `PreToolUse` has a sandbox-dialect form.
        let sandbox = match sdk.event() {
            HookEvent::PreToolUse => {
                vocabulary::sandbox_event(self.agent.name(), HookEvent::PreToolUse, sdk.payload())
            }
            _ => self.sandbox.clone(),
        };
        Self {
            sandbox,
            sdk: Some(sdk),
            ..self.clone()
        }
    }

    /// `rewrite`, a hook's Claude-shaped `updatedInput`, as the agent will run it, read back
    /// into Claude's shape: an argument the hook named by the agent's own name (Gemini CLI's
    /// `dir_path`, Cursor's `path`) is judged as the argument the agent reads it as, and
    /// Gemini CLI, which merges a rewrite into the call's input, gets the merged input.
    fn as_the_agent_runs(&self, rewrite: Value) -> Value {
        let (Some(tool), Value::Object(mut fields)) = (&self.native_tool, rewrite.clone()) else {
            return rewrite;
        };
        let renames = match self.agent {
            Agent::ClaudeCode | Agent::Codex => return rewrite,
            Agent::GeminiCli => gemini_cli::renames(tool),
            Agent::Cursor => cursor::renames(tool),
            Agent::Copilot => copilot::renames(tool),
        };
        rename(&mut fields, renames, true);
        rename(&mut fields, renames, false);
        if self.agent == Agent::GeminiCli
            && let Some(Value::Object(input)) = self.sdk.as_ref().and_then(EventInput::tool_input)
        {
            for (key, value) in input {
                fields.entry(key.clone()).or_insert_with(|| value.clone());
            }
        }
        Value::Object(fields)
    }

    /// A `PermissionRequest` as the `PreToolUse` of the call it asks about (same tool and
    /// input), in both dialects; `None` for any other event.
    fn as_pre_tool_use(&self) -> Option<Self> {
        let sdk = self.sdk.as_ref()?;
        if sdk.event() != HookEvent::PermissionRequest {
            return None;
        }
        let mut payload = sdk.payload().clone();
        payload.insert(
            "hook_event_name".into(),
            HookEvent::PreToolUse.name().into(),
        );
        Some(Self {
            event: Some(HookEvent::PreToolUse),
            sandbox: vocabulary::sandbox_event(self.agent.name(), HookEvent::PreToolUse, &payload),
            sdk: Some(EventInput::sdk_payload(HookEvent::PreToolUse, payload)),
            ..self.clone()
        })
    }

    /// The working directory the agent reported (command hooks run there).
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// A mapped event of `agent` read into Claude Code's shape (`payload`, whose
    /// `hook_event_name` is set here): what a Claude-style policy sees, and for tool events
    /// the sandbox dialect's form. The agent's `cwd` goes into the payload when it lacks one,
    /// so paths resolve against it.
    fn claude_shaped(
        agent: Agent,
        native_event: String,
        native_tool: Option<String>,
        event: HookEvent,
        mut payload: Map<String, Value>,
        cwd: Option<String>,
    ) -> Self {
        payload.insert("hook_event_name".into(), event.name().into());
        if let Some(cwd) = &cwd {
            payload
                .entry("cwd")
                .or_insert_with(|| Value::String(cwd.clone()));
        }
        Self {
            agent,
            event: Some(event),
            native_event,
            native_tool,
            sandbox: vocabulary::sandbox_event(agent.name(), event, &payload),
            sdk: Some(EventInput::sdk_payload(event, payload)),
            cwd,
            session: None,
        }
    }

    /// The decision log's record of this event answered with `outcome` by `agent`'s policy
    /// (`latency` left zero for the caller): the decision (a sandbox-dialect `allow`, which the
    /// agent only sees as no objection, is logged as the allow it was; `none` when no handler
    /// decided), its reason, and the first handler that gave it, with its policy file.
    pub fn decision(&self, agent: Agent, outcome: &HookOutcome) -> NewDecision {
        let decided = |decision| {
            outcome
                .trace
                .iter()
                .find(|entry| entry.result == HandlerResult::Decided(decision))
        };
        let (decision, reason, decider) = if !outcome.continue_ {
            let reason = outcome
                .stop_reason
                .clone()
                .or_else(|| outcome.reason.clone());
            ("stop", reason, None)
        } else if outcome.explicit || outcome.decision != Decision::Allow {
            let decider = decided(outcome.decision);
            (
                decision_name(outcome.decision),
                outcome.reason.clone(),
                decider,
            )
        } else {
            match decided(Decision::Allow) {
                Some(entry) => ("allow", entry.reason.clone(), Some(entry)),
                None => ("none", None, None),
            }
        };
        // A handler that failed open is never hidden behind `none`: with nothing else decided
        // it is the decision (its cause the reason, it the handler); otherwise its cause is
        // added to the reason of what was decided.
        let failed_open: Vec<&TraceEntry> =
            outcome.trace.iter().filter(|e| fails_open(e)).collect();
        let (decision, reason, decider) = match (decision, failed_open.first()) {
            ("none", Some(&first)) => ("fail-open", Some(joined(&failed_open)), Some(first)),
            (_, Some(_)) => {
                let failures = joined(&failed_open);
                let reason = match reason {
                    Some(reason) => format!("{reason} (and {failures})"),
                    None => failures,
                };
                (decision, Some(reason), decider)
            }
            (_, None) => (decision, reason, decider),
        };
        NewDecision {
            agent: agent.name().to_owned(),
            session: self.session.clone(),
            event: self.native_event.clone(),
            tool: self.native_tool.clone(),
            decision: decision.to_owned(),
            reason,
            latency: Duration::ZERO,
            policy: decider.map(|entry| entry.origin.source.clone()),
            handler: decider.map(|entry| {
                format!(
                    "{} `{}` at {}",
                    entry.handler, entry.label, entry.origin.json_path
                )
            }),
        }
    }

    /// The decision log's record of this event when it could not be evaluated (`message`
    /// says why; `deny`: it was denied for that).
    pub fn failed(&self, agent: Agent, message: &str, deny: bool) -> NewDecision {
        NewDecision {
            agent: agent.name().to_owned(),
            session: self.session.clone(),
            event: self.native_event.clone(),
            tool: self.native_tool.clone(),
            decision: if deny { "deny" } else { "fail-open" }.to_owned(),
            reason: Some(message.to_owned()),
            latency: Duration::ZERO,
            policy: None,
            handler: None,
        }
    }
}

/// The decision log's name of `decision`.
fn decision_name(decision: Decision) -> &'static str {
    match decision {
        Decision::Allow => "allow",
        Decision::Ask => "ask",
        Decision::Deny => "deny",
        Decision::Block => "block",
    }
}

/// What `hookbox hook` writes back to the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Standard output (the agent's JSON answer, or nothing).
    pub stdout: String,
    /// Standard error (problems for the user; the agent may show or log it).
    pub stderr: String,
    /// The exit code, in the agent's convention.
    pub exit_code: u8,
}

impl Agent {
    /// The name on the command line (`hookbox hook claude-code`).
    pub fn name(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::GeminiCli => "gemini-cli",
            Self::Codex => "codex",
            Self::Cursor => "cursor",
            Self::Copilot => "copilot",
        }
    }

    /// The environment variable in which the agent names the project root for its hooks, if
    /// it has one (else the event's `cwd` is the project).
    pub fn project_variable(self) -> Option<&'static str> {
        match self {
            Self::ClaudeCode => Some("CLAUDE_PROJECT_DIR"),
            Self::GeminiCli => Some("GEMINI_PROJECT_DIR"),
            Self::Codex | Self::Cursor | Self::Copilot => None,
        }
    }

    /// Reads the agent's hook event from the bytes it wrote on stdin. `event` is the event's
    /// name when the command line gives it (Copilot's input does not name its event).
    pub fn translate(self, stdin: &[u8], event: Option<&str>) -> Result<Translated, String> {
        if event.is_some() && self != Self::Copilot {
            return Err(format!(
                "--event is only for copilot, whose input does not name its event; {} names it \
                 in `hook_event_name`",
                self.name()
            ));
        }
        let payload = match crate::lenient_json::from_slice::<Value>(stdin) {
            Ok(Value::Object(payload)) => payload,
            Ok(_) => return Err("the hook input is JSON but not an object".to_owned()),
            Err(err) => return Err(format!("the hook input is not JSON: {err}")),
        };
        // Cursor names the session `conversation_id`, Copilot `sessionId` (when it does).
        let session = ["session_id", "conversation_id", "sessionId"]
            .into_iter()
            .find_map(|key| text(&payload, key))
            .map(str::to_owned);
        let translated = match self {
            Self::ClaudeCode | Self::Codex => claude_code::translate(self, payload),
            Self::GeminiCli => gemini_cli::translate(payload),
            Self::Cursor => cursor::translate(payload),
            Self::Copilot => copilot::translate(payload, event),
        }?;
        Ok(Translated {
            session,
            ..translated
        })
    }

    /// The agent's answer to `translated`, given what the policy decided.
    pub fn answer(self, translated: &Translated, outcome: &HookOutcome) -> Reply {
        // A gate that failed open is said where the agent's user sees it: the `systemMessage`
        // of the agents that show one (Claude Code, Codex and Gemini CLI); stderr for all.
        let mut shown;
        let outcome = match fail_open_message(outcome) {
            Some(message) if matches!(self, Self::ClaudeCode | Self::Codex | Self::GeminiCli) => {
                shown = outcome.clone();
                shown.system_message = Some(match shown.system_message.take() {
                    Some(theirs) => format!("{theirs}\n{message}"),
                    None => message,
                });
                &shown
            }
            _ => outcome,
        };
        let stdout = match self {
            Self::ClaudeCode => claude_code::answer(translated.event, outcome),
            Self::GeminiCli => gemini_cli::answer(translated, outcome),
            Self::Codex => codex::answer(translated.event, outcome),
            Self::Cursor => cursor::answer(translated, outcome),
            Self::Copilot => copilot::answer(translated, outcome),
        };
        let mut stderr = failures(self, &outcome.trace);
        if matches!(self, Self::ClaudeCode | Self::Codex)
            && let Some(HookEvent::Agent(event)) = translated.event
            && event.can_block()
            && outcome.decision.is_blocking()
            && outcome.continue_
        {
            // Their events without a hookbox counterpart are blocked the one way all of them
            // read: exit 2, the reason on stderr.
            let reason = outcome
                .reason
                .as_deref()
                .unwrap_or("blocked by a hookbox policy");
            stderr.insert_str(0, &format!("{reason}\n"));
            return Reply {
                stdout: String::new(),
                stderr,
                exit_code: claude_code::BLOCKING_EXIT,
            };
        }
        // Cursor and Copilot ignore what most of their hooks answer: say what was not enforced.
        if matches!(self, Self::Cursor | Self::Copilot)
            && outcome.decision.is_blocking()
            && stdout.is_empty()
        {
            stderr.push_str(&format!(
                "hookbox hook {}: the policy blocked {}, which {} does not let a hook block; \
                 not enforced: {}\n",
                self.name(),
                translated.native_event,
                self.name(),
                outcome.reason.as_deref().unwrap_or("no reason given")
            ));
        }
        Reply {
            stdout: if stdout.is_empty() {
                String::new()
            } else {
                Value::Object(stdout).to_string()
            },
            stderr,
            exit_code: 0,
        }
    }

    /// The answer when the input or the policy could not be read: `message` on stderr, and the
    /// agent's blocking exit code when `deny`, else its non-blocking-error code.
    pub fn failure(self, message: &str, deny: bool) -> Reply {
        let (blocking, non_blocking) = match self {
            // Codex, like Claude Code, blocks on 2 and reports any other failure as non-blocking.
            Self::ClaudeCode | Self::Codex => {
                (claude_code::BLOCKING_EXIT, claude_code::NON_BLOCKING_EXIT)
            }
            Self::GeminiCli => (gemini_cli::BLOCKING_EXIT, gemini_cli::NON_BLOCKING_EXIT),
            Self::Cursor => (cursor::BLOCKING_EXIT, cursor::NON_BLOCKING_EXIT),
            Self::Copilot => (copilot::EXIT, copilot::EXIT),
        };
        let outcome = if deny { "denied" } else { "not gated" };
        let stderr = format!("hookbox hook {}: {message} ({outcome})\n", self.name());
        // Cursor's and Copilot's tool hooks deny in JSON; say it there too.
        let stdout = match self {
            Self::Cursor if deny => cursor::denial(&stderr),
            Self::Copilot if deny => copilot::denial(&stderr),
            _ => Map::new(),
        };
        Reply {
            stdout: if stdout.is_empty() {
                String::new()
            } else {
                Value::Object(stdout).to_string()
            },
            stderr,
            exit_code: if deny { blocking } else { non_blocking },
        }
    }
}

/// Runs `translated` through the policy: the sandbox-dialect hooks first (only their deny, on
/// an event that can be blocked, counts: a sandbox `allow` means "no objection", never an
/// approval that would skip the agent's own permission prompt), then, unless they denied, the
/// Claude-style hooks. When those rewrite the tool input, both run once more on the rewritten
/// input (translated anew for the sandbox dialect) and judge it: the agent is only ever told
/// to run an input every gate saw.
pub async fn evaluate(dispatcher: &Dispatcher, translated: &Translated) -> HookOutcome {
    let original = translated.sdk.as_ref().and_then(EventInput::tool_input);
    settle(original, |rewrite| async move {
        let Some(rewrite) = rewrite else {
            let mut outcome = evaluate_round(dispatcher, translated).await;
            outcome.updated_input = outcome
                .updated_input
                .map(|rewrite| translated.as_the_agent_runs(rewrite));
            return outcome;
        };
        let rewritten = translated.with_tool_input(rewrite);
        let mut outcome = evaluate_round(dispatcher, &rewritten).await;
        // A permission hook's rewrite is judged by the gates of the call it rewrites too.
        if let Some(call) = rewritten.as_pre_tool_use() {
            let mut gates = evaluate_round(dispatcher, &call).await;
            if gates.decision.rank() > outcome.decision.rank() {
                outcome.decision = gates.decision;
                outcome.reason = gates.reason;
                outcome.explicit = true;
            }
            outcome.trace.append(&mut gates.trace);
        }
        outcome
    })
    .await
}

/// One round of [`evaluate`]: both dialects' hooks on `translated` as it is.
async fn evaluate_round(dispatcher: &Dispatcher, translated: &Translated) -> HookOutcome {
    let mut outcome = HookOutcome::default();
    if let Some(sandbox) = &translated.sandbox {
        let gated = dispatcher.dispatch_once(sandbox).await;
        if sandbox.event().can_block() && gated.decision.is_blocking() {
            outcome.decision = gated.decision;
            outcome.explicit = true;
            outcome.reason = gated.reason;
            outcome.trace = gated.trace;
            return outcome;
        }
        outcome.trace = gated.trace;
    }
    if let Some(sdk) = &translated.sdk {
        let mut trace = std::mem::take(&mut outcome.trace);
        outcome = dispatcher.dispatch_once(sdk).await;
        trace.append(&mut outcome.trace);
        outcome.trace = trace;
    }
    outcome
}

/// Adds what Claude Code's and Gemini CLI's answers share: `hookSpecificOutput` under
/// `event_name` (when `specific` holds anything), `continue: false` with `stopReason`, and
/// `systemMessage`.
fn common_output(
    out: &mut Map<String, Value>,
    event_name: &str,
    specific: Map<String, Value>,
    outcome: &HookOutcome,
) {
    if !specific.is_empty() {
        let mut envelope = Map::new();
        envelope.insert("hookEventName".into(), event_name.into());
        envelope.extend(specific);
        out.insert("hookSpecificOutput".into(), Value::Object(envelope));
    }
    if !outcome.continue_ {
        out.insert("continue".into(), false.into());
        if let Some(stop_reason) = &outcome.stop_reason {
            out.insert("stopReason".into(), stop_reason.clone().into());
        }
    }
    if let Some(message) = &outcome.system_message {
        out.insert("systemMessage".into(), message.clone().into());
    }
}

/// Whether some handler of `hooks` fails closed (`"on_error": "deny"`), so that input the
/// adapter cannot read must be denied rather than let through.
pub fn fails_closed(hooks: &HookSet) -> bool {
    hooks.bindings().any(|binding| match &binding.handler {
        Handler::Command(command) => command.on_error == OnError::Deny,
        Handler::Http(http) => http.on_error == OnError::Deny,
        Handler::Callback(_) => false,
    })
}

/// One stderr line per handler that failed (open or closed), so a broken gate is visible.
fn failures(agent: Agent, trace: &[TraceEntry]) -> String {
    trace
        .iter()
        .filter_map(|entry| {
            Some(format!(
                "hookbox hook {}: {}\n",
                agent.name(),
                failure(entry)?
            ))
        })
        .collect()
}

/// What went wrong with `entry`'s handler and what it meant, if it failed: "command hook
/// `LABEL` (FILE $.PATH): CAUSE; failed open".
fn failure(entry: &TraceEntry) -> Option<String> {
    let cause = entry.failure.as_ref()?;
    let effect = if entry.failed_closed {
        "failed closed"
    } else {
        "failed open"
    };
    Some(format!(
        "{} hook `{}` ({} {}): {cause}; {effect}",
        entry.handler, entry.label, entry.origin.source, entry.origin.json_path,
    ))
}

/// Whether `entry`'s handler failed and the call went on as if it had not run.
fn fails_open(entry: &TraceEntry) -> bool {
    entry.failure.is_some() && !entry.failed_closed
}

/// The failures of `entries`, joined for one line.
fn joined(entries: &[&TraceEntry]) -> String {
    entries
        .iter()
        .filter_map(|entry| failure(entry))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The message shown to the agent's user when handlers of `outcome` failed open (the call went
/// on without their decision), if any did.
fn fail_open_message(outcome: &HookOutcome) -> Option<String> {
    let failed: Vec<&TraceEntry> = outcome.trace.iter().filter(|e| fails_open(e)).collect();
    if failed.is_empty() {
        return None;
    }
    Some(format!(
        "hookbox: a policy hook could not decide, so it was left out of this call's decision: \
         {}. Fix the hook (`hookbox check`), or set `\"on_error\": \"deny\"` to block when it \
         fails.",
        joined(&failed)
    ))
}

/// An ask turned into a deny, for agent hooks (`hooks`, e.g. "Codex hooks") that cannot ask a
/// person: the reason says a person must approve the call, and no rewrite goes with it.
fn ask_as_deny(outcome: &HookOutcome, hooks: &str) -> HookOutcome {
    let mut denied = outcome.clone();
    denied.decision = Decision::Deny;
    denied.reason = Some(format!(
        "needs a person's approval, which {hooks} cannot ask for: {}",
        outcome
            .reason
            .as_deref()
            .unwrap_or("the policy asks before this call")
    ));
    denied.updated_input = None;
    denied
}

/// Renames `fields` from the agent's argument names to Claude Code's (`back`: the reverse).
fn rename(fields: &mut Map<String, Value>, renames: Renames, back: bool) {
    for &(native, claude) in renames {
        let (from, to) = if back {
            (claude, native)
        } else {
            (native, claude)
        };
        if let Some(value) = fields.remove(from) {
            fields.insert(to.into(), value);
        }
    }
}

/// Tool arguments as an object: agents send them as an object or as a JSON string of one.
fn arguments(value: Option<Value>) -> Option<Map<String, Value>> {
    match value? {
        Value::Object(fields) => Some(fields),
        Value::String(json) => match crate::lenient_json::from_slice(json.as_bytes()) {
            Ok(Value::Object(fields)) => Some(fields),
            _ => None,
        },
        _ => None,
    }
}

/// The string field `key` of `payload`, if it is one.
fn text<'a>(payload: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    payload.get(key).and_then(Value::as_str)
}
