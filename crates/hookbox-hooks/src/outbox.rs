//! The outbox seam: where `"delivery": "at_least_once"` HTTP events go instead of the network.
//!
//! The engine only hands the event to an [`OutboxSink`] and waits until it is stored; the
//! runtime implements the sink with the store and sends what it holds later (the engine never
//! depends on the store's persistence, data flows one way).

use std::time::Duration;

use futures_util::future::BoxFuture;
pub use hookbox_store::OutboxQueue;

use crate::binding::Trust;

/// One event to deliver at least once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxEvent {
    /// Stable id, sent as `webhook-id` on every attempt so the receiver can de-duplicate.
    pub id: String,
    /// The queue it is sent in: the environment's (sandbox dialect) or the SDK session's;
    /// events of one queue are sent one after another, in the order stored.
    pub queue: OutboxQueue,
    /// Where to POST.
    pub url: String,
    /// The handler's configured (non-secret) headers; the environment's `transform` headers
    /// are injected at each attempt, never stored.
    pub headers: Vec<(String, String)>,
    /// The event JSON.
    pub body: Vec<u8>,
    /// Limit for one attempt.
    pub timeout: Duration,
    /// Who can change the file that declared the hook (picks the client at delivery).
    pub trust: Trust,
    /// Which handler produced it: its source file and JSON path.
    pub handler: String,
    /// The handler's `signing_credential`: the credential whose value signs it.
    pub signing_credential: Option<String>,
}

/// Why an event could not be stored in the outbox.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct OutboxError(pub String);

/// Stores events for later delivery.
pub trait OutboxSink: Send + Sync {
    /// Stores `event` durably; returns once it survives a crash.
    fn enqueue(&self, event: OutboxEvent) -> BoxFuture<'_, Result<(), OutboxError>>;
}
