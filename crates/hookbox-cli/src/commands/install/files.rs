//! The files `hookbox install` touches: the agent's hook file (never through a symbolic link,
//! replaced atomically) and its own records in `$HOOKBOX_HOME`: `installs.json` (what was
//! installed where) and `install-backups/` (each original, byte for byte). The backups live
//! in `$HOOKBOX_HOME`, not next to the hook file, because the agent can write its project: a
//! backup there could be swapped for hooks of the model's own, restored by `--uninstall`.

use std::collections::BTreeMap;
use std::io::{ErrorKind, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

/// One install: what `--uninstall` needs to undo it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Record {
    /// The agent (`claude-code`…).
    pub(super) agent: String,
    /// `user` or `project`.
    pub(super) scope: String,
    /// The command the entries run, before Copilot's `--event`.
    pub(super) command: String,
    /// The original file, under `install-backups/`; `None`: there was no file.
    pub(super) backup: Option<String>,
    /// The directories hookbox created for the file (removed again when empty).
    pub(super) created_dirs: Vec<PathBuf>,
    /// The file as hookbox last wrote it (to tell whether someone edited it since).
    pub(super) installed: String,
}

/// The install records in `$HOOKBOX_HOME`, by hook file path.
pub(super) struct Records {
    /// `$HOOKBOX_HOME`.
    home: PathBuf,
    /// Hook file path → its install.
    pub(super) by_path: BTreeMap<String, Record>,
}

impl Records {
    /// Reads `$HOOKBOX_HOME/installs.json` (none yet: no records).
    pub(super) fn read(home: &Path) -> anyhow::Result<Self> {
        let path = home.join("installs.json");
        let by_path = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "{}: $: not hookbox's install records; move it away and reinstall",
                    path.display()
                )
            })?,
            Err(err) if err.kind() == ErrorKind::NotFound => BTreeMap::new(),
            Err(err) => return Err(err).context(format!("cannot read {}", path.display())),
        };
        Ok(Self {
            home: home.to_path_buf(),
            by_path,
        })
    }

    /// Writes the records back.
    pub(super) fn write(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.home)
            .with_context(|| format!("cannot create {}", self.home.display()))?;
        let mut json = serde_json::to_string_pretty(&self.by_path)?;
        json.push('\n');
        write_atomically(&self.home.join("installs.json"), json.as_bytes(), 0o600)
    }

    /// Keeps `original`, the hook file `config` before hookbox changed it; returns the
    /// backup's name under `install-backups/`.
    pub(super) fn back_up(&self, config: &Path, original: &[u8]) -> anyhow::Result<String> {
        let dir = self.home.join("install-backups");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        // The path, made one file name without collisions: `%` → `%25` first, then `/` → `%2F`.
        let name = config
            .display()
            .to_string()
            .replace('%', "%25")
            .replace('/', "%2F");
        write_atomically(&dir.join(&name), original, 0o600)?;
        Ok(name)
    }

    /// The path of backup `name`.
    pub(super) fn backup_path(&self, name: &str) -> PathBuf {
        self.home.join("install-backups").join(name)
    }
}

/// Refuses a hook file reached through a symbolic link: `dirs` (under `base`) and the file
/// itself must be real directories and a regular file (or not exist yet), so hookbox never
/// writes somewhere other than the path it names.
pub(super) fn check_no_links(base: &Path, dirs: &[&str], file: &Path) -> anyhow::Result<()> {
    let mut path = base.to_path_buf();
    let mut steps: Vec<PathBuf> = dirs
        .iter()
        .map(|dir| {
            path.push(dir);
            path.clone()
        })
        .collect();
    steps.push(file.to_path_buf());
    for step in steps {
        let metadata = match std::fs::symlink_metadata(&step) {
            Ok(metadata) => metadata,
            Err(err) if err.kind() == ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(err).context(format!("cannot inspect {}", step.display())),
        };
        if metadata.file_type().is_symlink() {
            let target = std::fs::read_link(&step).unwrap_or_default();
            bail!(
                "{} is a symbolic link (to {}); hookbox install does not write through links: \
                 install where the link points (e.g. `--project` of that directory) or replace \
                 the link with a regular file; nothing was written",
                step.display(),
                target.display()
            );
        }
        let expected_dir = step != file;
        if expected_dir != metadata.is_dir() || (!expected_dir && !metadata.is_file()) {
            bail!(
                "{} is not a {}; nothing was written",
                step.display(),
                if expected_dir {
                    "directory"
                } else {
                    "regular file"
                }
            );
        }
    }
    Ok(())
}

/// The directories of `dirs` (under `base`) that do not exist yet, created; in creation order.
pub(super) fn create_dirs(base: &Path, dirs: &[&str]) -> anyhow::Result<Vec<PathBuf>> {
    let mut path = base.to_path_buf();
    let mut created = Vec::new();
    for dir in dirs {
        path.push(dir);
        match std::fs::create_dir(&path) {
            Ok(()) => created.push(path.clone()),
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err).context(format!("cannot create {}", path.display())),
        }
    }
    Ok(created)
}

/// The bytes of `path`, `None` when it does not exist; a FIFO, device or oversized file there
/// is an error at once (a project's agent settings can be anything the agent wrote).
pub(super) fn read_if_present(path: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    hookbox_hooks::read_policy_file(path, hookbox_hooks::Links::Follow)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// Replaces `path` with `bytes` atomically (a temporary file in the same directory, renamed
/// over it), keeping the mode of the file it replaces (else `mode`).
pub(super) fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let mode = std::fs::metadata(path).map_or(mode, |old| old.permissions().mode() & 0o7777);
    let mut temporary = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    temporary
        .write_all(bytes)
        .and_then(|()| temporary.as_file().sync_all())
        .and_then(|()| {
            std::fs::set_permissions(temporary.path(), std::fs::Permissions::from_mode(mode))
        })
        .with_context(|| format!("cannot write {}", temporary.path().display()))?;
    temporary
        .persist(path)
        .with_context(|| format!("cannot replace {}", path.display()))?;
    Ok(())
}
