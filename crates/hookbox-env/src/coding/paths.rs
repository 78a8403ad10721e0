//! Where a tool's path argument lies: beneath the working directory, or refused.

use std::fs::File;
use std::io::Read as _;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::coding::{CodingTools, Failure};
use crate::confined;

/// Largest file `Read` and `Edit` load: 10 MiB.
pub(crate) const MAX_FILE: u64 = 10 * 1024 * 1024;

/// `path` with `.` and `..` resolved lexically (never above `/`).
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if out.parent().is_some() {
                    out.pop();
                }
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// A path beneath the working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Located {
    /// The absolute host path, as shown to the model.
    pub(crate) shown: String,
    /// Its components below the working directory (empty for the directory itself).
    pub(crate) components: Vec<String>,
}

impl Located {
    /// The path relative to the working directory, for `openat2` (`.` for itself).
    pub(crate) fn relative(&self) -> String {
        confined::relative(&self.components)
    }
}

impl CodingTools {
    /// Resolves the path argument `field` (`text`) against the working directory, refusing one
    /// outside it.
    pub(crate) fn locate(&self, field: &str, text: &str) -> Result<Located, Failure> {
        if text.is_empty() {
            return Err(format!("`{field}` must not be empty"));
        }
        if text.contains('\0') {
            return Err(format!("`{field}` must not contain a NUL byte"));
        }
        let given = Path::new(text);
        let path = if given.is_absolute() {
            normalise(given)
        } else {
            normalise(&self.cwd().join(given))
        };
        let rel = path
            .strip_prefix(self.cwd())
            .or_else(|_| path.strip_prefix(&self.named))
            .map_err(|_| {
                format!(
                    "{text} is outside the session's working directory {}",
                    self.cwd().display()
                )
            })?;
        let components = rel
            .components()
            .map(|component| component.as_os_str().to_string_lossy().into_owned())
            .collect();
        Ok(Located {
            shown: self.cwd().join(rel).display().to_string(),
            components,
        })
    }

    /// The message for `errno` from `action` on `path`.
    pub(crate) fn errno_message(&self, action: &str, path: &Located, errno: Errno) -> Failure {
        let shown = &path.shown;
        match errno {
            Errno::NOENT => format!("File does not exist: {shown}"),
            Errno::XDEV => format!(
                "{shown} goes through a symbolic link that leads outside the session's working \
                 directory {}; use the link's target path if it is inside",
                self.cwd().display()
            ),
            Errno::LOOP => format!("{shown} goes through too many symbolic links"),
            Errno::NOTDIR => format!("a parent directory of {shown} is not a directory"),
            Errno::ISDIR => format!("{shown} is a directory, not a file"),
            other => format!("cannot {action} {shown}: {}", std::io::Error::from(other)),
        }
    }

    /// Reads the regular file at `path` (at most [`MAX_FILE`] bytes); returns its bytes and
    /// permission bits.
    pub(crate) fn read_file(&self, path: &Located) -> Result<(Vec<u8>, u32), Failure> {
        // O_NONBLOCK: opening a FIFO the sandbox made must not hang the host.
        let fd = self
            .root()
            .open(
                &path.relative(),
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
                Mode::empty(),
            )
            .map_err(|errno| self.errno_message("open", path, errno))?;
        let stat =
            rustix::fs::fstat(&fd).map_err(|errno| self.errno_message("inspect", path, errno))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => {
                return Err(format!("{} is a directory, not a file", path.shown));
            }
            _ => return Err(format!("{} is not a regular file", path.shown)),
        }
        let size = u64::try_from(stat.st_size).unwrap_or_default();
        let too_large = |size| {
            format!(
                "{} is {size} bytes, more than the {MAX_FILE}-byte limit; use Bash (e.g. `head`, \
                 `sed -n`) or Grep to look at parts of it",
                path.shown
            )
        };
        if size > MAX_FILE {
            return Err(too_large(size));
        }
        let mut bytes = Vec::new();
        File::from(fd)
            .take(MAX_FILE + 1)
            .read_to_end(&mut bytes)
            .map_err(|error| format!("cannot read {}: {error}", path.shown))?;
        if bytes.len() as u64 > MAX_FILE {
            return Err(too_large(bytes.len() as u64));
        }
        Ok((bytes, stat.st_mode & 0o7777))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_resolves_dots_lexically() {
        assert_eq!(normalise(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(normalise(Path::new("/../../x")), Path::new("/x"));
        assert_eq!(normalise(Path::new("/a/b/")), Path::new("/a/b"));
    }
}
