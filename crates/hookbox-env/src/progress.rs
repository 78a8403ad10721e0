//! Progress of the long parts of creating or updating an environment (cloning a repository,
//! copying a bucket), reported to a callback the caller gives: hookbox-env draws nothing
//! (`hookbox env create` shows a progress bar on a terminal; `hookbox serve` logs through
//! [`logged_progress`]).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One step of a long operation on source `index` of a spec's `sources`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Cloning the repository `url` began.
    CloneStarted {
        /// Index of the source in the spec's `sources`.
        index: usize,
        /// The repository.
        url: String,
    },
    /// The clone of source `index` is done (its files are copied next).
    CloneFinished {
        /// Index of the source in the spec's `sources`.
        index: usize,
    },
    /// Copying `objects` objects (`bytes` bytes as listed) from `source` (`gs://…`) began.
    CopyStarted {
        /// Index of the source in the spec's `sources`.
        index: usize,
        /// The bucket and prefix.
        source: String,
        /// How many objects will be copied.
        objects: usize,
        /// Their total size as listed.
        bytes: u64,
    },
    /// `copied` of the source's objects (`bytes` bytes as listed) are copied.
    Copied {
        /// Index of the source in the spec's `sources`.
        index: usize,
        /// Objects copied so far.
        copied: usize,
        /// Their size so far.
        bytes: u64,
    },
    /// Every object of source `index` is copied.
    CopyFinished {
        /// Index of the source in the spec's `sources`.
        index: usize,
    },
}

impl fmt::Display for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::CloneStarted { index, url } => {
                write!(f, "source {index}: cloning {url}")
            }
            Self::CloneFinished { index } => write!(f, "source {index}: cloned"),
            Self::CopyStarted {
                index,
                source,
                objects,
                bytes,
            } => write!(
                f,
                "source {index}: copying {objects} objects ({bytes} bytes) from {source}"
            ),
            Self::Copied {
                index,
                copied,
                bytes,
            } => write!(f, "source {index}: {copied} objects ({bytes} bytes) copied"),
            Self::CopyFinished { index } => write!(f, "source {index}: copied"),
        }
    }
}

/// Receives every [`Progress`] of the environments' creates and updates; called on the
/// operation's task, so it should be quick.
pub type ProgressReport = Arc<dyn Fn(&Progress) + Send + Sync>;

/// Shortest time between two logged [`Progress::Copied`] lines of one copy.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// A [`ProgressReport`] that logs (`tracing` info, for servers): every start and end, and the
/// copied counts at most every five seconds.
pub fn logged_progress() -> ProgressReport {
    let last: Mutex<Option<Instant>> = Mutex::new(None);
    Arc::new(move |progress: &Progress| {
        let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Progress::Copied { .. } = progress
            && last.is_some_and(|at| at.elapsed() < LOG_EVERY)
        {
            return;
        }
        *last = matches!(progress, Progress::Copied { .. }).then(Instant::now);
        tracing::info!("environment source {progress}");
    })
}
