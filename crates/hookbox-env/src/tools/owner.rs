//! An environment's files as its owner sees them through the Environments API: listings with
//! metadata, byte-level downloads and uploads.
//!
//! The same confinement as the model's file tools: reads resolve paths in the root
//! (`RESOLVE_IN_ROOT`), writes resolve beneath their top-level entry (`RESOLVE_BENEATH`) and
//! go through a temporary file renamed over the target. The owner may write wherever a source
//! could (any top-level entry but the sandbox's system directories), `/.agents` included.

use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;

use hookbox_store::Timestamp;
use rustix::fs::{self, AtFlags, FileType, Mode, OFlags, StatxFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::agents;
use crate::confined::{self, Confined};
use crate::environment::Environment;
use crate::sandbox_path::SandboxPath;
use crate::target;
use crate::tools::error::{ToolError, from_errno};
use crate::tools::files::Writable;
use crate::tools::write;
use crate::tree::{NotEntered, Walk, limits_note};

/// The operation name errors carry.
const FILES: &str = "files";

/// Most entries one listing walks; past it (or past 32 MiB of paths) the listing is cut short
/// (sorted, so stable).
pub const MAX_LISTED: usize = 100_000;

/// One file or directory of an environment (the API's `EnvironmentFile`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvironmentFile {
    /// The path relative to the environment root, e.g. `workspace/src/main.py`.
    pub path: String,
    /// The last component, e.g. `main.py`.
    pub name: String,
    /// `file` or `directory` (a symbolic link is reported as a `file` of its own size).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Size in bytes (0 for directories).
    pub size_bytes: u64,
    /// The MIME type guessed from the name; empty for directories.
    pub mime_type: String,
    /// Creation time (ISO-8601 UTC); the modification time where the filesystem keeps none.
    pub created: String,
    /// Modification time (ISO-8601 UTC).
    pub modified: String,
}

/// The files of one environment, for its owner.
#[derive(Debug)]
pub struct EnvironmentFiles {
    root: Confined,
    /// The `.agents` directories the owner has not supplied (sandbox paths).
    not_owners: Vec<String>,
}

impl EnvironmentFiles {
    /// The files of `environment`.
    pub fn open(environment: &Environment) -> Result<Self, ToolError> {
        let root = Confined::in_root(environment.root())
            .map_err(|errno| from_errno(FILES, "open the environment root", "/", errno))?;
        Ok(Self {
            root,
            not_owners: environment.not_owners_agents(),
        })
    }

    /// The entries under `path` (relative to the root; `""` or `/` is the root): a directory's
    /// entries (all descendants when `recursive`), or the file itself. Sorted by path; at most
    /// [`MAX_LISTED`].
    pub fn list(&self, path: &str, recursive: bool) -> Result<Vec<EnvironmentFile>, ToolError> {
        let path = parse(if path.is_empty() { "/" } else { path })?;
        let shown = path.to_string();
        let fd = self
            .root
            .open(
                &path.relative(),
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
                Mode::empty(),
            )
            .map_err(|errno| from_errno(FILES, "open", &shown, errno))?;
        let stat = fs::fstat(&fd).map_err(|errno| from_errno(FILES, "inspect", &shown, errno))?;
        if confined::kind(&stat) != FileType::Directory {
            let name = path.components().last().cloned().unwrap_or_default();
            let meta = fs::statx(&fd, "", AtFlags::EMPTY_PATH, stat_mask())
                .map_err(|errno| from_errno(FILES, "inspect", &shown, errno))?;
            return Ok(vec![describe(&path, name, &meta)]);
        }
        let mut entries = walk(fd, &path, recursive)?;
        entries.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(entries)
    }

    /// Opens the regular file at `path` for reading and returns it with its size.
    pub fn open_file(&self, path: &str) -> Result<(File, u64), ToolError> {
        let path = parse(path)?;
        let shown = path.to_string();
        // O_NONBLOCK: opening a FIFO the sandbox made must not hang the host.
        let fd = self
            .root
            .open(
                &path.relative(),
                OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
                Mode::empty(),
            )
            .map_err(|errno| from_errno(FILES, "open", &shown, errno))?;
        let stat = fs::fstat(&fd).map_err(|errno| from_errno(FILES, "inspect", &shown, errno))?;
        match confined::kind(&stat) {
            FileType::RegularFile => {}
            FileType::Directory => {
                return Err(ToolError::IsDirectory {
                    tool: FILES,
                    path: shown,
                    hint: "list it instead of downloading it",
                });
            }
            _ => {
                return Err(ToolError::WrongType {
                    tool: FILES,
                    path: shown,
                    expected: "a regular file",
                });
            }
        }
        Ok((File::from(fd), u64::try_from(stat.st_size).unwrap_or(0)))
    }

    /// Checks that `path` names a file the owner may write and, unless `overwrite`, that
    /// nothing is there yet; returns the normalised path (relative to the root).
    pub fn check_writable(&self, path: &str, overwrite: bool) -> Result<String, ToolError> {
        let path = parse(path)?;
        let target = self.writable(&path)?;
        if let Ok(parent) = target.area.open_dir(target.parent) {
            match confined::entry(&parent, target.name) {
                Ok(Some(stat)) if confined::kind(&stat) == FileType::Directory => {
                    return Err(is_directory(&path));
                }
                Ok(Some(_)) if !overwrite => return Err(exists(&path)),
                Ok(_) => {}
                Err(errno) => return Err(target.error(FILES, "inspect", errno)),
            }
        }
        Ok(path.relative())
    }

    /// Writes what `content` yields to `path` (creating missing parent directories), replacing
    /// an existing file only when `overwrite`, and returns the new file's entry. A write into a
    /// `.agents` directory the owner did not supply is refused unless the owner may add it
    /// (see `agents::owner_may_add`); the caller then records the directory as the owner's.
    pub fn write(
        &self,
        path: &str,
        content: &mut dyn Read,
        overwrite: bool,
    ) -> Result<EnvironmentFile, ToolError> {
        let path = parse(path)?;
        let target = self.writable(&path)?;
        let parent = target
            .area
            .make_dirs(target.parent)
            .map_err(|errno| target.error(FILES, "create the parent directories of", errno))?;
        let mode = match confined::entry(&parent, target.name) {
            Ok(Some(stat)) if confined::kind(&stat) == FileType::Directory => {
                return Err(is_directory(&path));
            }
            Ok(Some(_)) if !overwrite => return Err(exists(&path)),
            Ok(Some(stat)) if confined::kind(&stat) == FileType::RegularFile => {
                stat.st_mode & 0o777
            }
            Ok(_) => 0o644,
            Err(errno) => return Err(target.error(FILES, "inspect", errno)),
        };
        write::replace(FILES, &parent, &target, content, Mode::from_raw_mode(mode))?;
        let meta = fs::statx(&parent, target.name, AtFlags::SYMLINK_NOFOLLOW, stat_mask())
            .map_err(|errno| target.error(FILES, "inspect", errno))?;
        Ok(describe(&path, target.name.to_owned(), &meta))
    }

    /// The writable location of `path`: its top-level entry (created when missing) with strict
    /// confinement below it.
    fn writable<'p>(&self, path: &'p SandboxPath) -> Result<Writable<'p>, ToolError> {
        let shown = path.to_string();
        if let Some(dir) = self.not_owners.iter().find(|dir| {
            !agents::owner_may_add(dir) && agents::lies_in(&shown, std::slice::from_ref(dir))
        }) {
            return Err(ToolError::NotTheOwners {
                tool: FILES,
                problem: agents::not_the_owners(dir),
            });
        }
        let Some(top) = path.top() else {
            return Err(is_directory(path));
        };
        if target::is_system(top) {
            return Err(ToolError::ReadOnly {
                tool: FILES,
                path: shown,
                writable: "paths outside the sandbox's system directories (e.g. workspace/…)",
            });
        }
        let Some((name, parent)) = path.components()[1..].split_last() else {
            return Err(ToolError::InvalidPath {
                tool: FILES,
                problem: format!("`{shown}` is a top-level entry; name a file inside it"),
            });
        };
        let area = match self.root.beneath(top) {
            Ok(area) => area,
            Err(Errno::NOENT) => {
                let root = self
                    .root
                    .open_dir(&[])
                    .map_err(|errno| from_errno(FILES, "open", "/", errno))?;
                match fs::mkdirat(&root, top, confined::dir_mode()) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(from_errno(FILES, "create", &shown, errno)),
                }
                self.root
                    .beneath(top)
                    .map_err(|errno| from_errno(FILES, "open", &shown, errno))?
            }
            Err(Errno::LOOP | Errno::XDEV) => {
                return Err(ToolError::LeavesArea {
                    tool: FILES,
                    path: shown,
                    area: top.to_owned(),
                });
            }
            Err(errno) => return Err(from_errno(FILES, "open", &shown, errno)),
        };
        Ok(Writable {
            area,
            top: top.to_owned(),
            parent,
            name,
            path,
        })
    }
}

/// Parses an API path: relative to the root, a leading `/` accepted.
fn parse(text: &str) -> Result<SandboxPath, ToolError> {
    SandboxPath::parse(text, "").map_err(|problem| ToolError::InvalidPath {
        tool: FILES,
        problem: problem.explain(text),
    })
}

/// The error for a path that is a directory where a file is needed.
fn is_directory(path: &SandboxPath) -> ToolError {
    ToolError::IsDirectory {
        tool: FILES,
        path: path.to_string(),
        hint: "name a file path inside it",
    }
}

/// The error for a file that exists when overwriting was not asked for.
fn exists(path: &SandboxPath) -> ToolError {
    ToolError::AlreadyExists {
        tool: FILES,
        path: path.to_string(),
    }
}

/// What `statx` is asked for.
fn stat_mask() -> StatxFlags {
    StatxFlags::BASIC_STATS | StatxFlags::BTIME
}

/// The entry for `path` (named `name`) from its `statx` record.
fn describe(path: &SandboxPath, name: String, meta: &fs::Statx) -> EnvironmentFile {
    let kind = FileType::from_raw_mode(u32::from(meta.stx_mode));
    let directory = kind == FileType::Directory;
    let seconds = |t: &fs::StatxTimestamp| t.tv_sec.max(0);
    let modified = seconds(&meta.stx_mtime);
    let created = if meta.stx_mask & StatxFlags::BTIME.bits() != 0 {
        seconds(&meta.stx_btime)
    } else {
        modified
    };
    EnvironmentFile {
        path: path.relative(),
        mime_type: if directory {
            String::new()
        } else {
            mime_type(&name).to_owned()
        },
        name,
        kind: if directory { "directory" } else { "file" },
        size_bytes: if directory { 0 } else { meta.stx_size },
        created: Timestamp::from_unix_seconds(created).to_string(),
        modified: Timestamp::from_unix_seconds(modified).to_string(),
    }
}

/// The entries below the directory `dir` (at `at`): its own, and with `recursive` every
/// descendant's, descending into real directories only.
fn walk(
    dir: OwnedFd,
    at: &SandboxPath,
    recursive: bool,
) -> Result<Vec<EnvironmentFile>, ToolError> {
    let mut walk = Walk::new(dir, at.clone())
        .map_err(|errno| from_errno(FILES, "list", &at.to_string(), errno))?;
    let mut out = Vec::new();
    while let Some((name, path)) = walk.next() {
        if out.len() >= MAX_LISTED {
            break;
        }
        let fail = |errno| from_errno(FILES, "list", &path.to_string(), errno);
        let meta = match fs::statx(
            walk.dir(),
            name.as_str(),
            AtFlags::SYMLINK_NOFOLLOW,
            stat_mask(),
        ) {
            Ok(meta) => meta,
            // Gone since the directory was read: skip it.
            Err(Errno::NOENT) => continue,
            Err(errno) => return Err(fail(errno)),
        };
        let directory = FileType::from_raw_mode(u32::from(meta.stx_mode)) == FileType::Directory;
        out.push(describe(&path, name.clone(), &meta));
        if recursive && directory {
            match walk.enter(&name, path.clone()) {
                Ok(()) => {}
                Err(NotEntered::TooDeep) => {
                    return Err(ToolError::TooDeep {
                        tool: FILES,
                        path: path.to_string(),
                        limits: limits_note(),
                    });
                }
                Err(NotEntered::Failed(errno)) => return Err(fail(errno)),
            }
        }
    }
    Ok(out)
}

/// The MIME type of a file named `name`, from its extension (`application/octet-stream` when
/// unknown).
pub fn mime_type(name: &str) -> &'static str {
    let extension = name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    match extension.as_str() {
        "txt" | "log" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "py" => "text/x-python",
        "rs" => "text/x-rust",
        "sh" => "application/x-sh",
        "json" => "application/json",
        "toml" => "application/toml",
        "yaml" | "yml" => "application/yaml",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "tar" => "application/x-tar",
        "gz" | "tgz" => "application/gzip",
        "wasm" => "application/wasm",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_follow_the_extension() {
        assert_eq!(mime_type("main.py"), "text/x-python");
        assert_eq!(mime_type("A.PNG"), "image/png");
        assert_eq!(mime_type("Makefile"), "application/octet-stream");
    }
}
