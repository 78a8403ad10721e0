//! Walking a directory beneath the working directory without following symlinks.

use std::os::fd::OwnedFd;

use rustix::fs::FileType;

use crate::confined;
use crate::tools::list::open_subdir;

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
/// directories are skipped), and whether the walk stopped at [`MAX_VISITED`].
pub(crate) fn files(dir: OwnedFd) -> (Vec<Found>, bool) {
    let mut found = Vec::new();
    let mut visited = 0_usize;
    let mut stack = vec![(dir, String::new())];
    while let Some((dir, prefix)) = stack.pop() {
        let Ok(names) = confined::sorted_names(&dir) else {
            continue;
        };
        for name in names {
            visited += 1;
            if visited > MAX_VISITED {
                return (found, true);
            }
            let Ok(Some(stat)) = confined::entry(&dir, &name) else {
                continue;
            };
            let rel = format!("{prefix}{name}");
            match confined::kind(&stat) {
                FileType::RegularFile => found.push(Found {
                    rel,
                    mtime: nanos(&stat),
                }),
                FileType::Directory if !SKIPPED_DIRS.contains(&name.as_str()) => {
                    if let Ok(sub) = open_subdir(&dir, &name) {
                        stack.push((sub, format!("{rel}/")));
                    }
                }
                _ => {}
            }
        }
    }
    (found, false)
}

/// The modification time in `stat`, in nanoseconds since the epoch.
pub(crate) fn nanos(stat: &rustix::fs::Stat) -> i128 {
    i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec)
}
