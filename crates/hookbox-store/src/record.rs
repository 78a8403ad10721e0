//! The records the store holds and the arguments of its writes.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde_json::Value;

use crate::time::Timestamp;

/// Where an interaction stands (the wire `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// Accepted, not started yet (`background` runs).
    Queued,
    /// The agent loop is running.
    InProgress,
    /// Stopped on a client-side `function_call`; the client continues with a new interaction.
    RequiresAction,
    /// The model answered.
    Completed,
    /// The run failed (including hookbox stopping mid-run).
    Failed,
    /// The client cancelled the run.
    Cancelled,
    /// The run stopped early (a limit was reached).
    Incomplete,
}

impl Status {
    /// Every status, for exhaustive checks.
    pub const ALL: [Self; 7] = [
        Self::Queued,
        Self::InProgress,
        Self::RequiresAction,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::Incomplete,
    ];

    /// The wire spelling, e.g. `in_progress`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::InProgress => "in_progress",
            Self::RequiresAction => "requires_action",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Incomplete => "incomplete",
        }
    }

    /// Whether the interaction may still change (`queued` or `in_progress`). Every other status is
    /// final: steps, traces and updates are refused with [`Error::Stopped`](crate::Error::Stopped).
    pub fn is_running(self) -> bool {
        matches!(self, Self::Queued | Self::InProgress)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status spelling this build does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown interaction status `{0}`")]
pub struct UnknownStatus(pub(crate) String);

impl FromStr for Status {
    type Err = UnknownStatus;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == text)
            .ok_or_else(|| UnknownStatus(text.to_owned()))
    }
}

/// A stored interaction, without its steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Interaction {
    /// The id, e.g. `int_…`.
    pub id: String,
    /// The agent that runs it (the request's `agent`).
    pub agent: String,
    /// Where it stands.
    pub status: Status,
    /// When it was created.
    pub created: Timestamp,
    /// When it last changed (a status change, an update, a step appended).
    pub updated: Timestamp,
    /// The environment it uses, once known.
    pub environment_id: Option<String>,
    /// The interaction it continues.
    pub previous_interaction_id: Option<String>,
    /// The create request as received (echoed fields, `input`, `tools`…).
    pub request: Value,
    /// Response fields that are not steps (free-form, set by the caller).
    pub outputs: Option<Value>,
    /// The wire `usage` object.
    pub usage: Option<Value>,
    /// Why it failed, e.g. `{"code": "…", "message": "…"}`.
    pub error: Option<Value>,
}

/// One step of an interaction (a step object of `docs/wire/interactions-api.md` §5) and its
/// position.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Position in the interaction, from 0, without gaps.
    pub index: u32,
    /// The step object.
    pub body: Value,
    /// When it was appended.
    pub created: Timestamp,
}

/// One hook trace entry recorded during an interaction.
#[derive(Debug, Clone, PartialEq)]
pub struct HookTrace {
    /// Order among the interaction's traces, from 0.
    pub seq: u32,
    /// The step it belongs to (e.g. the tool call it gated), if any.
    pub step_index: Option<u32>,
    /// The serialized trace entry.
    pub entry: Value,
    /// When it was recorded.
    pub created: Timestamp,
}

/// An interaction with its steps in order.
#[derive(Debug, Clone, PartialEq)]
pub struct InteractionWithSteps {
    /// The interaction.
    pub interaction: Interaction,
    /// Its steps, by index.
    pub steps: Vec<Step>,
}

/// A stored environment's metadata (its files live elsewhere).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvironmentRecord {
    /// The id, e.g. `env_…`.
    pub id: String,
    /// When it was first stored.
    pub created: Timestamp,
    /// When it was last stored.
    pub updated: Timestamp,
    /// Free-form metadata (spec, sources, network…).
    pub metadata: Value,
}

/// What to create with [`Store::create_interaction`](crate::Store::create_interaction).
#[derive(Debug, Clone, PartialEq)]
pub struct NewInteraction {
    /// The id to use; `None` generates `int_` + 26 random base32 characters.
    pub id: Option<String>,
    /// The agent.
    pub agent: String,
    /// The initial status, usually [`Status::InProgress`].
    pub status: Status,
    /// The environment, if known already.
    pub environment_id: Option<String>,
    /// The interaction this one continues; it must exist.
    pub previous_interaction_id: Option<String>,
    /// The create request as received.
    pub request: Value,
    /// A key making the create idempotent: a second create with the same key and the same
    /// `request` returns the first interaction; with another `request` it is refused.
    pub idempotency_key: Option<String>,
}

impl NewInteraction {
    /// An `in_progress` interaction of `agent` for `request`, with a generated id.
    pub fn new(agent: impl Into<String>, request: Value) -> Self {
        Self {
            id: None,
            agent: agent.into(),
            status: Status::InProgress,
            environment_id: None,
            previous_interaction_id: None,
            request,
            idempotency_key: None,
        }
    }
}

/// The result of a create.
#[derive(Debug, Clone, PartialEq)]
pub struct Created {
    /// The interaction (the existing one when `created` is `false`).
    pub interaction: Interaction,
    /// `false` when the idempotency key had been used: nothing was written.
    pub created: bool,
}

/// A step to append, with the hook traces that belong to it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewStep {
    /// The step object.
    pub body: Value,
    /// Trace entries of the hooks that ran for this step.
    pub traces: Vec<Value>,
}

impl NewStep {
    /// A step without traces.
    pub fn new(body: Value) -> Self {
        Self {
            body,
            traces: Vec::new(),
        }
    }
}

/// A trace entry not recorded with a new step.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTrace {
    /// The (already stored) step it belongs to, if any.
    pub step_index: Option<u32>,
    /// The serialized trace entry.
    pub entry: Value,
}

/// Changes to an interaction's fields; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Update {
    /// The new status.
    pub status: Option<Status>,
    /// The environment the run uses.
    pub environment_id: Option<String>,
    /// Response fields that are not steps.
    pub outputs: Option<Value>,
    /// The usage object.
    pub usage: Option<Value>,
    /// The error object.
    pub error: Option<Value>,
}

/// One atomic write to a running interaction: steps (with their traces), then loose traces, then an
/// update. All of it is stored, or none of it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Append {
    /// Steps to add after the existing ones.
    pub steps: Vec<NewStep>,
    /// Traces for existing steps (or the ones above) or for no step.
    pub traces: Vec<NewTrace>,
    /// Field changes, applied last.
    pub update: Option<Update>,
}

/// The result of an [`Append`].
#[derive(Debug, Clone, PartialEq)]
pub struct Appended {
    /// Indexes given to the new steps.
    pub steps: Range<u32>,
    /// The interaction after the write.
    pub interaction: Interaction,
}

/// Why a history walk stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainEnd {
    /// The oldest interaction has no `previous_interaction_id`.
    Start,
    /// The next previous interaction (this id) no longer exists.
    Missing(String),
    /// The chain loops back to this id, already in the history.
    Cycle(String),
    /// The depth cap was reached; older interactions were left out.
    DepthCap,
}

/// A conversation: an interaction and those it continues, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// Oldest first; the interaction asked for is last.
    pub interactions: Vec<InteractionWithSteps>,
    /// Why the walk stopped.
    pub end: ChainEnd,
}

/// Which page of a listing to return.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageRequest {
    /// How many items at most; 0 or more than [`MAX_PAGE_SIZE`](crate::MAX_PAGE_SIZE) means the
    /// maximum.
    pub limit: usize,
    /// The `next` token of the previous page; `None` starts at the beginning.
    pub after: Option<String>,
}

/// One page of a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items, oldest first.
    pub items: Vec<T>,
    /// The token for the next page, or `None` if this is the last.
    pub next: Option<String>,
}

/// An API key as listed: never the key, only its public id, name and use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    /// The key's public id (the part of the key before its secret).
    pub id: String,
    /// The name it was created with (unique).
    pub name: String,
    /// When it was created.
    pub created: Timestamp,
    /// When a request last used it (recorded at most once a minute), if ever.
    pub last_used: Option<Timestamp>,
}

/// A key to store: its public id, name and the SHA-256 of its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewApiKey {
    /// The public id.
    pub id: String,
    /// The name (unique).
    pub name: String,
    /// The digest of the secret.
    pub hash: Vec<u8>,
}

/// What kind of resource an owner row is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// An environment (its files too).
    Environment,
    /// An interaction (its steps and traces too).
    Interaction,
}

impl Resource {
    /// The `kind` column's value.
    pub(crate) fn kind(self) -> &'static str {
        match self {
            Self::Environment => "environment",
            Self::Interaction => "interaction",
        }
    }
}
