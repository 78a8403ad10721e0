//! The events hooks can bind to, and which dialect each belongs to.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::agent_event::AgentEvent;

/// The two hook systems hookbox implements; each has its own config format and reply semantics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Dialect {
    /// Sandbox hooks (`.agents/hooks.json`): `pre_tool_execution` / `post_tool_execution`,
    /// handlers run one after another, only an exact `"deny"` blocks, everything else allows.
    Sandbox,
    /// SDK / Claude-style lifecycle hooks: handlers run concurrently, replies merge in
    /// registration order, exit code 2 blocks.
    Sdk,
}

/// One point of the agent's life at which hooks can run. Serialized as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    /// Sandbox dialect: just before a built-in sandbox tool runs; may deny it.
    PreToolExecution,
    /// Sandbox dialect: just after a built-in sandbox tool ran; output ignored.
    PostToolExecution,
    /// SDK dialect: before a tool runs; may allow, deny, ask or rewrite its input.
    PreToolUse,
    /// SDK dialect: after a tool succeeded; may add context or block with feedback.
    PostToolUse,
    /// SDK dialect: after a tool failed.
    PostToolUseFailure,
    /// SDK dialect: when the user submits a prompt; may block it or add context.
    UserPromptSubmit,
    /// SDK dialect: when the agent is about to stop; may block to continue the turn.
    Stop,
    /// SDK dialect: when a sub-agent starts.
    SubagentStart,
    /// SDK dialect: when a sub-agent is about to stop.
    SubagentStop,
    /// SDK dialect: before the conversation is compacted.
    PreCompact,
    /// SDK dialect: when the agent emits a notification.
    Notification,
    /// SDK dialect: when a tool needs a permission decision.
    PermissionRequest,
    /// SDK dialect (extension of the ten): when a session starts.
    SessionStart,
    /// SDK dialect (extension of the ten): when a session ends.
    SessionEnd,
    /// An event of an agent `hookbox hook` serves that has no counterpart above, passed
    /// through under the agent's own name (`BeforeModel`, `PostCompact`…), in either dialect.
    Agent(AgentEvent),
}

impl HookEvent {
    /// Every hookbox event, sandbox ones first (agents' pass-through events aside).
    pub const ALL: [Self; 14] = [
        Self::PreToolExecution,
        Self::PostToolExecution,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PostToolUseFailure,
        Self::UserPromptSubmit,
        Self::Stop,
        Self::SubagentStart,
        Self::SubagentStop,
        Self::PreCompact,
        Self::Notification,
        Self::PermissionRequest,
        Self::SessionStart,
        Self::SessionEnd,
    ];

    /// The name used in config files and on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolExecution => "pre_tool_execution",
            Self::PostToolExecution => "post_tool_execution",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PostToolUseFailure => "PostToolUseFailure",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SubagentStart => "SubagentStart",
            Self::SubagentStop => "SubagentStop",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
            Self::PermissionRequest => "PermissionRequest",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::Agent(event) => event.name(),
        }
    }

    /// The hookbox event with this exact name, if any (agents' pass-through events aside).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    /// The dialect whose config files declare this event.
    pub fn dialect(self) -> Dialect {
        match self {
            Self::PreToolExecution | Self::PostToolExecution => Dialect::Sandbox,
            Self::Agent(event) => event.dialect(),
            _ => Dialect::Sdk,
        }
    }

    /// The input field a matcher is tested against, or `None` when this event ignores matchers.
    pub fn matcher_field(self) -> Option<&'static str> {
        match self {
            Self::PreToolExecution | Self::PostToolExecution => Some("tool_call.name"),
            Self::PreToolUse
            | Self::PostToolUse
            | Self::PostToolUseFailure
            | Self::PermissionRequest => Some("tool_name"),
            Self::Notification => Some("notification_type"),
            Self::PreCompact => Some("trigger"),
            Self::SubagentStart | Self::SubagentStop => Some("agent_type"),
            Self::SessionStart => Some("source"),
            Self::SessionEnd => Some("reason"),
            Self::UserPromptSubmit | Self::Stop => None,
            Self::Agent(event) => event.matcher_field(),
        }
    }

    /// Whether a hook can stop what this event announces (a tool call, a prompt, a stop…).
    pub fn can_block(self) -> bool {
        match self {
            Self::Agent(event) => event.can_block(),
            _ => !matches!(
                self,
                Self::PostToolExecution
                    | Self::Notification
                    | Self::SubagentStart
                    | Self::SessionStart
                    | Self::SessionEnd
            ),
        }
    }

    /// Whether a Claude-style reply's `additionalContext` means something on this event.
    pub fn takes_context(self) -> bool {
        match self {
            Self::Agent(event) => event.takes_context(),
            _ => matches!(
                self,
                Self::PreToolUse
                    | Self::PostToolUse
                    | Self::PostToolUseFailure
                    | Self::UserPromptSubmit
                    | Self::SessionStart
                    | Self::SubagentStart
            ),
        }
    }
}

impl Serialize for HookEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::from_name(event.name()), Some(event));
        }
        assert_eq!(HookEvent::from_name("pretooluse"), None);
    }

    #[test]
    fn dialects() {
        assert_eq!(HookEvent::PreToolExecution.dialect(), Dialect::Sandbox);
        assert_eq!(HookEvent::Stop.dialect(), Dialect::Sdk);
    }
}
