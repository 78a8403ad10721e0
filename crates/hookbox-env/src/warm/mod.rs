//! The warm sandboxes of a serving process: one [`WarmSandbox`] per environment in use, built
//! by its first sandboxed call, stopped when idle, when its environment is deleted and when
//! the process shuts down.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant, SystemTime};

use hookbox_exec::{ExecError, ProcessOutput, ProcessSpec, WarmSandbox};

use crate::egress::SandboxEgress;

pub(crate) mod status;

/// How long an unused warm sandbox lives by default (`[sandbox] idle_timeout_secs`).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The warm sandboxes of the environments in use, keyed by environment id (cheap to clone:
/// clones share them).
///
/// [`run`](Self::run) starts a sandboxed spec in its environment's warm sandbox, building it
/// first when there is none (or when the environment's sandbox changed since, its plan or its
/// root's top-level entries, which are mounted when it is built: the old one is stopped once
/// its calls end). A supervisor found dead is rebuilt by the next call; a call
/// running when it dies fails with [`ExecError::SandboxLost`]. A sandbox unused for the idle
/// timeout is stopped by a task started with the first call (so the registry must be used
/// inside a Tokio runtime); [`stop`](Self::stop) and [`stop_all`](Self::stop_all) stop them
/// explicitly. Every start and stop is logged (`tracing` info); a sandbox lost (its supervisor
/// died: a call failed with it, or the next call found it dead) is logged as a warning.
#[derive(Clone)]
pub struct WarmSandboxes {
    shared: Arc<Shared>,
}

struct Shared {
    /// The supervisor program ([`WarmSandbox::start`]).
    supervisor: PathBuf,
    idle_timeout: Duration,
    sandboxes: Mutex<HashMap<String, Arc<Warm>>>,
    /// Per environment, held while its sandbox is built, so that its concurrent first calls
    /// build one (other environments' builds go on meanwhile).
    building: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Per environment with network, the egress its calls share (see
    /// [`SandboxEgress::for_warm`]); dropped with its sandbox, or by the reaper once neither a
    /// sandbox nor a caller uses it.
    egresses: Mutex<HashMap<String, Arc<SandboxEgress>>>,
    /// Whether the idle reaper runs.
    reaping: AtomicBool,
    /// Where the list of warm sandboxes is published for other processes (`hookbox env
    /// list`), rewritten at every start and stop.
    status_file: OnceLock<PathBuf>,
}

/// One environment's warm sandbox.
struct Warm {
    sandbox: WarmSandbox,
    /// The root's top-level entries when it was built (the sandbox mounts each; one added
    /// later appears only in a sandbox built after it).
    entries: Vec<OsString>,
    /// When it was built.
    started: SystemTime,
    /// When a call last started or ended.
    last_used: Mutex<Instant>,
}

impl Warm {
    fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    fn idle_for(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }
}

impl std::fmt::Debug for WarmSandboxes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("WarmSandboxes")
            .field("supervisor", &self.shared.supervisor)
            .field("idle_timeout", &self.shared.idle_timeout)
            .finish_non_exhaustive()
    }
}

impl WarmSandboxes {
    /// No warm sandboxes yet; each will run `supervisor` (a program whose `main` calls
    /// [`hookbox_exec::supervise_if_asked`] first: `/proc/self/exe` for hookbox) and be
    /// stopped after `idle_timeout` without calls.
    pub fn new(supervisor: impl Into<PathBuf>, idle_timeout: Duration) -> Self {
        Self {
            shared: Arc::new(Shared {
                supervisor: supervisor.into(),
                idle_timeout,
                sandboxes: Mutex::default(),
                building: Mutex::default(),
                egresses: Mutex::default(),
                reaping: AtomicBool::new(false),
                status_file: OnceLock::new(),
            }),
        }
    }

    /// These sandboxes publishing their list to `file` (see [`status`]); the first call
    /// wins.
    pub(crate) fn publish_to(&self, file: PathBuf) {
        let _first = self.shared.status_file.set(file);
    }

    /// Runs `spec` for environment `environment_id`: in the environment's warm sandbox when
    /// the spec is sandboxed (see the type's documentation), as a plain process otherwise.
    pub async fn run(
        &self,
        environment_id: &str,
        spec: &ProcessSpec,
    ) -> Result<ProcessOutput, ExecError> {
        let Some(sandbox) = &spec.sandbox else {
            return hookbox_exec::run(spec).await;
        };
        self.start_reaper();
        let warm =
            self.warm(environment_id, sandbox)
                .await
                .map_err(|source| ExecError::Isolation {
                    program: spec.program.to_string_lossy().into_owned(),
                    source,
                })?;
        let output = warm.sandbox.run(spec).await;
        warm.touch();
        if let Err(ExecError::SandboxLost { program }) = &output {
            tracing::warn!(
                environment = environment_id,
                program,
                "warm sandbox lost during a call: its supervisor died; the call failed, \
                 and the next call builds a new sandbox"
            );
        }
        output
    }

    /// The warm sandbox of `environment_id` running `sandbox`, built when there is none.
    async fn warm(
        &self,
        environment_id: &str,
        sandbox: &hookbox_exec::Sandbox,
    ) -> Result<Arc<Warm>, hookbox_exec::IsolationError> {
        if let Some(warm) = self.current(environment_id, sandbox) {
            return Ok(warm);
        }
        let building = Arc::clone(
            self.shared
                .building
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(environment_id.to_owned())
                .or_default(),
        );
        let _building = building.lock().await;
        if let Some(warm) = self.current(environment_id, sandbox) {
            return Ok(warm);
        }
        let entries = top_level(sandbox);
        let started = WarmSandbox::start(sandbox.clone(), self.shared.supervisor.clone()).await?;
        let warm = Arc::new(Warm {
            entries,
            started: SystemTime::now(),
            last_used: Mutex::new(Instant::now()),
            sandbox: started,
        });
        tracing::info!(
            environment = environment_id,
            pid = warm.sandbox.supervisor_pid(),
            "warm sandbox started"
        );
        let mut sandboxes = self.shared.lock();
        let replaced = sandboxes.insert(environment_id.to_owned(), Arc::clone(&warm));
        self.shared.publish(&sandboxes);
        drop(sandboxes);
        if let Some(old) = replaced {
            if old.sandbox.sandbox() != sandbox {
                tracing::info!(
                    environment = environment_id,
                    "warm sandbox replaced: the environment's sandbox changed"
                );
            } else if old.entries != warm.entries {
                tracing::info!(
                    environment = environment_id,
                    "warm sandbox replaced: the environment's top-level entries changed"
                );
            } else {
                tracing::warn!(
                    environment = environment_id,
                    "warm sandbox replaced: its supervisor died"
                );
            }
        }
        Ok(warm)
    }

    /// The warm sandbox of `environment_id` when it runs `sandbox` and its supervisor lives,
    /// marked used.
    fn current(&self, environment_id: &str, sandbox: &hookbox_exec::Sandbox) -> Option<Arc<Warm>> {
        let sandboxes = self.shared.lock();
        let warm = sandboxes.get(environment_id)?;
        if warm.sandbox.sandbox() != sandbox
            || warm.sandbox.supervisor_pid().is_none()
            || warm.entries != top_level(sandbox)
        {
            return None;
        }
        warm.touch();
        Some(Arc::clone(warm))
    }

    /// The egress environment `environment_id`'s calls share: the current one when `fits`
    /// says it still does, else the one `make` returns, which takes its place.
    pub(crate) fn egress<E>(
        &self,
        environment_id: &str,
        fits: impl FnOnce(&SandboxEgress) -> bool,
        make: impl FnOnce() -> Result<Arc<SandboxEgress>, E>,
    ) -> Result<Arc<SandboxEgress>, E> {
        let mut egresses = self.shared.egresses();
        if let Some(current) = egresses.get(environment_id)
            && fits(current)
        {
            return Ok(Arc::clone(current));
        }
        let made = make()?;
        egresses.insert(environment_id.to_owned(), Arc::clone(&made));
        Ok(made)
    }

    /// Stops the warm sandbox of `environment_id`, if any (calls running in it keep it until
    /// they end), and lets its egress go.
    pub fn stop(&self, environment_id: &str) {
        self.shared.egresses().remove(environment_id);
        if self.shared.lock().remove(environment_id).is_some() {
            tracing::info!(environment = environment_id, "warm sandbox stopped");
        }
    }

    /// Stops every warm sandbox (calls running keep theirs until they end) and lets their
    /// egresses go.
    pub fn stop_all(&self) {
        self.shared.egresses().clear();
        let mut sandboxes = self.shared.lock();
        let stopped = std::mem::take(&mut *sandboxes);
        self.shared.publish(&sandboxes);
        drop(sandboxes);
        for environment_id in stopped.keys() {
            tracing::info!(environment = environment_id, "warm sandbox stopped");
        }
    }

    /// Starts, once, the task that stops sandboxes idle for the timeout; it ends when the
    /// last clone of the registry is dropped.
    fn start_reaper(&self) {
        if self.shared.reaping.swap(true, Ordering::AcqRel) {
            return;
        }
        let shared = Arc::downgrade(&self.shared);
        let period = (self.shared.idle_timeout / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(30));
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            loop {
                ticks.tick().await;
                let Some(shared) = Weak::upgrade(&shared) else {
                    return;
                };
                shared.reap();
            }
        });
    }
}

/// The sorted names of the top-level entries of `sandbox`'s root (none without a root or when
/// it cannot be read: the build then fails, or the next call compares again).
fn top_level(sandbox: &hookbox_exec::Sandbox) -> Vec<OsString> {
    let Some(entries) = sandbox
        .root
        .as_ref()
        .and_then(|root| std::fs::read_dir(root).ok())
    else {
        return Vec::new();
    };
    let mut names: Vec<OsString> = entries.flatten().map(|entry| entry.file_name()).collect();
    names.sort();
    names
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Warm>>> {
        self.sandboxes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn egresses(&self) -> MutexGuard<'_, HashMap<String, Arc<SandboxEgress>>> {
        self.egresses.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Rewrites the status file (when there is one) with `sandboxes`; a failure is logged.
    fn publish(&self, sandboxes: &HashMap<String, Arc<Warm>>) {
        let Some(file) = self.status_file.get() else {
            return;
        };
        let records: Vec<status::Record> = sandboxes
            .iter()
            .filter_map(|(environment_id, warm)| {
                Some(status::Record {
                    environment_id: environment_id.clone(),
                    supervisor_pid: warm.sandbox.supervisor_pid()?,
                    started_unix_ms: warm
                        .started
                        .duration_since(SystemTime::UNIX_EPOCH)
                        .map_or(0, |since| since.as_millis().try_into().unwrap_or(u64::MAX)),
                })
            })
            .collect();
        if let Err(error) = status::write(file, &records) {
            tracing::warn!(file = %file.display(), %error, "cannot publish the warm sandboxes");
        }
    }

    /// Stops the sandboxes idle for the timeout with no call running, and lets go the
    /// egresses that neither a sandbox nor a caller uses.
    fn reap(&self) {
        let mut egresses = self.egresses();
        let mut sandboxes = self.lock();
        let before = sandboxes.len();
        sandboxes.retain(|environment_id, warm| {
            // Only the registry holds it: no call is running.
            let idle = Arc::strong_count(warm) == 1 && warm.idle_for() >= self.idle_timeout;
            if idle {
                tracing::info!(environment = environment_id, "warm sandbox stopped: idle");
            }
            !idle
        });
        if sandboxes.len() != before {
            self.publish(&sandboxes);
        }
        // Only the registry holds it: no tools use it.
        egresses.retain(|environment_id, egress| {
            sandboxes.contains_key(environment_id) || Arc::strong_count(egress) > 1
        });
    }
}
