//! The directory of this process under the hookbox home, `<home>/run/<pid>-<start>/`: files
//! that must exist on the host while a run lasts (the sandboxes' CA bundles, a clone's trusted
//! roots) are written there instead of `$TMPDIR`, each removed when its run ends.
//!
//! A process killed outright (`kill -9`) cannot remove its files; they stay in its directory.
//! Opening the home removes the directories of processes that are gone: the pid is not alive,
//! or is alive with another start time (a reused pid). `<start>` is the process's start time
//! in clock ticks since boot (`/proc/<pid>/stat`, field 22), which a reused pid never shares.
//! Names that are not `<pid>-<start>` are left alone. Processes sharing a home must share a pid
//! namespace (and a boot): another namespace's live process would look gone.

use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::{StoreError, io_error};

/// Removes what processes that are gone left in `<home>/run`, then creates (if needed) and
/// returns this process's directory there (readable by its owner only).
pub(crate) fn open(home: &Path) -> Result<PathBuf, StoreError> {
    let parent = home.join("run");
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&parent)
        .map_err(io_error("create", &parent))?;
    sweep(&parent)?;
    let pid = std::process::id();
    let start = start_time(pid).ok_or_else(|| StoreError::Io {
        action: "read the start time of this process from",
        path: PathBuf::from("/proc/self/stat"),
        source: std::io::Error::other("no start time in /proc/self/stat"),
    })?;
    let own = parent.join(format!("{pid}-{start}"));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&own)
        .or_else(|error| match error.kind() {
            std::io::ErrorKind::AlreadyExists => Ok(()),
            _ => Err(error),
        })
        .map_err(io_error("create", &own))?;
    Ok(own)
}

/// Removes each `<pid>-<start>` directory in `parent` whose process is gone.
fn sweep(parent: &Path) -> Result<(), StoreError> {
    let entries = fs::read_dir(parent).map_err(io_error("list", parent))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, start)) = name.to_str().and_then(owner) else {
            continue;
        };
        if start_time(pid) != Some(start) {
            let path = entry.path();
            fs::remove_dir_all(&path)
                .or_else(|error| match error.kind() {
                    // Another process swept it first.
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(error),
                })
                .map_err(io_error("remove", &path))?;
        }
    }
    Ok(())
}

/// The pid and start time a directory name `<pid>-<start>` stands for.
fn owner(name: &str) -> Option<(u32, u64)> {
    let (pid, start) = name.split_once('-')?;
    Some((pid.parse().ok()?, start.parse().ok()?))
}

/// The start time of process `pid` (clock ticks since boot), or `None` when there is none.
fn start_time(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) state ppid …": comm may hold spaces and parentheses; field 22 is the 20th
    // after it.
    let after_comm = stat.get(stat.rfind(')')? + 1..)?;
    after_comm.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_pid_and_start_are_not_owners() {
        assert_eq!(owner("12-345"), Some((12, 345)));
        for name in ["notes", "12", "12-", "-3", "a-3", "12-3x"] {
            assert_eq!(owner(name), None, "{name}");
        }
    }

    #[test]
    fn this_process_has_a_start_time() {
        let own = start_time(std::process::id());
        assert!(own.is_some());
        assert_eq!(start_time(std::process::id()), own);
    }
}
