//! Where `hookbox hook` finds its policy: one explicit file, or the managed, user and project
//! files in that (trust) order, each of either dialect; a later file only adds (DESIGN.md
//! §2.1: a sandbox group an earlier file defines is never replaced).
//!
//! The project file can be written by the agent itself, and its command hooks run on this host
//! without the agent's permission prompt. So it is loaded only while its content is the one
//! the user reviewed and trusted (`hookbox trust FILE` records its SHA-256 in the trust store).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::hookset::{HookSetBuilder, LoadError};
use crate::policy_file::{Links, read_policy_file, read_policy_text};

/// The policy files of one `hookbox hook` call.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PolicyFiles {
    /// `--policy FILE`: only this file, which must exist.
    Explicit(PathBuf),
    /// The layered files; each one that does not exist is skipped.
    Layered {
        /// The machine's administrator's (`/etc/hookbox/policy.json` or `[policy] managed`).
        managed: PathBuf,
        /// The user's (`$HOOKBOX_HOME/policy.json`).
        user: PathBuf,
        /// The project's (`<project>/.agents/hooks.json`): the agent itself can write it, so
        /// it is read only when trusted, bounded, and its HTTP hooks get no widened network
        /// rights.
        project: PathBuf,
        /// The trust store (`$HOOKBOX_HOME/trusted-policies.json`).
        trust_store: PathBuf,
    },
}

/// What [`PolicyFiles::load`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The files loaded, in order.
    pub files: Vec<PathBuf>,
    /// A project file that exists but was not loaded: new, or changed since it was trusted.
    pub untrusted: Option<PathBuf>,
}

impl PolicyFiles {
    /// Loads every file that applies into `builder`, in trust order.
    pub fn load(&self, builder: &mut HookSetBuilder) -> Result<Loaded, LoadError> {
        let mut loaded = Loaded::default();
        match self {
            Self::Explicit(path) => {
                builder.load_file(path, None)?;
                loaded.files.push(path.clone());
            }
            Self::Layered {
                managed,
                user,
                project,
                trust_store,
            } => {
                for path in [managed, user] {
                    if let Some(text) = read_if_present(path, Links::Follow)? {
                        builder.load_str(&path.display().to_string(), &text, None)?;
                        loaded.files.push(path.clone());
                    }
                }
                if let Some(text) = read_if_present(project, Links::Refuse)? {
                    if is_trusted(trust_store, project, &text)? {
                        builder.load_model_writable(&project.display().to_string(), &text, None)?;
                        loaded.files.push(project.clone());
                    } else {
                        loaded.untrusted = Some(project.clone());
                    }
                }
            }
        }
        Ok(loaded)
    }
}

/// Everything [`PolicyFiles::load`] reads, as it is now: each file's bytes (`None`: absent)
/// and the project file's canonical path (which the trust store is keyed by). Two equal
/// fingerprints load the same policy, so a process that keeps a loaded policy (`hookbox
/// daemon`) compares them on every call and never serves a stale one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    contents: Vec<Option<Vec<u8>>>,
    canonical_project: Option<PathBuf>,
}

impl PolicyFiles {
    /// The files read, in order, and, for a layered policy, its project directory as it
    /// resolves now (canonicalized).
    pub fn paths(&self) -> (Vec<&PathBuf>, Option<PathBuf>) {
        match self {
            Self::Explicit(path) => (vec![path], None),
            Self::Layered {
                managed,
                user,
                project,
                trust_store,
            } => (
                vec![managed, user, project, trust_store],
                std::fs::canonicalize(project).ok(),
            ),
        }
    }

    /// What the files hold now; an error when one cannot be read (loading would fail too).
    pub fn fingerprint(&self) -> Result<Fingerprint, LoadError> {
        let read = |path: &PathBuf| {
            let links = match self {
                Self::Layered { project, .. } if project == path => Links::Refuse,
                _ => Links::Follow,
            };
            read_policy_file(path, links).map_err(|err| LoadError::Read {
                path: path.display().to_string(),
                source: err,
            })
        };
        let (paths, canonical_project) = self.paths();
        Ok(Fingerprint {
            contents: paths.into_iter().map(read).collect::<Result<_, _>>()?,
            canonical_project,
        })
    }
}

/// Records `file`'s current content as trusted in `trust_store`; returns its SHA-256.
pub fn trust(trust_store: &Path, file: &Path) -> Result<String, LoadError> {
    let read_error = |path: &Path, source| LoadError::Read {
        path: path.display().to_string(),
        source,
    };
    let path = std::fs::canonicalize(file).map_err(|err| read_error(file, err))?;
    let text = read_policy_text(&path, Links::Follow)
        .and_then(|text| text.ok_or_else(|| rustix::io::Errno::NOENT.into()))
        .map_err(|err| read_error(&path, err))?;
    let digest = sha256(&text);
    let mut trusted = read_store(trust_store)?;
    trusted.insert(path.display().to_string(), digest.clone());
    let json = serde_json::to_string_pretty(&trusted).unwrap_or_default();
    let temporary = trust_store.with_extension("json.tmp");
    std::fs::write(&temporary, json + "\n")
        .and_then(|()| std::fs::rename(&temporary, trust_store))
        .map_err(|err| read_error(trust_store, err))?;
    Ok(digest)
}

/// Whether `text`, the content of `path`, is the content trusted for it.
fn is_trusted(trust_store: &Path, path: &Path, text: &str) -> Result<bool, LoadError> {
    let Ok(canonical) = std::fs::canonicalize(path) else {
        return Ok(false);
    };
    let trusted = read_store(trust_store)?;
    Ok(trusted.get(&canonical.display().to_string()) == Some(&sha256(text)))
}

/// The trust store: canonical path → SHA-256 (hex) of the trusted content.
fn read_store(trust_store: &Path) -> Result<BTreeMap<String, String>, LoadError> {
    let Some(text) = read_if_present(trust_store, Links::Follow)? else {
        return Ok(BTreeMap::new());
    };
    serde_json::from_str(&text).map_err(|err| {
        LoadError::Invalid(Box::new(crate::diagnostic::Diagnostic {
            severity: crate::diagnostic::Severity::Error,
            source: trust_store.display().to_string(),
            json_path: "$".to_owned(),
            message: format!("not a trust store (an object of path: SHA-256): {err}"),
            hint: Some("delete it and trust the project files again".to_owned()),
        }))
    })
}

/// The SHA-256 of `text`, in hex.
fn sha256(text: &str) -> String {
    ring::digest::digest(&ring::digest::SHA256, text.as_bytes())
        .as_ref()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The text of `path`, `None` when it does not exist; any other problem is an error.
fn read_if_present(path: &Path, links: Links) -> Result<Option<String>, LoadError> {
    read_policy_text(path, links).map_err(|err| LoadError::Read {
        path: path.display().to_string(),
        source: err,
    })
}
