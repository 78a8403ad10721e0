//! The settings files an agent merges, read as the agent reads them (its managed, user,
//! project and local layers), and the settings in them that switch hooks off or hand the
//! hook another `HOOKBOX_HOME`. `hookbox doctor` judges what the agent will run from these.

use std::path::{Path, PathBuf};

use hookbox_hooks::adapter::Agent;
use serde_json::Value;

use super::document::Document;
use super::target::{self, GEMINI_SYSTEM_SETTINGS};

/// One layer of an agent's settings.
pub(super) struct Source {
    /// `managed`, `user`, `project` or `local`.
    pub(super) layer: &'static str,
    /// The file.
    pub(super) path: PathBuf,
    /// Its content as JSON (a TOML file's converted), `None` when it does not exist; the error
    /// says why it cannot be read.
    pub(super) value: Result<Option<Value>, String>,
}

impl Source {
    /// Whether the layer is the machine's managed one.
    pub(super) fn managed(&self) -> bool {
        self.layer == "managed"
    }

    /// The hook entries of the file (unknown shapes left out: the agent skips them too).
    pub(super) fn document(&self) -> Option<Document> {
        let mut value = self.value.as_ref().ok()?.clone()?;
        if let Some(Value::Object(hooks)) = value.get_mut("hooks") {
            // Gemini CLI's `enabled`/`disabled` and Codex's `state` live beside the events.
            hooks.retain(|_, entries| entries.is_array());
        }
        Document::from_value(value).ok()
    }

    /// The value at `pointer` (`/disableAllHooks`), if the file sets it.
    pub(super) fn setting(&self, pointer: &str) -> Option<&Value> {
        self.value.as_ref().ok()?.as_ref()?.pointer(pointer)
    }
}

/// The layers `agent` reads, lowest precedence first, for the user whose home is `home` in
/// `project`.
pub(super) fn sources(agent: Agent, home: &Path, project: &Path) -> Vec<Source> {
    let etc = |path: &str| PathBuf::from(path);
    let var = |name: &str, default: &str| {
        std::env::var_os(name)
            .filter(|value| !value.is_empty())
            .map_or_else(|| PathBuf::from(default), PathBuf::from)
    };
    let files: Vec<(&'static str, PathBuf)> = match agent {
        Agent::ClaudeCode => {
            let mut files = vec![
                ("user", home.join(".claude/settings.json")),
                ("project", project.join(".claude/settings.json")),
                ("local", project.join(".claude/settings.local.json")),
                ("managed", etc("/etc/claude-code/managed-settings.json")),
            ];
            let drop_ins = etc("/etc/claude-code/managed-settings.d");
            let mut extra: Vec<PathBuf> = std::fs::read_dir(&drop_ins)
                .into_iter()
                .flatten()
                .filter_map(|entry| Some(entry.ok()?.path()))
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect();
            extra.sort();
            files.extend(extra.into_iter().map(|path| ("managed", path)));
            files
        }
        Agent::GeminiCli => vec![
            (
                "defaults",
                var(
                    "GEMINI_CLI_SYSTEM_DEFAULTS_PATH",
                    "/etc/gemini-cli/system-defaults.json",
                ),
            ),
            ("user", home.join(".gemini/settings.json")),
            ("project", project.join(".gemini/settings.json")),
            (
                "managed",
                var(GEMINI_SYSTEM_SETTINGS, "/etc/gemini-cli/settings.json"),
            ),
        ],
        Agent::Codex => vec![
            ("user", home.join(".codex/config.toml")),
            ("user", home.join(".codex/hooks.json")),
            ("project", project.join(".codex/config.toml")),
            ("project", project.join(".codex/hooks.json")),
            ("managed", etc("/etc/codex/requirements.toml")),
        ],
        Agent::Cursor | Agent::Copilot => [false, true]
            .into_iter()
            .map(|in_project| {
                let base = if in_project { project } else { home };
                let layer = if in_project { "project" } else { "user" };
                (layer, target::config_path(agent, in_project, base))
            })
            .collect(),
    };
    files
        .into_iter()
        .map(|(layer, path)| {
            let value = read(&path);
            Source { layer, path, value }
        })
        .collect()
}

/// `path` as JSON (TOML converted), `None` when it does not exist.
fn read(path: &Path) -> Result<Option<Value>, String> {
    let Some(bytes) = super::files::read_if_present(path).map_err(|err| format!("{err:#}"))? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())?;
    if path.extension().is_some_and(|ext| ext == "toml") {
        let table: toml::Table =
            toml::from_str(&text).map_err(|err| format!("not valid TOML: {err}"))?;
        serde_json::to_value(table)
            .map(Some)
            .map_err(|err| format!("cannot read its TOML as JSON: {err}"))
    } else {
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|err| format!("not valid JSON: {err}"))
    }
}

/// Something in the agent's settings that keeps hooks from running, or hands them another
/// home.
pub(super) struct Switch {
    /// Where it is set.
    pub(super) path: PathBuf,
    /// What it does.
    pub(super) what: String,
    /// Which hooks it switches off: every one, the non-managed ones, one command, or none
    /// (an environment variable: it changes the policy, not whether the hook runs).
    pub(super) off: Off,
    /// How to undo it.
    pub(super) fix: String,
}

/// The hooks a [`Switch`] turns off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Off {
    /// Every hook, managed ones too.
    All,
    /// Every hook outside the managed settings.
    Unmanaged,
    /// Hooks running this command.
    Command(String),
    /// None: hooks run with `HOOKBOX_HOME` set to this.
    Home(String),
}

/// The switches in `sources` (`agent`'s, in `project`).
pub(super) fn switches(agent: Agent, sources: &[Source], project: &Path) -> Vec<Switch> {
    let mut found = Vec::new();
    let mut switch = |source: &Source, what: &str, off: Off, fix: String| {
        found.push(Switch {
            path: source.path.clone(),
            what: what.to_owned(),
            off,
            fix,
        });
    };
    let truthy = |value: Option<&Value>| value == Some(&Value::Bool(true));
    let sudo = format!(
        "sudo hookbox install {} --scope managed --policy /etc/hookbox/policy.json",
        agent.name()
    );
    match agent {
        Agent::ClaudeCode => {
            for source in sources {
                let path = source.path.display();
                if truthy(source.setting("/disableAllHooks")) {
                    let (off, fix) = if source.managed() {
                        (
                            Off::All,
                            format!("remove `disableAllHooks` from {path} (the administrator's)"),
                        )
                    } else {
                        (
                            Off::Unmanaged,
                            format!(
                                "remove `disableAllHooks` from {path}, or `{sudo}` (managed hooks still run)"
                            ),
                        )
                    };
                    switch(source, "`disableAllHooks: true`", off, fix);
                }
                if source.managed() && truthy(source.setting("/allowManagedHooksOnly")) {
                    switch(
                        source,
                        "`allowManagedHooksOnly: true`",
                        Off::Unmanaged,
                        format!("`{sudo}`"),
                    );
                }
                if let Some(Value::String(home)) = source.setting("/env/HOOKBOX_HOME") {
                    switch(
                        source,
                        "`env.HOOKBOX_HOME`",
                        Off::Home(home.clone()),
                        String::new(),
                    );
                }
            }
        }
        Agent::GeminiCli => {
            // The last layer that sets `hooksConfig.enabled` decides.
            if let Some(source) = sources
                .iter()
                .rev()
                .find(|source| source.setting("/hooksConfig/enabled").is_some())
                .filter(|source| {
                    source.setting("/hooksConfig/enabled") == Some(&Value::Bool(false))
                })
            {
                let fix = format!(
                    "set `hooksConfig.enabled` to true in {}",
                    source.path.display()
                );
                switch(source, "`hooksConfig.enabled: false`", Off::All, fix);
            }
            for source in sources {
                let disabled = source
                    .setting("/hooksConfig/disabled")
                    .and_then(Value::as_array);
                for command in disabled.into_iter().flatten().filter_map(Value::as_str) {
                    let fix = format!(
                        "remove it from `hooksConfig.disabled` in {}",
                        source.path.display()
                    );
                    switch(
                        source,
                        "`hooksConfig.disabled`",
                        Off::Command(command.to_owned()),
                        fix,
                    );
                }
            }
            // Gemini CLI loads the first `.env` it finds from the project up into its
            // environment, which its hooks inherit.
            for dir in project.ancestors() {
                let found_env = [dir.join(".gemini/.env"), dir.join(".env")]
                    .into_iter()
                    .find(|path| path.is_file());
                if let Some(path) = found_env {
                    let text = super::files::read_if_present(&path)
                        .ok()
                        .flatten()
                        .unwrap_or_default();
                    let home = String::from_utf8_lossy(&text)
                        .lines()
                        .filter_map(|line| {
                            line.trim()
                                .trim_start_matches("export ")
                                .strip_prefix("HOOKBOX_HOME=")
                        })
                        .map(|value| value.trim().trim_matches(['"', '\'']).to_owned())
                        .next_back();
                    if let Some(home) = home {
                        found.push(Switch {
                            path,
                            what: "`HOOKBOX_HOME` in `.env`".to_owned(),
                            off: Off::Home(home),
                            fix: String::new(),
                        });
                    }
                    break;
                }
            }
        }
        Agent::Codex => {
            // The managed requirement wins; else the last config layer that sets it.
            let features = sources
                .iter()
                .filter(|source| source.path.extension().is_some_and(|ext| ext == "toml"))
                .filter(|source| source.setting("/features/hooks").is_some())
                .max_by_key(|source| match source.layer {
                    "managed" => 2,
                    "project" => 1,
                    _ => 0,
                });
            if let Some(source) = features
                .filter(|source| source.setting("/features/hooks") == Some(&Value::Bool(false)))
            {
                let fix = format!(
                    "remove `hooks = false` from `[features]` in {}",
                    source.path.display()
                );
                switch(source, "`[features] hooks = false`", Off::All, fix);
            }
            for source in sources.iter().filter(|source| source.managed()) {
                if truthy(source.setting("/allow_managed_hooks_only")) {
                    let fix = format!(
                        "add hookbox's entries to the `[hooks]` tables of {} (see docs/agent-adapters.md)",
                        source.path.display()
                    );
                    switch(
                        source,
                        "`allow_managed_hooks_only = true`",
                        Off::Unmanaged,
                        fix,
                    );
                }
            }
        }
        Agent::Cursor | Agent::Copilot => {}
    }
    found
}
