//! Building the session an SDK asked for: the command line, `hookbox.toml`, the `initialize`
//! request and the Claude-style settings files together.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use hookbox_agent::session::{HookMatcher, PermissionMode, Session};
use hookbox_hooks::HookEvent;
use hookbox_llm::Model;

use super::argv::SdkArgs;
use super::bridge::{RemoteHookCallback, RemotePermissionPrompt};
use super::control::ControlClient;
use super::init::InitOptions;
use crate::config::ConfigFile;

/// Everything known before the first prompt.
pub(crate) struct Setup {
    /// The command line.
    pub(crate) args: SdkArgs,
    /// `$HOOKBOX_HOME`, when it could be found.
    pub(crate) home: Option<PathBuf>,
    /// `hookbox.toml`, or why it could not be read.
    pub(crate) config: Result<ConfigFile, String>,
    /// The session's working directory.
    pub(crate) cwd: PathBuf,
}

impl Setup {
    /// Reads the config for `args`.
    pub(crate) fn new(args: SdkArgs) -> Self {
        let home = hookbox_env::Environments::default_home().ok();
        let config = match &home {
            Some(home) => crate::config::read(args.config.as_deref(), home),
            None => match &args.config {
                Some(path) => crate::config::read(Some(path), Path::new("/nonexistent")),
                None => Ok(ConfigFile::default()),
            },
        }
        .map_err(|err| format!("{err:#}"));
        let cwd = match &args.workdir {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        };
        Self {
            args,
            home,
            config,
            cwd,
        }
    }

    fn config(&self) -> anyhow::Result<&ConfigFile> {
        self.config.as_ref().map_err(|message| anyhow!("{message}"))
    }

    /// The agent name to use: `--model`, else `[sdk] default_agent`.
    pub(crate) fn agent_name(&self) -> anyhow::Result<String> {
        let config = self.config()?;
        if let Some(name) = self
            .args
            .model
            .clone()
            .or_else(|| config.sdk.default_agent.clone())
        {
            return Ok(name);
        }
        let known: Vec<&str> = config.agents.keys().map(String::as_str).collect();
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
        self.config()?.model(name)
    }

    /// The starting permission mode from the command line.
    pub(crate) fn permission_mode(&self) -> anyhow::Result<PermissionMode> {
        match &self.args.permission_mode {
            Some(mode) => Ok(mode.parse()?),
            None => Ok(PermissionMode::Default),
        }
    }

    /// Builds the session. `keep` receives temporary files that must outlive it.
    pub(crate) fn build(
        &self,
        init: &InitOptions,
        client: &ControlClient,
        mode: PermissionMode,
        model: Arc<dyn Model>,
        keep: &mut Vec<tempfile::NamedTempFile>,
    ) -> anyhow::Result<Session> {
        let args = &self.args;
        let mut builder = Session::builder(&self.cwd)
            .model(model)
            .permission_mode(mode)
            .allowed_tools(args.allowed_tools.iter().cloned())
            .disallowed_tools(args.disallowed_tools.iter().cloned());
        if let Some(id) = &args.session_id {
            builder = builder.session_id(id.clone());
        }
        if let Some(turns) = args.max_turns {
            builder = builder.max_turns(turns);
        }
        if let Some(prompt) = self.system_prompt(init)? {
            builder = builder.system_prompt(prompt);
        }
        for (name, definition) in &init.agents {
            builder = builder.agent(name.clone(), definition.clone());
        }
        if let Some(home) = &self.home {
            builder = builder.transcript_dir(home.join("sessions"));
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
        for path in self.settings_files(init, keep)? {
            builder = builder.settings_file(&path);
        }
        if args.unsandboxed {
            crate::render::print_error(
                "hookbox: WARNING: --unsandboxed: Bash runs on this host in the working \
                 directory, not in the sandbox\n",
            );
            builder = builder.unsandboxed();
        }
        if args.permission_prompt_stdio || init.sdk_managed_permissions {
            builder =
                builder.permission_prompt(Arc::new(RemotePermissionPrompt::new(client.clone())));
        }
        builder
            .build()
            .with_context(|| format!("cannot start the session in {}", self.cwd.display()))
    }

    fn system_prompt(&self, init: &InitOptions) -> anyhow::Result<Option<String>> {
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
        let sources = self
            .args
            .setting_sources
            .clone()
            .or_else(|| init.setting_sources.clone());
        let wanted = |source: &str| {
            sources
                .as_ref()
                .is_none_or(|sources| sources.iter().any(|item| item == source))
        };
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
