//! Walking and removing directory trees a model may have built: iteratively (an explicit
//! stack, never recursion), holding one descriptor per level and never following a link, so
//! that no tree, however deep, wide or changing, can overflow a thread's stack or use up the
//! process's descriptors.

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags, RenameFlags, ResolveFlags};
use rustix::io::Errno;

use crate::confined;
use crate::sandbox_path::{MAX_PATH_BYTES, SandboxPath};

/// Most levels a walk descends below the directory it starts at.
pub(crate) const MAX_WALK_DEPTH: usize = 128;

/// Most bytes of paths one walk gives (its entries' paths added up): past it the walk ends
/// early ([`Walk::cut_short`]), so a tree of long paths cannot make one call hold gigabytes.
pub(crate) const MAX_WALK_BYTES: usize = 32 << 20;

/// What a walk says about the directories it did not enter.
pub(crate) fn limits_note() -> String {
    format!(
        "directories more than {MAX_WALK_DEPTH} levels deep, or whose path is longer than \
         {MAX_PATH_BYTES} bytes, are not entered"
    )
}

/// Why [`Walk::enter`] did not enter a directory.
#[derive(Debug)]
pub(crate) enum NotEntered {
    /// It is past [`MAX_WALK_DEPTH`] or [`MAX_PATH_BYTES`].
    TooDeep,
    /// Opening or reading it failed.
    Failed(Errno),
}

/// A depth-first walk (each directory's names sorted) below one directory: [`Walk::next`]
/// gives each entry's name and path, [`Walk::dir`] the directory holding it, and
/// [`Walk::enter`] descends into it.
pub(crate) struct Walk {
    /// The directory the walk starts at.
    start: Level,
    /// The directories entered below it, innermost last.
    below: Vec<Level>,
    /// Bytes of the paths given so far.
    given: usize,
}

/// A directory being walked: its descriptor, its path and the names still to visit.
struct Level {
    dir: OwnedFd,
    path: SandboxPath,
    names: std::vec::IntoIter<String>,
}

impl Walk {
    /// A walk of the directory `dir`, whose path is `path`.
    pub(crate) fn new(dir: OwnedFd, path: SandboxPath) -> Result<Self, Errno> {
        let names = confined::sorted_names(&dir)?.into_iter();
        Ok(Self {
            start: Level { dir, path, names },
            below: Vec::new(),
            given: 0,
        })
    }

    /// The next entry, as its name and path; `None` when the walk is done or cut short.
    pub(crate) fn next(&mut self) -> Option<(String, SandboxPath)> {
        if self.cut_short() {
            return None;
        }
        loop {
            let level = self.below.last_mut().unwrap_or(&mut self.start);
            if let Some(name) = level.names.next() {
                let path = level.path.join(&name);
                self.given += path.components().iter().map(|c| c.len() + 1).sum::<usize>();
                return (!self.cut_short()).then_some((name, path));
            }
            self.below.pop()?;
        }
    }

    /// Whether the walk ended early, past [`MAX_WALK_BYTES`].
    pub(crate) fn cut_short(&self) -> bool {
        self.given > MAX_WALK_BYTES
    }

    /// The directory holding the entry [`Walk::next`] gave last.
    pub(crate) fn dir(&self) -> BorrowedFd<'_> {
        self.below.last().unwrap_or(&self.start).dir.as_fd()
    }

    /// Descends into the directory `name` (at `path`) that [`Walk::next`] gave last, refusing a
    /// symlink put there since, and one past the limits.
    pub(crate) fn enter(&mut self, name: &str, path: SandboxPath) -> Result<(), NotEntered> {
        if self.below.len() >= MAX_WALK_DEPTH || path.to_string().len() > MAX_PATH_BYTES {
            return Err(NotEntered::TooDeep);
        }
        let dir = open_subdir(&self.dir(), name).map_err(NotEntered::Failed)?;
        let names = confined::sorted_names(&dir)
            .map_err(NotEntered::Failed)?
            .into_iter();
        self.below.push(Level { dir, path, names });
        Ok(())
    }
}

/// Removes the directory `path` and everything below it, following no link. A directory
/// [`MAX_WALK_DEPTH`] levels down is moved up into `path` before it is emptied (a rename
/// within the tree), so a tree of any depth is removed holding at most that many descriptors.
/// A missing `path` is not an error.
pub(crate) fn remove(path: &Path) -> std::io::Result<()> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match fs::open(path, flags, Mode::empty()) {
        Ok(top) => empty(top)?,
        Err(Errno::NOENT) => return Ok(()),
        Err(errno) => return Err(errno.into()),
    }
    match fs::unlinkat(fs::CWD, path, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(errno) => Err(errno.into()),
    }
}

/// A directory being emptied: its descriptor, its name in its parent, the entries still to
/// remove (raw names: a name that is not UTF-8 is removed too).
struct Emptying {
    dir: OwnedFd,
    name: CString,
    entries: Vec<(CString, FileType)>,
}

/// Removes everything in the directory `top`.
fn empty(top: OwnedFd) -> Result<(), Errno> {
    let entries = entries_of(&top)?;
    let mut stack = vec![Emptying {
        dir: top,
        name: CString::default(),
        entries,
    }];
    let mut moved = 0_usize;
    while let Some(level) = stack.last_mut() {
        let Some((name, kind)) = level.entries.pop() else {
            let Some(done) = stack.pop() else {
                break;
            };
            let Some(parent) = stack.last_mut() else {
                break;
            };
            drop(done.dir);
            match fs::unlinkat(&parent.dir, done.name.as_c_str(), AtFlags::REMOVEDIR) {
                Ok(()) | Err(Errno::NOENT) => {}
                // Something appeared in it meanwhile: empty it again.
                Err(Errno::NOTEMPTY) => parent.entries.push((done.name, FileType::Directory)),
                Err(errno) => return Err(errno),
            }
            continue;
        };
        let (dir, top) = (&stack[stack.len() - 1].dir, &stack[0].dir);
        if kind != FileType::Directory && unlink(dir, &name)? {
            continue;
        }
        if stack.len() > MAX_WALK_DEPTH {
            let moved_to = move_up(dir, &name, top, &mut moved)?;
            stack[0].entries.push((moved_to, FileType::Directory));
            continue;
        }
        match open_subdir(dir, name.as_c_str()) {
            Ok(sub) => {
                let entries = entries_of(&sub)?;
                stack.push(Emptying {
                    dir: sub,
                    name,
                    entries,
                });
            }
            Err(Errno::NOENT) => {}
            // No longer a directory: a file or a link put there since it was listed.
            Err(Errno::NOTDIR | Errno::LOOP | Errno::XDEV) => {
                unlink(dir, &name)?;
            }
            Err(errno) => return Err(errno),
        }
    }
    Ok(())
}

/// Removes `name` from `dir` unless it is a directory: whether it is gone.
fn unlink(dir: &OwnedFd, name: &CStr) -> Result<bool, Errno> {
    match fs::unlinkat(dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        Err(Errno::ISDIR) => Ok(false),
        Err(errno) => Err(errno),
    }
}

/// Moves the directory `name` of `dir` up into `top` under a name of its own, and returns
/// that name.
fn move_up(dir: &OwnedFd, name: &CStr, top: &OwnedFd, moved: &mut usize) -> Result<CString, Errno> {
    loop {
        *moved += 1;
        let to = CString::new(format!(".hookbox-removing-{moved}")).unwrap_or_default();
        match fs::renameat_with(dir, name, top, to.as_c_str(), RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(to),
            Err(Errno::EXIST) => {}
            Err(errno) => return Err(errno),
        }
    }
}

/// The entries of `dir` with their types as the directory records them, without `.` and `..`.
fn entries_of(dir: &OwnedFd) -> Result<Vec<(CString, FileType)>, Errno> {
    let mut entries = Vec::new();
    for entry in fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if name != c"." && name != c".." {
            entries.push((name.to_owned(), entry.file_type()));
        }
    }
    Ok(entries)
}

/// Opens the subdirectory `name` of `dir`, refusing a symlink put there since it was listed.
pub(crate) fn open_subdir(dir: &impl AsFd, name: impl rustix::path::Arg) -> Result<OwnedFd, Errno> {
    fs::openat2(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    /// Creates a chain of `depth` directories named `name` below `dir`, with a file in each.
    fn chain(dir: &Path, name: &str, depth: usize) {
        let mut at = fs::open(dir, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
        for _ in 0..depth {
            fs::mkdirat(&at, name, Mode::from_raw_mode(0o755)).unwrap();
            let mode = Mode::from_raw_mode(0o644);
            fs::openat(&at, "f", OFlags::CREATE | OFlags::WRONLY, mode).unwrap();
            at = open_subdir(&at, name).unwrap();
        }
    }

    /// Builds a tree in the directory given.
    type Build = fn(&Path);

    /// The trees removed, one a line (the standard library's `remove_dir_all` recurses, with a
    /// descriptor per level: 30,000 levels overflow a 2 MiB stack).
    const SHAPES: &[(&str, Build)] = &[
        ("empty", |_| {}),
        ("3,000 levels", |dir| chain(dir, "d", 3_000)),
        ("exactly the walk depth", |dir| {
            chain(dir, "d", MAX_WALK_DEPTH)
        }),
        ("255-byte names past PATH_MAX", |dir| {
            chain(dir, &"n".repeat(255), 300);
        }),
        ("two deep chains and a name a moved one would take", |dir| {
            chain(dir, "a", 300);
            chain(dir, "b", 300);
            std::fs::create_dir(dir.join(".hookbox-removing-1")).unwrap();
        }),
        ("links to the tree and beyond", |dir| {
            std::fs::create_dir_all(dir.join("x/y")).unwrap();
            symlink("..", dir.join("x/y/up")).unwrap();
            symlink("/", dir.join("root")).unwrap();
            symlink("self", dir.join("self")).unwrap();
        }),
        ("2,000 directories side by side", |dir| {
            for i in 0..2_000 {
                std::fs::create_dir(dir.join(i.to_string())).unwrap();
                std::fs::write(dir.join(format!("{i}/f")), "x").unwrap();
            }
        }),
    ];

    #[test]
    fn remove_removes_every_shape_and_nothing_outside() {
        for (name, build) in SHAPES {
            let base = tempfile::tempdir().unwrap();
            let outside = base.path().join("outside");
            std::fs::write(&outside, "kept").unwrap();
            let tree = base.path().join("tree");
            std::fs::create_dir(&tree).unwrap();
            build(&tree);
            remove(&tree).unwrap_or_else(|err| panic!("{name}: {err}"));
            assert!(!tree.exists(), "{name}: left behind");
            assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept", "{name}");
        }
    }

    #[test]
    fn remove_of_a_missing_directory_is_done_and_of_a_link_is_refused() {
        let base = tempfile::tempdir().unwrap();
        remove(&base.path().join("missing")).unwrap();
        std::fs::create_dir(base.path().join("target")).unwrap();
        std::fs::write(base.path().join("target/f"), "kept").unwrap();
        symlink("target", base.path().join("link")).unwrap();
        assert!(remove(&base.path().join("link")).is_err());
        assert!(base.path().join("target/f").exists());
    }
}
