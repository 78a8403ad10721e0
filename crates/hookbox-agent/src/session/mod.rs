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

mod builder;
mod compact;
mod core;
mod emit;
mod git;
mod inline;
mod mcp;
mod messages;
mod outcome;
mod partial;
mod permissions;
mod permit;
mod protect;
mod run;
mod slash;
mod structured;
mod subagent;
mod tool_call;
mod tools;

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use hookbox_hooks::HookCallback;
use tokio::sync::mpsc;

pub use builder::SessionBuilder;
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
    /// What the host runs cannot be kept out of the model's reach.
    #[error("cannot keep what the host runs out of the model's reach: {0}")]
    Protect(String),
    /// The hook runners cannot be set up.
    #[error("cannot set up the hook runners: {0}")]
    Runners(#[from] hookbox_net::NetError),
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
        SessionBuilder::new(cwd.into())
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

    /// Starts `spec` as a long-lived process where the session's `Bash` commands run (its
    /// sandbox and network, unless the session is [`unsandboxed`](SessionBuilder::unsandboxed)),
    /// until the returned handle is dropped: for the processes the host starts on the
    /// session's behalf, such as stdio MCP servers. Waits for a running query.
    pub async fn spawn_confined(
        &self,
        spec: hookbox_exec::ProcessSpec,
    ) -> Result<hookbox_exec::Interactive, String> {
        self.core.lock().await.tools.spawn_confined(spec).await
    }

    /// Offers the tools of MCP server `name`, connected after the session was built, as
    /// [`SessionBuilder::mcp_server`] does; call it before the first query, whose `Init`
    /// lists the servers.
    pub async fn add_mcp_server(
        &mut self,
        name: &str,
        tools: Vec<McpTool>,
        server: Arc<dyn McpServer>,
    ) {
        let mut core = self.core.lock().await;
        core.mcp.add(name, tools, server);
        core.mcp_names = core.mcp.offered(&core.disallowed);
        self.mcp_servers = core.mcp.servers().to_vec();
    }

    /// Records MCP server `name` as failed to connect, for `error`, as
    /// [`SessionBuilder::failed_mcp_server`] does.
    pub async fn add_failed_mcp_server(&mut self, name: &str, error: String) {
        let mut core = self.core.lock().await;
        core.mcp.add_failed(name, error);
        self.mcp_servers = core.mcp.servers().to_vec();
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
