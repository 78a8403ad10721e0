//! Walking a directory beneath the working directory without following symlinks.

use std::os::fd::OwnedFd;

use rustix::fs::FileType;

use crate::confined;
use crate::sandbox_path::SandboxPath;
use crate::tree::{MAX_WALK_BYTES, NotEntered, Walk, limits_note};

/// Most entries visited in one walk; past it the walk stops and says it was cut.
pub(crate) const MAX_VISITED: usize = 200_000;

/// Directories never entered.
const SKIPPED_DIRS: &[&str] = &[".git", ".hg", ".svn"];

/// A regular file found by [`files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Its path relative to the walked directory, `/`-separated.
    pub(crate) rel: String,
    /// Its modification time, in nanoseconds since the epoch.
    pub(crate) mtime: i128,
}

/// Every regular file below `dir` (symlinks are neither followed nor listed; unreadable
/// directories are skipped), and why the walk is incomplete if it is: it stopped at
/// [`MAX_VISITED`] entries or [`MAX_WALK_BYTES`] of paths, or left directories past the walk
/// limits ([`crate::tree`]) unentered.
pub(crate) fn files(dir: OwnedFd) -> (Vec<Found>, Option<String>) {
    let mut found = Vec::new();
    let Ok(mut walk) = Walk::new(dir, SandboxPath::from_components(Vec::new())) else {
        return (found, None);
    };
    let mut visited = 0_usize;
    let mut cut = None;
    while let Some((name, path)) = walk.next() {
        visited += 1;
        if visited > MAX_VISITED {
            let stopped = format!("the search stopped after {MAX_VISITED} entries");
            return (found, Some(stopped));
        }
        let Ok(Some(stat)) = confined::entry(walk.dir(), &name) else {
            continue;
        };
        match confined::kind(&stat) {
            FileType::RegularFile => found.push(Found {
                rel: path.relative(),
                mtime: nanos(&stat),
            }),
            FileType::Directory if !SKIPPED_DIRS.contains(&name.as_str()) => {
                if let Err(NotEntered::TooDeep) = walk.enter(&name, path) {
                    cut = Some(limits_note());
                }
            }
            _ => {}
        }
    }
    if walk.cut_short() {
        let stopped = format!(
            "the search stopped after {} MiB of paths",
            MAX_WALK_BYTES >> 20
        );
        return (found, Some(stopped));
    }
    (found, cut)
}

/// The modification time in `stat`, in nanoseconds since the epoch.
pub(crate) fn nanos(stat: &rustix::fs::Stat) -> i128 {
    i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec)
}
