//! Where `hookbox hook` finds its policy: one explicit file, or the managed, user and project
//! files in that (trust) order, each of either dialect; a later file only adds (DESIGN.md
//! §2.1: a sandbox group an earlier file defines is never replaced).

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::hookset::{HookSetBuilder, LoadError};

/// The policy files of one `hookbox hook` call.
#[derive(Debug, Clone, PartialEq, Eq)]
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
        /// it is bounded and its HTTP hooks get no widened network rights.
        project: PathBuf,
    },
}

impl PolicyFiles {
    /// Loads every file that applies into `builder`, in trust order; returns the files read.
    pub fn load(&self, builder: &mut HookSetBuilder) -> Result<Vec<PathBuf>, LoadError> {
        match self {
            Self::Explicit(path) => {
                builder.load_file(path, None)?;
                Ok(vec![path.clone()])
            }
            Self::Layered {
                managed,
                user,
                project,
            } => {
                let mut loaded = Vec::new();
                for (path, owner) in [(managed, true), (user, true), (project, false)] {
                    let Some(text) = read_if_present(path)? else {
                        continue;
                    };
                    let source = path.display().to_string();
                    if owner {
                        builder.load_str(&source, &text, None)?;
                    } else {
                        builder.load_model_writable(&source, &text, None)?;
                    }
                    loaded.push(path.clone());
                }
                Ok(loaded)
            }
        }
    }
}

/// The text of `path`, `None` when it does not exist; any other problem is an error.
fn read_if_present(path: &Path) -> Result<Option<String>, LoadError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.kind() == ErrorKind::NotFound => Ok(None),
        Err(err) => Err(LoadError::Read {
            path: path.display().to_string(),
            source: err,
        }),
    }
}
