//! The embedded SQLite implementation of [`Store`].

mod decisions;
mod environments;
mod interactions;
mod json;
mod keys;
mod outbox;
mod owners;
mod schema;
mod steps;

use std::fs;
use std::ops::DerefMut;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, Transaction, TransactionBehavior};
use serde_json::Value;

use crate::decision::{DecisionQuery, DecisionRecord, NewDecision};
use crate::error::Error;
use crate::outbox::{NewOutboxEvent, OutboxDeadLetter, OutboxDestination, OutboxEvent, Settlement};
use crate::record::{
    ApiKey, Append, Appended, Created, EnvironmentRecord, History, HookTrace, Interaction,
    InteractionWithSteps, NewApiKey, NewInteraction, Page, PageRequest, Resource, Step,
};
use crate::store::Store;
use crate::time::Timestamp;

/// A [`Store`] in one SQLite database file (bundled SQLite, WAL journal, foreign keys on).
///
/// One connection serialises every operation; writes take the database's write lock at their
/// start (`BEGIN IMMEDIATE`), so several processes may share a file too, waiting up to the busy
/// timeout for each other. Only one of them should run interactions: opening with
/// [`SqliteStore::open`] fails the running ones.
#[derive(Debug)]
pub struct SqliteStore {
    /// The connection.
    connection: Mutex<Connection>,
    /// Ids [`SqliteStore::open`] marked failed.
    recovered: Vec<String>,
}

impl SqliteStore {
    /// Opens (creating if needed) the database at `path`, creating its parent directory,
    /// switching to WAL, applying pending schema migrations, and then **recovering**: every
    /// interaction left `queued` or `in_progress` by a previous run (a crash, a kill, a restart)
    /// is marked `failed` with an error saying hookbox restarted mid-interaction. Their ids are
    /// in [`SqliteStore::recovered_at_open`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, Error> {
        let mut store = Self::open_without_recovery(path)?;
        store.recovered = store.recover()?;
        Ok(store)
    }

    /// Like [`SqliteStore::open`] without the recovery, for tools that inspect a database while
    /// a server may be running interactions in it.
    pub fn open_without_recovery(path: impl AsRef<Path>) -> Result<Self, Error> {
        let path = path.as_ref();
        if let Some(parent) = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
        {
            fs::create_dir_all(parent).map_err(|source| Error::CreateDir {
                path: parent.to_owned(),
                source,
            })?;
        }
        Self::finish(schema::prepare(Connection::open(path), true), path)
    }

    /// Like [`SqliteStore::open_without_recovery`], for a short-lived process that appends a
    /// few rows (`hookbox hook` logging one decision): closing it leaves the write-ahead log
    /// as it is instead of checkpointing it into the database, which costs several fsyncs
    /// (tens of milliseconds on a busy disk). SQLite checkpoints it later (when it grows, or
    /// when a long-lived process closes); a committed row is never lost either way.
    pub fn open_appender(path: impl AsRef<Path>) -> Result<Self, Error> {
        let store = Self::open_without_recovery(path.as_ref())?;
        store
            .lock()
            .set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)
            .map_err(|source| Error::Open {
                path: path.as_ref().to_owned(),
                source: source.into(),
            })?;
        Ok(store)
    }

    /// A private, empty database in memory (for tests); gone when dropped.
    pub fn open_in_memory() -> Result<Self, Error> {
        let opened = schema::prepare(Connection::open_in_memory(), false);
        Self::finish(opened, Path::new(":memory:"))
    }

    /// Ids of the interactions [`SqliteStore::open`] marked failed.
    pub fn recovered_at_open(&self) -> &[String] {
        &self.recovered
    }

    /// Wraps an opened connection, or explains why opening failed.
    fn finish(opened: Result<Connection, schema::OpenError>, path: &Path) -> Result<Self, Error> {
        let connection = opened.map_err(|error| error.at(path))?;
        Ok(Self {
            connection: Mutex::new(connection),
            recovered: Vec::new(),
        })
    }

    /// The connection. A panic while it was held rolled back its transaction (the transaction's
    /// drop ran during unwinding), so a poisoned lock is safe to take over.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs `work` in a write transaction, committed only if it succeeds.
    fn write<T>(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        self.transaction(TransactionBehavior::Immediate, work)
    }

    /// Runs `work` in a read transaction, so it sees one state of the database.
    fn read<T>(&self, work: impl FnOnce(&Transaction<'_>) -> Result<T, Error>) -> Result<T, Error> {
        self.transaction(TransactionBehavior::Deferred, work)
    }

    /// Runs `work` in a transaction of the given kind; rolls back on error.
    fn transaction<T>(
        &self,
        behavior: TransactionBehavior,
        work: impl FnOnce(&Transaction<'_>) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let mut guard = self.lock();
        let transaction = guard.deref_mut().transaction_with_behavior(behavior)?;
        let value = work(&transaction)?;
        transaction.commit()?;
        Ok(value)
    }
}

impl Store for SqliteStore {
    fn create_interaction(&self, new: NewInteraction) -> Result<Created, Error> {
        self.write(|tx| interactions::create(tx, new))
    }

    fn interaction_for_key(&self, key: &str) -> Result<Option<String>, Error> {
        self.read(|tx| interactions::for_key(tx, key))
    }

    fn get_interaction(&self, id: &str) -> Result<Interaction, Error> {
        self.read(|tx| interactions::get(tx, id))
    }

    fn get_interaction_with_steps(&self, id: &str) -> Result<InteractionWithSteps, Error> {
        self.read(|tx| interactions::get_with_steps(tx, id))
    }

    fn append(&self, id: &str, append: Append) -> Result<Appended, Error> {
        self.write(|tx| steps::append(tx, id, append))
    }

    fn list_steps(&self, id: &str) -> Result<Vec<Step>, Error> {
        self.read(|tx| {
            interactions::get(tx, id)?;
            steps::list(tx, id)
        })
    }

    fn list_traces(&self, id: &str) -> Result<Vec<HookTrace>, Error> {
        self.read(|tx| {
            interactions::get(tx, id)?;
            steps::traces(tx, id)
        })
    }

    fn history(&self, id: &str, max_depth: usize) -> Result<History, Error> {
        self.read(|tx| steps::history(tx, id, max_depth))
    }

    fn delete_interaction(&self, id: &str) -> Result<(), Error> {
        self.write(|tx| {
            interactions::delete(tx, id)?;
            owners::forget(tx, Resource::Interaction, id)
        })
    }

    fn recover(&self) -> Result<Vec<String>, Error> {
        self.write(|tx| interactions::recover(tx))
    }

    fn put_environment(&self, id: &str, metadata: Value) -> Result<EnvironmentRecord, Error> {
        self.write(|tx| environments::put(tx, id, &metadata))
    }

    fn get_environment(&self, id: &str) -> Result<EnvironmentRecord, Error> {
        self.read(|tx| environments::get(tx, id))
    }

    fn list_environments(&self, page: PageRequest) -> Result<Page<EnvironmentRecord>, Error> {
        self.read(|tx| environments::list(tx, &page))
    }

    fn delete_environment(&self, id: &str) -> Result<(), Error> {
        self.write(|tx| {
            environments::delete(tx, id)?;
            owners::forget(tx, Resource::Environment, id)
        })
    }

    fn create_api_key(&self, key: NewApiKey) -> Result<ApiKey, Error> {
        self.write(|tx| keys::create(tx, key))
    }

    fn list_api_keys(&self) -> Result<Vec<ApiKey>, Error> {
        self.read(|tx| keys::list(tx))
    }

    fn find_api_key(&self, id: &str) -> Result<Option<(ApiKey, Vec<u8>)>, Error> {
        self.read(|tx| keys::find(tx, id))
    }

    fn touch_api_key(&self, id: &str) -> Result<(), Error> {
        self.write(|tx| keys::touch(tx, id))
    }

    fn revoke_api_key(&self, name: &str) -> Result<(), Error> {
        self.write(|tx| keys::revoke(tx, name))
    }

    fn claim(&self, resource: Resource, id: &str, owner: &str) -> Result<(), Error> {
        self.write(|tx| owners::claim(tx, resource, id, owner))
    }

    fn owner(&self, resource: Resource, id: &str) -> Result<Option<String>, Error> {
        self.read(|tx| owners::get(tx, resource, id))
    }

    fn record_decisions(
        &self,
        decisions: &[(Timestamp, NewDecision)],
        keep: u64,
    ) -> Result<(), Error> {
        self.write(|tx| decisions::record(tx, decisions, keep))
    }

    fn list_decisions(&self, query: &DecisionQuery) -> Result<Vec<DecisionRecord>, Error> {
        self.read(|tx| decisions::list(tx, query))
    }

    fn enqueue_outbox(&self, event: &NewOutboxEvent) -> Result<(), Error> {
        self.write(|tx| outbox::enqueue(tx, event))
    }

    fn outbox_heads(&self) -> Result<Vec<OutboxEvent>, Error> {
        self.read(|tx| outbox::heads(tx))
    }

    fn settle_outbox(&self, id: &str, settlement: &Settlement) -> Result<(), Error> {
        self.write(|tx| outbox::settle(tx, id, settlement))
    }

    fn outbox_destinations(&self) -> Result<Vec<OutboxDestination>, Error> {
        self.read(|tx| outbox::destinations(tx))
    }

    fn dead_outbox(&self, limit: u64) -> Result<Vec<OutboxDeadLetter>, Error> {
        self.read(|tx| outbox::dead(tx, limit))
    }

    fn retry_dead_outbox(&self) -> Result<u64, Error> {
        self.write(|tx| outbox::retry_dead(tx))
    }

    fn shed_outbox(&self, max_pending: u64) -> Result<u64, Error> {
        self.write(|tx| outbox::shed(tx, max_pending))
    }

    fn prune_outbox(&self, keep: u64) -> Result<u64, Error> {
        self.write(|tx| outbox::prune(tx, keep))
    }
}
