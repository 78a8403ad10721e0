//! Where the model can write: beneath the session's working directory and its added
//! directories (`--add-dir`), which its sandboxed `Bash` and its `Write` and `Edit` change.
//! A path is judged by its whole route, as the kernel resolves it: one that lies there once
//! resolved, or whose resolution passes through an entry there (a symbolic link the model could
//! point elsewhere, a directory it could replace by one), is the model's.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// Symbolic links followed at most while resolving one path (the kernel's limit).
const MAX_LINKS: usize = 40;

/// The directories the model writes in, canonical.
#[derive(Debug, Clone, Default)]
pub(crate) struct Writable {
    roots: Vec<PathBuf>,
}

/// Where a path lies, for the model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Place {
    /// Out of its reach: no step of its resolution lies where it writes.
    Safe,
    /// Resolved, it lies where the model writes (this path, with no link on the way there).
    Inside(PathBuf),
    /// Its resolution goes through this entry where the model writes (a symbolic link, or a
    /// directory followed by `..` or leading out again): the model decides where it leads.
    Through(PathBuf),
}

impl Writable {
    /// The model writes in `roots` (each an existing directory; one that cannot be resolved
    /// is left out, since no session can be built over it).
    pub(crate) fn new(roots: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            roots: roots
                .into_iter()
                .filter_map(|root| root.canonicalize().ok())
                .collect(),
        }
    }

    /// The writable directory that is `path` itself, if it is one.
    pub(crate) fn is_root(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| root == path)
    }

    /// Whether the model can change `path` (resolved, no link in it): it lies strictly beneath
    /// a writable directory.
    fn owns(&self, path: &Path) -> bool {
        self.roots
            .iter()
            .any(|root| path != root && path.starts_with(root))
    }

    /// Where absolute `path` lies, following its symbolic links one step at a time.
    pub(crate) fn place(&self, path: &Path) -> Place {
        let mut pending: VecDeque<OsString> = parts(path);
        let mut current = PathBuf::from("/");
        let mut entered: Option<PathBuf> = None;
        let mut links = 0;
        while let Some(part) = pending.pop_front() {
            if part == ".." {
                current.pop();
                continue;
            }
            let next = current.join(&part);
            let owned = self.owns(&next);
            if owned && entered.is_none() {
                entered = Some(next.clone());
            }
            let Ok(target) = std::fs::read_link(&next) else {
                current = next;
                continue;
            };
            links += 1;
            if owned || links > MAX_LINKS {
                return Place::Through(next);
            }
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            for part in parts(&target).into_iter().rev() {
                pending.push_front(part);
            }
        }
        match entered {
            None => Place::Safe,
            Some(entered) if current.starts_with(&entered) => Place::Inside(current),
            Some(entered) => Place::Through(entered),
        }
    }
}

/// The named parts of `path`, `..` kept (`.` and the root dropped).
fn parts(path: &Path) -> VecDeque<OsString> {
    path.components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kind of route, one line each: the path (relative to a scratch directory holding
    /// `project/` (writable), `outside/`, and links between them) and where it lies.
    #[test]
    fn every_route_into_the_project_is_the_models() {
        let scratch = tempfile::tempdir().unwrap();
        let base = scratch.path().canonicalize().unwrap();
        let make = |relative: &str| std::fs::create_dir_all(base.join(relative)).unwrap();
        let file = |relative: &str| std::fs::write(base.join(relative), "x").unwrap();
        let link = |relative: &str, target: &str| {
            std::os::unix::fs::symlink(target, base.join(relative)).unwrap();
        };
        make("project/sub");
        make("outside/dir");
        file("project/cfg.json");
        file("project/sub/cfg.json");
        file("outside/cfg.json");
        link("outside/into-project", "../project/cfg.json");
        link("outside/into-sub", "../project/sub");
        link("project/out-link", "../outside");
        link("outside/chain", "../project/out-link");
        let writable = Writable::new([base.join("project")]);
        let inside = |relative: &str| Place::Inside(base.join(relative));
        let through = |relative: &str| Place::Through(base.join(relative));
        let cases: Vec<(&str, Place)> = vec![
            ("project/cfg.json", inside("project/cfg.json")),
            ("project/sub/cfg.json", inside("project/sub/cfg.json")),
            ("project/./sub/../cfg.json", through("project/sub")),
            ("project/missing.json", inside("project/missing.json")),
            ("outside/cfg.json", Place::Safe),
            ("outside/dir/../cfg.json", Place::Safe),
            ("outside/into-project", inside("project/cfg.json")),
            ("outside/into-sub/cfg.json", inside("project/sub/cfg.json")),
            ("project/out-link/cfg.json", through("project/out-link")),
            ("outside/chain/cfg.json", through("project/out-link")),
            ("project/sub/../../outside/cfg.json", through("project/sub")),
            ("project", Place::Safe),
        ];
        for (relative, expected) in cases {
            assert_eq!(writable.place(&base.join(relative)), expected, "{relative}");
        }
        assert!(writable.is_root(&base.join("project")));
        assert!(!writable.is_root(&base.join("project/sub")));
    }
}
