//! The daemon's [`Engine`]: one async runtime, one guarded HTTP client and the warm Python
//! interpreters ([`super::python`]) for every call, and each policy kept parsed for as long as
//! the files it was read from hold the same bytes (checked on every call, by their settled
//! stamps ([`super::stamp`]) or else their bytes, so a changed policy or trust record is
//! honoured at once).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use hookbox_exec::PythonZygotes;
use hookbox_hooks::adapter::{self, Fingerprint, PolicyFiles, Translated};
use hookbox_hooks::{Dispatcher, HookOutcome, HookSet, HttpRunner, ProjectCommandRunner, Runners};

use super::python::WarmPython;
use super::stamp::Stamps;
use crate::commands::hook::{Engine, LoadedPolicy, load_policy_files};

/// Policies kept at most (one per project and `--policy` file in use); past it the oldest
/// are forgotten all at once.
const MAX_POLICIES: usize = 256;

/// What the daemon keeps warm.
pub(super) struct Warm {
    runtime: tokio::runtime::Runtime,
    http: Arc<dyn HttpRunner>,
    zygotes: Arc<PythonZygotes>,
    /// Keyed by the files and whether their hooks fail closed by default.
    policies: Mutex<HashMap<(PolicyFiles, bool), Kept>>,
}

/// A policy kept parsed, with what its files were when it was read.
struct Kept {
    /// The files' stamps, the cheap check.
    stamps: Stamps,
    /// The files' bytes, compared when the stamps do not prove them unchanged.
    fingerprint: Fingerprint,
    policy: LoadedPolicy,
}

impl Warm {
    /// Builds the runtime and the HTTP client.
    pub(super) fn new() -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let http = Runners::host(None)
            .context("cannot build the HTTP client")?
            .http;
        Ok(Self {
            runtime,
            http,
            zygotes: Arc::new(PythonZygotes::new()),
            policies: Mutex::new(HashMap::new()),
        })
    }
}

impl Engine for Warm {
    fn policy(&self, files: &PolicyFiles, fail_closed: bool) -> anyhow::Result<LoadedPolicy> {
        // Taken before anything is read: a write after this moment changes them.
        let stamps = Stamps::of(files);
        let key = (files.clone(), fail_closed);
        let lock = || self.policies.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = lock().get_mut(&key)
            && let Some(stamps) = &stamps
            && stamps.unchanged_since(&kept.stamps)
        {
            return Ok(kept.policy.clone());
        }
        let fingerprint = files.fingerprint()?;
        if let Some(kept) = lock().get_mut(&key)
            && kept.fingerprint == fingerprint
        {
            if let Some(stamps) = stamps {
                kept.stamps = stamps;
            }
            return Ok(kept.policy.clone());
        }
        let policy = load_policy_files(files, fail_closed)?;
        // The files changed while they were loaded: serve what was loaded, keep nothing.
        if let Some(stamps) = stamps
            && files.fingerprint()? == fingerprint
        {
            let mut policies = lock();
            if policies.len() >= MAX_POLICIES {
                policies.clear();
            }
            policies.insert(
                key,
                Kept {
                    stamps,
                    fingerprint,
                    policy: policy.clone(),
                },
            );
        }
        Ok(policy)
    }

    fn evaluate(
        &self,
        hooks: Arc<HookSet>,
        command: ProjectCommandRunner,
        translated: &Translated,
    ) -> anyhow::Result<HookOutcome> {
        let runners = Runners {
            command: Arc::new(WarmPython {
                cold: command,
                zygotes: Arc::clone(&self.zygotes),
            }),
            http: Arc::clone(&self.http),
            outbox: None,
        };
        let dispatcher = Dispatcher::new(hooks, runners);
        Ok(self
            .runtime
            .handle()
            .block_on(adapter::evaluate(&dispatcher, translated)))
    }
}
