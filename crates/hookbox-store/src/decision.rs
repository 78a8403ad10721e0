//! The decision log's records: one row per hook event an agent's own hooks handed to
//! `hookbox hook`, with what the policy decided.

use std::time::Duration;

use crate::time::Timestamp;

/// A decision to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewDecision {
    /// The agent that asked (`claude-code`, `gemini-cli`, …).
    pub agent: String,
    /// The agent's session id, if its event carried one.
    pub session: Option<String>,
    /// The event in the agent's own vocabulary (`PreToolUse`, `BeforeTool`, …).
    pub event: String,
    /// The tool in the agent's own vocabulary, on tool events.
    pub tool: Option<String>,
    /// `allow`, `ask`, `deny`, `block`, `stop`, `fail-open` (no handler decided and one failed)
    /// or `none` (no handler decided anything).
    pub decision: String,
    /// The reason given to the agent, if any.
    pub reason: Option<String>,
    /// From reading the event to the answer.
    pub latency: Duration,
    /// The policy file whose handler decided (or the files that were loaded, when none did).
    pub policy: Option<String>,
    /// The deciding handler: its kind, command or URL, and JSON path.
    pub handler: Option<String>,
}

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRecord {
    /// Its place in the log (increasing).
    pub seq: i64,
    /// When it was recorded.
    pub at: Timestamp,
    /// What was recorded.
    pub decision: NewDecision,
}

/// Which decisions to list: newest `limit` of those matching, returned oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionQuery {
    /// Only this agent's.
    pub agent: Option<String>,
    /// Only those recorded at or after this instant.
    pub since: Option<Timestamp>,
    /// At most this many (the newest).
    pub limit: u32,
}
