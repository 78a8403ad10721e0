//! Building the session an SDK asked for: the command line, `hookbox.toml`, the `initialize`
//! request and the Claude-style settings files together.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use hookbox_agent::session::{
    DEFAULT_MAX_STRUCTURED_OUTPUT_ATTEMPTS, HookMatcher, PermissionMode, Session,
    SubagentDefinition, new_uuid, valid_session_id,
};
use hookbox_env::WarmSandboxes;
use hookbox_hooks::{HookEvent, HttpRunner, OutboxSink};
use hookbox_llm::Model;
use hookbox_net::{ClientOptions, DomainList, EgressPolicy, EgressProxy, GuardedClient};
use serde_json::{Value, json};

use crate::agent_files::{self, AgentSpec};
use crate::argv::SdkArgs;
use crate::bridge::{RemoteHookCallback, RemotePermissionPrompt};
use crate::control::ControlClient;
use crate::init::InitOptions;
use crate::mcp::ForSession;
use crate::output_styles::{self, OutputStyle};
use crate::transcript::{self, TranscriptWriter};
use crate::{settings, warn};

/// What the program embedding SDK mode supplies to its sessions: the agents an SDK may select
/// with its `model` option (`--model NAME`; in the binary, `hookbox.toml`'s `[agents]` tables
/// and `[sdk] default_agent`), and how their HTTP hooks are sent.
pub trait SessionHost: Send + Sync {
    /// The agent used when the SDK names none.
    fn default_agent(&self) -> Option<String>;

    /// Every configured agent's name, for the error that says none was selected.
    fn agent_names(&self) -> Vec<String>;

    /// The model of agent `name`, built and ready; an unknown name is an error that says
    /// which names exist.
    fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>>;

    /// What the sessions' HTTP hooks are sent through (`None`: the strict guarded client).
    fn http_hooks(&self) -> Option<Arc<dyn HttpRunner>> {
        None
    }

    /// Where the events of `"delivery": "at_least_once"` HTTP hooks are stored for later
    /// delivery (`None`: they are posted once, like the others).
    fn outbox(&self) -> Option<Arc<dyn OutboxSink>> {
        None
    }

    /// What the sessions' `http` MCP servers of `--mcp-config` are reached through (`None`:
    /// the strict guarded client: HTTPS only, public addresses only), with
    /// [`EgressPolicy::PUBLIC`] like HTTP hooks.
    fn mcp_http(&self) -> Option<GuardedClient> {
        None
    }

    /// The network the sessions' sandboxed `Bash` may have at most (`None`: none at all,
    /// whatever the settings say).
    fn network(&self) -> Option<SessionNetwork> {
        None
    }

    /// Where the sessions' sandboxed `Bash` runs warm (`None`: a sandbox built per call).
    fn warm_sandboxes(&self) -> Option<WarmSandboxes> {
        None
    }
}

/// The operator's network for the sessions' sandboxed `Bash` (in the binary, hookbox.toml's
/// `[sdk] allowed_domains` / `denied_domains` and the runtime's egress proxy). The settings'
/// `sandbox.network` lists only narrow it: a host goes out when it is in `allowed`, in the
/// settings' `allowedDomains` when any file sets them, and in no denied list of either.
pub struct SessionNetwork {
    /// The proxy, on `127.0.0.1` inside each sandbox.
    pub proxy: EgressProxy,
    /// The ceiling (empty: no network).
    pub allowed: DomainList,
    /// Hosts always refused.
    pub denied: DomainList,
}

/// A session built for an SDK: the session, the writer of its transcript (`None` without
/// one) and the name of its output style (init's `output_style`).
pub(crate) struct Built {
    pub(crate) session: Session,
    pub(crate) transcript: Option<TranscriptWriter>,
    pub(crate) output_style: String,
}

/// Everything known before the first prompt. On the first prompt, one function turns it and
/// what the SDK sent in `initialize` into the session: the only place SDK mode assembles one.
pub struct Setup {
    /// The command line.
    pub(crate) args: SdkArgs,
    /// Claude Code's configuration directory, when there is one: transcripts go to its
    /// `projects/` ([`transcript`]).
    config_dir: Option<PathBuf>,
    /// The host's agents and hook transports, or why they could not be set up (every prompt
    /// then fails with this).
    host: Result<Arc<dyn SessionHost>, String>,
    /// The session's working directory.
    pub(crate) cwd: PathBuf,
}

impl Setup {
    /// The set-up for command line `args`, Claude Code's configuration directory
    /// `config_dir` (where transcripts are written and resumed sessions found, as
    /// [`config_dir`](crate::config_dir) finds it; `None`: no transcripts) and the `host`, or
    /// the error setting it up, which is reported on the first prompt. The working directory is
    /// `--workdir`, else the current directory.
    pub fn new(
        args: SdkArgs,
        config_dir: Option<PathBuf>,
        host: anyhow::Result<Arc<dyn SessionHost>>,
    ) -> Self {
        let cwd = match &args.workdir {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        Self {
            args,
            config_dir,
            host: host.map_err(|err| crate::error_message(&err)),
            cwd,
        }
    }

    fn host(&self) -> anyhow::Result<&dyn SessionHost> {
        self.host.as_deref().map_err(|message| anyhow!("{message}"))
    }

    /// The agent name to use: `--model`, else the host's default agent.
    pub(crate) fn agent_name(&self) -> anyhow::Result<String> {
        let agents = self.host()?;
        if let Some(name) = self.args.model.clone().or_else(|| agents.default_agent()) {
            return Ok(name);
        }
        let known = agents.agent_names();
        bail!(
            "no agent selected: pass the SDK option model=\"NAME\" (--model NAME) naming an \
             [agents.\"NAME\"] table of hookbox.toml, or set `[sdk] default_agent`; configured \
             agents: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        )
    }

    /// The model of agent `name`.
    pub(crate) fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        self.host()?.model(name)
    }

    /// The client `http` MCP servers are reached through: the host's, else the strict one.
    pub(crate) fn mcp_http(&self) -> anyhow::Result<GuardedClient> {
        match self.host()?.mcp_http() {
            Some(client) => Ok(client),
            None => Ok(GuardedClient::new(&ClientOptions::default())?),
        }
    }

    /// The starting permission mode from the command line.
    pub(crate) fn permission_mode(&self) -> anyhow::Result<PermissionMode> {
        match &self.args.permission_mode {
            Some(mode) => Ok(mode.parse()?),
            None => Ok(PermissionMode::Default),
        }
    }

    /// Builds the session: the command line's tools, limits and prompts, `init`'s hooks (as
    /// callbacks through `client`), sub-agents and settings sources, the settings files, and
    /// `model` in permission `mode`, the MCP servers `mcp` (the SDK-hosted ones, and the
    /// stdio ones' directories, kept read-only to the model), and the conversation it resumes.
    /// This is the one place a session is assembled. `keep` receives temporary files that must
    /// outlive it.
    pub(crate) fn build(
        &self,
        init: &InitOptions,
        client: &ControlClient,
        mode: PermissionMode,
        model: Arc<dyn Model>,
        mcp: ForSession,
        keep: &mut Vec<tempfile::NamedTempFile>,
    ) -> anyhow::Result<Built> {
        let args = &self.args;
        let mut builder = Session::builder(&self.cwd)
            .model(model)
            .permission_mode(mode)
            .allowed_tools(args.allowed_tools.iter().cloned())
            .disallowed_tools(args.disallowed_tools.iter().cloned());
        for server in mcp.hosted {
            builder = server.add_to(builder);
        }
        for path in &mcp.protected {
            builder = builder.protect_path(path);
        }
        let project = self
            .config_dir
            .as_ref()
            .map(|config| transcript::project_dir(config, &self.cwd));
        let resumed = match &project {
            Some(project) => transcript::resume(project, args).map_err(|err| anyhow!(err))?,
            None if args.resume.is_some() || args.continue_latest => bail!(
                "cannot resume a session: there is no Claude config directory to find it in \
                 (set CLAUDE_CONFIG_DIR or HOME)"
            ),
            None => None,
        };
        let session_id = match (&resumed, &args.session_id) {
            (Some(resumed), _) if !args.fork_session => resumed.session_id.clone(),
            (_, Some(id)) => id.clone(),
            (_, None) => new_uuid(),
        };
        if !valid_session_id(&session_id) {
            bail!(
                "invalid --session-id `{session_id}`: use a UUID (1 to 128 letters, digits, \
                 `-`, `_` or `.`)"
            );
        }
        let continues = resumed.is_some() && !args.fork_session;
        if let Some(project) = &project
            && !continues
            && project.join(format!("{session_id}.jsonl")).exists()
        {
            bail!(
                "Session ID {session_id} is already in use: resume it with --resume, or pick \
                 another id"
            );
        }
        builder = builder.session_id(session_id.clone());
        if let Some(resumed) = &resumed {
            builder = builder.history(resumed.history.clone());
        }
        let project = project.filter(|_| !args.no_session_persistence);
        if let Some(project) = &project {
            builder = builder.transcript_named_in(project);
        }
        for dir in &args.add_dirs {
            // Relative to the session's working directory, as in Claude Code.
            builder = builder.add_directory(self.cwd.join(dir));
        }
        builder = builder.include_partial_messages(args.include_partial_messages);
        // `--max-thinking-tokens`, else Claude Code's `MAX_THINKING_TOKENS`; 0 or
        // `--thinking disabled`: none.
        let thinking = args.max_thinking_tokens.or_else(|| {
            let value = std::env::var("MAX_THINKING_TOKENS").ok()?;
            let parsed = value.trim().parse().ok();
            if parsed.is_none() {
                warn(&format!(
                    "ignoring MAX_THINKING_TOKENS={value:?}: not a whole number"
                ));
            }
            parsed
        });
        builder = builder
            .max_thinking_tokens(thinking.filter(|tokens| *tokens > 0 && !args.thinking_disabled));
        if let Some(schema) = &args.json_schema {
            let schema = serde_json::from_str(schema)
                .with_context(|| format!("--json-schema is not JSON: {schema}"))?;
            // Claude Code's `MAX_STRUCTURED_OUTPUT_RETRIES`.
            let attempts = match std::env::var("MAX_STRUCTURED_OUTPUT_RETRIES") {
                Ok(value) => value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        anyhow!(
                            "MAX_STRUCTURED_OUTPUT_RETRIES={value:?} is not a positive whole number"
                        )
                    })?,
                Err(_) => DEFAULT_MAX_STRUCTURED_OUTPUT_ATTEMPTS,
            };
            builder = builder.output_schema(schema, attempts);
        }
        if let Some(turns) = args.max_turns {
            builder = builder.max_turns(turns);
        }
        let files = self.settings_files(init, keep)?;
        let (style, _, warnings) = self.output_style(init, &files, keep)?;
        for warning in &warnings {
            warn(warning);
        }
        if let Some(prompt) = self.system_prompt(init, &style)? {
            builder = builder.system_prompt(prompt);
        }
        let host = self.host()?;
        let (agents, warnings) = self.agents(init);
        for warning in &warnings {
            warn(warning);
        }
        for (name, spec) in agents {
            let model = self.agent_model(host, &name, spec.model.as_deref())?;
            builder = builder.agent(
                name,
                SubagentDefinition {
                    description: spec.description,
                    prompt: spec.prompt,
                    tools: spec.tools,
                    model,
                },
            );
        }
        if let Some(http) = host.http_hooks() {
            builder = builder.http_hooks(http);
        }
        if let Some(outbox) = host.outbox() {
            builder = builder.outbox(outbox);
        }
        for hook in &init.hooks {
            let mut matcher = HookMatcher::new(hook.matcher.as_deref()).timeout(hook.timeout);
            // As in Claude Code, Stop and SubagentStop ignore `onFailure`.
            let strict = hook.blocks_on_failure
                && !matches!(hook.event, HookEvent::Stop | HookEvent::SubagentStop);
            for id in &hook.callback_ids {
                matcher = matcher.named_hook(
                    id.clone(),
                    Arc::new(RemoteHookCallback::new(id.clone(), client.clone(), strict)),
                );
            }
            builder = builder.hook(hook.event, matcher);
        }
        for path in &files {
            builder = builder.settings_file(path);
        }
        let by_precedence = self.by_precedence(&files);
        if let Some(allow) = settings::auto_allow_bash(by_precedence)? {
            builder = builder.auto_allow_sandboxed_bash(allow);
        }
        if let Some(warm) = host.warm_sandboxes() {
            builder = builder.warm_sandboxes(warm);
        }
        if let Some(network) = host.network() {
            let domains = settings::network_domains(
                files
                    .iter()
                    .map(|path| (path.as_path(), settings_label(path, keep))),
            )?;
            let mut allow = vec![network.allowed];
            allow.extend(domains.allowed);
            let policy =
                EgressPolicy::from_domain_lists(allow, vec![network.denied, domains.denied]);
            builder = builder.network(network.proxy, policy);
        }
        if args.unsandboxed {
            crate::warn(
                "WARNING: --unsandboxed: Bash runs on this host in the working directory, not \
                 in the sandbox",
            );
            builder = builder.unsandboxed();
        }
        if args.permission_prompt_stdio || init.sdk_managed_permissions {
            builder =
                builder.permission_prompt(Arc::new(RemotePermissionPrompt::new(client.clone())));
        }
        let session = builder
            .build()
            .with_context(|| format!("cannot start the session in {}", self.cwd.display()))?;
        for skipped in session
            .mcp_servers()
            .iter()
            .flat_map(|server| &server.skipped)
        {
            warn(skipped);
        }
        let transcript = project.map(|project| {
            let parent = resumed.as_ref().and_then(transcript::Resumed::leaf);
            let mut writer = TranscriptWriter::new(project, &self.cwd, &session_id, parent);
            if let Some(resumed) = resumed.as_ref().filter(|_| args.fork_session) {
                writer.fork_from(&resumed.session_id, &resumed.entries);
            }
            writer
        });
        Ok(Built {
            session,
            transcript,
            output_style: style.name,
        })
    }

    /// `files` (as [`settings_files`](Self::settings_files) lists them) by Claude Code's
    /// precedence, highest first: --settings (the last one first), then local, project, user.
    fn by_precedence<'a>(&self, files: &'a [PathBuf]) -> Vec<&'a Path> {
        let (flags, sources) = files.split_at(self.args.settings.len().min(files.len()));
        flags
            .iter()
            .rev()
            .chain(sources.iter().rev())
            .map(PathBuf::as_path)
            .collect()
    }

    /// The output style the settings `files` choose (`default` when none does), the styles
    /// there are (built in, then the user's and the project's files, per the setting sources),
    /// and a warning for each file that could not be used and for an unknown name.
    fn output_style(
        &self,
        init: &InitOptions,
        files: &[PathBuf],
        keep: &[tempfile::NamedTempFile],
    ) -> anyhow::Result<(OutputStyle, Vec<OutputStyle>, Vec<String>)> {
        let mut dirs = Vec::new();
        if self.wants_source(init, "user")
            && let Some(config) = &self.config_dir
        {
            dirs.push((config.join("output-styles"), false));
        }
        if self.wants_source(init, "project") {
            dirs.push((self.cwd.join(".claude/output-styles"), true));
        }
        let (styles, mut warnings) = output_styles::available(&dirs);
        let wanted = settings::output_style(
            self.by_precedence(files)
                .into_iter()
                .map(|path| (path, settings_label(path, keep))),
        )?;
        let (style, unknown) = output_styles::choose(
            &styles,
            wanted
                .as_ref()
                .map(|(name, source)| (name.as_str(), source.as_str())),
        );
        warnings.extend(unknown);
        Ok((style, styles, warnings))
    }

    /// The `initialize` response (claude-agent-sdk's `get_server_info()`), in Claude Code's
    /// shape: the slash commands, the sub-agents, the output style and the models (the
    /// configured agents `model` / `set_model` may name).
    pub(crate) fn server_info(&self, init: &InitOptions) -> Value {
        // Their files' warnings are reported when the session is built.
        let (agents, _) = self.agents(init);
        let agents: Vec<Value> = agents
            .into_iter()
            .map(|(name, spec)| {
                json!({"name": name, "description": spec.description, "model": spec.model})
            })
            .collect();
        let models: Vec<Value> = self
            .host()
            .map(SessionHost::agent_names)
            .unwrap_or_default()
            .into_iter()
            .map(|name| {
                json!({"value": name, "displayName": name,
                       "description": format!("hookbox.toml's [agents.\"{name}\"]")})
            })
            .collect();
        // Problems are reported when the session is built.
        let mut keep = Vec::new();
        let styles = self
            .settings_files(init, &mut keep)
            .and_then(|files| self.output_style(init, &files, &keep));
        let (style, available) = match styles {
            Ok((style, styles, _)) => (
                style.name,
                styles.into_iter().map(|style| style.name).collect(),
            ),
            Err(_) => (output_styles::DEFAULT.to_owned(), Vec::new()),
        };
        json!({
            "hook_on_failure_supported": true,
            "commands": [
                {"name": "compact", "builtin": true, "argumentHint": "<optional instructions>",
                 "description": "Summarise the conversation so far (PreCompact fires)"},
                {"name": "clear", "builtin": true, "argumentHint": "", "aliases": ["reset", "new"],
                 "description": "Start a fresh conversation under a new session id"},
            ],
            "agents": agents,
            "output_style": style,
            "available_output_styles": available,
            "models": models,
            "account": {},
            "pid": std::process::id(),
        })
    }

    /// The sub-agents: the user's agent files, then the project's, then the SDK's `agents`
    /// option, a later one replacing an earlier one of the same name (Claude Code's
    /// precedence). Files are read per the setting sources; with a warning for each bad one.
    fn agents(&self, init: &InitOptions) -> (Vec<(String, AgentSpec)>, Vec<String>) {
        let mut dirs = Vec::new();
        if self.wants_source(init, "user")
            && let Some(config) = &self.config_dir
        {
            dirs.push((config.join("agents"), false));
        }
        if self.wants_source(init, "project") {
            dirs.push((self.cwd.join(".claude/agents"), true));
        }
        let mut agents: Vec<(String, AgentSpec)> = Vec::new();
        let mut warnings = Vec::new();
        let loaded = dirs.iter().flat_map(|(dir, confined)| {
            let (found, problems) = agent_files::load(dir, *confined);
            warnings.extend(problems);
            found
        });
        let loaded: Vec<_> = loaded.collect();
        for (name, spec) in loaded.into_iter().chain(init.agents.iter().cloned()) {
            agents.retain(|(known, _)| *known != name);
            agents.push((name, spec));
        }
        (agents, warnings)
    }

    /// The model of sub-agent `name`, written `model`: `None` (the session's current model)
    /// for none and `inherit`; a configured agent of that name's model; else, for Claude Code's
    /// aliases (`haiku`, `sonnet`, `opus`) and any other name, `None` with a warning.
    fn agent_model(
        &self,
        host: &dyn SessionHost,
        name: &str,
        model: Option<&str>,
    ) -> anyhow::Result<Option<Arc<dyn Model>>> {
        let Some(model) = model.filter(|model| *model != "inherit") else {
            return Ok(None);
        };
        if host.agent_names().iter().any(|known| known == model) {
            return host
                .model(model)
                .map(Some)
                .with_context(|| format!("sub-agent `{name}` names model `{model}`"));
        }
        warn(&format!(
            "sub-agent `{name}`: model `{model}` is not an [agents.\"{model}\"] table of \
             hookbox.toml; it uses the session's model (add that table to choose its model)"
        ));
        Ok(None)
    }

    /// Whether settings source `source` (`user`, `project`, `local`) is read: `--setting-sources`,
    /// else the SDK's `settingSources`, else all.
    fn wants_source(&self, init: &InitOptions, source: &str) -> bool {
        self.args
            .setting_sources
            .as_ref()
            .or(init.setting_sources.as_ref())
            .is_none_or(|sources| sources.iter().any(|item| item == source))
    }

    /// The system prompt: `--system-prompt` (or its file, or cortex's `systemPrompt`), the
    /// appended prompts, then the output style's instructions, as Claude Code adds them at
    /// the end.
    fn system_prompt(
        &self,
        init: &InitOptions,
        style: &OutputStyle,
    ) -> anyhow::Result<Option<String>> {
        let args = &self.args;
        let base =
            match (&args.system_prompt, &args.system_prompt_file) {
                (Some(text), _) => Some(text.clone()),
                (None, Some(path)) => Some(std::fs::read_to_string(path).with_context(|| {
                    format!("cannot read --system-prompt-file {}", path.display())
                })?),
                (None, None) => init.system_prompt.clone(),
            };
        let parts: Vec<String> = [
            base,
            args.append_system_prompt.clone(),
            init.append_system_prompt.clone(),
            Some(style.prompt.clone()),
        ]
        .into_iter()
        .flatten()
        .filter(|text| !text.trim().is_empty())
        .collect();
        Ok((!parts.is_empty()).then(|| parts.join("\n\n")))
    }

    /// `--settings` files (inline JSON goes to a temporary file), then the user, project and
    /// local settings files that exist, restricted by the setting sources.
    fn settings_files(
        &self,
        init: &InitOptions,
        keep: &mut Vec<tempfile::NamedTempFile>,
    ) -> anyhow::Result<Vec<PathBuf>> {
        let mut files = Vec::new();
        for value in &self.args.settings {
            if value.trim_start().starts_with('{') {
                let mut file = tempfile::NamedTempFile::new()
                    .context("cannot write the inline --settings to a temporary file")?;
                std::io::Write::write_all(&mut file, value.as_bytes())
                    .context("cannot write the inline --settings to a temporary file")?;
                files.push(file.path().to_path_buf());
                keep.push(file);
            } else {
                files.push(PathBuf::from(value));
            }
        }
        let wanted = |source: &str| self.wants_source(init, source);
        let mut candidates = Vec::new();
        if let Some(home) = std::env::var_os("HOME").filter(|_| wanted("user")) {
            candidates.push(PathBuf::from(home).join(".claude/settings.json"));
        }
        if wanted("project") {
            candidates.push(self.cwd.join(".claude/settings.json"));
        }
        if wanted("local") {
            candidates.push(self.cwd.join(".claude/settings.local.json"));
        }
        files.extend(candidates.into_iter().filter(|path| path.is_file()));
        Ok(files)
    }
}

/// How reasons name settings file `path`: an inline --settings (the SDK's `settings` and
/// `sandbox` options), which sits in one of the temporary files `keep`, by the option.
fn settings_label(path: &Path, keep: &[tempfile::NamedTempFile]) -> String {
    if keep.iter().any(|file| file.path() == path) {
        "the --settings JSON (the SDK's `settings`/`sandbox` options)".to_owned()
    } else {
        path.display().to_string()
    }
}
