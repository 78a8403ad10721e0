//! Who may run which tool: the permission modes, the allowed / disallowed lists, and the
//! `can_use_tool` prompt a session may ask when a rule does not settle a call.

use std::fmt;
use std::future::Future;
use std::str::FromStr;

use futures_util::future::BoxFuture;
use hookbox_env::{Effect, Vocabulary, builtin_tool, builtin_tools};
use serde_json::Value;

/// How much a session may do without asking.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PermissionMode {
    /// Host-side tools ask; `Bash` in the sandbox runs (the sandbox confines it).
    #[default]
    Default,
    /// Like `Default`, and file edits (`Write`, `Edit`) and reads run without asking.
    AcceptEdits,
    /// Read-only: `Read`, `Glob`, `Grep` run; anything that changes things is denied.
    Plan,
    /// Everything runs without asking (hooks still apply, and their denials still win).
    BypassPermissions,
}

impl PermissionMode {
    /// The name used on the wire (`default`, `acceptEdits`, `plan`, `bypassPermissions`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::AcceptEdits => "acceptEdits",
            Self::Plan => "plan",
            Self::BypassPermissions => "bypassPermissions",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A permission mode name that hookbox does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{0}`; expected one of default, acceptEdits, plan, bypassPermissions"
)]
pub struct UnknownPermissionMode(pub String);

impl FromStr for PermissionMode {
    type Err = UnknownPermissionMode;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "default" => Ok(Self::Default),
            "acceptEdits" => Ok(Self::AcceptEdits),
            "plan" => Ok(Self::Plan),
            "bypassPermissions" => Ok(Self::BypassPermissions),
            other => Err(UnknownPermissionMode(other.to_owned())),
        }
    }
}

/// A tool call that needs a decision from the session's `can_use_tool` prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionQuery {
    /// The tool's name.
    pub tool_name: String,
    /// The input it would run with.
    pub input: Value,
    /// The call's id.
    pub tool_use_id: String,
    /// Why the call needs a decision.
    pub decision_reason: String,
    /// The sub-agent making the call, if any.
    pub agent_id: Option<String>,
}

/// The prompt's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum PermissionAnswer {
    /// Run the call, with a replacement input if given.
    Allow {
        /// Replaces the whole input.
        updated_input: Option<Value>,
    },
    /// Do not run it; `message` goes to the model.
    Deny {
        /// Why, for the model.
        message: String,
        /// Whether to stop the query too.
        interrupt: bool,
    },
}

/// Asks someone (the SDK's `can_use_tool` callback, a person) whether a tool call may run.
pub trait PermissionPrompt: Send + Sync {
    /// Decides one call.
    fn can_use_tool(&self, query: PermissionQuery) -> BoxFuture<'static, PermissionAnswer>;
}

impl<F, Fut> PermissionPrompt for F
where
    F: Fn(PermissionQuery) -> Fut + Send + Sync,
    Fut: Future<Output = PermissionAnswer> + Send + 'static,
{
    fn can_use_tool(&self, query: PermissionQuery) -> BoxFuture<'static, PermissionAnswer> {
        Box::pin(self(query))
    }
}

/// What the session's rules say about one call before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Run it.
    Allow,
    /// Do not run it, for this reason.
    Deny(String),
    /// Ask (`PermissionRequest` hooks, then the prompt), for this reason.
    Ask(String),
}

/// What the coding tool `tool` does, from the tool registry (`None` for any other tool:
/// `Task`, MCP tools, client tools; a session knows its read-only MCP tools).
pub(crate) fn effect(tool: &str) -> Option<Effect> {
    builtin_tool(Vocabulary::Sdk, tool).map(|definition| definition.effect)
}

/// The allowed / disallowed lists and the mode, applied to one call. `hook_allowed` is an
/// explicit `allow` from a `PreToolUse` hook; `hook_asked` an explicit `ask`.
#[derive(Clone, Copy)]
pub(crate) struct Rules<'a> {
    pub(crate) mode: PermissionMode,
    /// What the tool does: the registry's [`effect`] of a coding tool, `Reads` for an MCP tool
    /// annotated read-only (`None`: it may do anything).
    pub(crate) effect: Option<Effect>,
    pub(crate) allowed: &'a [String],
    pub(crate) disallowed: &'a [String],
    /// `Bash` runs without asking (sandboxed, and not turned off by the settings).
    pub(crate) auto_allow_bash: bool,
    /// The protected path (settings, git, hooks: the host runs what they hold) that this
    /// call would change, if any: it asks in every mode but `bypassPermissions`.
    pub(crate) protected: Option<&'a std::path::Path>,
    /// The path outside the working directory and the added directories that this call
    /// names, if any: it asks in every mode, and runs only when explicitly allowed.
    pub(crate) outside: Option<&'a std::path::Path>,
}

impl Rules<'_> {
    /// Decides `tool` by rule: disallowed wins, then a hook's explicit decision, then the mode
    /// and the allowed list.
    pub(crate) fn decide(&self, tool: &str, hook_allowed: bool, hook_asked: bool) -> Rule {
        if listed(self.disallowed, tool) {
            return Rule::Deny(format!("{tool} is in this session's disallowed tools"));
        }
        let effect = self.effect;
        let read_only = effect == Some(Effect::Reads);
        if self.mode == PermissionMode::Plan && !read_only {
            let readers: Vec<&str> = builtin_tools(Vocabulary::Sdk)
                .filter(|definition| definition.effect == Effect::Reads)
                .map(|definition| definition.name)
                .collect();
            return Rule::Deny(format!(
                "the session is in plan mode, where {tool} may not run; only {} do",
                readers.join(", ")
            ));
        }
        if let Some(path) = self.protected
            && self.mode != PermissionMode::BypassPermissions
        {
            return Rule::Ask(format!(
                "{tool} would change {}, which holds settings, git configuration or hooks that \
                 run on the host; hookbox always asks for that (in every mode but \
                 bypassPermissions)",
                path.display()
            ));
        }
        if let Some(path) = self.outside {
            return Rule::Ask(format!(
                "{tool} would reach {}, outside the session's working directory and its added \
                 directories; hookbox runs such a call only when a PermissionRequest hook or \
                 can_use_tool allows it",
                path.display()
            ));
        }
        if hook_asked {
            return Rule::Ask(format!(
                "a PreToolUse hook asked for confirmation of {tool}"
            ));
        }
        if hook_allowed
            || read_only && self.mode == PermissionMode::Plan
            || self.mode == PermissionMode::BypassPermissions
        {
            return Rule::Allow;
        }
        if listed(self.allowed, tool)
            || (self.mode == PermissionMode::AcceptEdits
                && (read_only || effect == Some(Effect::Edits)))
            || (effect == Some(Effect::Runs) && self.auto_allow_bash)
        {
            return Rule::Allow;
        }
        Rule::Ask(format!(
            "{tool} needs permission in {} mode",
            self.mode.name()
        ))
    }
}

/// Whether `tool` is in `list`: an entry names a tool exactly (`Bash(…)`-style patterns name
/// the whole tool); for MCP tools, as in Claude Code, `mcp__SERVER` and `mcp__SERVER__*` name
/// every tool of that server, and an entry starting `mcp__` that ends in `*` every MCP tool
/// whose name starts with what precedes it.
pub(crate) fn listed(list: &[String], tool: &str) -> bool {
    list.iter().any(|entry| {
        let name = entry.split('(').next().unwrap_or(entry).trim();
        if name == tool {
            return true;
        }
        let Some(server) = name.strip_prefix("mcp__") else {
            return false;
        };
        match server.strip_suffix('*') {
            Some(prefix) => tool.starts_with(&format!("mcp__{prefix}")),
            None => !server.contains("__") && tool.starts_with(&format!("{name}__")),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(mode: PermissionMode, auto_allow_bash: bool) -> Rules<'static> {
        Rules {
            mode,
            effect: None,
            allowed: &[],
            disallowed: &[],
            auto_allow_bash,
            protected: None,
            outside: None,
        }
    }

    /// `rules` deciding coding tool `tool`.
    fn decide(rules: Rules<'_>, tool: &str, hook_allowed: bool, hook_asked: bool) -> Rule {
        Rules {
            effect: effect(tool),
            ..rules
        }
        .decide(tool, hook_allowed, hook_asked)
    }

    #[test]
    fn default_mode_runs_sandboxed_bash_and_asks_for_host_tools() {
        let default = rules(PermissionMode::Default, true);
        assert_eq!(decide(default, "Bash", false, false), Rule::Allow);
        assert!(matches!(
            decide(default, "Read", false, false),
            Rule::Ask(_)
        ));
        assert!(matches!(
            decide(default, "Write", false, false),
            Rule::Ask(_)
        ));
        let unsandboxed = rules(PermissionMode::Default, false);
        assert!(matches!(
            decide(unsandboxed, "Bash", false, false),
            Rule::Ask(_)
        ));
    }

    #[test]
    fn modes_and_lists() {
        assert_eq!(
            decide(
                rules(PermissionMode::AcceptEdits, false),
                "Edit",
                false,
                false
            ),
            Rule::Allow
        );
        assert!(matches!(
            decide(rules(PermissionMode::Plan, true), "Bash", true, false),
            Rule::Deny(_)
        ));
        assert_eq!(
            decide(rules(PermissionMode::Plan, true), "Grep", false, false),
            Rule::Allow
        );
        assert!(matches!(
            decide(rules(PermissionMode::Plan, true), "Write", false, false),
            Rule::Deny(_)
        ));
        let disallowed = ["Bash".to_owned()];
        let allowed = ["Read".to_owned()];
        let listed = Rules {
            mode: PermissionMode::BypassPermissions,
            effect: None,
            allowed: &allowed,
            disallowed: &disallowed,
            auto_allow_bash: true,
            protected: None,
            outside: None,
        };
        assert!(matches!(decide(listed, "Bash", true, false), Rule::Deny(_)));
        let listed = Rules {
            mode: PermissionMode::Default,
            ..listed
        };
        assert_eq!(decide(listed, "Read", false, false), Rule::Allow);
        assert!(matches!(decide(listed, "Read", false, true), Rule::Ask(_)));
    }

    #[test]
    fn mcp_tools_are_listed_by_name_server_or_prefix() {
        let list = |entries: &[&str]| entries.iter().map(|e| (*e).to_owned()).collect::<Vec<_>>();
        let tool = "mcp__test__add";
        assert!(listed(&list(&["mcp__test__add"]), tool));
        assert!(listed(&list(&["mcp__test__*"]), tool));
        assert!(listed(&list(&["mcp__test"]), tool));
        assert!(listed(&list(&["mcp__te*"]), tool));
        assert!(!listed(&list(&["mcp__tes"]), tool));
        assert!(!listed(&list(&["mcp__other__*", "mcp__test__sub"]), tool));
        assert!(!listed(&list(&["mcp__test__a"]), tool));
        assert!(!listed(&list(&["*", "Bash*"]), "Bash"));
        // A read-only MCP tool runs in plan mode; another one does not.
        let plan = Rules {
            effect: Some(Effect::Reads),
            ..rules(PermissionMode::Plan, true)
        };
        assert_eq!(plan.decide(tool, false, false), Rule::Allow);
        assert!(matches!(
            rules(PermissionMode::Plan, true).decide(tool, false, false),
            Rule::Deny(_)
        ));
        assert!(matches!(
            rules(PermissionMode::AcceptEdits, true).decide(tool, false, false),
            Rule::Ask(_)
        ));
    }

    #[test]
    fn mode_names_round_trip() {
        for mode in [
            PermissionMode::Default,
            PermissionMode::AcceptEdits,
            PermissionMode::Plan,
            PermissionMode::BypassPermissions,
        ] {
            assert_eq!(mode.name().parse::<PermissionMode>(), Ok(mode));
        }
        assert!("yolo".parse::<PermissionMode>().is_err());
    }
}
