//! Filesystem access confined to one directory: every path is resolved by the kernel
//! (`openat2`) relative to a directory fd, never checked first and opened later by name.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self, AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};
use rustix::io::Errno;

/// A directory fd and how paths below it are resolved.
#[derive(Debug)]
pub(crate) struct Confined {
    dir: OwnedFd,
    resolve: ResolveFlags,
}

impl Confined {
    /// `dir` (a trusted host path) as a root: symlinks and `..` are resolved as if `dir` were
    /// `/`, so absolute links point back inside it (`RESOLVE_IN_ROOT`).
    pub(crate) fn in_root(dir: &Path) -> Result<Self, Errno> {
        Self::from_host_dir(dir, ResolveFlags::IN_ROOT | ResolveFlags::NO_MAGICLINKS)
    }

    /// `dir` (a trusted host path) with paths below it confined strictly: anything leaving it,
    /// through `..` or a symlink (absolute links included), fails with `EXDEV`
    /// (`RESOLVE_BENEATH`).
    pub(crate) fn strictly_beneath(dir: &Path) -> Result<Self, Errno> {
        Self::from_host_dir(dir, ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS)
    }

    /// Opens the trusted host directory `dir`, resolving paths below it with `resolve`.
    fn from_host_dir(dir: &Path, resolve: ResolveFlags) -> Result<Self, Errno> {
        let dir = fs::open(
            dir,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { dir, resolve })
    }

    /// The directory `name` (one component, itself not a symlink) of this one, with paths below
    /// it confined strictly: anything leaving it, through `..` or a symlink, fails with `EXDEV`
    /// (`RESOLVE_BENEATH`).
    pub(crate) fn beneath(&self, name: &str) -> Result<Self, Errno> {
        let fd = fs::openat2(
            &self.dir,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )?;
        Ok(Self {
            dir: fd,
            resolve: ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        })
    }

    /// The directory `name` (one component, itself not a symlink) of this one, with paths below
    /// it opened exactly as written: no `..` out of it, no symbolic link anywhere (`ELOOP`),
    /// for paths already resolved once.
    pub(crate) fn exactly_beneath(&self, name: &str) -> Result<Self, Errno> {
        let mut area = self.beneath(name)?;
        area.resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
        Ok(area)
    }

    /// Opens `rel` below this directory exactly as written: no `..` out of it and no symbolic
    /// link anywhere, the last component included (`ELOOP`), whatever this directory's rules.
    pub(crate) fn open_exact(
        &self,
        rel: &str,
        flags: OFlags,
        mode: Mode,
    ) -> Result<OwnedFd, Errno> {
        fs::openat2(
            &self.dir,
            rel,
            flags | OFlags::CLOEXEC,
            mode,
            ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
        )
    }

    /// Opens `rel` (relative, `/`-separated, no `..`) with `flags`, resolved under the rules of
    /// this directory. `O_CLOEXEC` is always added.
    pub(crate) fn open(&self, rel: &str, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        fs::openat2(&self.dir, rel, flags | OFlags::CLOEXEC, mode, self.resolve)
    }

    /// Opens the directory made of `components` for reading (this directory when empty).
    pub(crate) fn open_dir(&self, components: &[String]) -> Result<OwnedFd, Errno> {
        self.open(
            &relative(components),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
    }

    /// Opens the directory made of `components`, creating missing ones (mode 0755) one at a
    /// time, each creation relative to its confined parent.
    pub(crate) fn make_dirs(&self, components: &[String]) -> Result<OwnedFd, Errno> {
        for depth in 1..=components.len() {
            match self.open_dir(&components[..depth]) {
                Ok(_) => {}
                Err(Errno::NOENT) => {
                    let parent = self.open_dir(&components[..depth - 1])?;
                    match fs::mkdirat(&parent, components[depth - 1].as_str(), dir_mode()) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(err) => return Err(err),
                    }
                }
                Err(err) => return Err(err),
            }
        }
        self.open_dir(components)
    }
}

impl AsFd for Confined {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.dir.as_fd()
    }
}

/// `components` joined for `openat2` (`.` when empty).
pub(crate) fn relative(components: &[String]) -> String {
    if components.is_empty() {
        ".".to_owned()
    } else {
        components.join("/")
    }
}

/// The mode of directories hookbox creates.
pub(crate) fn dir_mode() -> Mode {
    Mode::from_raw_mode(0o755)
}

/// The names in directory `dir`, without `.` and `..`, sorted (listings are deterministic).
pub(crate) fn sorted_names(dir: impl AsFd) -> Result<Vec<String>, Errno> {
    let mut names = Vec::new();
    for entry in fs::Dir::read_from(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        if name != "." && name != ".." {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// What `name` in `dir` is, without following it if it is a symlink; `None` if absent.
pub(crate) fn entry(dir: impl AsFd, name: &str) -> Result<Option<Stat>, Errno> {
    match fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::NOENT) => Ok(None),
        Err(err) => Err(err),
    }
}

/// The file type recorded in `stat`.
pub(crate) fn kind(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn in_root_resolves_absolute_links_inside_and_beneath_refuses_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        std::fs::write(dir.path().join("inside"), "in").unwrap();
        symlink("/inside", dir.path().join("workspace/link")).unwrap();
        let root = Confined::in_root(dir.path()).unwrap();
        root.open("workspace/link", OFlags::RDONLY, Mode::empty())
            .unwrap();
        let workspace = root.beneath("workspace").unwrap();
        assert_eq!(
            workspace
                .open("link", OFlags::RDONLY, Mode::empty())
                .unwrap_err(),
            Errno::XDEV
        );
    }

    #[test]
    fn make_dirs_creates_the_missing_chain() {
        let dir = tempfile::tempdir().unwrap();
        let root = Confined::in_root(dir.path()).unwrap();
        let components = ["a", "b", "c"].map(String::from);
        root.make_dirs(&components).unwrap();
        assert!(dir.path().join("a/b/c").is_dir());
        root.make_dirs(&components).unwrap();
    }
}
