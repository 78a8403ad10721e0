//! Connection settings and schema migrations (tracked in `PRAGMA user_version`).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::Error;

/// How long a statement waits for another writer before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// Prepared statements kept per connection: more than the store has, so none is parsed again
/// (rusqlite's default of 16 is fewer, and a request that evicts one re-parses it every time).
const STATEMENT_CACHE: usize = 64;

/// Migration `n` (from 0) takes the schema from version `n` to `n + 1`. Append only; never edit.
const MIGRATIONS: &[&str] = &[
    // 1: environments, interactions, steps, hook traces, idempotency keys. Times are Unix
    // milliseconds; JSON columns hold compact JSON text.
    "
    CREATE TABLE environments (
        id       TEXT PRIMARY KEY,
        created  INTEGER NOT NULL,
        updated  INTEGER NOT NULL,
        metadata TEXT NOT NULL
    ) STRICT;
    CREATE INDEX environments_by_created ON environments (created, id);

    CREATE TABLE interactions (
        id                      TEXT PRIMARY KEY,
        agent                   TEXT NOT NULL,
        status                  TEXT NOT NULL CHECK (status IN ('queued', 'in_progress',
                                    'requires_action', 'completed', 'failed', 'cancelled',
                                    'incomplete')),
        created                 INTEGER NOT NULL,
        updated                 INTEGER NOT NULL,
        environment_id          TEXT,
        previous_interaction_id TEXT,
        request                 TEXT NOT NULL,
        outputs                 TEXT,
        usage                   TEXT,
        error                   TEXT
    ) STRICT;
    CREATE INDEX interactions_running ON interactions (status)
        WHERE status IN ('queued', 'in_progress');

    CREATE TABLE steps (
        interaction_id TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
        idx            INTEGER NOT NULL CHECK (idx >= 0),
        created        INTEGER NOT NULL,
        body           TEXT NOT NULL,
        PRIMARY KEY (interaction_id, idx)
    ) STRICT, WITHOUT ROWID;

    CREATE TABLE hook_traces (
        interaction_id TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
        seq            INTEGER NOT NULL CHECK (seq >= 0),
        step_index     INTEGER,
        created        INTEGER NOT NULL,
        entry          TEXT NOT NULL,
        PRIMARY KEY (interaction_id, seq),
        FOREIGN KEY (interaction_id, step_index)
            REFERENCES steps (interaction_id, idx) ON DELETE CASCADE
    ) STRICT;
    CREATE INDEX hook_traces_by_step ON hook_traces (interaction_id, step_index);

    CREATE TABLE idempotency_keys (
        key            TEXT PRIMARY KEY,
        interaction_id TEXT NOT NULL REFERENCES interactions (id) ON DELETE CASCADE,
        created        INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX idempotency_keys_by_interaction ON idempotency_keys (interaction_id);
    ",
    // 2: API keys (hashed; the key itself is never stored) and which key owns each environment
    // and interaction. An owner row goes when its resource is deleted; a revoked key's
    // resources keep their owner, so no later key inherits them.
    "
    CREATE TABLE api_keys (
        id        TEXT PRIMARY KEY,
        name      TEXT NOT NULL UNIQUE,
        hash      BLOB NOT NULL,
        created   INTEGER NOT NULL,
        last_used INTEGER
    ) STRICT;

    CREATE TABLE owners (
        kind  TEXT NOT NULL CHECK (kind IN ('environment', 'interaction')),
        id    TEXT NOT NULL,
        owner TEXT NOT NULL,
        PRIMARY KEY (kind, id)
    ) STRICT, WITHOUT ROWID;
    ",
    // 3: the audit outbox: events of `"delivery": "at_least_once"` HTTP hooks, stored before
    // the model sees the tool's result, sent in `seq` order per environment. `id` is the
    // `webhook-id`; `since` starts the `[audit] max_age` window (reset by `audit retry`).
    // Secrets are never stored: `transform` headers are injected at each attempt. `body` comes
    // last so reading the other columns never walks its overflow pages; `seq` is a plain rowid
    // (new rows get more than any row kept; pruning never deletes the newest row).
    "
    CREATE TABLE outbox (
        seq            INTEGER PRIMARY KEY,
        id             TEXT NOT NULL UNIQUE,
        environment    TEXT NOT NULL,
        url            TEXT NOT NULL,
        handler        TEXT NOT NULL,
        headers        TEXT NOT NULL,
        timeout_ms     INTEGER NOT NULL CHECK (timeout_ms >= 0),
        model_writable INTEGER NOT NULL CHECK (model_writable IN (0, 1)),
        created        INTEGER NOT NULL,
        since          INTEGER NOT NULL,
        updated        INTEGER NOT NULL,
        attempts       INTEGER NOT NULL CHECK (attempts >= 0),
        next_attempt   INTEGER NOT NULL,
        last_error     TEXT,
        state          TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
        body           BLOB NOT NULL
    ) STRICT;
    CREATE INDEX outbox_pending ON outbox (environment, seq) WHERE state = 'pending';
    CREATE INDEX outbox_by_state ON outbox (state, seq);
    ",
    // 4: the name of the credential that signs an event (a handler's `signing_credential`;
    // NULL: `[audit] signing_secret`). The table is rebuilt so that `body` stays last.
    "
    CREATE TABLE outbox_4 (
        seq                INTEGER PRIMARY KEY,
        id                 TEXT NOT NULL UNIQUE,
        environment        TEXT NOT NULL,
        url                TEXT NOT NULL,
        handler            TEXT NOT NULL,
        headers            TEXT NOT NULL,
        timeout_ms         INTEGER NOT NULL CHECK (timeout_ms >= 0),
        model_writable     INTEGER NOT NULL CHECK (model_writable IN (0, 1)),
        created            INTEGER NOT NULL,
        since              INTEGER NOT NULL,
        updated            INTEGER NOT NULL,
        attempts           INTEGER NOT NULL CHECK (attempts >= 0),
        next_attempt       INTEGER NOT NULL,
        last_error         TEXT,
        state              TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
        signing_credential TEXT,
        body               BLOB NOT NULL
    ) STRICT;
    INSERT INTO outbox_4 (seq, id, environment, url, handler, headers, timeout_ms,
                          model_writable, created, since, updated, attempts, next_attempt,
                          last_error, state, body)
        SELECT seq, id, environment, url, handler, headers, timeout_ms, model_writable,
               created, since, updated, attempts, next_attempt, last_error, state, body
        FROM outbox;
    DROP TABLE outbox;
    ALTER TABLE outbox_4 RENAME TO outbox;
    CREATE INDEX outbox_pending ON outbox (environment, seq) WHERE state = 'pending';
    CREATE INDEX outbox_by_state ON outbox (state, seq);
    ",
    // 5: the decision log of `hookbox hook` (one row per agent hook event; `at` in Unix
    // milliseconds, `latency_us` in microseconds; `seq` a plain rowid, oldest pruned first).
    "
    CREATE TABLE decisions (
        seq        INTEGER PRIMARY KEY,
        at         INTEGER NOT NULL,
        agent      TEXT NOT NULL,
        session    TEXT,
        event      TEXT NOT NULL,
        tool       TEXT,
        decision   TEXT NOT NULL,
        reason     TEXT,
        latency_us INTEGER NOT NULL CHECK (latency_us >= 0),
        policy     TEXT,
        handler    TEXT
    ) STRICT;
    CREATE INDEX decisions_by_agent ON decisions (agent, seq);
    ",
    // 6: how many attempts on an outbox event the receiver refused (a 4xx other than 408 and
    // 429) in its current delivery window; past `[audit] dead_letter_after_attempts` it is
    // dead and its queue moves on. The table is rebuilt so that `body` stays last.
    "
    CREATE TABLE outbox_6 (
        seq                INTEGER PRIMARY KEY,
        id                 TEXT NOT NULL UNIQUE,
        environment        TEXT NOT NULL,
        url                TEXT NOT NULL,
        handler            TEXT NOT NULL,
        headers            TEXT NOT NULL,
        timeout_ms         INTEGER NOT NULL CHECK (timeout_ms >= 0),
        model_writable     INTEGER NOT NULL CHECK (model_writable IN (0, 1)),
        created            INTEGER NOT NULL,
        since              INTEGER NOT NULL,
        updated            INTEGER NOT NULL,
        attempts           INTEGER NOT NULL CHECK (attempts >= 0),
        refusals           INTEGER NOT NULL DEFAULT 0 CHECK (refusals >= 0),
        next_attempt       INTEGER NOT NULL,
        last_error         TEXT,
        state              TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
        signing_credential TEXT,
        body               BLOB NOT NULL
    ) STRICT;
    INSERT INTO outbox_6 (seq, id, environment, url, handler, headers, timeout_ms,
                          model_writable, created, since, updated, attempts, next_attempt,
                          last_error, state, signing_credential, body)
        SELECT seq, id, environment, url, handler, headers, timeout_ms, model_writable,
               created, since, updated, attempts, next_attempt, last_error, state,
               signing_credential, body
        FROM outbox;
    DROP TABLE outbox;
    ALTER TABLE outbox_6 RENAME TO outbox;
    CREATE INDEX outbox_pending ON outbox (environment, seq) WHERE state = 'pending';
    CREATE INDEX outbox_by_state ON outbox (state, seq);
    ",
];

/// Why a connection could not be prepared.
pub(super) enum OpenError {
    /// The database failed.
    Database(rusqlite::Error),
    /// The schema is newer than this build.
    TooNew {
        /// The database's version.
        found: i64,
    },
}

impl OpenError {
    /// The public error, for the database at `path`.
    pub(super) fn at(self, path: &Path) -> Error {
        match self {
            Self::Database(source) => Error::Open {
                path: path.to_owned(),
                source: source.into(),
            },
            Self::TooNew { found } => Error::SchemaTooNew {
                found,
                supported: supported_version(),
            },
        }
    }
}

impl From<rusqlite::Error> for OpenError {
    fn from(error: rusqlite::Error) -> Self {
        Self::Database(error)
    }
}

/// The schema version this build writes.
fn supported_version() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

/// Configures a freshly opened connection and brings its schema up to date.
pub(super) fn prepare(
    opened: rusqlite::Result<Connection>,
    file: bool,
) -> Result<Connection, OpenError> {
    let mut connection = opened?;
    configure(&connection, file)?;
    migrate(&mut connection)?;
    Ok(connection)
}

/// Sets the busy timeout, the statement cache, foreign keys and, for a file, the WAL journal. WAL with
/// `synchronous = NORMAL` never loses a committed transaction when the process crashes (only,
/// possibly, the last ones on power loss) and never leaves one half-applied.
fn configure(connection: &Connection, file: bool) -> Result<(), OpenError> {
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    if file {
        // Returns the resulting mode; a file system without shared memory keeps `delete`, which is
        // slower but just as safe.
        connection.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    }
    connection.execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")?;
    Ok(())
}

/// Applies the migrations the database lacks, all in one transaction. A database already at
/// this build's version is not locked for writing (short-lived openers, such as `hookbox hook`
/// logging one decision, do not wait on each other here).
fn migrate(connection: &mut Connection) -> Result<(), OpenError> {
    let found: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    if found == supported_version() {
        return Ok(());
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found: i64 = transaction.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    let supported = supported_version();
    if found > supported {
        return Err(OpenError::TooNew { found });
    }
    if found < supported {
        for migration in MIGRATIONS.iter().skip(usize::try_from(found).unwrap_or(0)) {
            transaction.execute_batch(migration)?;
        }
        transaction.pragma_update(None, "user_version", supported)?;
    }
    transaction.commit()?;
    Ok(())
}
