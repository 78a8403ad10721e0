//! The audit outbox's records: events of `"delivery": "at_least_once"` HTTP hooks, stored
//! before the model sees the tool's result and sent later by the deliverer.

use crate::time::Timestamp;

/// An event to store in the outbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOutboxEvent {
    /// Its stable id, sent as `webhook-id` (1 to 128 of `A-Z a-z 0-9 _ -`).
    pub id: String,
    /// The queue it is delivered in: events of one queue are delivered one after another, in
    /// the order stored.
    pub queue: OutboxQueue,
    /// Where to POST it.
    pub url: String,
    /// Which handler produced it (its file and JSON path).
    pub handler: String,
    /// The handler's configured, non-secret headers.
    pub headers: Vec<(String, String)>,
    /// The event JSON.
    pub body: Vec<u8>,
    /// Limit for one attempt, in milliseconds.
    pub timeout_ms: u64,
    /// Whether the handler was declared in a file the model can write (it is then sent
    /// through the strict client).
    pub model_writable: bool,
    /// The credential whose value signs it (`None`: `[audit] signing_secret`, if set).
    pub signing_credential: Option<String>,
}

/// Whose events an outbox event is among.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutboxQueue {
    /// A sandbox environment's (its id): sent under the environment's network policy.
    Environment(String),
    /// An SDK session's (its id): sent under the public egress policy, as the session's
    /// other HTTP hooks are.
    Session(String),
}

impl OutboxQueue {
    /// What precedes a session id in the stored key (an environment id has no `:`).
    const SESSION_PREFIX: &'static str = "session:";

    /// The stored key: the environment id, or `session:` and the session id.
    pub fn key(&self) -> String {
        match self {
            Self::Environment(id) => id.clone(),
            Self::Session(id) => format!("{}{id}", Self::SESSION_PREFIX),
        }
    }

    /// The queue stored as `key`.
    pub fn from_key(key: String) -> Self {
        match key.strip_prefix(Self::SESSION_PREFIX) {
            Some(id) => Self::Session(id.to_owned()),
            None => Self::Environment(key),
        }
    }
}

impl std::fmt::Display for OutboxQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Environment(id) => write!(f, "environment {id}"),
            Self::Session(id) => write!(f, "session {id}"),
        }
    }
}

/// Where an outbox event stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutboxState {
    /// Waiting for its (next) attempt.
    Pending,
    /// The receiver answered 2xx.
    Delivered,
    /// Given up on (refused by the receiver `[audit] dead_letter_after_attempts` times, too
    /// old, or shed from a full outbox): a dead letter, skipped by its queue; `hookbox audit
    /// retry` revives it.
    Dead,
}

impl OutboxState {
    /// The stored spelling: `pending`, `delivered` or `dead`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Dead => "dead",
        }
    }
}

/// A stored outbox event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEvent {
    /// What was stored.
    pub event: NewOutboxEvent,
    /// When it was stored.
    pub created: Timestamp,
    /// When its current delivery window began: `created`, or the last `hookbox audit retry`
    /// (`[audit] max_age` counts from here).
    pub since: Timestamp,
    /// Attempts made so far.
    pub attempts: u32,
    /// How many of them the receiver refused (see [`Settlement::Retry::refused`]) since its
    /// current delivery window began.
    pub refusals: u32,
    /// When the next attempt may be made.
    pub next_attempt: Timestamp,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// Where it stands.
    pub state: OutboxState,
}

/// What became of one delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    /// The receiver took it.
    Delivered,
    /// It failed and is tried again at `at`.
    Retry {
        /// Why it failed.
        error: String,
        /// When to try again.
        at: Timestamp,
        /// Whether the receiver refused it (a 4xx status other than 408 and 429: sending it
        /// again is unlikely to help), which counts toward the event's `refusals`.
        refused: bool,
    },
    /// It failed for the last time: the event is kept as dead.
    Dead {
        /// Why it failed.
        error: String,
        /// Whether the receiver refused it (see [`Settlement::Retry::refused`]).
        refused: bool,
    },
}

/// A dead event, for `hookbox audit status` (its body is not read).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxDeadLetter {
    /// Its `webhook-id`.
    pub id: String,
    /// The queue it was skipped in.
    pub queue: OutboxQueue,
    /// Its destination.
    pub url: String,
    /// Which handler produced it.
    pub handler: String,
    /// When it was stored.
    pub created: Timestamp,
    /// When it was given up on.
    pub died: Timestamp,
    /// Attempts made.
    pub attempts: u32,
    /// How many of them the receiver refused in its last delivery window.
    pub refusals: u32,
    /// Why it was given up on.
    pub last_error: Option<String>,
}

/// The backlog of one destination URL, for `hookbox audit status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxDestination {
    /// The URL.
    pub url: String,
    /// Events waiting to be sent.
    pub pending: u64,
    /// When the oldest waiting event was stored.
    pub oldest_pending: Option<Timestamp>,
    /// Events given up on.
    pub dead: u64,
    /// Events the receiver took (kept ones; old ones are pruned).
    pub delivered: u64,
    /// The most recent failure of an event still pending or dead.
    pub last_error: Option<String>,
}
