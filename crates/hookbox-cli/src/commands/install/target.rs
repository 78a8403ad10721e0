//! Where each agent reads its hooks, which events `hookbox install` registers there and the
//! shape of one entry, per agent. The table is in `docs/agent-adapters.md`.

use std::path::{Path, PathBuf};

use hookbox_hooks::adapter::Agent;
use hookbox_hooks::{AgentEvent, Dialect};
use serde_json::{Value, json};

/// Whose configuration: the user's (every project), one project's, or the machine's managed
/// settings (which no project or user setting overrides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Scope {
    /// The user's configuration under the home directory.
    User,
    /// A project's configuration, under the project directory.
    Project,
    /// The agent's managed (enterprise) settings: Claude Code's
    /// `/etc/claude-code/managed-settings.json`, Gemini CLI's system settings
    /// (`/etc/gemini-cli/settings.json`, or `GEMINI_CLI_SYSTEM_SETTINGS_PATH`).
    Managed,
}

impl Scope {
    /// The word printed for the scope.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Managed => "managed",
        }
    }
}

/// The variable Gemini CLI reads its system (managed) settings' path from.
pub(super) const GEMINI_SYSTEM_SETTINGS: &str = "GEMINI_CLI_SYSTEM_SETTINGS_PATH";

/// `agent`'s managed settings file, as the agent finds it: the directory it is under, the
/// directories to create there, the file. `None`: hookbox does not install there (Codex's
/// managed hooks are TOML in `/etc/codex/requirements.toml`; Cursor and Copilot have none on
/// Linux).
pub(super) fn managed_file(agent: Agent) -> Option<(PathBuf, &'static [&'static str], PathBuf)> {
    match agent {
        Agent::ClaudeCode => Some((
            PathBuf::from("/etc"),
            &["claude-code"],
            PathBuf::from("/etc/claude-code/managed-settings.json"),
        )),
        Agent::GeminiCli => {
            match std::env::var_os(GEMINI_SYSTEM_SETTINGS).filter(|path| !path.is_empty()) {
                Some(path) => {
                    let path = PathBuf::from(path);
                    let base = path
                        .parent()
                        .map_or_else(|| PathBuf::from("/"), Path::to_path_buf);
                    Some((base, &[], path))
                }
                None => Some((
                    PathBuf::from("/etc"),
                    &["gemini-cli"],
                    PathBuf::from("/etc/gemini-cli/settings.json"),
                )),
            }
        }
        Agent::Codex | Agent::Cursor | Agent::Copilot => None,
    }
}

/// How an agent's hook file holds its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `{"hooks": {EVENT: [{"matcher"?, "hooks": [{"type": "command", "command"}]}]}}`
    /// (Claude Code, Gemini CLI, Codex).
    Groups,
    /// `{"version": 1, "hooks": {EVENT: [{KEY: command, …}]}}` with the command under `key`
    /// (Cursor: `command`; Copilot: `bash`).
    Flat {
        /// The field that holds the command.
        key: &'static str,
    },
}

/// Every agent `hookbox install` configures, in the order `--list` shows them.
pub(super) const AGENTS: [Agent; 5] = [
    Agent::ClaudeCode,
    Agent::GeminiCli,
    Agent::Codex,
    Agent::Cursor,
    Agent::Copilot,
];

/// The hook file of `agent` for the user's or a project's scope (`project`), under `base` (the
/// home or the project directory): the directories to it (relative to `base`) and the file name.
pub(super) fn location(agent: Agent, project: bool) -> (&'static [&'static str], &'static str) {
    match (agent, project) {
        (Agent::ClaudeCode, _) => (&[".claude"], "settings.json"),
        (Agent::GeminiCli, _) => (&[".gemini"], "settings.json"),
        (Agent::Codex, _) => (&[".codex"], "hooks.json"),
        (Agent::Cursor, _) => (&[".cursor"], "hooks.json"),
        (Agent::Copilot, false) => (&[".copilot", "hooks"], "hookbox.json"),
        (Agent::Copilot, true) => (&[".github", "hooks"], "hookbox.json"),
    }
}

/// The hook file of `agent` for the user's or a project's scope (`project`) under `base`.
pub(super) fn config_path(agent: Agent, project: bool, base: &Path) -> PathBuf {
    let (dirs, file) = location(agent, project);
    let mut path = base.to_path_buf();
    path.extend(dirs);
    path.push(file);
    path
}

/// How `agent`'s hook file holds its entries.
pub(super) fn layout(agent: Agent) -> Layout {
    match agent {
        Agent::ClaudeCode | Agent::GeminiCli | Agent::Codex => Layout::Groups,
        Agent::Cursor => Layout::Flat { key: "command" },
        Agent::Copilot => Layout::Flat { key: "bash" },
    }
}

/// The events `hookbox install` registers for `agent`: every one `hookbox hook AGENT` answers,
/// the mapped ones first, then the agent's own events passed through under their names (from
/// the one table of them, [`AgentEvent`]; Claude Code's `WorktreeCreate` is not in it, as no
/// policy decision can answer it). Cursor's generic tool events cover every tool; its per-tool
/// events (`beforeShellExecution`…) would ask the policy a second time about the same call, so
/// they are left out.
pub(super) fn events(agent: Agent) -> Vec<&'static str> {
    let mapped: &[&str] = match agent {
        Agent::ClaudeCode => &[
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "PostToolUseFailure",
            "UserPromptSubmit",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "Notification",
            "SessionStart",
            "SessionEnd",
        ],
        Agent::GeminiCli => &[
            "BeforeTool",
            "AfterTool",
            "BeforeAgent",
            "AfterAgent",
            "SessionStart",
            "SessionEnd",
            "PreCompress",
            "Notification",
        ],
        Agent::Codex => &[
            "PreToolUse",
            "PermissionRequest",
            "PostToolUse",
            "UserPromptSubmit",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "SessionStart",
            "SessionEnd",
        ],
        Agent::Cursor => &[
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "beforeSubmitPrompt",
            "stop",
            "subagentStart",
            "subagentStop",
            "sessionStart",
            "sessionEnd",
            "preCompact",
        ],
        Agent::Copilot => &[
            "preToolUse",
            "postToolUse",
            "userPromptSubmitted",
            "sessionStart",
            "sessionEnd",
            "agentStop",
            "subagentStop",
        ],
    };
    let passed_through = AgentEvent::sent_by(agent, Dialect::Sdk).map(AgentEvent::name);
    mapped.iter().copied().chain(passed_through).collect()
}

/// The command `agent` runs for `event`: `base` (`EXE hook AGENT [--policy FILE]`), with the
/// event's name for Copilot, whose input does not carry it.
pub(super) fn command(agent: Agent, base: &str, event: &str) -> String {
    match agent {
        Agent::Copilot => format!("{base} --event {event}"),
        _ => base.to_owned(),
    }
}

/// One entry of `agent`'s hook file for `event`, running `command`.
pub(super) fn entry(agent: Agent, event: &str, command: &str) -> Value {
    let handler = json!({"type": "command", "command": command});
    // Tool events (and Claude Code's `PermissionDenied`, matched on the tool) take a matcher
    // that matches every tool; Codex's default already does. Other events get none: both
    // agents read a missing matcher as "every occurrence".
    let on_tools = AgentEvent::find(event, Dialect::Sdk)
        .is_some_and(|passed| passed.matcher_field() == Some("tool_name"));
    let matcher = match (agent, event) {
        (
            Agent::ClaudeCode,
            "PreToolUse" | "PermissionRequest" | "PostToolUse" | "PostToolUseFailure",
        ) => Some("*"),
        (Agent::ClaudeCode, _) if on_tools => Some("*"),
        (Agent::GeminiCli, "BeforeTool" | "AfterTool") => Some(".*"),
        _ => None,
    };
    match (agent, matcher) {
        (Agent::Cursor, _) => json!({"command": command}),
        (Agent::Copilot, _) => json!({"type": "command", "bash": command, "timeoutSec": 30}),
        (_, Some(matcher)) => json!({"matcher": matcher, "hooks": [handler]}),
        (_, None) => json!({"hooks": [handler]}),
    }
}

/// `word` quoted for a POSIX shell when it needs to be.
pub(crate) fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod docs {
    use super::*;

    #[test]
    fn the_install_table_in_the_docs_lists_these_events() {
        let doc = include_str!("../../../../../docs/agent-adapters.md");
        for agent in [Agent::Codex, Agent::Cursor, Agent::Copilot] {
            let row = doc
                .lines()
                .find(|line| line.starts_with(&format!("| `{}` | `DIR/", agent.name())))
                .unwrap_or_else(|| {
                    panic!(
                        "docs/agent-adapters.md has no install row for {}",
                        agent.name()
                    )
                });
            for event in events(agent) {
                assert!(
                    row.contains(&format!("`{event}`")),
                    "the install row for {} does not list `{event}`",
                    agent.name()
                );
            }
        }
    }
}
