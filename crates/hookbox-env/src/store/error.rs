//! Why an environment operation failed.

use std::io;
use std::path::{Path, PathBuf};

use hookbox_exec::disk::DiskError;

/// Why an environment operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No environment has this id (or the id is malformed).
    #[error("environment `{id}` not found; list the environments to see which exist")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// A source could not be written; nothing was changed.
    #[error("invalid environment at `$.sources[{index}]`: {problem}")]
    Source {
        /// Index of the source in the spec's `sources`.
        index: usize,
        /// What went wrong and what to do.
        problem: String,
    },
    /// The update's files clash with the environment's; nothing was changed.
    #[error("cannot update environment `{id}`: {problem}")]
    Update {
        /// The environment.
        id: String,
        /// What went wrong and what to do.
        problem: String,
    },
    /// The spec asks for something this operation does not do.
    #[error("invalid environment at `{path}`: {problem}")]
    Misplaced {
        /// JSON path of the field.
        path: String,
        /// What to do instead.
        problem: String,
    },
    /// The environment's file system (its disk budget) could not be made, mounted or
    /// unmounted.
    #[error(transparent)]
    Disk(#[from] DiskError),
    /// Another process (`hookbox serve`) runs the environment's warm sandbox, which this
    /// process cannot stop.
    #[error(
        "environment `{id}` has a warm sandbox in a running `hookbox serve` (supervisor pid \
         {supervisor_pid}); delete it through that server (DELETE /v1/environments/{id}), or \
         stop the server first"
    )]
    InUse {
        /// The environment's id.
        id: String,
        /// The warm sandbox's supervisor.
        supervisor_pid: u32,
    },
    /// No place to keep environments was configured.
    #[error("cannot tell where to keep environments: set HOOKBOX_HOME (or XDG_DATA_HOME or HOME)")]
    NoHome,
    /// A filesystem operation on hookbox's own files failed.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
}

impl StoreError {
    /// Whether this failed because the home's file system is full (or cannot back a budget):
    /// nothing was kept, and the same request can succeed once space returns.
    pub fn is_disk_full(&self) -> bool {
        let full = |err: &io::Error| {
            matches!(
                err.kind(),
                io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded
            ) || err
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<hookbox_store::Error>())
                .is_some_and(hookbox_store::Error::is_disk_full)
        };
        match self {
            Self::Disk(DiskError::NoSpace { .. }) => true,
            Self::Disk(DiskError::Io { source, .. }) | Self::Io { source, .. } => full(source),
            _ => false,
        }
    }
}

/// The `Io` error for `action` on `path`.
pub(crate) fn io_error(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(io::Error) -> StoreError + use<> {
    let path = path.to_path_buf();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}
