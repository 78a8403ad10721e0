//! The directories environments are built in (`.staging-*`, locked while they live), set
//! aside in (`.trash-*`) and marked uncommitted in, and what `Environments::open` does about
//! the ones a crash left behind.

use std::fs::{self, File};
use std::path::{Path, PathBuf};

use hookbox_exec::disk::DiskBudget;
use rustix::fs::FlockOperation;
use rustix::io::Errno;

use crate::disk::{self, IMAGE};
use crate::environment::is_environment_id;
use crate::sources::materialise::{self, Remote, SourceFailure};
use crate::spec::EnvironmentSpec;
use crate::tree;

use super::records::{LEGACY_METADATA, Records, token};
use super::{StoreError, io_error};

/// Marks an environment directory renamed into place whose record is not stored yet; removed
/// by `Environments::open` if a crash left it so.
pub(super) const UNCOMMITTED: &str = ".uncommitted";

/// Prefix of directories being built; removed by `Environments::open` after a crash.
const STAGING_PREFIX: &str = ".staging-";

/// Prefix of directories being deleted; removed by `Environments::open` after a crash.
const TRASH_PREFIX: &str = ".trash-";

/// Removes the `.staging-*` and `.trash-*` directories in `dir` that no live operation holds
/// (a crash's leftovers), unmounting a staged environment's file system first.
pub(super) fn remove_leftovers(dir: &Path) -> Result<(), StoreError> {
    for entry in fs::read_dir(dir).map_err(io_error("read", dir))? {
        let entry = entry.map_err(io_error("read", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(STAGING_PREFIX) || name.starts_with(TRASH_PREFIX)) {
            continue;
        }
        let path = entry.path();
        // Another process's create or update in progress holds its staging directory locked.
        let Ok(handle) = File::open(&path) else {
            continue;
        };
        if rustix::fs::flock(&handle, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        let image = path.join(IMAGE);
        if image.exists() {
            disk::unmount(&image)?;
        }
        tree::remove(&path).map_err(io_error("remove leftover", &path))?;
    }
    Ok(())
}

/// Settles the environment directories against their records: a directory a crash left
/// uncommitted (renamed into place, its record not stored) is removed unless a live create
/// holds it; an `environment.json` of an older hookbox is imported (replacing the copy of it
/// an older server kept in the database). A directory with neither a
/// record nor either file is left alone (it is not listed).
pub(super) fn settle_directories(dir: &Path, records: &Records) -> Result<(), StoreError> {
    let recorded: std::collections::HashSet<String> = records.ids()?.into_iter().collect();
    for entry in fs::read_dir(dir).map_err(io_error("read", dir))? {
        let entry = entry.map_err(io_error("read", dir))?;
        let Some(id) = entry
            .file_name()
            .to_str()
            .filter(|name| is_environment_id(name))
            .map(str::to_owned)
        else {
            continue;
        };
        let path = entry.path();
        let marker = path.join(UNCOMMITTED);
        if marker.exists() {
            if recorded.contains(&id) {
                fs::remove_file(&marker).map_err(io_error("remove", &marker))?;
            } else if let Ok(handle) = File::open(&path)
                && rustix::fs::flock(&handle, FlockOperation::NonBlockingLockExclusive).is_ok()
            {
                let image = path.join(IMAGE);
                if image.exists() {
                    disk::unmount(&image)?;
                }
                remove_environment_dir(dir, &path)?;
            }
        } else if path.join(LEGACY_METADATA).exists() {
            // Even with a record: older servers copied the API view (secrets redacted) into the
            // database, while the file was the source of truth.
            records.import_legacy(&path)?;
        }
    }
    Ok(())
}

/// Removes the environment directory `env_dir` of `dir`: renamed aside first, so that a
/// crash leaves a `.trash-*` directory that `Environments::open` removes.
pub(super) fn remove_environment_dir(dir: &Path, env_dir: &Path) -> Result<(), StoreError> {
    let trash = dir.join(format!("{TRASH_PREFIX}{}", token()?));
    fs::rename(env_dir, &trash).map_err(io_error("move aside", env_dir))?;
    tree::remove(&trash).map_err(io_error("remove", &trash))
}

/// `problem` with a note that the disk budget is used up, when it says so (`ENOSPC`,
/// `EDQUOT`) and there is a budget.
pub(super) fn with_budget_hint(problem: String, budget: Option<DiskBudget>) -> String {
    let full = [Errno::NOSPC, Errno::DQUOT]
        .iter()
        .any(|errno| problem.contains(&format!("(os error {})", errno.raw_os_error())));
    match budget {
        Some(budget) if full => format!(
            "{problem}; the environment's disk budget ({} bytes, {} inodes) is used up: make \
             the sources smaller or ask for larger `limits` (up to the server's)",
            budget.bytes, budget.inodes
        ),
        _ => problem,
    }
}

/// A private directory (under `environments/`, or on an environment's file system for an
/// update), locked while it lives and removed when dropped unless renamed away; a staged
/// environment's file system is unmounted with it.
pub(super) struct Staging {
    pub(super) path: PathBuf,
    pub(super) image: Option<PathBuf>,
    _lock: File,
}

impl Staging {
    /// Creates and locks `dir/.staging-<random>`.
    pub(super) fn new(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(format!("{STAGING_PREFIX}{}", token()?));
        create_dir(&path)?;
        let lock = File::open(&path).map_err(io_error("open", &path))?;
        rustix::fs::flock(&lock, FlockOperation::LockExclusive)
            .map_err(|err| io_error("lock", &path)(err.into()))?;
        Ok(Self {
            path,
            image: None,
            _lock: lock,
        })
    }

    /// Writes `spec`'s sources below `root`, cloning into a scratch directory; a failure for
    /// want of room says that `budget` is used up.
    pub(super) async fn materialise(
        &self,
        spec: &EnvironmentSpec,
        root: &Path,
        remote: &Remote<'_>,
        budget: Option<DiskBudget>,
    ) -> Result<(), StoreError> {
        let scratch = self.path.join("scratch");
        create_dir(&scratch)?;
        materialise::materialise(&spec.sources, root, &scratch, remote)
            .await
            .map_err(|SourceFailure { index, problem }| StoreError::Source {
                index,
                problem: with_budget_hint(problem, budget),
            })?;
        tree::remove(&scratch).map_err(io_error("remove", &scratch))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Already renamed into place on success; otherwise `open` retries what fails here.
        if self.path.exists() {
            if let Some(image) = &self.image {
                let _ = disk::unmount(image);
            }
            let _ = tree::remove(&self.path);
        }
    }
}

/// Creates `path` and its missing parents.
pub(super) fn create_dir(path: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(path).map_err(io_error("create", path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Environments;

    #[test]
    fn open_removes_leftovers_of_a_crash() {
        let home = tempfile::tempdir().unwrap();
        let envs = home.path().join("environments");
        fs::create_dir_all(envs.join(".staging-abc/root/workspace")).unwrap();
        fs::create_dir_all(envs.join(".trash-abc/root")).unwrap();
        Environments::open(home.path()).unwrap();
        let left: Vec<_> = fs::read_dir(&envs).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn open_keeps_what_a_live_create_of_another_process_stages() {
        let home = tempfile::tempdir().unwrap();
        let envs = home.path().join("environments");
        fs::create_dir_all(&envs).unwrap();
        // What another process's create holds (flock: per open file, so this conflicts too).
        let live = Staging::new(&envs).unwrap();
        fs::write(live.path.join("file"), "x").unwrap();
        Environments::open(home.path()).unwrap();
        assert!(live.path.join("file").exists());
        drop(live);
        let left: Vec<_> = fs::read_dir(&envs).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
