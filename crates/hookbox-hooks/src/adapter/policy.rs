//! Where `hookbox hook` finds its policy: one explicit file, or the managed, user and project
//! files in that (trust) order, each of either dialect; a later file only adds (DESIGN.md
//! §2.1: a sandbox group an earlier file defines is never replaced).
//!
//! The project file can be written by the agent itself, and its command hooks run on this host
//! without the agent's permission prompt. So it is loaded only while it and every file its
//! hooks name are the ones the user reviewed and trusted for this project (see
//! [`super::trust`]), and its hooks see the trusted snapshot of those files, not the project.

use std::path::{Path, PathBuf};

use super::trust::{FileState, ProjectTrust, TrustStore, Untrusted};
use crate::hookset::{HookSetBuilder, LoadError};
use crate::policy_file::{Links, read_policy_file, read_policy_text};
use crate::runner::ProjectView;

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
        /// The user's trust in project policies (in `$HOOKBOX_HOME`).
        trust_store: TrustStore,
    },
}

/// What [`PolicyFiles::load`] read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The files loaded, in order.
    pub files: Vec<PathBuf>,
    /// A project file that exists but was not loaded, and why (new, or a file of its closure
    /// changed since it was trusted).
    pub untrusted: Option<Untrusted>,
    /// Where a trusted project's hooks run: its trusted snapshot shown at its root.
    pub view: Option<ProjectView>,
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
                match trust_store.status(project)? {
                    ProjectTrust::NoPolicy => {}
                    ProjectTrust::Trusted(trusted) => {
                        let source = project.display().to_string();
                        builder.load_model_writable(&source, &trusted.text, None)?;
                        loaded.files.push(project.clone());
                        loaded.view = Some(ProjectView {
                            root: trusted.root,
                            shown: trusted.snapshot,
                        });
                    }
                    ProjectTrust::Untrusted(untrusted) => loaded.untrusted = Some(untrusted),
                }
            }
        }
        Ok(loaded)
    }
}

/// Everything [`PolicyFiles::load`] reads, as it is now: each file's bytes (`None`: absent),
/// the state of each file of the project's trusted closure, and the project file's canonical
/// path (which trust is keyed by). Two equal fingerprints load the same policy, so a process
/// that keeps a loaded policy (`hookbox daemon`) compares them on every call and never serves
/// a stale one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    contents: Vec<Option<Vec<u8>>>,
    closure: Vec<FileState>,
    canonical_project: Option<PathBuf>,
}

impl PolicyFiles {
    /// The files read, in order (for a layered policy, the trust records and the files of
    /// the project's trusted closure too), and, for a layered policy, its project directory
    /// as it resolves now (canonicalized).
    pub fn paths(&self) -> (Vec<PathBuf>, Option<PathBuf>) {
        let mut paths = self.read_whole();
        if let Self::Layered {
            project,
            trust_store,
            ..
        } = self
        {
            paths.extend(trust_store.recorded_files(project));
        }
        (paths, self.canonical_project())
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
        let closure = match self {
            Self::Explicit(_) => Vec::new(),
            Self::Layered {
                project,
                trust_store,
                ..
            } => trust_store.recorded_states(project),
        };
        Ok(Fingerprint {
            contents: self
                .read_whole()
                .iter()
                .map(read)
                .collect::<Result<_, _>>()?,
            closure,
            canonical_project: self.canonical_project(),
        })
    }

    /// The files read whole: the policy files and, for a layered policy, the trust records.
    fn read_whole(&self) -> Vec<PathBuf> {
        match self {
            Self::Explicit(path) => vec![path.clone()],
            Self::Layered {
                managed,
                user,
                project,
                trust_store,
            } => vec![
                managed.clone(),
                user.clone(),
                project.clone(),
                trust_store.records_file(),
                trust_store.path_records_file(),
            ],
        }
    }

    /// A layered policy's project file, canonicalized now.
    fn canonical_project(&self) -> Option<PathBuf> {
        match self {
            Self::Explicit(_) => None,
            Self::Layered { project, .. } => std::fs::canonicalize(project).ok(),
        }
    }
}

/// The text of `path`, `None` when it does not exist; any other problem is an error.
fn read_if_present(path: &Path, links: Links) -> Result<Option<String>, LoadError> {
    read_policy_text(path, links).map_err(|err| LoadError::Read {
        path: path.display().to_string(),
        source: err,
    })
}
