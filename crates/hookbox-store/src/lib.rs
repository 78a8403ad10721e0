//! hookbox's persistence: environments, interactions, their steps, every hook trace, API keys
//! (hashed), which key owns what, the decision log of `hookbox hook`, and the audit outbox
//! (events of `at_least_once` HTTP hooks waiting for delivery).
//!
//! Everything sits behind the [`Store`] trait, so a server database can come later; the embedded
//! default is [`SqliteStore`] (bundled SQLite, WAL). No SQL leaves this crate: callers see plain
//! records and JSON values.
//!
//! Guarantees:
//!
//! * every write that touches several rows (an interaction and its idempotency key, a batch of steps
//!   with their traces and a status change) is one transaction: after a crash it is either fully
//!   there or absent;
//! * [`SqliteStore::open`] marks every interaction that was still running when hookbox stopped as
//!   [`Status::Failed`], with an error saying so ([`Store::recover`]);
//! * creating an interaction with an idempotency key twice returns the first one
//!   ([`Created::created`] is `false`), so a client's retries never start a second run.
//!
//! The store is synchronous; async callers use `spawn_blocking`.
//!
//! Being the lowest of hookbox's crates, it also holds the few primitives every other crate
//! shares, so each exists once: the id generator ([`new_id`], [`random_token`], [`new_uuid`]),
//! the clock ([`Timestamp`]) and the name of a JSON value's type for error messages
//! ([`json_kind`]).

mod decision;
mod error;
mod id;
mod journal;
mod json_kind;
mod outbox;
mod record;
mod sqlite;
mod store;
mod time;

pub use decision::{DecisionQuery, DecisionRecord, NewDecision};
pub use error::{DatabaseError, Entity, Error};
pub use id::{TOKEN_LEN, is_generated_id, new_id, new_uuid, random_token};
pub use journal::DecisionJournal;
pub use json_kind::json_kind;
pub use outbox::{
    NewOutboxEvent, OutboxDeadLetter, OutboxDestination, OutboxEvent, OutboxQueue, OutboxState,
    Settlement,
};
pub use record::{
    ApiKey, Append, Appended, ChainEnd, Created, EnvironmentRecord, History, HookTrace,
    Interaction, InteractionWithSteps, NewApiKey, NewInteraction, NewStep, NewTrace, Page,
    PageRequest, Resource, Status, Step, UnknownStatus, Update,
};
pub use sqlite::SqliteStore;
pub use store::{DEFAULT_HISTORY_DEPTH, MAX_PAGE_SIZE, Store};
pub use time::{NotATimestamp, Timestamp};
