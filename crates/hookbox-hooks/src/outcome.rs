//! The merged result of one dispatch, which the agent acts on.

use serde::Serialize;
use serde_json::Value;

use crate::trace::TraceEntry;

/// What the hooks decided about the event, strongest first in [`Decision::rank`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Go ahead (explicitly, or because nothing objected).
    Allow,
    /// Ask the user before going ahead (SDK `PreToolUse`).
    Ask,
    /// Do not run the tool call (sandbox `deny`, SDK `PreToolUse` deny, `PermissionRequest` deny).
    Deny,
    /// Block what the event announces (SDK `decision: "block"` on prompts, stops, post-tool…).
    Block,
}

impl Decision {
    /// Precedence when merging: block and deny > ask > allow.
    pub fn rank(self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Ask => 1,
            Self::Deny | Self::Block => 2,
        }
    }

    /// Whether this stops what the event announces.
    pub fn is_blocking(self) -> bool {
        self.rank() == 2
    }
}

/// The merged outcome of all handlers that ran for one event.
#[derive(Debug, Clone, Serialize)]
pub struct HookOutcome {
    /// The strongest decision any handler gave; `allow` when none objected.
    pub decision: Decision,
    /// Whether some handler decided explicitly (an explicit allow skips permission prompts).
    pub explicit: bool,
    /// The reason that goes with the decision (for the model on deny/block, the user on ask).
    pub reason: Option<String>,
    /// A replacement for the whole tool input (last one in registration order wins).
    pub updated_input: Option<Value>,
    /// A PostToolUse replacement of the tool's output (`updatedToolOutput`; the last one in
    /// registration order wins). The session checks it has the output's shape.
    pub updated_tool_output: Option<Value>,
    /// Context to add to the conversation, concatenated in registration order.
    pub additional_context: Option<String>,
    /// Messages for the user, concatenated in registration order.
    pub system_message: Option<String>,
    /// `false` when a handler asked to stop the session; wins over everything.
    #[serde(rename = "continue")]
    pub continue_: bool,
    /// Why the session should stop, when `continue` is false.
    pub stop_reason: Option<String>,
    /// One entry per handler, in registration order.
    pub trace: Vec<TraceEntry>,
}

impl Default for HookOutcome {
    fn default() -> Self {
        Self {
            decision: Decision::Allow,
            explicit: false,
            reason: None,
            updated_input: None,
            updated_tool_output: None,
            additional_context: None,
            system_message: None,
            continue_: true,
            stop_reason: None,
            trace: Vec::new(),
        }
    }
}

impl HookOutcome {
    /// Whether the announced action must not happen (denied, blocked, or session stopped).
    pub fn is_blocked(&self) -> bool {
        self.decision.is_blocking() || !self.continue_
    }
}
