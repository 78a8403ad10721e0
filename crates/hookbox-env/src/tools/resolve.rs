//! Resolving a file tool's path once, before the hooks see it.
//!
//! The model's path (`private/x`, `./a/../private/x`, `pub/x` with `pub -> private`) becomes the
//! canonical absolute sandbox path the tool will act on (`/workspace/private/x`): `.` and `..`
//! are taken lexically first (as the tools always did), then every symbolic link is followed
//! inside the environment root (absolute targets mean the root, `..` never climbs above it),
//! component by component, each opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//! from its already resolved parent, so no step can reach the host. What does not exist yet (a
//! file to write, its missing parent directories) is kept as written. The tool then opens that
//! path refusing every link, so it acts on exactly what the hooks saw or fails.

use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{self, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::sandbox_path::{MAX_PATH_BYTES, SandboxPath};

/// Links followed in one resolution before giving up (the kernel's limit).
const MAX_LINKS: usize = 40;

/// Whether the final component is followed when it is a symbolic link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Final {
    /// Followed: the tool acts on what the link points to (`read_file`, `list_files`).
    Follow,
    /// Kept: the tool acts on the link itself (`write_file` replaces it, `delete_file`
    /// removes it).
    Keep,
}

/// What a file or directory is, whatever its name: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    dev: u64,
    ino: u64,
}

impl Identity {
    /// The identity of what `fd` is open on (a symbolic link itself for an `O_PATH` one).
    pub(crate) fn of(fd: &impl AsFd) -> Result<Self, Errno> {
        Ok(Self::from_stat(&fs::fstat(fd)?))
    }

    /// The identity `stat` describes.
    pub(crate) fn from_stat(stat: &fs::Stat) -> Self {
        Self {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }
}

/// What a resolved path named when the hooks were shown it: the identity of each of its
/// components that existed then, from the top (`/workspace`, `/workspace/dir`…); the missing
/// rest (a file to create, its new parents) has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Judged {
    ids: Vec<Identity>,
}

impl Judged {
    /// The identity the first `depth` components had (`None` past what existed; the root,
    /// `depth` 0, is never exchanged and has none either).
    pub(crate) fn at(&self, depth: usize) -> Option<Identity> {
        depth
            .checked_sub(1)
            .and_then(|index| self.ids.get(index).copied())
    }

    /// How many components existed.
    pub(crate) fn existing(&self) -> usize {
        self.ids.len()
    }
}

/// The canonical form of `path` inside the root opened as `root` (see the module docs), with
/// what it named.
pub(crate) fn resolve(
    root: &impl AsFd,
    path: &SandboxPath,
    last: Final,
) -> Result<(SandboxPath, Judged), Errno> {
    let mut todo: Vec<String> = path.components().iter().rev().cloned().collect();
    // The resolved components, and the last of them opened while everything so far exists
    // (`None`: the root). One descriptor at a time, however long the path.
    let mut done: Vec<String> = Vec::new();
    // The identities of the existing prefix of `done`.
    let mut ids: Vec<Identity> = Vec::new();
    let mut current: Option<OwnedFd> = None;
    let mut missing_from: Option<usize> = None;
    let mut links = 0;
    while let Some(name) = todo.pop() {
        match name.as_str() {
            "" | "." => continue,
            ".." => {
                done.pop();
                if missing_from.is_some_and(|depth| done.len() < depth) {
                    missing_from = None;
                }
                if missing_from.is_none() {
                    current = reopen(root, &done)?;
                    ids.truncate(done.len());
                    if let Some(fd) = &current {
                        // What the prefix names now (an exchange since is the caller's to see).
                        ids.pop();
                        ids.push(Identity::of(fd)?);
                    }
                }
                continue;
            }
            _ => {}
        }
        if missing_from.is_some() {
            done.push(name);
            continue;
        }
        let opened = match &current {
            Some(parent) => lookup(parent, &name),
            None => lookup(root, &name),
        };
        let fd = match opened {
            Ok(fd) => fd,
            // Not there (or under something that is not a directory): the rest as written.
            Err(Errno::NOENT | Errno::NOTDIR) => {
                done.push(name);
                missing_from = Some(done.len());
                continue;
            }
            Err(errno) => return Err(errno),
        };
        let is_link = FileType::from_raw_mode(fs::fstat(&fd)?.st_mode) == FileType::Symlink;
        if !is_link || (todo.is_empty() && last == Final::Keep) {
            done.push(name);
            ids.push(Identity::of(&fd)?);
            current = Some(fd);
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Errno::LOOP);
        }
        let target = fs::readlinkat(&fd, "", Vec::new())?;
        let target = target.to_str().map_err(|_| Errno::ILSEQ)?;
        if target.starts_with('/') {
            done.clear();
            ids.clear();
            current = None;
        }
        todo.extend(target.split('/').rev().map(str::to_owned));
        if todo.len() + done.len() > MAX_PATH_BYTES / 2 {
            // Longer than any path the tool could then open: links lengthen it.
            return Err(Errno::NAMETOOLONG);
        }
    }
    Ok((SandboxPath::from_components(done), Judged { ids }))
}

/// The directory `done` names below `root` opened again, refusing every link on the way
/// (`None` for the root itself): after a link's `..`, every component left was resolved to a
/// real directory, so a link found now was swapped in since and fails the resolution.
fn reopen(root: &impl AsFd, done: &[String]) -> Result<Option<OwnedFd>, Errno> {
    if done.is_empty() {
        return Ok(None);
    }
    fs::openat2(
        root,
        done.join("/"),
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
    .map(Some)
}

/// Opens `name` in `dir` without following anything: a symbolic link is opened itself.
fn lookup(dir: &impl AsFd, name: &str) -> Result<OwnedFd, Errno> {
    fs::openat2(
        dir,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn resolved(root: &std::path::Path, path: &str, last: Final) -> Result<String, Errno> {
        let fd = fs::open(root, OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let path = SandboxPath::parse(path, "workspace").unwrap();
        resolve(&fd, &path, last).map(|(path, _)| path.to_string())
    }

    #[test]
    fn links_are_followed_inside_the_root_and_missing_parts_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("workspace/private")).unwrap();
        std::fs::write(root.join("workspace/private/e.json"), "{}").unwrap();
        symlink("private", root.join("workspace/pub")).unwrap();
        symlink("/workspace/private", root.join("workspace/abs")).unwrap();
        symlink(
            "../../../../workspace/private/e.json",
            root.join("workspace/up"),
        )
        .unwrap();
        symlink("/etc/passwd", root.join("workspace/passwd")).unwrap();
        symlink("loop", root.join("workspace/loop")).unwrap();
        symlink("../private/e.json", root.join("workspace/private/back")).unwrap();
        symlink("missing/../private", root.join("workspace/via-missing")).unwrap();
        let f = Final::Follow;
        for (path, expected) in [
            ("private/e.json", "/workspace/private/e.json"),
            ("./private/../private/e.json", "/workspace/private/e.json"),
            ("pub/e.json", "/workspace/private/e.json"),
            ("/workspace/abs/e.json", "/workspace/private/e.json"),
            ("up", "/workspace/private/e.json"),
            ("private/back", "/workspace/private/e.json"),
            ("via-missing/e.json", "/workspace/private/e.json"),
            ("pub/new/deeper.txt", "/workspace/private/new/deeper.txt"),
            ("passwd", "/etc/passwd"),
            ("pub", "/workspace/private"),
            ("/", "/"),
        ] {
            assert_eq!(resolved(root, path, f).as_deref(), Ok(expected), "{path}");
        }
        assert_eq!(
            resolved(root, "pub", Final::Keep).as_deref(),
            Ok("/workspace/pub")
        );
        assert_eq!(
            resolved(root, "pub/x", Final::Keep).as_deref(),
            Ok("/workspace/private/x")
        );
        assert_eq!(resolved(root, "loop", f), Err(Errno::LOOP));
    }
}
