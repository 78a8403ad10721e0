//! The `.agents` directories hooks are discovered in, and which of them are the owner's.
//!
//! An environment's owner supplies `/.agents` and `/workspace/.agents` through sources,
//! updates and uploads; those are recorded in the environment's metadata and, unless the
//! environment sets `agents_writable`, are read-only to the model: bound read-only in the
//! sandbox and refused by the file tools wherever a path leads (`..`, symlinks, trailing
//! slashes), checked by the directory's identity, not its name.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self, Mode, OFlags};
use rustix::io::Errno;

/// The `.agents` directories hooks are discovered in, relative to `/`, in trust order.
pub(crate) const AGENTS_DIRS: [&str; 2] = [".agents", "workspace/.agents"];

/// The `.agents` directory below `/workspace`, relative to it.
pub(crate) const WORKSPACE_AGENTS: &str = ".agents";

/// Most `..` steps taken from a directory back up to its area (deeper trees are refused).
const MAX_DEPTH: usize = 4096;

/// The sandbox paths (`/.agents`, `/workspace/.agents`) of the `.agents` directories present
/// (as real directories, not links) in the environment root `root`.
pub(crate) fn present_in(root: &Path) -> Vec<String> {
    AGENTS_DIRS
        .iter()
        .filter(|dir| {
            std::fs::symlink_metadata(root.join(dir)).is_ok_and(|meta| meta.file_type().is_dir())
        })
        .map(|dir| format!("/{dir}"))
        .collect()
}

/// Removes what lies at the `.agents` directory `dir` (a sandbox path, one of [`AGENTS_DIRS`])
/// of the environment root `root`, following no link. Done while a new environment is made
/// from another (`from_environment`) whose sources write into a `.agents` directory the
/// base's owner did not supply: the copy's directory becomes the owner's holding only what the
/// owner wrote, so the owner's hooks never start beside files the model put there (a
/// `package.json`, `node_modules`, a script a hook file names…). No sandbox has the copy open
/// yet, so no model call can write there meanwhile.
pub(crate) fn take_over(root: &Path, dir: &str) -> std::io::Result<()> {
    let path = root.join(dir.trim_start_matches('/'));
    match std::fs::symlink_metadata(&path) {
        Ok(meta) if meta.is_dir() => crate::tree::remove(&path),
        Ok(_) => std::fs::remove_file(&path),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err),
    }
}

/// Whether the owner may start supplying the `.agents` directory `dir` (a sandbox path) in an
/// environment that already exists: only `/.agents`, which every sandbox mounts read-only and
/// whose parent `/` no model call can write. `/workspace/.agents` is the model's unless supplied
/// at creation: a session opened earlier keeps it writable for its later calls, and a call
/// running meanwhile can write there, so what the owner's hooks would run could be the model's.
pub(crate) fn owner_may_add(dir: &str) -> bool {
    dir == format!("/{}", AGENTS_DIRS[0])
}

/// Why the owner cannot write into the `.agents` directory `dir` that is the model's, and what
/// to do instead.
pub(crate) fn not_the_owners(dir: &str) -> String {
    format!(
        "`{dir}` was not supplied when the environment was created, so it is the model's: \
         model code may have written there and sessions opened before can still write there, \
         so the owner cannot take it over and nothing was written; create a new environment \
         from this one (`from_environment`) whose sources supply `{dir}` (the copy's then \
         holds only the owner's files)"
    )
}

/// The first symbolic link in the `.agents` directory `dir` (a sandbox path) of the root
/// `root` that leads out of it, as `(its sandbox path, where it points)`: an absolute link, or a
/// relative one climbing above `dir`. Such a link would make an owner hook run, or load beside,
/// whatever the model puts where it points (`/workspace/gate.js`); links never carry trust.
pub(crate) fn link_out(root: &Path, dir: &str) -> std::io::Result<Option<(String, String)>> {
    let top = root.join(dir.trim_start_matches('/'));
    // (host path, depth below `dir`)
    let mut pending = vec![(top.clone(), 0_usize)];
    while let Some((path, depth)) = pending.pop() {
        let meta = match std::fs::symlink_metadata(&path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            meta => meta?,
        };
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path)? {
                pending.push((entry?.path(), depth + 1));
            }
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path)?;
            // Below `dir`, a link at depth `depth` may climb `depth - 1` levels.
            let mut level = depth.saturating_sub(1);
            let escapes = target.is_absolute()
                || target.components().any(|part| match part {
                    std::path::Component::ParentDir if level == 0 => true,
                    std::path::Component::ParentDir => {
                        level -= 1;
                        false
                    }
                    std::path::Component::Normal(_) => {
                        level += 1;
                        false
                    }
                    _ => false,
                });
            if escapes {
                let relative = path.strip_prefix(&top).unwrap_or(&path);
                return Ok(Some((
                    format!("{dir}/{}", relative.display()),
                    target.display().to_string(),
                )));
            }
        }
    }
    Ok(None)
}

/// Whether the sandbox path `path` lies in one of the `.agents` directories `dirs`.
pub(crate) fn lies_in(path: &str, dirs: &[String]) -> bool {
    let path = format!("/{}", path.trim_start_matches('/'));
    dirs.iter().any(|dir| path.starts_with(&format!("{dir}/")))
}

/// The identity of a directory: device and inode.
type Identity = (u64, u64);

/// The identity of `fd`.
fn identity(fd: impl AsFd) -> Result<Identity, Errno> {
    let stat = fs::fstat(fd)?;
    Ok((stat.st_dev, stat.st_ino))
}

/// Whether the directory `dir`, somewhere below the directory `area`, is `protected` or lies
/// inside it (walking `..` from `dir` up to `area`).
pub(crate) fn is_inside(
    area: impl AsFd,
    protected: impl AsFd,
    dir: impl AsFd,
) -> Result<bool, Errno> {
    let area = identity(area)?;
    let protected = identity(protected)?;
    let mut current = up(dir, ".")?;
    for _ in 0..MAX_DEPTH {
        let here = identity(&current)?;
        if here == protected {
            return Ok(true);
        }
        if here == area {
            return Ok(false);
        }
        current = up(&current, "..")?;
    }
    // Deeper than any tree the tools create: refuse rather than guess.
    Ok(true)
}

/// Opens `name` (`.` or `..`) of `dir` as a path descriptor.
fn up(dir: impl AsFd, name: &str) -> Result<OwnedFd, Errno> {
    fs::openat(
        dir,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Whether `name` in `parent` is itself the directory `protected` (not following a link).
pub(crate) fn is_itself(
    parent: impl AsFd,
    name: &str,
    protected: impl AsFd,
) -> Result<bool, Errno> {
    match fs::statat(parent, name, fs::AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok((stat.st_dev, stat.st_ino) == identity(protected)?),
        Err(Errno::NOENT) => Ok(false),
        Err(errno) => Err(errno),
    }
}
