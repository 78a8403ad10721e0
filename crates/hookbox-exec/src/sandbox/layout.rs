//! The sandbox's layout checked against the host: the root's top-level entries and the binds.

use std::path::{Path, PathBuf};

use super::{Bind, IsolationError};

/// Names a root entry may not have: they are the sandbox's own.
const RESERVED: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "etc", "proc", "dev", "tmp", "sys",
    "oldroot", "newroot",
];

/// The canonical form of `root` and its top-level entries (sorted by name), checked to hold
/// `workspace` and nothing that would hide the sandbox's own directories.
pub(super) fn root_entries(
    root_path: &Path,
) -> Result<(PathBuf, Vec<(String, std::fs::FileType)>), IsolationError> {
    let bad_root = |reason: String| IsolationError::Root {
        path: root_path.to_path_buf(),
        reason,
    };
    let root = root_path
        .canonicalize()
        .map_err(|error| bad_root(error.to_string()))?;
    if !root.join("workspace").is_dir() {
        return Err(bad_root("it has no `workspace` directory".into()));
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&root).map_err(|error| bad_root(error.to_string()))? {
        let entry = entry.map_err(|error| bad_root(error.to_string()))?;
        let name = entry.file_name();
        let Some(text) = name.to_str() else {
            return Err(bad_root(format!("entry {name:?} is not UTF-8")));
        };
        if RESERVED.contains(&text) {
            return Err(bad_root(format!(
                "entry `{text}` would hide the sandbox's own `/{text}`"
            )));
        }
        let kind = entry
            .file_type()
            .map_err(|error| bad_root(error.to_string()))?;
        entries.push((text.to_owned(), kind));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((root, entries))
}

/// The canonical path of the host directory `dir`.
pub(super) fn canonical_dir(dir: &Path) -> Result<PathBuf, IsolationError> {
    let bad = |reason: String| IsolationError::Bind {
        path: dir.to_path_buf(),
        reason,
    };
    let host = dir.canonicalize().map_err(|error| bad(error.to_string()))?;
    if !host.is_dir() {
        return Err(bad("it is not a directory".into()));
    }
    Ok(host)
}

/// A bind checked and resolved by [`checked_binds`].
pub(super) struct CheckedBind {
    /// The canonical host path.
    pub(super) host: PathBuf,
    /// The target inside.
    pub(super) target: PathBuf,
    pub(super) writable: bool,
    pub(super) is_dir: bool,
    /// Whether it shows a part of an earlier bind again.
    pub(super) nested: bool,
}

/// Checks every bind (see [`Bind`]) against the sandbox's own directories, the root's
/// `entries` and each other; canonicalises the host paths.
pub(super) fn checked_binds(
    binds: &[Bind],
    entries: &[(String, std::fs::FileType)],
) -> Result<Vec<CheckedBind>, IsolationError> {
    use std::path::Component;
    let mut checked: Vec<CheckedBind> = Vec::new();
    for bind in binds {
        let bad = |reason: String| IsolationError::Bind {
            path: bind.target.clone(),
            reason,
        };
        let mut components = bind.target.components();
        if components.next() != Some(Component::RootDir) {
            return Err(bad("the target must be an absolute path".into()));
        }
        let names: Vec<&str> = components
            .map(|component| match component {
                Component::Normal(name) => name
                    .to_str()
                    .ok_or_else(|| bad("the target is not UTF-8".into())),
                _ => Err(bad("the target may not hold `.` or `..`".into())),
            })
            .collect::<Result<_, _>>()?;
        let Some(first) = names.first() else {
            return Err(bad("the target may not be `/`".into()));
        };
        let below_tmp = *first == "tmp" && names.len() > 1;
        if RESERVED.contains(first) && !below_tmp {
            return Err(bad(format!(
                "the target would hide or lie in the sandbox's own `/{first}`"
            )));
        }
        if entries.iter().any(|(name, _)| name == first) {
            return Err(bad(format!(
                "the target lies in `/{first}`, an entry of the sandbox root"
            )));
        }
        let host = bind
            .host
            .canonicalize()
            .map_err(|error| IsolationError::Bind {
                path: bind.host.clone(),
                reason: error.to_string(),
            })?;
        if let Some(other) = checked.iter().find(|other| {
            other.target.starts_with(&bind.target)
                || (bind.target.starts_with(&other.target) && !same_place(other, &host, bind))
        }) {
            return Err(bad(format!(
                "binds may not nest (this one and `{}`), except to bind a part of an earlier \
                 bind again at its own place",
                other.target.display()
            )));
        }
        let meta = std::fs::metadata(&host).map_err(|error| IsolationError::Bind {
            path: bind.host.clone(),
            reason: error.to_string(),
        })?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(IsolationError::Bind {
                path: bind.host.clone(),
                reason: "it is neither a directory nor a regular file".into(),
            });
        }
        let nested = checked
            .iter()
            .any(|other| bind.target.starts_with(&other.target));
        checked.push(CheckedBind {
            host,
            nested,
            target: bind.target.clone(),
            writable: bind.writable,
            is_dir: meta.is_dir(),
        });
    }
    Ok(checked)
}

/// Whether `bind` (whose host path is `host`, canonical) shows, beneath the earlier bind
/// `outer`, the very part of `outer` that is there anyway: a re-bind that only changes
/// whether that part is writable, or pins it (a mount point cannot be renamed or removed).
fn same_place(outer: &CheckedBind, host: &Path, bind: &Bind) -> bool {
    outer.is_dir
        && bind
            .target
            .strip_prefix(&outer.target)
            .is_ok_and(|below| !below.as_os_str().is_empty() && outer.host.join(below) == host)
}
