//! Trust in a project's policy follows content, not paths. `hookbox trust` records, for one
//! project root, the SHA-256 of its `.agents/hooks.json` and of every file of the project its
//! command hooks name (the *closure*, see [`super::closure`]), and copies that closure into a
//! content-addressed snapshot under hookbox's home. `hookbox hook` loads the project's policy
//! only while the closure, as it is now, is the one recorded for that root, and runs its hooks
//! in a sandbox that shows the snapshot, not the project, at the project's path: what runs is
//! exactly what was hashed, and an interpreter that walks up from a script or the working
//! directory (Python's `sys.path[0]`, Node's `package.json` and `node_modules`, a shell's or
//! git's start-up files in `HOME`) finds nothing the agent wrote since.
//!
//! A symbolic link anywhere in the closure makes the project untrustable (a link never carries
//! trust), and trust is keyed by the project's canonical root: the same files in another
//! project are not trusted there.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::closure::named_paths;
use crate::handler::Handler;
use crate::hookset::LoadError;
use crate::policy_file::{Links, read_policy_file, read_policy_text};

/// A project's policy file, relative to its root.
pub const PROJECT_POLICY: &str = ".agents/hooks.json";

/// The trust records, under hookbox's home.
const RECORDS: &str = "trusted-projects.json";

/// Where earlier hookbox versions kept trust by path (read only to say it no longer counts).
const PATH_RECORDS: &str = "trusted-policies.json";

/// The snapshots' directory, under hookbox's home.
const SNAPSHOTS: &str = "trusted";

/// The lock every `hookbox trust` holds while it writes a snapshot and the records, under
/// hookbox's home: two at once neither lose a record nor delete the other's snapshot.
const LOCK: &str = "trusted-projects.lock";

/// The user's trust in project policies, kept in hookbox's home.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TrustStore {
    home: PathBuf,
}

/// How a project's policy stands with the user's trust (see [`TrustStore::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectTrust {
    /// The project has no policy file.
    NoPolicy,
    /// Trusted as it is now.
    Trusted(TrustedPolicy),
    /// There, and not trusted.
    Untrusted(Untrusted),
}

/// A project policy trusted as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedPolicy {
    /// Its text, the bytes that were compared with the record.
    pub text: String,
    /// The project's canonical root.
    pub root: PathBuf,
    /// The snapshot of its closure, which its hooks see at `root`.
    pub snapshot: PathBuf,
}

/// A project policy that is there and not trusted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// The policy file.
    pub policy: PathBuf,
    /// Why it is not trusted.
    pub why: Distrust,
    /// Set when the project was trusted and no longer is (its closure or its snapshot
    /// changed, or its policy is gone): its trusted gates are off, which is never silent.
    pub lapsed: Option<Lapsed>,
}

/// A project whose trust lapsed: what its trusted policy meant when a gate fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lapsed {
    /// Whether the policy as trusted fails closed (a handler with `on_error: deny`), as
    /// recorded by `hookbox trust`; `true` when the record does not say (an earlier
    /// hookbox's). What the files say now never counts: the agent may have written them.
    pub fails_closed: bool,
}

/// Why a project's policy is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Distrust {
    /// Nothing was ever trusted for this project.
    New,
    /// An earlier hookbox trusted the file by its path alone, which no longer counts.
    PathRecordOnly,
    /// Files of its closure differ from the trusted ones.
    Changed(Vec<Change>),
    /// A file of its closure can never be trusted (a link, or not a regular file).
    Refused {
        /// The file, relative to the project's root.
        file: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The trusted snapshot is gone from hookbox's home.
    SnapshotGone(PathBuf),
    /// A file of the trusted snapshot is not the one trusted (hookbox's home was written).
    SnapshotAltered(PathBuf),
}

/// One file of a closure that is not as trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file, relative to the project's root.
    pub file: PathBuf,
    /// How it differs.
    pub how: ChangeKind,
}

/// How a file of a closure differs from the trusted one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Its content changed.
    Changed,
    /// It was not there (or not named) when the project was trusted.
    Added,
    /// It was trusted and is no longer there.
    Removed,
}

/// What [`TrustStore::trust`] recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The project's canonical root, which the record is keyed by.
    pub root: PathBuf,
    /// The SHA-256 of the whole closure (the snapshot's name).
    pub closure: String,
    /// The files covered, relative to the root (the policy first).
    pub files: Vec<PathBuf>,
    /// The snapshot the hooks run from.
    pub snapshot: PathBuf,
}

/// Why `hookbox trust` recorded nothing.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The policy or the trust records could not be read or parsed.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// The file is not something that can be trusted.
    #[error("{0}")]
    Refused(String),
    /// Hookbox's home could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// What was being written.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
}

/// The records file: canonical project root → its trusted closure.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Records {
    projects: BTreeMap<String, Record>,
}

/// One project's trusted closure.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    /// The SHA-256 of the whole closure.
    closure: String,
    /// Each file (relative to the root) and its SHA-256.
    files: BTreeMap<PathBuf, String>,
    /// The paths the hooks name where no file was (one appearing there changes the closure).
    #[serde(default)]
    absent: Vec<PathBuf>,
    /// Whether the policy fails closed (a handler with `on_error: deny`): what a call gets
    /// once this trust lapsed. Absent in an earlier hookbox's records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fails_closed: Option<bool>,
}

/// A file of a closure as it is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileState {
    /// Nothing is there, or a directory: the word names no file.
    Absent,
    /// A regular file: its bytes and whether it is executable.
    File(Vec<u8>, bool),
    /// A link on the way, or something other than a regular file: never trusted.
    Refused(String),
}

impl TrustStore {
    /// The trust kept in hookbox's home `home`.
    pub fn in_home(home: &Path) -> Self {
        Self {
            home: home.to_path_buf(),
        }
    }

    /// The records file (whose changes change what is trusted).
    pub fn records_file(&self) -> PathBuf {
        self.home.join(RECORDS)
    }

    /// The record file of earlier hookbox versions (trust by path, no longer honoured).
    pub fn path_records_file(&self) -> PathBuf {
        self.home.join(PATH_RECORDS)
    }

    /// Whether the project policy at `policy` (`<root>/.agents/hooks.json`) is trusted as it
    /// is now, and if not, why (which files changed). An error when the policy itself cannot
    /// be read (a link, a FIFO…) or does not parse, or the records cannot be read.
    pub fn status(&self, policy: &Path) -> Result<ProjectTrust, LoadError> {
        let Some(text) = read_text(policy)? else {
            return Ok(self.policy_gone(policy));
        };
        let root = project_root(policy).map_err(|message| read_error(policy, message))?;
        let records = self.records()?;
        let Some(record) = records.projects.get(&key(&root)) else {
            return Ok(ProjectTrust::Untrusted(Untrusted {
                policy: policy.to_path_buf(),
                why: if self.has_path_record(&root)? {
                    Distrust::PathRecordOnly
                } else {
                    Distrust::New
                },
                lapsed: None,
            }));
        };
        let untrusted = |why| Ok(lapsed(policy, record, why));
        // A policy other than the trusted one is not parsed and its words are not followed
        // (it may be anything the agent wrote): only the trusted files are compared.
        let now = if record.files.get(Path::new(PROJECT_POLICY)) == Some(&sha256(text.as_bytes())) {
            closure(&root, policy, &text)?
        } else {
            let mut now: BTreeMap<PathBuf, FileState> = record
                .files
                .keys()
                .chain(&record.absent)
                .map(|file| (file.clone(), file_state(&root, file)))
                .collect();
            now.insert(
                PathBuf::from(PROJECT_POLICY),
                FileState::File(text.as_bytes().to_vec(), false),
            );
            now
        };
        if let Some((file, reason)) = refused(&now) {
            return untrusted(Distrust::Refused { file, reason });
        }
        let changes = changes(record, &now);
        if !changes.is_empty() {
            return untrusted(Distrust::Changed(changes));
        }
        let snapshot = self.home.join(SNAPSHOTS).join(&record.closure);
        if !snapshot.is_dir() {
            return untrusted(Distrust::SnapshotGone(snapshot));
        }
        // What runs is the snapshot: it must still be exactly what was trusted.
        let altered = record.files.iter().find(|(file, digest)| {
            !matches!(file_state(&snapshot, file), FileState::File(bytes, _) if sha256(&bytes) == **digest)
        });
        if let Some((file, _)) = altered {
            return untrusted(Distrust::SnapshotAltered(snapshot.join(file)));
        }
        Ok(ProjectTrust::Trusted(TrustedPolicy {
            text,
            root,
            snapshot,
        }))
    }

    /// The project a working directory `cwd` is in, for an agent that names no project root:
    /// the nearest of `cwd` and its parents holding a project policy (whatever it is: a link
    /// there is found and refused) or trusted (its policy may be gone: a lapse), else `cwd`.
    /// A `cd` into a subdirectory leaves the project's gates on.
    pub fn project_of(&self, cwd: &Path) -> PathBuf {
        let records = self.records().unwrap_or_default();
        let canonical = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
        canonical
            .ancestors()
            .find(|dir| {
                std::fs::symlink_metadata(dir.join(PROJECT_POLICY)).is_ok()
                    || records.projects.contains_key(&key(dir))
            })
            .map_or_else(|| cwd.to_path_buf(), Path::to_path_buf)
    }

    /// Why the project at `root` can forge its own trust, if it can: hookbox's home (trust
    /// records, snapshots, the user's policy) lies inside it, where the agent's model writes
    /// the project. Each of `hookbox trust` and `hookbox hook` says so.
    pub fn exposed_to(&self, root: &Path) -> Option<String> {
        let home = std::fs::canonicalize(&self.home).ok()?;
        let root = std::fs::canonicalize(root).ok()?;
        home.starts_with(&root).then(|| {
            format!(
                "hookbox's home {} lies inside the project {}, which the agent can write: it \
                 could rewrite the trust records, the trusted snapshots and the user's policy; \
                 set HOOKBOX_HOME (or `hookbox install --home`) to a directory outside it",
                home.display(),
                root.display()
            )
        })
    }

    /// The project of `policy` has no policy file: nothing to load, unless the project was
    /// trusted, whose gates are then off (a lapse, never silent).
    fn policy_gone(&self, policy: &Path) -> ProjectTrust {
        let Ok(root) = project_root(policy) else {
            return ProjectTrust::NoPolicy;
        };
        // The records are read only to see a lapse: a broken records file does not block a
        // project without a policy (it does once one is there).
        let Some(record) = self
            .records()
            .ok()
            .and_then(|mut records| records.projects.remove(&key(&root)))
        else {
            return ProjectTrust::NoPolicy;
        };
        lapsed(
            policy,
            &record,
            Distrust::Changed(vec![Change {
                file: PathBuf::from(PROJECT_POLICY),
                how: ChangeKind::Removed,
            }]),
        )
    }

    /// Trusts the project policy at `policy` (`<root>/.agents/hooks.json`, or the project's
    /// root) as it is now, with every file its hooks name, for that project only; the
    /// closure is copied into a snapshot, which its hooks run from.
    pub fn trust(&self, policy: &Path) -> Result<Recorded, TrustError> {
        let policy = if policy.is_dir() {
            policy.join(PROJECT_POLICY)
        } else {
            policy.to_path_buf()
        };
        let root = project_root(&policy).map_err(TrustError::Refused)?;
        let text = read_text(&policy)?.ok_or_else(|| {
            TrustError::Refused(format!(
                "{} does not exist; write the project's policy there first",
                policy.display()
            ))
        })?;
        let handlers = crate::config::parse(&policy.display().to_string(), &text, None, &[])
            .map_or(0, |parsed| parsed.bindings.len());
        if let Some(message) = crate::hookset::over_model_bounds(text.len(), handlers) {
            return Err(TrustError::Refused(format!(
                "{} cannot be trusted: {message} by `hookbox hook`",
                policy.display()
            )));
        }
        let now = closure(&root, &policy, &text)?;
        if let Some((file, reason)) = refused(&now) {
            return Err(TrustError::Refused(format!(
                "{} cannot be trusted: {}: {reason}",
                policy.display(),
                file.display()
            )));
        }
        let mut files: BTreeMap<PathBuf, (Vec<u8>, bool)> = BTreeMap::new();
        let mut absent = Vec::new();
        for (file, state) in now {
            match state {
                FileState::File(bytes, executable) => {
                    files.insert(file, (bytes, executable));
                }
                FileState::Absent | FileState::Refused(_) => absent.push(file),
            }
        }
        let record = Record {
            closure: sha256(
                files
                    .iter()
                    .map(|(file, (bytes, executable))| {
                        // The mode is part of the name: the snapshot's files keep it.
                        let mode = if *executable { "555" } else { "444" };
                        format!("{}  {mode}  {}\n", sha256(bytes), file.display())
                    })
                    .collect::<String>()
                    .as_bytes(),
            ),
            files: files
                .iter()
                .map(|(file, (bytes, _))| (file.clone(), sha256(bytes)))
                .collect(),
            absent,
            fails_closed: Some(fails_closed(&policy, &text)?),
        };
        let lock_path = self.home.join(LOCK);
        let write_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TrustError::Write { path, source }
        };
        // Held until the end of this function (closed with the file).
        let lock = std::fs::File::create(&lock_path).map_err(write_error(&lock_path))?;
        lock.lock().map_err(write_error(&lock_path))?;
        let snapshot = self.write_snapshot(&record.closure, &files)?;
        let mut records = self.records()?;
        records.projects.insert(key(&root), record.clone());
        let json = serde_json::to_string_pretty(&records).unwrap_or_default() + "\n";
        let path = self.records_file();
        let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
        let written = std::fs::write(&temporary, json)
            .and_then(|()| std::fs::rename(&temporary, &path))
            .map_err(write_error(&path));
        if written.is_err() {
            let _ = std::fs::remove_file(&temporary);
        }
        written?;
        // Under the lock, every snapshot written is recorded: what no record names is unused.
        self.forget_unused_snapshots(&records);
        let mut listed: Vec<PathBuf> = record.files.into_keys().collect();
        listed.sort_by_key(|file| file != Path::new(PROJECT_POLICY));
        Ok(Recorded {
            root,
            closure: record.closure,
            files: listed,
            snapshot,
        })
    }

    /// The files recorded as the trusted closure of the project of `policy` (and the paths
    /// its hooks name where no file was), then the files of its snapshot, as absolute paths
    /// (empty when none is): what must be watched for a change of its trust.
    pub fn recorded_files(&self, policy: &Path) -> Vec<PathBuf> {
        self.recorded(policy)
            .iter()
            .map(|(base, file)| base.join(file))
            .collect()
    }

    /// Those files' states now, in the order of [`Self::recorded_files`].
    pub(crate) fn recorded_states(&self, policy: &Path) -> Vec<FileState> {
        self.recorded(policy)
            .iter()
            .map(|(base, file)| file_state(base, file))
            .collect()
    }

    /// The files of the record of `policy`'s project, each as (directory, path relative to
    /// it): the project's, then the snapshot's.
    fn recorded(&self, policy: &Path) -> Vec<(PathBuf, PathBuf)> {
        let Some(root) = project_root(policy).ok() else {
            return Vec::new();
        };
        let Some(record) = self
            .records()
            .ok()
            .and_then(|mut records| records.projects.remove(&key(&root)))
        else {
            return Vec::new();
        };
        let snapshot = self.home.join(SNAPSHOTS).join(&record.closure);
        let in_project = record.files.keys().chain(&record.absent);
        let in_snapshot = record.files.keys();
        in_project
            .map(|file| (root.clone(), file.clone()))
            .chain(in_snapshot.map(|file| (snapshot.clone(), file.clone())))
            .collect()
    }

    /// The records (none when the file does not exist).
    fn records(&self) -> Result<Records, LoadError> {
        let path = self.records_file();
        let Some(text) = read_policy_text(&path, Links::Follow)
            .map_err(|err| read_error(&path, err.to_string()))?
        else {
            return Ok(Records::default());
        };
        serde_json::from_str(&text).map_err(|err| {
            LoadError::Invalid(Box::new(crate::diagnostic::Diagnostic {
                severity: crate::diagnostic::Severity::Error,
                source: path.display().to_string(),
                json_path: "$".to_owned(),
                message: format!("not a trust record file: {err}"),
                hint: Some("delete it and trust the projects again (`hookbox trust`)".to_owned()),
            }))
        })
    }

    /// Whether an earlier hookbox's path record names the policy of the project at `root`.
    fn has_path_record(&self, root: &Path) -> Result<bool, LoadError> {
        let path = self.path_records_file();
        let text = read_policy_text(&path, Links::Follow)
            .map_err(|err| read_error(&path, err.to_string()))?;
        let names: BTreeMap<String, serde_json::Value> = text
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default();
        Ok(names.contains_key(&root.join(PROJECT_POLICY).display().to_string()))
    }

    /// Writes the snapshot of `files` named `closure` (unless it is there already) and
    /// returns its directory: files read-only, executable as they were.
    fn write_snapshot(
        &self,
        closure: &str,
        files: &BTreeMap<PathBuf, (Vec<u8>, bool)>,
    ) -> Result<PathBuf, TrustError> {
        let snapshots = self.home.join(SNAPSHOTS);
        let snapshot = snapshots.join(closure);
        if snapshot.is_dir() {
            return Ok(snapshot);
        }
        let write_error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| TrustError::Write { path, source }
        };
        let temporary = snapshots.join(format!(".new-{}-{closure}", std::process::id()));
        // What an interrupted `hookbox trust` of this process id left there.
        let _ = std::fs::remove_dir_all(&temporary);
        std::fs::create_dir_all(&temporary).map_err(write_error(&temporary))?;
        let written = files.iter().try_for_each(|(file, (bytes, executable))| {
            let path = temporary.join(file);
            let mode = if *executable { 0o555 } else { 0o444 };
            path.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, bytes))
                .and_then(|()| {
                    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                })
                .map_err(write_error(&path))
        });
        let placed = written.and_then(|()| match std::fs::rename(&temporary, &snapshot) {
            // Another `hookbox trust` placed the same content first.
            Err(_) if snapshot.is_dir() => Ok(()),
            renamed => renamed.map_err(write_error(&snapshot)),
        });
        let _ = std::fs::remove_dir_all(&temporary);
        placed.map(|()| snapshot)
    }

    /// Removes the snapshots no record names any more (best effort).
    fn forget_unused_snapshots(&self, records: &Records) {
        let Ok(entries) = std::fs::read_dir(self.home.join(SNAPSHOTS)) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let used = records
                .projects
                .values()
                .any(|record| record.closure == name);
            if !used && !name.starts_with('.') {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

impl std::fmt::Display for Untrusted {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "{} is not trusted ({})",
            self.policy.display(),
            self.why
        )
    }
}

impl std::fmt::Display for Distrust {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::New => formatter.write_str("new: it was never trusted for this project"),
            Self::PathRecordOnly => formatter.write_str(
                "an earlier hookbox trusted it by its path alone, which no longer counts: trust \
                 now covers the policy and every file its hooks run, for one project",
            ),
            Self::Changed(changes) => {
                formatter.write_str("changed since it was trusted: ")?;
                let listed: Vec<String> = changes
                    .iter()
                    .map(|change| {
                        let how = match change.how {
                            ChangeKind::Changed => "changed",
                            ChangeKind::Added => "is new",
                            ChangeKind::Removed => "is gone",
                        };
                        format!("{} {how}", change.file.display())
                    })
                    .collect();
                formatter.write_str(&listed.join(", "))
            }
            Self::Refused { file, reason } => write!(formatter, "{}: {reason}", file.display()),
            Self::SnapshotGone(snapshot) => write!(
                formatter,
                "its trusted copy {} is gone from hookbox's home",
                snapshot.display()
            ),
            Self::SnapshotAltered(file) => write!(
                formatter,
                "its trusted copy {} is not the file trusted (something wrote hookbox's home)",
                file.display()
            ),
        }
    }
}

/// The canonical root of the project whose policy is `policy` (`<root>/.agents/hooks.json`).
fn project_root(policy: &Path) -> Result<PathBuf, String> {
    let agents = policy
        .parent()
        .filter(|_| policy.file_name().is_some_and(|name| name == "hooks.json"))
        .filter(|agents| agents.file_name().is_some_and(|name| name == ".agents"));
    let root = agents.and_then(Path::parent).ok_or_else(|| {
        format!(
            "{} is not a project policy; a project's policy is `<project>/{PROJECT_POLICY}`",
            policy.display()
        )
    })?;
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    std::fs::canonicalize(root).map_err(|err| format!("{}: {err}", root.display()))
}

/// The records' key for the project at `root`.
fn key(root: &Path) -> String {
    root.display().to_string()
}

/// The closure of the project at `root` whose policy (at `policy`) holds `text`, as it is now:
/// the policy and every path its command hooks name, each with its state.
fn closure(
    root: &Path,
    policy: &Path,
    text: &str,
) -> Result<BTreeMap<PathBuf, FileState>, LoadError> {
    let parsed = crate::config::parse(&policy.display().to_string(), text, None, &[])
        .map_err(|diagnostic| LoadError::Invalid(Box::new(diagnostic)))?;
    let mut files = BTreeMap::new();
    files.insert(
        PathBuf::from(PROJECT_POLICY),
        FileState::File(text.as_bytes().to_vec(), false),
    );
    for binding in &parsed.bindings {
        if let Handler::Command(command) = &binding.handler {
            for file in named_paths(&command.command, root) {
                if let std::collections::btree_map::Entry::Vacant(entry) = files.entry(file) {
                    let state = file_state(root, entry.key());
                    entry.insert(state);
                }
            }
        }
    }
    Ok(files)
}

/// The project of `policy`, trusted as `record` and no longer, because of `why`.
fn lapsed(policy: &Path, record: &Record, why: Distrust) -> ProjectTrust {
    ProjectTrust::Untrusted(Untrusted {
        policy: policy.to_path_buf(),
        why,
        lapsed: Some(Lapsed {
            fails_closed: record.fails_closed.unwrap_or(true),
        }),
    })
}

/// Whether the policy at `policy` holding `text` fails closed: a handler says `on_error: deny`.
fn fails_closed(policy: &Path, text: &str) -> Result<bool, LoadError> {
    let parsed = crate::config::parse(&policy.display().to_string(), text, None, &[])
        .map_err(|diagnostic| LoadError::Invalid(Box::new(diagnostic)))?;
    Ok(parsed
        .bindings
        .iter()
        .any(|binding| match &binding.handler {
            Handler::Command(command) => command.on_error == crate::handler::OnError::Deny,
            Handler::Http(http) => http.on_error == crate::handler::OnError::Deny,
            Handler::Callback(_) => false,
        }))
}

/// The first file of `closure` that can never be trusted, and why.
fn refused(closure: &BTreeMap<PathBuf, FileState>) -> Option<(PathBuf, String)> {
    closure.iter().find_map(|(file, state)| match state {
        FileState::Refused(reason) => Some((file.clone(), reason.clone())),
        _ => None,
    })
}

/// How `now` differs from `record`.
fn changes(record: &Record, now: &BTreeMap<PathBuf, FileState>) -> Vec<Change> {
    let mut changes = Vec::new();
    for (file, digest) in &record.files {
        let how = match now.get(file) {
            Some(FileState::File(bytes, _)) if sha256(bytes) == *digest => continue,
            Some(FileState::File(..) | FileState::Refused(_)) => ChangeKind::Changed,
            Some(FileState::Absent) | None => ChangeKind::Removed,
        };
        changes.push(Change {
            file: file.clone(),
            how,
        });
    }
    let appeared = now
        .iter()
        .filter(|(file, state)| **state != FileState::Absent && !record.files.contains_key(*file))
        .map(|(file, _)| file);
    for file in appeared {
        changes.push(Change {
            file: file.clone(),
            how: ChangeKind::Added,
        });
    }
    changes
}

/// The file `relative` of the project at `root` as it is now, reached through no link.
pub(crate) fn file_state(root: &Path, relative: &Path) -> FileState {
    let mut path = root.to_path_buf();
    let parts: Vec<_> = relative.components().collect();
    for (index, part) in parts.iter().enumerate() {
        path.push(part);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(err) if matches!(err.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                return FileState::Absent;
            }
            Err(err) => return FileState::Refused(err.to_string()),
        };
        if meta.file_type().is_symlink() {
            return FileState::Refused(format!(
                "{} is a symbolic link; a link never carries trust: replace it with what it \
                 points to",
                path.display()
            ));
        }
        let last = index + 1 == parts.len();
        if !last && meta.is_dir() {
            continue;
        }
        // A directory, or a file where a directory would be: the word names no file.
        if meta.is_dir() || !last {
            return FileState::Absent;
        }
        return match read_policy_file(&path, Links::Refuse) {
            Ok(Some(bytes)) => FileState::File(bytes, meta.permissions().mode() & 0o111 != 0),
            Ok(None) => FileState::Absent,
            Err(err) => FileState::Refused(err.to_string()),
        };
    }
    FileState::Absent
}

/// The text of the policy at `path` (`None`: absent), read as a file the agent can write.
fn read_text(path: &Path) -> Result<Option<String>, LoadError> {
    read_policy_text(path, Links::Refuse).map_err(|err| LoadError::Read {
        path: path.display().to_string(),
        source: err,
    })
}

/// A read error about `path`.
fn read_error(path: &Path, message: String) -> LoadError {
    LoadError::Read {
        path: path.display().to_string(),
        source: std::io::Error::new(ErrorKind::InvalidInput, message),
    }
}

/// The SHA-256 of `bytes`, in hex.
fn sha256(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}
