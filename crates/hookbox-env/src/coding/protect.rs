//! What the session's own tools must not change behind the user's back: the entries of the
//! working directory that make the host run code later (`.claude` settings and hooks, `.git`
//! config and hooks, `.agents` hooks), the directory a `.git` file's `gitdir:` names, and the
//! hook scripts and settings files the session loaded.
//!
//! Inside `Bash`'s sandbox they are bound read-only over the writable working directory; one
//! that does not exist yet is first created empty on the host (a *mask*), so that the sandbox
//! cannot create it. The directories between the working directory and a protected file are
//! bound again writable at their own place, which pins them: a mount point cannot be renamed or
//! removed, so the file's path cannot be pointed elsewhere. `Write` and `Edit` run on the host;
//! for them [`CodingTools::protected`] names the protected path a call would change, and the
//! session asks before it runs.

use std::path::{Component, Path, PathBuf};

use hookbox_exec::Bind;

use crate::coding::{CodingTools, Failure};

/// The entries of the working directory that are always protected.
pub const PROTECTED_ENTRIES: [&str; 3] = [".claude", ".git", ".agents"];

/// Extensions that make a path a hook script worth masking before it exists.
const SCRIPT_EXTENSIONS: [&str; 10] = [
    "sh", "bash", "py", "js", "mjs", "cjs", "ts", "rb", "pl", "php",
];

/// Symbolic links followed at most while resolving one path.
const MAX_LINKS: usize = 40;

/// Largest `.git` file read for its `gitdir:` line.
const MAX_GITFILE: u64 = 64 * 1024;

/// A path relative to the working directory, as its components.
type Relative = Vec<String>;

impl CodingTools {
    /// Protects `files` too (hook scripts, settings files, MCP server scripts and their
    /// directories; absolute or relative to the working directory), in the working directory
    /// or the added directory that holds each; those outside all of them are not the
    /// sandbox's to change and are skipped.
    pub fn protect_files(&mut self, files: impl IntoIterator<Item = PathBuf>) {
        for file in files {
            let absolute = if file.is_absolute() {
                super::paths::normalise(&file)
            } else {
                super::paths::normalise(&self.cwd.join(file))
            };
            let Some(relative) = beneath(&self.cwd, &absolute)
                .or_else(|| beneath(&self.named, &absolute))
                .filter(|relative| !relative.is_empty())
            else {
                if let Some(added) = self.added.iter_mut().find(|added| {
                    beneath(&added.cwd, &absolute)
                        .or_else(|| beneath(&added.named, &absolute))
                        .is_some()
                }) {
                    added.protect_files([absolute]);
                }
                continue;
            };
            if !self.protected_files.contains(&relative) {
                self.protected_files.push(relative);
            }
        }
    }

    /// The protected path that a `Write` or `Edit` of `file_path` would change (`None` if it
    /// changes none): the path is resolved the way the tool resolves it, through the symbolic
    /// links of its directories but not its last one (the tool replaces a link, never follows
    /// it).
    pub fn protected(&self, file_path: &str) -> Option<PathBuf> {
        if let Some(added) = self.holder(file_path) {
            return added.protected(file_path);
        }
        let located = self.locate("file_path", file_path).ok()?;
        let resolved = resolve(&self.cwd, &located.components)?;
        let gitdir = self.gitdir();
        let hit = PROTECTED_ENTRIES
            .iter()
            .map(|entry| vec![(*entry).to_owned()])
            .chain(gitdir)
            .chain(self.protected_files.iter().cloned())
            .find(|protected| resolved.starts_with(protected))?;
        Some(self.cwd.join(hit.join("/")))
    }

    /// The binds that protect what must stay read-only inside `Bash`'s sandbox (after the
    /// working directory's own bind), creating the masks of protected entries and hook
    /// scripts that do not exist yet. Refuses, with the reason, when a protected path goes
    /// through a symbolic link (the sandbox could point the link elsewhere).
    pub(crate) fn protection_binds(&self) -> Result<Vec<Bind>, Failure> {
        let mut binds = Binds {
            cwd: &self.cwd,
            list: Vec::new(),
        };
        for entry in PROTECTED_ENTRIES {
            let relative = vec![entry.to_owned()];
            self.check_no_links(&relative)?;
            let path = self.cwd.join(entry);
            if std::fs::symlink_metadata(&path).is_err() {
                std::fs::create_dir(&path).map_err(|error| {
                    format!(
                        "Bash: cannot create the empty directory {} that keeps the sandbox from \
                         creating it: {error}",
                        path.display()
                    )
                })?;
            }
            binds.read_only(&relative);
        }
        if let Some(gitdir) = self.gitdir() {
            self.check_no_links(&gitdir)?;
            binds.read_only(&gitdir);
        }
        for file in &self.protected_files {
            let path = self.cwd.join(file.join("/"));
            if binds.covers(&path) {
                continue;
            }
            self.check_no_links(file)?;
            if std::fs::symlink_metadata(&path).is_err() {
                if !is_script(file) {
                    continue;
                }
                // A directory where the script will be: running it fails as it failed before,
                // and nothing can be written there.
                self.root().make_dirs(file).map_err(|errno| {
                    let located = super::paths::Located {
                        shown: path.display().to_string(),
                        components: file.clone(),
                    };
                    self.errno_message("create", &located, errno)
                })?;
            }
            binds.read_only(file);
        }
        Ok(binds.list)
    }

    /// The directory a `.git` *file* names (`gitdir: PATH`), when it lies strictly beneath
    /// the working directory.
    fn gitdir(&self) -> Option<Relative> {
        let path = self.cwd.join(".git");
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > MAX_GITFILE {
            return None;
        }
        let text = std::fs::read_to_string(&path).ok()?;
        let named = text
            .lines()
            .find_map(|line| line.strip_prefix("gitdir:"))?
            .trim();
        let absolute = super::paths::normalise(&self.cwd.join(named));
        let relative = beneath(&self.cwd, &absolute).filter(|relative| !relative.is_empty())?;
        resolve(&self.cwd, &relative).filter(|resolved| !resolved.is_empty())
    }

    /// Refuses a protected path that goes through a symbolic link beneath the working
    /// directory.
    fn check_no_links(&self, relative: &[String]) -> Result<(), Failure> {
        let mut path = self.cwd.clone();
        for component in relative {
            path.push(component);
            if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_symlink()) {
                return Err(format!(
                    "Bash: {} is a symbolic link, and hookbox keeps {} read-only in the sandbox \
                     because the host runs what it holds (settings, git config and hooks, hook \
                     scripts); a link could be pointed elsewhere from inside. Replace the link \
                     with the directory or file it points to (outside the session), then retry",
                    path.display(),
                    self.cwd.join(relative.join("/")).display()
                ));
            }
        }
        Ok(())
    }
}

/// The binds being collected: read-only protected paths and the pinned directories above them.
struct Binds<'a> {
    cwd: &'a Path,
    list: Vec<Bind>,
}

impl Binds<'_> {
    /// Whether `path` lies in what is read-only already.
    fn covers(&self, path: &Path) -> bool {
        self.list
            .iter()
            .any(|bind| !bind.writable && path.starts_with(&bind.target))
    }

    /// Binds `relative` read-only, pinning the directories between the working directory and
    /// it; nothing when it lies in what is read-only already.
    fn read_only(&mut self, relative: &[String]) {
        let path = self.cwd.join(relative.join("/"));
        if self.covers(&path) {
            return;
        }
        for depth in 1..relative.len() {
            let dir = self.cwd.join(relative[..depth].join("/"));
            if !self.list.iter().any(|bind| bind.target == dir) {
                self.list.push(Bind {
                    host: dir.clone(),
                    target: dir,
                    writable: true,
                });
            }
        }
        self.list.push(Bind {
            host: path.clone(),
            target: path,
            writable: false,
        });
    }
}

/// `path` relative to `base` as components, if it lies beneath it (empty for `base` itself).
fn beneath(base: &Path, path: &Path) -> Option<Relative> {
    let rest = path.strip_prefix(base).ok()?;
    rest.components()
        .map(|component| match component {
            Component::Normal(name) => name.to_str().map(str::to_owned),
            _ => None,
        })
        .collect()
}

/// Whether `relative` names a script by its extension.
fn is_script(relative: &[String]) -> bool {
    relative
        .last()
        .and_then(|name| Path::new(name).extension())
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| SCRIPT_EXTENSIONS.contains(&extension))
}

/// `relative` (beneath `cwd`) with the symbolic links of its directories resolved, as the
/// kernel resolves it beneath `cwd` (the last component is not followed); `None` when it
/// leads outside `cwd` or through too many links.
fn resolve(cwd: &Path, relative: &[String]) -> Option<Relative> {
    let mut pending: std::collections::VecDeque<String> = relative.iter().cloned().collect();
    let mut out: Relative = Vec::new();
    let mut links = 0;
    while let Some(component) = pending.pop_front() {
        match component.as_str() {
            "" | "." => continue,
            ".." => {
                out.pop()?;
                continue;
            }
            _ => {}
        }
        let here = cwd.join(out.join("/")).join(&component);
        let is_link =
            std::fs::symlink_metadata(&here).is_ok_and(|meta| meta.file_type().is_symlink());
        if !is_link || pending.is_empty() {
            out.push(component);
            continue;
        }
        links += 1;
        if links > MAX_LINKS {
            return None;
        }
        let target = std::fs::read_link(&here).ok()?;
        let parts: Relative = if target.is_absolute() {
            out.clear();
            beneath(cwd, &super::paths::normalise(&target))?
        } else {
            target
                .components()
                .filter_map(|component| match component {
                    Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
                    Component::ParentDir => Some("..".to_owned()),
                    _ => None,
                })
                .collect()
        };
        for part in parts.into_iter().rev() {
            pending.push_front(part);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_known_by_their_extension() {
        assert!(is_script(&["hooks".into(), "check.sh".into()]));
        assert!(is_script(&["gate.py".into()]));
        assert!(!is_script(&["s".into(), "a".into(), "b".into()]));
        assert!(!is_script(&[".foo".into()]));
    }
}
