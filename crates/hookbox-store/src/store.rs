//! The storage trait the rest of hookbox programs against.

use std::ops::Range;

use serde_json::Value;

use crate::decision::{DecisionQuery, DecisionRecord, NewDecision};
use crate::error::Error;
use crate::outbox::{NewOutboxEvent, OutboxDeadLetter, OutboxDestination, OutboxEvent, Settlement};
use crate::record::{
    ApiKey, Append, Appended, Created, EnvironmentRecord, History, HookTrace, Interaction,
    InteractionWithSteps, NewApiKey, NewInteraction, NewStep, Page, PageRequest, Resource, Step,
    Update,
};
use crate::time::Timestamp;

/// How many interactions [`Store::history`] returns at most when callers have no better bound.
pub const DEFAULT_HISTORY_DEPTH: usize = 100;

/// The largest page [`Store::list_environments`] returns.
pub const MAX_PAGE_SIZE: usize = 1000;

/// Persistence of environments, interactions, steps, hook traces, API keys and owners.
///
/// Methods are synchronous and may block on I/O; call them from `spawn_blocking` in async code.
/// Every method is atomic: a multi-row write is stored entirely or not at all.
pub trait Store: Send + Sync {
    /// Creates an interaction, atomically with its idempotency key when one is given.
    ///
    /// With a key already used: the same `request` returns the existing interaction with
    /// `created: false` (nothing is written); another request fails with
    /// [`Error::IdempotencyMismatch`]. A given id already taken fails with
    /// [`Error::AlreadyExists`]; an unknown `previous_interaction_id` with [`Error::NotFound`].
    fn create_interaction(&self, new: NewInteraction) -> Result<Created, Error>;

    /// The id of the interaction idempotency key `key` names, if it was used.
    fn interaction_for_key(&self, key: &str) -> Result<Option<String>, Error>;

    /// The interaction, without steps.
    fn get_interaction(&self, id: &str) -> Result<Interaction, Error>;

    /// The interaction and its steps, read consistently.
    fn get_interaction_with_steps(&self, id: &str) -> Result<InteractionWithSteps, Error>;

    /// Appends steps and traces and applies an update, in one transaction.
    ///
    /// Fails with [`Error::Stopped`] unless the interaction is running
    /// ([`Status::is_running`](crate::Status::is_running)), and with [`Error::InvalidInput`] if
    /// a trace names a step that does not exist.
    fn append(&self, id: &str, append: Append) -> Result<Appended, Error>;

    /// Appends steps (with their traces); returns their indexes. See [`Store::append`].
    fn append_steps(&self, id: &str, steps: Vec<NewStep>) -> Result<Range<u32>, Error> {
        let append = Append {
            steps,
            ..Append::default()
        };
        self.append(id, append).map(|appended| appended.steps)
    }

    /// Changes the interaction's status or fields. See [`Store::append`].
    fn update_interaction(&self, id: &str, update: Update) -> Result<Interaction, Error> {
        let append = Append {
            update: Some(update),
            ..Append::default()
        };
        self.append(id, append).map(|appended| appended.interaction)
    }

    /// The interaction's steps, by index.
    fn list_steps(&self, id: &str) -> Result<Vec<Step>, Error>;

    /// The interaction's hook traces, in the order they were recorded.
    fn list_traces(&self, id: &str) -> Result<Vec<HookTrace>, Error>;

    /// The conversation ending at `id`: `id`, the interaction it continues, and so on, following
    /// `previous_interaction_id`, oldest first, at most `max_depth` interactions (the newest
    /// ones). Stops at a missing link or a cycle ([`History::end`] says why).
    fn history(&self, id: &str, max_depth: usize) -> Result<History, Error>;

    /// Deletes the interaction with its steps, traces and idempotency keys. Interactions that
    /// continue it keep their `previous_interaction_id`; their history ends there.
    fn delete_interaction(&self, id: &str) -> Result<(), Error>;

    /// Marks every running interaction (`queued`, `in_progress`) `failed`, with an error saying
    /// hookbox restarted mid-interaction; returns their ids. Call once at start-up, before any run
    /// begins: a run still going in another process would be marked too.
    fn recover(&self) -> Result<Vec<String>, Error>;

    /// Stores an environment's metadata, creating it or replacing the metadata (keeping
    /// `created`).
    fn put_environment(&self, id: &str, metadata: Value) -> Result<EnvironmentRecord, Error>;

    /// The environment.
    fn get_environment(&self, id: &str) -> Result<EnvironmentRecord, Error>;

    /// Environments, oldest first, a page at a time.
    fn list_environments(&self, page: PageRequest) -> Result<Page<EnvironmentRecord>, Error>;

    /// Deletes the environment's record. Interactions that used it keep its id.
    fn delete_environment(&self, id: &str) -> Result<(), Error>;

    /// Stores a new API key (its digest, never the key). A taken name fails with
    /// [`Error::AlreadyExists`].
    fn create_api_key(&self, key: NewApiKey) -> Result<ApiKey, Error>;

    /// Every API key, oldest first.
    fn list_api_keys(&self) -> Result<Vec<ApiKey>, Error>;

    /// The key with public id `id` and the digest of its secret, if it exists.
    fn find_api_key(&self, id: &str) -> Result<Option<(ApiKey, Vec<u8>)>, Error>;

    /// Records that key `id` was used now (at most one write a minute).
    fn touch_api_key(&self, id: &str) -> Result<(), Error>;

    /// Deletes the key named `name`; an unknown name fails with [`Error::NotFound`]. What it
    /// owns stays owned by it (so by no one that can authenticate).
    fn revoke_api_key(&self, name: &str) -> Result<(), Error>;

    /// Records `owner` as the owner of `resource` `id`, unless it already has one.
    fn claim(&self, resource: Resource, id: &str, owner: &str) -> Result<(), Error>;

    /// The owner of `resource` `id`, if one was recorded.
    fn owner(&self, resource: Resource, id: &str) -> Result<Option<String>, Error>;

    /// Appends decisions of `hookbox hook` (each with the instant it was made) to the
    /// decision log, in one transaction; now and then (when the log passes a multiple of
    /// `keep` or of 1000 rows) the log is cut back to its newest `keep` decisions.
    fn record_decisions(
        &self,
        decisions: &[(Timestamp, NewDecision)],
        keep: u64,
    ) -> Result<(), Error>;

    /// The newest `query.limit` logged decisions matching `query`, oldest first.
    fn list_decisions(&self, query: &DecisionQuery) -> Result<Vec<DecisionRecord>, Error>;

    /// Stores an audit event as pending, due now (durable once this returns). A taken id
    /// fails.
    fn enqueue_outbox(&self, event: &NewOutboxEvent) -> Result<(), Error>;

    /// The oldest pending outbox event of every environment, oldest first, due or not: the
    /// only ones that may be sent (events of one environment go in order).
    fn outbox_heads(&self) -> Result<Vec<OutboxEvent>, Error>;

    /// Records what became of an attempt on pending outbox event `id`; a delivered event's
    /// body is not kept.
    fn settle_outbox(&self, id: &str, settlement: &Settlement) -> Result<(), Error>;

    /// The outbox backlog of each destination URL.
    fn outbox_destinations(&self) -> Result<Vec<OutboxDestination>, Error>;

    /// The newest `limit` dead outbox events, oldest first.
    fn dead_outbox(&self, limit: u64) -> Result<Vec<OutboxDeadLetter>, Error>;

    /// Makes every dead outbox event pending again, due now, with a new delivery window and
    /// no refusals counted; returns how many. Each goes back to its place in its queue: before
    /// the events of the queue still pending, after those delivered meanwhile.
    fn retry_dead_outbox(&self) -> Result<u64, Error>;

    /// Marks the oldest pending outbox events dead (saying why) until at most `max_pending`
    /// remain; returns how many.
    fn shed_outbox(&self, max_pending: u64) -> Result<u64, Error>;

    /// Deletes all but the newest `keep` delivered and the newest `keep` dead outbox events;
    /// returns how many went.
    fn prune_outbox(&self, keep: u64) -> Result<u64, Error>;
}
