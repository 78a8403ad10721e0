//! A cheap check that policy files have not changed: each file's device, inode, size and
//! modification and change times (one `stat` each), and the project's canonical path. Equal
//! stamps prove the files unchanged only when they are *settled*: every time in them is older
//! than the moment the stamps were taken by more than the file system's timestamp
//! granularity, so that a later write cannot leave the times as they were. Otherwise (and
//! whenever stamps differ) the daemon compares the files' bytes, as before.

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hookbox_hooks::adapter::PolicyFiles;

/// How much older than the stamps' moment a file's times must be for its stamp to be settled
/// (far above any file system's timestamp granularity).
const SETTLE: Duration = Duration::from_secs(2);

/// The stamps of a set of policy files (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamps {
    /// Per file: device, inode, size, modification and change times (ns); `None`: absent.
    files: Vec<Option<[i128; 5]>>,
    /// The project directory's canonical path (the trust store is keyed by it).
    canonical_project: Option<PathBuf>,
    /// Whether every time is settled.
    settled: bool,
}

impl Stamps {
    /// The stamps of `files` now; `None` when one cannot be read (the byte comparison then
    /// reports why).
    pub(super) fn of(files: &PolicyFiles) -> Option<Self> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).ok()?;
        let (paths, canonical_project) = files.paths();
        let files = paths
            .into_iter()
            .map(|path| match std::fs::metadata(path) {
                Ok(meta) => Some(Some([
                    i128::from(meta.dev()),
                    i128::from(meta.ino()),
                    i128::from(meta.size()),
                    i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                    i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
                ])),
                Err(err) if err.kind() == ErrorKind::NotFound => Some(None),
                Err(_) => None,
            })
            .collect::<Option<Vec<_>>>()?;
        let settled_before = now.saturating_sub(SETTLE).as_nanos() as i128;
        let settled = files
            .iter()
            .flatten()
            .all(|[.., modified, changed]| *modified < settled_before && *changed < settled_before);
        Some(Self {
            files,
            canonical_project,
            settled,
        })
    }

    /// Whether `self`, taken now, proves the files the same as when `kept` was taken.
    pub(super) fn unchanged_since(&self, kept: &Self) -> bool {
        kept.settled && self == kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_just_written_is_not_settled_and_an_old_one_is() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("policy.json");
        std::fs::write(&path, "{}").expect("write");
        let files = PolicyFiles::Explicit(path.clone());
        let fresh = Stamps::of(&files).expect("stamps");
        assert!(!fresh.settled);
        assert!(!Stamps::of(&files).expect("stamps").unchanged_since(&fresh));
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_modified(old))
            .expect("set mtime");
        // The change time moved with the write above: still not settled.
        assert!(!Stamps::of(&files).expect("stamps").settled);
        let missing = PolicyFiles::Explicit(dir.path().join("missing.json"));
        let absent = Stamps::of(&missing).expect("stamps");
        assert!(
            absent.settled
                && Stamps::of(&missing)
                    .expect("stamps")
                    .unchanged_since(&absent)
        );
    }
}
