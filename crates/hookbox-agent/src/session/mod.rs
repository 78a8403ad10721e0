//! SDK sessions: the agent of seed 002. A session works in a directory (`cwd`) with the coding
//! tools `Bash`, `Read`, `Write`, `Edit`, `Glob`, `Grep` (and `Task` when it has sub-agents,
//! `mcp__SERVER__TOOL` for the tools of the MCP servers its host connected),
//! and fires the lifecycle hooks: `UserPromptSubmit`, `PreToolUse`, `PermissionRequest`,
//! `PostToolUse`, `PostToolUseFailure`, `Stop`, `SubagentStart`, `SubagentStop`, `PreCompact`,
//! `Notification`, plus `SessionStart`. Hooks are in-process callbacks ([`HookMatcher`]),
//! Claude-style settings files, or remote callbacks (the stream-json CLI registers those).
//!
//! A tool call goes: `PreToolUse` hooks (deny wins; `updatedInput` replaces the input) → the
//! permission rules ([`PermissionMode`], allowed / disallowed tools) → when they ask,
//! `PermissionRequest` hooks → the `can_use_tool` prompt if the session has one, else a denial
//! the model is told about → the tool (`Bash` inside the sandbox, with `cwd` bound writable, unless
//! the session is built [`unsandboxed`](SessionBuilder::unsandboxed)) → `PostToolUse` or
//! `PostToolUseFailure`.

mod compact;
mod core;
mod emit;
mod mcp;
mod messages;
mod outcome;
mod partial;
mod permissions;
mod permit;
mod protect;
mod slash;
mod structured;
mod subagent;
mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use hookbox_env::{CODING_TOOLS, CodingTools, Isolation, SandboxEgress, WarmSandboxes};
use hookbox_hooks::{
    CallbackHandler, Dialect, Dispatcher, HookCallback, HookEvent, HookSetBuilder,
    HostCommandRunner, HttpRunner, OutboxSink, Runners,
};
use hookbox_net::{ClientOptions, EgressPolicy, EgressProxy, GuardedClient};
use serde_json::Value;
use tokio::sync::mpsc;

pub use emit::TranscriptFormat;
pub use hookbox_store::new_uuid;
pub use mcp::{
    MAX_MCP_OUTPUT_BYTES, McpServer, McpServerStatus, McpTool, McpToolResult, mcp_tool_name,
};
pub use messages::{
    CompactTrigger, ContentBlock, HookFailure, PermissionDenial, QueryResult, ResultSubtype,
    SessionMessage, TerminalReason,
};
pub use permissions::{
    PermissionAnswer, PermissionMode, PermissionPrompt, PermissionQuery, UnknownPermissionMode,
};
pub use slash::slash_command;
pub use structured::DEFAULT_MAX_ATTEMPTS as DEFAULT_MAX_STRUCTURED_OUTPUT_ATTEMPTS;
pub use subagent::subagent_id;

use self::core::{Core, Shared};
use hookbox_llm::Model;

/// A sub-agent the `Task` tool can start.
#[derive(Clone)]
pub struct SubagentDefinition {
    /// When to use it (shown to the model).
    pub description: String,
    /// Its system prompt.
    pub prompt: String,
    /// The tools it may use (`None` = all of the session's coding tools; never `Task`).
    pub tools: Option<Vec<String>>,
    /// The model its turns go to (`None`: the session's current model, Claude Code's
    /// `inherit`).
    pub model: Option<Arc<dyn Model>>,
}

impl std::fmt::Debug for SubagentDefinition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubagentDefinition")
            .field("description", &self.description)
            .field("prompt", &self.prompt)
            .field("tools", &self.tools)
            .field("model", &self.model.as_ref().map(|model| model.label()))
            .finish()
    }
}

/// Callbacks registered on one event under one matcher, with their time limit.
#[derive(Clone)]
pub struct HookMatcher {
    matcher: Option<String>,
    hooks: Vec<(String, Arc<dyn HookCallback>)>,
    timeout: Duration,
}

impl HookMatcher {
    /// Callbacks for the values `matcher` fully matches (an RE2 regex such as `Bash` or
    /// `Write|Edit`); `None` matches everything. Time limit 60 s.
    pub fn new(matcher: Option<&str>) -> Self {
        Self {
            matcher: matcher.map(str::to_owned),
            hooks: Vec::new(),
            timeout: Duration::from_secs(60),
        }
    }

    /// Adds a callback: `(input, tool_use_id) -> reply`, the reply being the SDKs' hook output
    /// object (`{}` to do nothing).
    pub fn hook(self, callback: impl HookCallback + 'static) -> Self {
        let name = format!("callback {}", self.hooks.len());
        self.named_hook(name, Arc::new(callback))
    }

    /// Adds a callback under a name shown in traces (e.g. the SDK's callback id).
    pub fn named_hook(mut self, name: impl Into<String>, callback: Arc<dyn HookCallback>) -> Self {
        self.hooks.push((name.into(), callback));
        self
    }

    /// The time limit for each callback of this matcher; a callback that overruns it blocks.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// Why a session could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The output schema is not a usable JSON schema.
    #[error("the output schema (--json-schema) is not a usable JSON schema: {0}")]
    OutputSchema(String),
    /// No model was given.
    #[error("the session has no model: call SessionBuilder::model")]
    NoModel,
    /// The working directory cannot be used.
    #[error("cannot use {} as the session's working directory: {source}", path.display())]
    Cwd {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        source: hookbox_env::ToolError,
    },
    /// A hook matcher or settings file is invalid.
    #[error("invalid hooks: {0}")]
    Hooks(String),
    /// The session id cannot be used (it names the transcript file).
    #[error("invalid session id `{0}`: use 1 to 128 letters, digits, `-`, `_` or `.`")]
    SessionId(String),
    /// The transcript file cannot be created.
    #[error("cannot create the transcript in {}: {source}", dir.display())]
    Transcript {
        /// The directory.
        dir: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// A directory cannot be added to the session.
    #[error("cannot add the directory {} to the session: {source}", path.display())]
    AddDirectory {
        /// The directory.
        path: PathBuf,
        /// What went wrong.
        source: hookbox_env::ToolError,
    },
    /// The hook runners cannot be set up.
    #[error("cannot set up the hook runners: {0}")]
    Runners(#[from] hookbox_net::NetError),
}

/// Builds a [`Session`].
pub struct SessionBuilder {
    cwd: PathBuf,
    model: Option<Arc<dyn Model>>,
    session_id: Option<String>,
    mode: PermissionMode,
    allowed: Vec<String>,
    disallowed: Vec<String>,
    system_prompt: Option<String>,
    max_turns: u32,
    agents: BTreeMap<String, SubagentDefinition>,
    isolation: Isolation,
    added_directories: Vec<PathBuf>,
    auto_allow_sandboxed_bash: bool,
    compact_threshold: u64,
    partial_messages: bool,
    thinking_budget: Option<u32>,
    output_schema: Option<(Value, u32)>,
    transcript: Option<emit::TranscriptPlace>,
    history: Option<Vec<hookbox_llm::Message>>,
    hooks: HookSetBuilder,
    hook_errors: Vec<String>,
    settings_files: Vec<PathBuf>,
    runners: Option<Runners>,
    http_hooks: Option<Arc<dyn HttpRunner>>,
    outbox: Option<Arc<dyn OutboxSink>>,
    prompt: Option<Arc<dyn PermissionPrompt>>,
    egress: Option<Arc<SandboxEgress>>,
    warm: Option<WarmSandboxes>,
    mcp: mcp::McpTools,
}

impl SessionBuilder {
    /// The model that answers (required).
    pub fn model(mut self, model: Arc<dyn Model>) -> Self {
        self.model = Some(model);
        self
    }

    /// The session id (default: a random UUID).
    pub fn session_id(mut self, id: impl Into<String>) -> Self {
        self.session_id = Some(id.into());
        self
    }

    /// The permission mode (default [`PermissionMode::Default`]).
    pub fn permission_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// Tools that run without asking.
    pub fn allowed_tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.allowed.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Tools that never run and are not offered to the model (an entry written `Bash(…)`
    /// names the whole tool).
    pub fn disallowed_tools<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.disallowed.extend(tools.into_iter().map(Into::into));
        self
    }

    /// The system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Model turns allowed per query (default 100) before it ends `error_max_turns`.
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns;
        self
    }

    /// Adds a sub-agent the `Task` tool can start.
    pub fn agent(mut self, name: impl Into<String>, definition: SubagentDefinition) -> Self {
        self.agents.insert(name.into(), definition);
        self
    }

    /// Runs `Bash` on the host in `cwd` instead of in the sandbox. Only for machines where the
    /// sandbox cannot be built; `Bash` then asks for permission in `default` mode.
    pub fn unsandboxed(mut self) -> Self {
        self.isolation = Isolation::Unsandboxed;
        self
    }

    /// Adds a directory besides `cwd` (Claude Code's `--add-dir`): the file tools work there
    /// too (absolute paths), with its `.claude`, `.git`, `.agents` protected as `cwd`'s, and
    /// `Bash`'s sandbox binds it writable. A directory that contains `cwd` is refused.
    pub fn add_directory(mut self, dir: impl Into<PathBuf>) -> Self {
        self.added_directories.push(dir.into());
        self
    }

    /// Lets sandboxed `Bash` reach the network through `proxy` under `policy` (the session's
    /// domain lists, which inject nothing): a listener on `127.0.0.1` inside each of its
    /// sandboxes, named by `HTTP_PROXY`/`HTTPS_PROXY` (see
    /// [`SandboxEgress::without_interception`]). Without it, or with
    /// [`EgressPolicy::DISABLED`], `Bash` has no network; unsandboxed `Bash` is not proxied.
    pub fn network(mut self, proxy: EgressProxy, policy: EgressPolicy) -> Self {
        self.egress = SandboxEgress::without_interception(proxy, policy).map(Arc::new);
        self
    }

    /// Runs sandboxed `Bash` in one warm sandbox of `warm` (built by the first call, kept
    /// until idle) instead of building a sandbox per call; the confinement, limits and end of
    /// each call are those of a cold one. `warm`'s supervisor program must call
    /// `hookbox_exec::supervise_if_asked` first thing (the `hookbox` binary does).
    pub fn warm_sandboxes(mut self, warm: WarmSandboxes) -> Self {
        self.warm = Some(warm);
        self
    }

    /// Whether `Bash` in the sandbox runs without asking in the `default` mode (default
    /// `true`; Claude Code's setting `sandbox.autoAllowBashIfSandboxed`). With `false` it asks
    /// like any other tool. An unsandboxed `Bash` always asks.
    pub fn auto_allow_sandboxed_bash(mut self, allow: bool) -> Self {
        self.auto_allow_sandboxed_bash = allow;
        self
    }

    /// The estimated conversation size (tokens) above which it is compacted before the next
    /// model turn (default 100 000).
    pub fn compact_threshold_tokens(mut self, tokens: u64) -> Self {
        self.compact_threshold = tokens;
        self
    }

    /// Whether model turns are also sent as they stream, as
    /// [`SessionMessage::StreamEvent`]s (Claude Code's `--include-partial-messages`; default
    /// `false`).
    pub fn include_partial_messages(mut self, include: bool) -> Self {
        self.partial_messages = include;
        self
    }

    /// The extended-thinking budget (tokens) of the model's turns, the main agent's and the
    /// sub-agents' (Claude Code's `--max-thinking-tokens`; default `None`: the provider's
    /// default). Providers that think show their thinking as [`ContentBlock::Thinking`].
    pub fn max_thinking_tokens(mut self, budget: Option<u32>) -> Self {
        self.thinking_budget = budget;
        self
    }

    /// The JSON schema the query's final output must match (Claude Code's `--json-schema`):
    /// the main agent is offered a `StructuredOutput` tool with that input schema and must
    /// call it once at the end; after `max_attempts` misses (a non-matching call or an answer
    /// without one) the query fails `error_max_structured_output_retries`. A schema that does
    /// not compile makes [`build`](Self::build) fail.
    pub fn output_schema(mut self, schema: Value, max_attempts: u32) -> Self {
        self.output_schema = Some((schema, max_attempts));
        self
    }

    /// Writes the transcript (one line per message, written by `format`) to
    /// `DIR/<session_id>.jsonl`, whose path hooks receive as `transcript_path`. After `/clear`
    /// the new session's transcript is a new file there.
    pub fn transcript_dir(mut self, dir: impl Into<PathBuf>, format: TranscriptFormat) -> Self {
        self.transcript = Some((dir.into(), Some(format)));
        self
    }

    /// Names the transcript `DIR/<session_id>.jsonl` to hooks (`transcript_path`) without
    /// writing it: the caller writes it (e.g. in Claude Code's format, from the messages it
    /// reads off the stream).
    pub fn transcript_named_in(mut self, dir: impl Into<PathBuf>) -> Self {
        self.transcript = Some((dir.into(), None));
        self
    }

    /// Resumes a conversation: the session starts with `messages` as its history (oldest
    /// first) and fires `SessionStart` with `source: "resume"`.
    pub fn history(mut self, messages: Vec<hookbox_llm::Message>) -> Self {
        self.history = Some(messages);
        self
    }

    /// Registers callbacks on `event`.
    pub fn hook(mut self, event: HookEvent, matcher: HookMatcher) -> Self {
        for (name, callback) in matcher.hooks {
            let handler = CallbackHandler {
                name,
                timeout: matcher.timeout,
                callback,
            };
            if let Err(diagnostic) =
                self.hooks
                    .add_callback(event, matcher.matcher.as_deref(), handler)
            {
                self.hook_errors.push(diagnostic.message);
            }
        }
        self
    }

    /// Loads the `hooks` of a Claude-style settings file (`command` and `http` handlers),
    /// once: a later change of the file does not change the session. The file, and the
    /// scripts its command hooks name, are read-only to the session's tools when they lie in
    /// `cwd`.
    pub fn settings_file(mut self, path: &Path) -> Self {
        if let Err(err) = self.hooks.load_file(path, Some(Dialect::Sdk)) {
            self.hook_errors.push(err.to_string());
        }
        self.settings_files.push(path.to_path_buf());
        self
    }

    /// The runners for command and HTTP hooks (default: commands on the host in `cwd` with
    /// `CLAUDE_PROJECT_DIR` set to it, HTTP through the strict guarded client).
    pub fn runners(mut self, runners: Runners) -> Self {
        self.runners = Some(runners);
        self
    }

    /// What HTTP hooks are sent through when [`runners`](Self::runners) is not given
    /// (default: the strict guarded client).
    pub fn http_hooks(mut self, runner: Arc<dyn HttpRunner>) -> Self {
        self.http_hooks = Some(runner);
        self
    }

    /// Where the events of `"delivery": "at_least_once"` HTTP hooks are stored, to be sent
    /// later, when [`runners`](Self::runners) is not given (default: none; such hooks are
    /// then posted once, like the others).
    pub fn outbox(mut self, sink: Arc<dyn OutboxSink>) -> Self {
        self.outbox = Some(sink);
        self
    }

    /// Who decides tool calls that the rules and hooks leave open (the SDKs' `can_use_tool`).
    pub fn can_use_tool(mut self, prompt: impl PermissionPrompt + 'static) -> Self {
        self.prompt = Some(Arc::new(prompt));
        self
    }

    /// Like [`can_use_tool`](Self::can_use_tool), for a prompt that is already shared.
    pub fn permission_prompt(mut self, prompt: Arc<dyn PermissionPrompt>) -> Self {
        self.prompt = Some(prompt);
        self
    }

    /// Offers the tools an MCP server listed, as `mcp__NAME__TOOL`, each call going to
    /// `server`. A tool whose offered name is taken, empty or too long is not offered
    /// ([`Session::mcp_servers`] says why).
    pub fn mcp_server(
        mut self,
        name: &str,
        tools: Vec<McpTool>,
        server: Arc<dyn McpServer>,
    ) -> Self {
        self.mcp.add(name, tools, server);
        self
    }

    /// Records MCP server `name` as failed to connect, for `error` (reported as `failed` in
    /// the `Init` message and by [`Session::mcp_servers`]).
    pub fn failed_mcp_server(mut self, name: &str, error: impl Into<String>) -> Self {
        self.mcp.add_failed(name, error.into());
        self
    }

    /// Builds the session.
    pub fn build(self) -> Result<Session, SessionError> {
        let model = self.model.ok_or(SessionError::NoModel)?;
        let hooks = self.hooks.build();
        let mut problems = self.hook_errors;
        problems.extend(
            hooks
                .diagnostics()
                .iter()
                .filter(|diagnostic| diagnostic.severity == hookbox_hooks::Severity::Error)
                .map(|diagnostic| {
                    format!(
                        "{}: {} {}",
                        diagnostic.source, diagnostic.json_path, diagnostic.message
                    )
                }),
        );
        if !problems.is_empty() {
            return Err(SessionError::Hooks(problems.join("; ")));
        }
        let mut tools =
            CodingTools::new(&self.cwd, self.isolation).map_err(|source| SessionError::Cwd {
                path: self.cwd.clone(),
                source,
            })?;
        if let Some(egress) = self.egress {
            tools = tools.with_egress(egress);
        }
        if let Some(warm) = self.warm {
            tools = tools.with_warm_sandboxes(warm);
        }
        for dir in &self.added_directories {
            tools
                .add_directory(dir)
                .map_err(|source| SessionError::AddDirectory {
                    path: dir.clone(),
                    source,
                })?;
        }
        let output_schema = self
            .output_schema
            .map(|(schema, max_attempts)| structured::OutputSchema::new(schema, max_attempts))
            .transpose()
            .map_err(SessionError::OutputSchema)?;
        let system_prompt = match &output_schema {
            Some(_) => Some(structured::OutputSchema::instruct(self.system_prompt)),
            None => self.system_prompt,
        };
        let cwd = tools.cwd().to_path_buf();
        tools.protect_files(self.settings_files);
        tools.protect_files(protect::hook_scripts(&hooks, &cwd));
        let session_id = match self.session_id {
            Some(id) if valid_session_id(&id) => id,
            Some(id) => return Err(SessionError::SessionId(id)),
            None => new_uuid(),
        };
        let (transcript, transcript_path) =
            emit::place_transcript(self.transcript.as_ref(), &session_id).map_err(|source| {
                SessionError::Transcript {
                    dir: self
                        .transcript
                        .as_ref()
                        .map(|(dir, _)| dir.clone())
                        .unwrap_or_default(),
                    source,
                }
            })?;
        let runners = match self.runners {
            Some(runners) => runners,
            None => Runners {
                command: Arc::new(HostCommandRunner {
                    cwd: Some(cwd.clone()),
                    env: vec![(protect::PROJECT_DIR_VARIABLE.into(), cwd.clone().into())],
                    env_clear: false,
                }),
                http: match self.http_hooks {
                    Some(http) => http,
                    None => Arc::new(GuardedClient::new(&ClientOptions::default())?),
                },
                outbox: self.outbox,
            },
        };
        let shared = Arc::new(Shared {
            session_id: Mutex::new(session_id.clone()),
            mode: Mutex::new(self.mode),
            model: Mutex::new(model),
            interrupted: AtomicBool::new(false),
            interrupt: tokio::sync::Notify::new(),
        });
        let core = Core {
            session_id,
            cwd: cwd.display().to_string(),
            transcript_path,
            transcript,
            transcript_place: self.transcript,
            dispatcher: Dispatcher::new(Arc::new(hooks), runners),
            tools,
            // A disallowed tool is not offered at all, as in Claude Code (its calls would
            // all be denied).
            tool_names: CODING_TOOLS
                .into_iter()
                .filter(|tool| !permissions::listed(&self.disallowed, tool))
                .collect(),
            offers_task: !self.agents.is_empty()
                && !permissions::listed(&self.disallowed, tools::TASK),
            mcp_names: self
                .mcp
                .names()
                .filter(|tool| !permissions::listed(&self.disallowed, tool))
                .map(str::to_owned)
                .collect(),
            mcp: self.mcp,
            auto_allow_bash: self.isolation == Isolation::Sandboxed
                && self.auto_allow_sandboxed_bash,
            allowed: self.allowed,
            disallowed: self.disallowed,
            agents: self.agents,
            max_turns: self.max_turns,
            compact_threshold: self.compact_threshold,
            partial_messages: self.partial_messages,
            thinking_budget: self.thinking_budget,
            output: output_schema,
            prompt: self.prompt,
            shared: Arc::clone(&shared),
            resumed: self.history.is_some(),
            conversation: hookbox_llm::Conversation {
                thinking_budget: self.thinking_budget,
                messages: self.history.unwrap_or_default(),
                ..hookbox_llm::Conversation::new(system_prompt)
            },
            started: false,
        };
        Ok(Session {
            mcp_servers: core.mcp.servers().to_vec(),
            core: Arc::new(tokio::sync::Mutex::new(core)),
            control: SessionControl { shared },
        })
    }
}

/// Whether `id` can be a session id: 1 to 128 letters, digits, `-`, `_` or `.`, not `.` or
/// `..` (it names the transcript file, so it must never be a path).
pub fn valid_session_id(id: &str) -> bool {
    (1..=128).contains(&id.len())
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
}

/// An agent session: send it prompts with [`query`](Self::query), read what it does from the
/// returned stream. Queries run one at a time, in the order they were sent.
pub struct Session {
    core: Arc<tokio::sync::Mutex<Core>>,
    control: SessionControl,
    mcp_servers: Vec<McpServerStatus>,
}

impl Session {
    /// Starts building a session working in `cwd`.
    pub fn builder(cwd: impl Into<PathBuf>) -> SessionBuilder {
        SessionBuilder {
            cwd: cwd.into(),
            model: None,
            session_id: None,
            mode: PermissionMode::Default,
            allowed: Vec::new(),
            disallowed: Vec::new(),
            system_prompt: None,
            max_turns: 100,
            agents: BTreeMap::new(),
            isolation: Isolation::Sandboxed,
            added_directories: Vec::new(),
            auto_allow_sandboxed_bash: true,
            compact_threshold: 100_000,
            partial_messages: false,
            thinking_budget: None,
            output_schema: None,
            transcript: None,
            history: None,
            hooks: hookbox_hooks::HookSet::builder(),
            hook_errors: Vec::new(),
            settings_files: Vec::new(),
            runners: None,
            http_hooks: None,
            outbox: None,
            prompt: None,
            egress: None,
            warm: None,
            mcp: mcp::McpTools::default(),
        }
    }

    /// The session's id (`session_id` in hook inputs and messages); a new one after
    /// `/clear`.
    pub fn session_id(&self) -> String {
        self.control.shared.session_id()
    }

    /// The MCP servers the session was given, with their states and tools.
    pub fn mcp_servers(&self) -> &[McpServerStatus] {
        &self.mcp_servers
    }

    /// A handle that changes the running session: interrupt, permission mode, model.
    pub fn control(&self) -> SessionControl {
        self.control.clone()
    }

    /// Ends the session after the queries already sent: fires `SessionEnd` with `reason`
    /// (`prompt_input_exit` when the user's input closed, `clear`, `logout`, `other`).
    /// Returns what that produced (hook failures, a hook's `systemMessage`), since no query
    /// stream is left to carry it.
    pub async fn close(self, reason: &str) -> Vec<SessionMessage> {
        self.core.lock().await.end(reason).await
    }

    /// Sends `prompt` (`/compact [instructions]` compacts the conversation instead; `/clear`
    /// starts a fresh conversation under a new session id, announced by
    /// [`SessionMessage::ConversationReset`]) and returns
    /// the stream of what happens, ending with a [`SessionMessage::Result`]. The first query
    /// starts with [`SessionMessage::Init`]. A query runs to its end even if the stream is
    /// dropped; use [`SessionControl::interrupt`] to stop it. Needs a Tokio runtime.
    pub fn query(&self, prompt: impl Into<String>) -> MessageStream {
        let (sender, receiver) = mpsc::unbounded_channel();
        let core = Arc::clone(&self.core);
        let prompt = prompt.into();
        tokio::spawn(async move {
            core.lock().await.query(prompt, sender).await;
        });
        MessageStream { receiver }
    }
}

/// Changes a session from outside its queries (e.g. from the SDK's control requests).
#[derive(Clone)]
pub struct SessionControl {
    shared: Arc<Shared>,
}

impl SessionControl {
    /// Stops the running query at the next model turn, tool call or permission prompt; it
    /// ends with an `error_during_execution` result.
    pub fn interrupt(&self) {
        self.shared.interrupted.store(true, Ordering::SeqCst);
        self.shared.interrupt.notify_waiters();
    }

    /// Changes the permission mode for the next tool calls.
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        *self
            .shared
            .mode
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = mode;
    }

    /// The current permission mode.
    pub fn permission_mode(&self) -> PermissionMode {
        self.shared.mode()
    }

    /// Changes the model for the next turns.
    pub fn set_model(&self, model: Arc<dyn Model>) {
        *self
            .shared
            .model
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = model;
    }
}

/// The messages of one query, in order, ending with its result.
pub struct MessageStream {
    receiver: mpsc::UnboundedReceiver<SessionMessage>,
}

impl MessageStream {
    /// The next message, or `None` after the result.
    pub async fn next_message(&mut self) -> Option<SessionMessage> {
        self.receiver.recv().await
    }

    /// Every remaining message, up to and including the result.
    pub async fn collect_all(mut self) -> Vec<SessionMessage> {
        let mut messages = Vec::new();
        while let Some(message) = self.receiver.recv().await {
            messages.push(message);
        }
        messages
    }
}

impl Stream for MessageStream {
    type Item = SessionMessage;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<SessionMessage>> {
        self.receiver.poll_recv(cx)
    }
}
