//! Warm Python interpreters: a `python3 SCRIPT` run forked from an interpreter initialised once
//! (a *zygote*) instead of starting one, with the same stdin, output caps, timeout and keeper
//! semantics as [`crate::run`] (see [`PythonZygotes`]); the zygote itself is `zygote.py`,
//! embedded in the binary, and one run's side is in [`call`].

mod call;

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
use rustix::process::{Pid, PidfdFlags, pidfd_open};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::time::timeout;

use crate::sandbox::{self, RECORD_READY};
use crate::{ExecError, ProcessOutput, ProcessSpec};

/// The zygote's source, run with `INTERPRETER -c`.
const SOURCE: &str = include_str!("zygote.py");

/// Zygotes kept at most (one per interpreter and start-up environment); a run that would need
/// another runs cold.
const MAX_ZYGOTES: usize = 8;

/// How long a new zygote may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// Python interpreters kept initialised, each forking per run: what `python3 SCRIPT` costs to
/// start (tens of milliseconds) is paid once per interpreter instead of per run.
///
/// **What a run gets.** [`PythonZygotes::run`] takes the [`ProcessSpec`] of a cold run of
/// `INTERPRETER SCRIPT ARGS…` (`program` the interpreter's absolute path, `args[0]` the
/// script). The zygote forks a **keeper** (a session of its own, a child subreaper, every
/// signal blocked), which forks the run: the spec's stdin, stdout and stderr (pipes read and
/// capped by the caller exactly as [`crate::run`] does), every other descriptor closed, the
/// spec's environment (the inherited one unless `env_clear`, with `env` on top), working
/// directory and `sys.argv`, `sys.path[0]` the script's directory, then the script run as
/// `__main__` (`runpy`). It exits as `python3 SCRIPT` would: the script's `SystemExit`,
/// exit code 1 and the traceback of the script's frames for an uncaught exception, 2 when
/// the script cannot be opened.
///
/// **Nothing of a run survives it**, as with the keeper of a cold run: when the script's
/// process exits, the keeper SIGKILLs every descendant (orphans, `setsid` double forks
/// included, are reparented to it) and reports the exit; when the deadline passes or the
/// run's future is dropped, the caller hangs up the run's reply socket and the keeper kills
/// everything at once (and a keeper still there after a short grace, say frozen by what it
/// keeps, is killed with its whole process group). The script's process dies with its keeper
/// (`PR_SET_PDEATHSIG`).
///
/// **Isolation between runs** comes from the fork: each run starts from the zygote's state
/// (imported modules, `sys.modules`, globals), never from a previous run's. The zygote talks
/// to this process only over a socket pair it inherited as its stdin (no address in the file
/// system or the abstract namespace); keepers close it, runs never have it. Runs are not
/// sandboxed: this is for commands hookbox would run on the host anyway.
///
/// **When a zygote is used.** One zygote is started, on first use, per interpreter path and
/// per value of the variables that shape an interpreter's start-up (`PYTHON*`, `HOME`,
/// `LANG`, `LANGUAGE`, `LC_*`, `TZ`), with exactly those variables, in the background: `run`
/// returns `None` (nothing was run; run it cold) while it starts, when it could not be started
/// (not a Python 3.9+ interpreter, say), or when eight (`MAX_ZYGOTES`) are already kept for other
/// keys; one that died is started again.
/// Known differences from a cold run: the runs of one zygote share its hash seed
/// (`PYTHONHASHSEED`), and see the modules the zygote imported (`ctypes`, `json`, `pkgutil`,
/// `runpy`, `select`, `socket`, `struct` and their dependencies) already in `sys.modules`; a
/// run's exit joins its threads, runs its `atexit` handlers and flushes stdio and the files it
/// left open, but skips the interpreter's teardown (most of a run's time otherwise), so
/// `__del__` of objects still referenced then does not run.
#[derive(Default)]
pub struct PythonZygotes {
    zygotes: Arc<Mutex<HashMap<Key, Slot>>>,
}

impl std::fmt::Debug for PythonZygotes {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("PythonZygotes")
            .field("zygotes", &lock(&self.zygotes).len())
            .finish_non_exhaustive()
    }
}

/// What a zygote is started for: the interpreter and its start-up variables.
type Key = (OsString, Vec<(OsString, OsString)>);

/// The zygote of one key.
enum Slot {
    /// Being started (runs meanwhile run cold).
    Starting,
    /// Started (maybe dead since: then it is started again).
    Live(Arc<Zygote>),
    /// Could not be started: this key's runs run cold from now on.
    Failed,
}

fn lock(zygotes: &Mutex<HashMap<Key, Slot>>) -> std::sync::MutexGuard<'_, HashMap<Key, Slot>> {
    zygotes.lock().unwrap_or_else(PoisonError::into_inner)
}

impl PythonZygotes {
    /// No zygote yet: each starts on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `spec` (`INTERPRETER SCRIPT ARGS…`, the interpreter an absolute path) forked from
    /// a zygote of that interpreter, as [`crate::run`] would run it (see the type's
    /// documentation); `None` when no zygote can be used, and nothing was run. The first run
    /// of an interpreter (or after its zygote died) starts the zygote in the background and
    /// returns `None`, so that no call waits for a zygote's start.
    pub async fn run(&self, spec: &ProcessSpec) -> Option<Result<ProcessOutput, ExecError>> {
        let (key, vars) = key(spec)?;
        let zygote = self.zygote(key)?;
        call::run(&zygote, spec, vars).await
    }

    /// Starts the zygote that would run `spec` unless it runs, and waits until it is ready:
    /// whether it is.
    pub async fn prepare(&self, spec: &ProcessSpec) -> bool {
        let Some((key, _)) = key(spec) else {
            return false;
        };
        if self.zygote(key.clone()).is_some() {
            return true;
        }
        loop {
            match lock(&self.zygotes).get(&key) {
                Some(Slot::Starting) => {}
                Some(Slot::Live(_)) => return true,
                Some(Slot::Failed) | None => return false,
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The live zygote of `key`; when there is none, one is started in the background (unless
    /// one is starting, failed to, or [`MAX_ZYGOTES`] others are kept).
    fn zygote(&self, key: Key) -> Option<Arc<Zygote>> {
        let mut zygotes = lock(&self.zygotes);
        match zygotes.get(&key) {
            Some(Slot::Live(zygote)) if zygote.alive() => return Some(Arc::clone(zygote)),
            Some(Slot::Starting | Slot::Failed) => return None,
            Some(Slot::Live(_)) | None => {}
        }
        zygotes.retain(|_, slot| !matches!(slot, Slot::Live(zygote) if !zygote.alive()));
        if zygotes.len() >= MAX_ZYGOTES {
            return None;
        }
        zygotes.insert(key.clone(), Slot::Starting);
        let kept = Arc::clone(&self.zygotes);
        tokio::spawn(async move {
            let started = Zygote::start(&key.0, &key.1).await;
            let slot = started.map_or(Slot::Failed, |zygote| Slot::Live(Arc::new(zygote)));
            lock(&kept).insert(key, slot);
        });
        None
    }
}

/// The zygote key of `spec` and its whole environment; `None` for a spec no zygote runs.
fn key(spec: &ProcessSpec) -> Option<(Key, BTreeMap<OsString, OsString>)> {
    if spec.sandbox.is_some() || spec.args.is_empty() {
        return None;
    }
    let vars = crate::keeper::environment(spec);
    Some(((spec.program.clone(), startup_vars(&vars)), vars))
}

/// The variables of `vars` that shape a Python interpreter's start-up.
fn startup_vars(vars: &BTreeMap<OsString, OsString>) -> Vec<(OsString, OsString)> {
    vars.iter()
        .filter(|(name, _)| {
            let name = name.as_encoded_bytes();
            name.starts_with(b"PYTHON")
                || name.starts_with(b"LC_")
                || matches!(name, b"HOME" | b"LANG" | b"LANGUAGE" | b"TZ")
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect()
}

/// One running zygote; killed when dropped.
struct Zygote {
    /// The control socket (its end is the zygote's stdin).
    control: AsyncFd<OwnedFd>,
    /// A pidfd of the zygote.
    pidfd: OwnedFd,
    /// The zygote (killed and reaped on drop).
    _process: tokio::process::Child,
}

impl Zygote {
    /// Starts `interpreter -c SOURCE` with `vars` and waits until it says it is ready; `None`
    /// when it fails to.
    async fn start(interpreter: &OsString, vars: &[(OsString, OsString)]) -> Option<Self> {
        let (ours, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .ok()?;
        let process = command(interpreter, vars, theirs).spawn().ok()?;
        let pid = process
            .id()
            .and_then(|pid| Pid::from_raw(pid.try_into().ok()?))?;
        let pidfd = pidfd_open(pid, PidfdFlags::empty()).ok()?;
        let control = sandbox::async_fd_for(ours, Interest::READABLE | Interest::WRITABLE).ok()?;
        let ready = async {
            loop {
                let mut ready = control.readable().await.ok()?;
                match sandbox::receive(control.get_ref()) {
                    Ok(Some(record)) => return Some(record.kind == RECORD_READY),
                    Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                        ready.clear_ready();
                    }
                    Ok(None) | Err(_) => return None,
                }
            }
        };
        if timeout(START_TIMEOUT, ready).await.ok()?? {
            Some(Self {
                control,
                pidfd,
                _process: process,
            })
        } else {
            None
        }
    }

    /// Whether the zygote still runs (its pidfd is not readable yet).
    fn alive(&self) -> bool {
        let mut fds = [PollFd::new(&self.pidfd, PollFlags::IN)];
        matches!(poll(&mut fds, Some(&Timespec::default())), Ok(0))
    }
}

/// The zygote's command: `interpreter -c SOURCE` with only `vars`, the control socket as its
/// stdin, in `/` and a process group of its own, killed when dropped.
#[expect(
    clippy::disallowed_methods,
    reason = "hookbox-exec is the one place that builds commands"
)]
fn command(
    interpreter: &OsString,
    vars: &[(OsString, OsString)],
    control: OwnedFd,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(interpreter);
    command
        .arg("-c")
        .arg(SOURCE)
        .env_clear()
        .envs(vars.iter().map(|(name, value)| (name, value)))
        .current_dir("/")
        .stdin(Stdio::from(control))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_variables_of_the_start_up_make_the_key() {
        let vars: BTreeMap<OsString, OsString> = [
            ("PATH", "/bin"),
            ("PYTHONPATH", "/x"),
            ("LC_ALL", "C"),
            ("HOME", "/root"),
            ("SECRET", "s"),
        ]
        .into_iter()
        .map(|(name, value)| (name.into(), value.into()))
        .collect();
        let names: Vec<_> = startup_vars(&vars)
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        assert_eq!(names, ["HOME", "LC_ALL", "PYTHONPATH"]);
    }
}
