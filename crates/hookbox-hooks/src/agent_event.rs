//! The events of the agents `hookbox hook` serves that have no hookbox counterpart. They are
//! passed through under the agent's own names, so a policy in either dialect can still bind
//! them (`{"hooks": {"BeforeModel": […]}}`, or a sandbox group's `"BeforeModel": […]`).
//!
//! Only the names in [`PUBLISHED`], the events the five agents document, are accepted, so a
//! misspelt event is still an error with a "did you mean".

use crate::adapter::Agent;
use crate::event::Dialect;

/// One published agent event with no hookbox counterpart.
struct Published {
    /// The event's name, as the agent sends it.
    name: &'static str,
    /// The agents that send it under this name.
    agents: &'static [Agent],
    /// The input field the agent tests its own matchers against, if any.
    matcher_field: Option<&'static str>,
    /// Whether the agent lets a hook stop what the event announces.
    can_block: bool,
    /// Whether the agent reads `additionalContext` from its answer.
    takes_context: bool,
}

impl Published {
    /// An event of `agents` that a hook can neither block nor add context to.
    const fn observed(name: &'static str, agents: &'static [Agent]) -> Self {
        Self {
            name,
            agents,
            matcher_field: None,
            can_block: false,
            takes_context: false,
        }
    }

    /// The same, matched on `field`.
    const fn matched(self, field: &'static str) -> Self {
        Self {
            matcher_field: Some(field),
            ..self
        }
    }

    /// The same, blockable.
    const fn blocks(self) -> Self {
        Self {
            can_block: true,
            ..self
        }
    }
}

const CLAUDE: &[Agent] = &[Agent::ClaudeCode];
const GEMINI: &[Agent] = &[Agent::GeminiCli];
const CODEX: &[Agent] = &[Agent::Codex];
const CLAUDE_AND_CODEX: &[Agent] = &[Agent::ClaudeCode, Agent::Codex];
const CURSOR: &[Agent] = &[Agent::Cursor];
const COPILOT: &[Agent] = &[Agent::Copilot];

/// Every agent event without a hookbox counterpart, from each agent's hook reference
/// (`docs/agent-adapters.md`, "Events passed through"). Claude Code's `WorktreeCreate` is not
/// here: its hook must answer the worktree's path, which no policy decision gives.
const PUBLISHED: [Published; 27] = [
    Published {
        takes_context: true,
        ..Published::observed("Setup", CLAUDE).matched("trigger")
    },
    Published::observed("InstructionsLoaded", CLAUDE).matched("load_reason"),
    Published::observed("UserPromptExpansion", CLAUDE)
        .matched("command_name")
        .blocks(),
    Published::observed("MessageDisplay", CLAUDE),
    Published::observed("PermissionDenied", CLAUDE).matched("tool_name"),
    Published::observed("PostToolBatch", CLAUDE).blocks(),
    Published::observed("StopFailure", CLAUDE).matched("error"),
    Published::observed("TaskCreated", CLAUDE).blocks(),
    Published::observed("TaskCompleted", CLAUDE).blocks(),
    Published::observed("TeammateIdle", CLAUDE).blocks(),
    Published::observed("ConfigChange", CLAUDE)
        .matched("source")
        .blocks(),
    Published::observed("CwdChanged", CLAUDE),
    Published::observed("DirectoryAdded", CLAUDE).matched("source"),
    Published::observed("FileChanged", CLAUDE),
    Published::observed("WorktreeRemove", CLAUDE),
    Published::observed("PostCompact", CLAUDE_AND_CODEX).matched("trigger"),
    Published::observed("Elicitation", CLAUDE)
        .matched("mcp_server_name")
        .blocks(),
    Published::observed("ElicitationResult", CLAUDE)
        .matched("mcp_server_name")
        .blocks(),
    Published::observed("BeforeModel", GEMINI).blocks(),
    Published::observed("AfterModel", GEMINI).blocks(),
    Published::observed("BeforeToolSelection", GEMINI),
    Published::observed("Interrupt", CODEX),
    Published::observed("afterAgentResponse", CURSOR),
    Published::observed("afterAgentThought", CURSOR),
    Published::observed("beforeTabFileRead", CURSOR).blocks(),
    Published::observed("afterTabFileEdit", CURSOR),
    Published::observed("errorOccurred", COPILOT),
];

/// An event an agent publishes that hookbox has no counterpart for, bound in one dialect:
/// its hooks see the agent's own input and answer by that dialect's rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentEvent {
    /// Its row in [`PUBLISHED`].
    index: usize,
    /// The dialect of the policy that binds it.
    dialect: Dialect,
}

impl AgentEvent {
    /// The published agent event called exactly `name`, as `dialect` binds it.
    pub fn find(name: &str, dialect: Dialect) -> Option<Self> {
        PUBLISHED
            .iter()
            .position(|event| event.name == name)
            .map(|index| Self { index, dialect })
    }

    /// The names of every published agent event without a hookbox counterpart.
    pub fn names() -> impl Iterator<Item = &'static str> {
        PUBLISHED.iter().map(|event| event.name)
    }

    /// Every published event `agent` sends that has no hookbox counterpart, as `dialect`
    /// binds it, in the table's order.
    pub fn sent_by(agent: Agent, dialect: Dialect) -> impl Iterator<Item = Self> {
        (0..PUBLISHED.len())
            .map(move |index| Self { index, dialect })
            .filter(move |event| event.is_sent_by(agent))
    }

    /// Its name, as the agents send it.
    pub fn name(self) -> &'static str {
        self.row().name
    }

    /// The dialect of the policy that binds it.
    pub fn dialect(self) -> Dialect {
        self.dialect
    }

    /// Whether `agent` sends this event.
    pub fn is_sent_by(self, agent: Agent) -> bool {
        self.row().agents.contains(&agent)
    }

    /// The input field its matchers test, or `None` when it ignores matchers.
    pub fn matcher_field(self) -> Option<&'static str> {
        self.row().matcher_field
    }

    /// Whether the agent lets a hook stop what it announces.
    pub fn can_block(self) -> bool {
        self.row().can_block
    }

    /// Whether the agent reads additional context from a hook's answer to it.
    pub fn takes_context(self) -> bool {
        self.row().takes_context
    }

    /// Its row of the table.
    fn row(self) -> &'static Published {
        &PUBLISHED[self.index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::HookEvent;

    #[test]
    fn names_are_unique_and_none_is_a_hookbox_event() {
        let names: Vec<&str> = AgentEvent::names().collect();
        for (index, name) in names.iter().enumerate() {
            assert!(!names[..index].contains(name), "{name} twice");
            assert_eq!(HookEvent::from_name(name), None, "{name}");
            let event = AgentEvent::find(name, Dialect::Sdk).unwrap();
            assert_eq!(event.name(), *name);
        }
        assert_eq!(AgentEvent::find("beforemodel", Dialect::Sdk), None);
        assert_eq!(AgentEvent::find("WorktreeCreate", Dialect::Sdk), None);
    }

    #[test]
    fn each_dialect_binds_its_own_event() {
        let sdk = AgentEvent::find("BeforeModel", Dialect::Sdk).unwrap();
        let sandbox = AgentEvent::find("BeforeModel", Dialect::Sandbox).unwrap();
        assert_ne!(sdk, sandbox);
        assert_eq!(sandbox.dialect(), Dialect::Sandbox);
        assert!(sdk.is_sent_by(Agent::GeminiCli));
        assert!(!sdk.is_sent_by(Agent::ClaudeCode));
        let compact = AgentEvent::find("PostCompact", Dialect::Sdk).unwrap();
        assert!(compact.is_sent_by(Agent::ClaudeCode) && compact.is_sent_by(Agent::Codex));
    }

    #[test]
    fn each_agent_sends_its_own_rows() {
        let names = |agent| {
            AgentEvent::sent_by(agent, Dialect::Sdk)
                .map(AgentEvent::name)
                .collect::<Vec<_>>()
        };
        assert_eq!(names(Agent::Codex), ["PostCompact", "Interrupt"]);
        assert_eq!(
            names(Agent::GeminiCli),
            ["BeforeModel", "AfterModel", "BeforeToolSelection"]
        );
        assert_eq!(names(Agent::Copilot), ["errorOccurred"]);
        assert_eq!(names(Agent::ClaudeCode).len(), 18);
        let total: usize = [
            Agent::ClaudeCode,
            Agent::GeminiCli,
            Agent::Codex,
            Agent::Cursor,
            Agent::Copilot,
        ]
        .into_iter()
        .map(|agent| names(agent).len())
        .sum();
        // PostCompact is sent by two agents.
        assert_eq!(total, PUBLISHED.len() + 1);
    }
}
