//! [`SessionBuilder`]: everything a session is built from, checked once in
//! [`SessionBuilder::build`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use hookbox_env::{CODING_TOOLS, CodingTools, Isolation, SandboxEgress, WarmSandboxes};
use hookbox_hooks::{
    CallbackHandler, Dialect, Dispatcher, HookEvent, HookSetBuilder, HostCommandRunner, HttpRunner,
    OutboxSink, Runners,
};
use hookbox_llm::Model;
use hookbox_net::{ClientOptions, EgressPolicy, EgressProxy, GuardedClient};
use serde_json::Value;

use super::core::{Core, Shared};
use super::mcp::{McpServer, McpTool};
use super::permissions::{PermissionMode, PermissionPrompt};
use super::{
    HookMatcher, Session, SessionControl, SessionError, SubagentDefinition, TranscriptFormat, emit,
    git, inline, mcp, new_uuid, permissions, protect, structured, tools, valid_session_id,
};

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
    protected: Vec<PathBuf>,
    runners: Option<Runners>,
    http_hooks: Option<Arc<dyn HttpRunner>>,
    outbox: Option<Arc<dyn OutboxSink>>,
    prompt: Option<Arc<dyn PermissionPrompt>>,
    egress: Option<Arc<SandboxEgress>>,
    warm: Option<WarmSandboxes>,
    mcp: mcp::McpTools,
}

impl SessionBuilder {
    /// A builder for a session working in `cwd`, with every default.
    pub(super) fn new(cwd: PathBuf) -> Self {
        Self {
            cwd,
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
            protected: Vec::new(),
            runners: None,
            http_hooks: None,
            outbox: None,
            prompt: None,
            egress: None,
            warm: None,
            mcp: mcp::McpTools::default(),
        }
    }

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
    /// [`SessionMessage::StreamEvent`](super::SessionMessage::StreamEvent)s (Claude Code's `--include-partial-messages`; default
    /// `false`).
    pub fn include_partial_messages(mut self, include: bool) -> Self {
        self.partial_messages = include;
        self
    }

    /// The extended-thinking budget (tokens) of the model's turns, the main agent's and the
    /// sub-agents' (Claude Code's `--max-thinking-tokens`; default `None`: the provider's
    /// default). Providers that think show their thinking as [`ContentBlock::Thinking`](super::ContentBlock::Thinking).
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

    /// Keeps `path` (a file or a directory, absolute) read-only to the session's tools, as the
    /// hook scripts of its settings are, when it lies in `cwd` or an added directory: for
    /// what the host runs later with what it trusts, such as a stdio MCP server's script.
    pub fn protect_path(mut self, path: &Path) -> Self {
        self.protected.push(path.to_path_buf());
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
        let roots: Vec<PathBuf> = std::iter::once(cwd.clone())
            .chain(
                self.added_directories
                    .iter()
                    .filter_map(|dir| dir.canonicalize().ok()),
            )
            .collect();
        let mut named = protect::hook_commands(&hooks, &cwd);
        named.extend(git::named_paths(&cwd, &|name| std::env::var(name).ok()));
        let mut protected = protect::to_protect(&named, &roots).map_err(SessionError::Protect)?;
        protected.extend(self.settings_files);
        protected.extend(self.protected);
        // Directories before what they hold: a path inside one already read-only is covered,
        // and no bind then nests in another.
        protected.sort_by_key(|path| cwd.join(path).components().count());
        tools.protect_files(protected);
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
                command: Arc::new(inline::GuardedRunner {
                    host: HostCommandRunner {
                        cwd: Some(cwd.clone()),
                        env: vec![(protect::PROJECT_DIR_VARIABLE.into(), cwd.clone().into())],
                        env_clear: false,
                    },
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
            mcp_names: self.mcp.offered(&self.disallowed),
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
