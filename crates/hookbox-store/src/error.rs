//! Why a store operation failed.

use std::fmt;
use std::io;
use std::path::PathBuf;

use crate::record::Status;

/// What kind of record an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entity {
    /// An interaction.
    Interaction,
    /// The interaction named by a new interaction's `previous_interaction_id`.
    PreviousInteraction,
    /// An environment.
    Environment,
    /// An API key (by name).
    ApiKey,
}

impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Interaction => "interaction",
            Self::PreviousInteraction => "previous interaction",
            Self::Environment => "environment",
            Self::ApiKey => "API key",
        })
    }
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No record has this id.
    #[error("{entity} `{id}` not found; check the id (deleted records are gone for good)")]
    NotFound {
        /// What was looked for.
        entity: Entity,
        /// The id asked for.
        id: String,
    },
    /// A record with this id already exists.
    #[error("{entity} `{id}` already exists; choose another id or omit it to get a fresh one")]
    AlreadyExists {
        /// What was being created.
        entity: Entity,
        /// The id given.
        id: String,
    },
    /// An idempotency key was reused with a different request.
    #[error(
        "idempotency key `{key}` was already used for interaction `{interaction_id}` with a \
         different request; resend the same request or use a new key"
    )]
    IdempotencyMismatch {
        /// The key.
        key: String,
        /// The interaction the key belongs to.
        interaction_id: String,
    },
    /// The interaction has stopped (completed, failed, cancelled…) and can no longer change.
    #[error("interaction `{id}` is {status}; a stopped interaction cannot be changed")]
    Stopped {
        /// The interaction.
        id: String,
        /// Its status.
        status: Status,
    },
    /// An argument is malformed.
    #[error("invalid {field}: {problem}")]
    InvalidInput {
        /// Which argument.
        field: &'static str,
        /// What is wrong and what to do.
        problem: String,
    },
    /// The database was written by a newer hookbox.
    #[error(
        "the database has schema version {found}, newer than this hookbox understands \
         ({supported}); upgrade hookbox or point it at another database"
    )]
    SchemaTooNew {
        /// The version found in the database.
        found: i64,
        /// The newest version this build knows.
        supported: i64,
    },
    /// The directory that should hold the database could not be created.
    #[error("cannot create the database directory `{path}`: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The operating system's reason.
        source: io::Error,
    },
    /// The decision journal (or its directory) could not be read, written or removed.
    #[error("cannot use the decision journal `{}`: {source}", path.display())]
    Journal {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The database file could not be opened or prepared.
    #[error("cannot open the database `{path}`: {source}")]
    Open {
        /// The database file.
        path: PathBuf,
        /// The database's reason.
        source: DatabaseError,
    },
    /// A stored value does not decode (the database was edited or damaged).
    #[error("stored {what} is unreadable ({problem}); the database was edited or damaged")]
    Corrupt {
        /// Which value, e.g. `request of interaction int_…`.
        what: String,
        /// What is wrong with it.
        problem: String,
    },
    /// No random bytes for a fresh id.
    #[error("cannot read random bytes for a fresh id: {0}")]
    Random(#[source] io::Error),
    /// The database failed (disk full, I/O error, locked for too long…).
    #[error("database error: {0}")]
    Database(#[from] DatabaseError),
}

/// A failure inside the database engine, kept opaque so no SQL type leaves the crate.
#[derive(Debug)]
pub struct DatabaseError(rusqlite::Error);

impl DatabaseError {
    /// Whether the database stayed locked by another writer past the busy timeout.
    pub fn is_busy(&self) -> bool {
        matches!(
            self.0.sqlite_error_code(),
            Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
        )
    }
}

impl DatabaseError {
    /// Whether the database could not grow: its file system (or quota) is full.
    pub fn is_full(&self) -> bool {
        self.0.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull)
    }
}

impl Error {
    /// Whether this failed because the file system holding the store is full (the write was
    /// rolled back; it succeeds again once space returns).
    pub fn is_disk_full(&self) -> bool {
        match self {
            Self::Database(err) | Self::Open { source: err, .. } => err.is_full(),
            Self::Journal { source, .. } | Self::CreateDir { source, .. } => {
                is_storage_full(source)
            }
            _ => false,
        }
    }
}

/// Whether `err` says a file system or quota is full.
fn is_storage_full(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
    )
}

impl fmt::Display for DatabaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for DatabaseError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl From<rusqlite::Error> for DatabaseError {
    fn from(error: rusqlite::Error) -> Self {
        Self(error)
    }
}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        Self::Database(DatabaseError(error))
    }
}
