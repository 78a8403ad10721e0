//! Warm sandboxes: one sandbox built once, then many calls started inside it (see
//! [`WarmSandbox`]); the supervisor inside is in [`supervisor`], the request format in
//! [`request`](mod@request).

mod footprint;
mod launch;
mod parent;
mod pool;
pub(crate) mod request;
mod spare;
mod spawner;
mod supervisor;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::MemfdFlags;
use rustix::net::SendFlags;
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Signal, pidfd_send_signal};
use tokio::net::unix::pipe;
use tokio::time::{Instant, timeout, timeout_at};

use crate::reported::{self, Ended, Reply, RunStdio};
use crate::sandbox::{
    self, CpuShare, IsolationError, Prepared, RunCgroups, STEP_CALL_START, STEP_EXEC, Sandbox,
};
use crate::spawn::{KILL_GRACE, MAX_TIMEOUT, SANDBOX_PATH, StopListening};
use crate::{ExecError, ExitKind, ProcessOutput, ProcessSpec};
pub use footprint::{WarmFootprint, warm_sandbox_footprint};
pub use parent::PARENT_ARG;
pub(crate) use parent::parent_args;
use pool::{NoSpare, ReadySpare, Spares};
use request::Request;
use spare::Message;
use supervisor::READY_ENDS_ON_PIDFDS;
pub(crate) use supervisor::supervisor_args;
pub use supervisor::{
    SUPERVISOR_ARG, SUPERVISOR_PROGRAM, supervise_if_asked, supervise_only, supervisor_program,
};

/// How many spares a call tries before it gives up (a spare that died before its request is
/// replaced by the next).
const MAX_ATTEMPTS: usize = 3;

/// How long a new sandbox's supervisor may take to say it is ready.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// A sandbox built once whose supervisor runs many calls; rebuilt by the next call when its
/// supervisor died; killed on drop.
///
/// A cold run ([`crate::run`] with [`ProcessSpec::sandbox`]) builds a whole sandbox for one
/// program (namespaces, mounts, landlock, seccomp, cgroups) and tears it down after: about 4 ms
/// a run. A `WarmSandbox` builds the same sandbox from the same plan once, but its init, instead
/// of confining itself and executing a program, executes a **supervisor**: the program given
/// to [`WarmSandbox::start`] (hookbox itself), re-executed with [`SUPERVISOR_ARG`], whose `main`
/// calls [`supervise_if_asked`] first. The supervisor starts the calls; each
/// [`WarmSandbox::run`] hands its request to one of them directly.
///
/// **Talking to the supervisor.** The parent and the supervisor share a Unix socket pair made
/// before the sandbox is built (the cold path's status socket): nothing in the file system, no
/// abstract name. On it the parent asks for calls started ahead of their requests (*spares*),
/// and the supervisor hands each over: the parent's ends of the spare's request socket and
/// report socket, and a pidfd of it. The parent keeps one spare ahead of the calls (taking one
/// asks for the next) and sends each its cgroups at once. Per call the parent creates the
/// stdin, stdout and stderr pipes, writes the request (program, arguments, environment,
/// working directory) into a memory file and passes the four descriptors to a spare with
/// `SCM_RIGHTS`: one hop, the supervisor is not on the call's path. A step that fails is
/// reported on the report socket. The call's end: where the kernel keeps exit statuses for
/// pidfds (Linux 6.15, `PIDFD_INFO_EXIT`), the supervisor lets the kernel reap its calls and
/// the parent reads the wait status from the call's pidfd; elsewhere the supervisor reaps the
/// call and sends `EXITED` with its wait status on the report socket. The parent feeds stdin,
/// drains and caps the output and keeps the deadline exactly as for a cold run.
///
/// **Each call** starts (`clone`, sharing the supervisor's memory until it executes its
/// program, as `posix_spawn` does) as pid 1 of a pid namespace of its own, in a mount
/// namespace of its own with a fresh `/proc`, `/tmp` and `/dev/shm`, and in an IPC namespace
/// of its own (so that nothing one call leaves in scratch space or as SysV or POSIX IPC
/// objects, say the model's code, reaches a later one, say an owner's hook: as between cold
/// runs; the test suite's residue test lists what a call may try to leave), in a session of
/// its own, then sets the
/// sandbox's rlimits, `no_new_privs`, landlock, drops every capability, marks every descriptor
/// from 3 up close-on-exec and applies the seccomp filter: the same confinement as a cold
/// sandbox's program. All of that is done before the call's request exists (the spare waits
/// on its request socket), so the caller waits only for the spare to take its stdio and
/// working directory and execute the program; the first request, and requests arriving
/// together, wait for spares started on demand. A spare that died before its request is
/// replaced by the next, and a sandbox found gone before anything of the call ran is rebuilt
/// for it. When the call's program exits, or is killed (the deadline, or the run's future
/// dropped: the parent SIGKILLs it through its pidfd), the kernel kills everything else in
/// its pid namespace, `setsid` double forks included, before the end is seen: no process of a
/// call survives it. Concurrent calls are independent: each has its own namespaces, pipes and
/// sockets.
///
/// **What a call cannot do to the supervisor** (each tested):
/// - name it: it is outside the call's pid namespace (pid 1 there is the call itself) and
///   outside its `/proc`; `pidfd_send_signal` on any pidfd it could get refuses a process
///   outside the caller's pid namespace; landlock (ABI 6) also scopes signals to the call;
/// - open its descriptors or memory through `/proc/<pid>`: the supervisor is not dumpable and
///   keeps capabilities the call does not have (ptrace access is refused), and `ptrace` is
///   filtered by seccomp;
/// - reach its socket: the control socket and the ruleset are close-on-exec in the supervisor
///   and marked so again before the call's program runs (descriptors 3 and up are closed at
///   exec); the socket has no address, and landlock scopes abstract Unix sockets anyway.
///
/// **Listening inside.** A [`Sandbox::listen_inside`] listener is opened once per built
/// sandbox and handed out when it starts (and again after a rebuild); every call reaches it,
/// and it is shut down when the sandbox stops.
///
/// **Files.** The file system is built once: files and directories created below the
/// sandbox's entries (such as `/workspace`) are seen by later calls as always, but a top-level
/// entry added to [`Sandbox::root`] after the start appears only in a sandbox built after it.
/// Binds below `/tmp` (say a working directory under the host's `/tmp`, bound at its own path)
/// are carried over each call's fresh `/tmp`, read-only ones read-only, as a cold run has them
/// (at most 16 such stacks; more is refused when the sandbox starts).
///
/// **Limits.** As root, each call gets new cgroups of its own, made by the parent like a cold
/// run's with the sandbox's [`Limits`](crate::Limits) (never another call's: nothing an
/// earlier call left charged, such as a SysV segment, can make a later call, such as an
/// owner's hook, short of its limit), and joins
/// them as soon as the parent has its spare (before it has started anything), through
/// write-only descriptors the parent opened and passed to it (the cgroup file system is not
/// mounted inside): one call's fork bomb or memory hog is bounded by its own limits and leaves
/// the calls beside it theirs. The cgroups are removed once the supervisor has
/// released the call's mount namespace and closed its report socket. The
/// sandbox's own cgroups then hold only the supervisor and spares not yet handed over (so a sandbox
/// whose limits leave no room beside its supervisor starts no call: it fails with an isolation
/// error, never hangs). CPU time, file size and open files are per-process rlimits as in a
/// cold run.
///
/// **Lifetime.** The sandbox's first process is forked from a thread of this process that never
/// ends (a parent-death signal binds it to the thread that forked it, and a runtime ends its
/// threads when it likes), so the sandbox lives until the `WarmSandbox` is dropped or this
/// process dies, even by `kill -9`; it may be started from any thread of a runtime. That first
/// process, the supervisor's parent, executes the supervisor's program again as soon as the
/// supervisor runs (with [`PARENT_ARG`]), so that no copy of this process's memory stays
/// behind; [`warm_sandbox_footprint`] counts everything a sandbox keeps. Dropping the `WarmSandbox` kills the whole sandbox. A supervisor killed from outside is
/// noticed: the calls in progress fail with [`ExecError::SandboxLost`], and the next call
/// builds a new sandbox first.
pub struct WarmSandbox {
    sandbox: Sandbox,
    supervisor: PathBuf,
    /// Whether the supervisor reports each call's end (see
    /// [`WarmSandbox::start_reporting_ends`]).
    report_ends: bool,
    /// The running sandbox; replaced when found dead.
    live: Mutex<Arc<Live>>,
    /// Held while a dead sandbox is rebuilt, so that concurrent calls build one.
    rebuilding: tokio::sync::Mutex<()>,
}

impl std::fmt::Debug for WarmSandbox {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("WarmSandbox")
            .field("sandbox", &self.sandbox)
            .field("supervisor", &self.supervisor)
            .field("pid", &self.current().pid)
            .finish_non_exhaustive()
    }
}

impl WarmSandbox {
    /// Builds `sandbox` and starts its supervisor: `supervisor` (an executable whose `main`
    /// calls [`supervise_if_asked`] first; `/proc/self/exe` for this program) re-executed as
    /// the sandbox's init. Fails like a cold run's setup, or when the supervisor does not say
    /// it is ready.
    pub async fn start(
        sandbox: Sandbox,
        supervisor: impl Into<PathBuf>,
    ) -> Result<Self, IsolationError> {
        Self::start_with(sandbox, supervisor.into(), false).await
    }

    /// Like [`WarmSandbox::start`], but the supervisor reports each call's end even where the
    /// kernel keeps exit statuses for pidfds: the path taken on kernels before 6.15, for
    /// testing it on newer ones.
    #[doc(hidden)]
    pub async fn start_reporting_ends(
        sandbox: Sandbox,
        supervisor: impl Into<PathBuf>,
    ) -> Result<Self, IsolationError> {
        Self::start_with(sandbox, supervisor.into(), true).await
    }

    async fn start_with(
        sandbox: Sandbox,
        supervisor: PathBuf,
        report_ends: bool,
    ) -> Result<Self, IsolationError> {
        let live = Live::start(&sandbox, &supervisor, report_ends).await?;
        Ok(Self {
            sandbox,
            supervisor,
            report_ends,
            live: Mutex::new(Arc::new(live)),
            rebuilding: tokio::sync::Mutex::new(()),
        })
    }

    /// The sandbox this runs calls in.
    pub fn sandbox(&self) -> &Sandbox {
        &self.sandbox
    }

    /// The supervisor's process id (in this process's pid namespace), while it runs.
    pub fn supervisor_pid(&self) -> Option<u32> {
        let live = self.current();
        live.alive().then_some(live.pid)
    }

    /// Runs `spec` as one call in this sandbox, like [`crate::run`] runs it in a cold one: same
    /// environment (`PATH`, `HOME`, `TMPDIR`, then [`ProcessSpec::env`]), working directory,
    /// stdin, timeout and output caps; everything the call started is gone when this returns.
    /// [`ProcessSpec::sandbox`] must be `None` or this sandbox's own; `env_clear` and
    /// `die_with_parent` do not apply. When the supervisor is found dead, a new sandbox is
    /// built first; when it dies during the call, the call fails with
    /// [`ExecError::SandboxLost`].
    pub async fn run(&self, spec: &ProcessSpec) -> Result<ProcessOutput, ExecError> {
        let program = || spec.program.to_string_lossy().into_owned();
        if spec
            .sandbox
            .as_ref()
            .is_some_and(|sandbox| *sandbox != self.sandbox)
        {
            return Err(ExecError::Isolation {
                program: program(),
                source: IsolationError::Unsupported(
                    "a warm sandbox runs calls in its own sandbox; the spec names another".into(),
                ),
            });
        }
        let isolation = |source| ExecError::Isolation {
            program: program(),
            source,
        };
        let live = self.live(None).await.map_err(isolation)?;
        match live.call(spec, &self.sandbox).await {
            Ok(out) => Ok(out),
            Err(CallFailed::Error(error)) => Err(error),
            // Found gone before anything of the call ran: once more, in a new sandbox.
            Err(CallFailed::Gone) => {
                let live = self.live(Some(&live)).await.map_err(isolation)?;
                live.call(spec, &self.sandbox)
                    .await
                    .map_err(|failed| match failed {
                        CallFailed::Gone => ExecError::SandboxLost { program: program() },
                        CallFailed::Error(error) => error,
                    })
            }
        }
    }

    fn current(&self) -> Arc<Live> {
        Arc::clone(&self.live.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The running sandbox, built again if its supervisor is gone or it is `dead` (found
    /// gone by a call).
    async fn live(&self, dead: Option<&Arc<Live>>) -> Result<Arc<Live>, IsolationError> {
        let usable =
            |live: &Arc<Live>| live.alive() && !dead.is_some_and(|dead| Arc::ptr_eq(dead, live));
        let live = self.current();
        if usable(&live) {
            return Ok(live);
        }
        let _rebuilding = self.rebuilding.lock().await;
        let live = self.current();
        if usable(&live) {
            return Ok(live);
        }
        let live = Arc::new(Live::start(&self.sandbox, &self.supervisor, self.report_ends).await?);
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&live);
        Ok(live)
    }
}

/// One built sandbox and its supervisor; killed when dropped.
struct Live {
    /// The plan, the status (control) socket and the cgroups, removed after the kill.
    prepared: Prepared,
    /// The spares its supervisor hands over, on the control socket.
    spares: Spares,
    /// Whether the kernel reaps the calls, their ends read from their pidfds (see
    /// [`READY_ENDS_ON_PIDFDS`]).
    ends_on_pidfds: bool,
    /// Set when a call found the supervisor gone.
    lost: AtomicBool,
    /// A pidfd of the supervisor.
    init: OwnedFd,
    /// The supervisor's pid.
    pid: u32,
    /// The intermediate process (the supervisor dies with it); killed and reaped on drop.
    _intermediate: tokio::process::Child,
    /// The listener handed out, shut down when the sandbox stops.
    _listener: Option<StopListening>,
}

impl Live {
    async fn start(
        sandbox: &Sandbox,
        supervisor: &Path,
        report_ends: bool,
    ) -> Result<Self, IsolationError> {
        let (prepared, child_end) =
            sandbox::prepare(sandbox, None, Some(supervisor), CpuShare::Yielding)?;
        let spawned = spawner::spawn(command(&prepared, supervisor)).await;
        // The children hold their own copies; ours would keep the status socket from ending.
        drop(child_end);
        let intermediate = spawned.map_err(|source| {
            prepared.failure().unwrap_or_else(|| IsolationError::Setup {
                step: "starting the warm sandbox".into(),
                source,
            })
        })?;
        let not_ready = || {
            IsolationError::Unsupported(format!(
                "the warm sandbox's supervisor `{}` stopped or did not say it was ready within \
                 {START_TIMEOUT:?} (its main must call hookbox_exec::supervise_if_asked first)",
                supervisor.display()
            ))
        };
        let (init, listener, ready) = timeout(START_TIMEOUT, prepared.init_pidfd(true))
            .await
            .map_err(|_elapsed| not_ready())?;
        let (Some(init), Some(ready)) = (init, ready) else {
            return Err(not_ready());
        };
        let pid = pidfd_pid(&init).ok_or_else(|| IsolationError::Setup {
            step: "finding the supervisor's pid".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        let spares = prepared
            .status
            .try_clone()
            .and_then(|fd| Spares::new(fd, sandbox.limits.clone()))
            .map_err(|source| IsolationError::Setup {
                step: "watching the control socket".into(),
                source,
            })?;
        let ends_on_pidfds = ready == READY_ENDS_ON_PIDFDS && !report_ends;
        if ready == READY_ENDS_ON_PIDFDS && report_ends {
            spares
                .report_ends()
                .map_err(|source| IsolationError::Setup {
                    step: "asking the supervisor to report ends".into(),
                    source: source.into(),
                })?;
        }
        Ok(Self {
            lost: AtomicBool::new(false),
            ends_on_pidfds,
            prepared,
            spares,
            init,
            pid,
            _intermediate: intermediate,
            _listener: listener.map(StopListening),
        })
    }

    /// Whether the supervisor still runs (its pidfd is not readable yet, and its end of the
    /// control socket, closed first thing when it dies, is still open).
    fn alive(&self) -> bool {
        let mut fds = [PollFd::new(&self.init, PollFlags::IN)];
        !self.lost.load(Ordering::Relaxed)
            && matches!(poll(&mut fds, Some(&Timespec::default())), Ok(0))
            && !self.spares.supervisor_gone()
    }

    /// Runs one call (see [`WarmSandbox::run`]).
    async fn call(
        &self,
        spec: &ProcessSpec,
        sandbox: &Sandbox,
    ) -> Result<ProcessOutput, CallFailed> {
        let program = || spec.program.to_string_lossy().into_owned();
        let started = Instant::now();
        let deadline = started + spec.timeout.min(MAX_TIMEOUT);
        let lost = || ExecError::SandboxLost { program: program() };
        let io_error = |source: std::io::Error| ExecError::Spawn {
            program: program(),
            source,
        };
        let errno_io = |errno: rustix::io::Errno| io_error(errno.into());

        let (stdin_read, stdin_write) = pipe_with(PipeFlags::CLOEXEC).map_err(errno_io)?;
        let (stdout_read, stdout_write) = pipe_with(PipeFlags::CLOEXEC).map_err(errno_io)?;
        let (stderr_read, stderr_write) = pipe_with(PipeFlags::CLOEXEC).map_err(errno_io)?;
        let payload =
            rustix::fs::memfd_create("hookbox-call", MemfdFlags::CLOEXEC).map_err(errno_io)?;
        std::fs::File::from(payload.try_clone().map_err(io_error)?)
            .write_all(&request(spec, sandbox).encode())
            .map_err(io_error)?;
        let fds = [
            payload.as_fd(),
            stdin_read.as_fd(),
            stdout_write.as_fd(),
            stderr_write.as_fd(),
        ];
        // A spare that died before its request (which nothing of the call reached) is
        // replaced by the next.
        let mut attempts = 0;
        let (spare, cgroups) = loop {
            let ReadySpare {
                pid,
                pidfd,
                request,
                report,
                cgroups,
            } = self
                .spares
                .take()
                .await
                .map_err(|no_spare| match no_spare {
                    NoSpare::NotStarted(errno) => {
                        CallFailed::Error(self.failure(spec, STEP_CALL_START, errno))
                    }
                    NoSpare::Gone => CallFailed::Gone,
                })?;
            let cgroups = cgroups
                .and_then(|cgroups| {
                    cgroups
                        .weigh(spec.cpu)
                        .map_err(|source| IsolationError::Setup {
                            step: "setting a warm call's CPU weight".into(),
                            source,
                        })?;
                    Ok(cgroups)
                })
                .map_err(|source| ExecError::Isolation {
                    program: program(),
                    source,
                })?;
            attempts += 1;
            match Message::send(
                request.as_fd(),
                Message::REQUEST,
                0,
                &fds,
                SendFlags::DONTWAIT,
            ) {
                Ok(()) => break ((pid, pidfd, report), cgroups),
                Err(_) if attempts < MAX_ATTEMPTS => {}
                Err(_) => return Err(CallFailed::Gone),
            }
        };
        // Only the call may hold these now: end-of-file comes when it is gone.
        drop((payload, stdin_read, stdout_write, stderr_write));
        let (pid, pidfd, report) = spare;

        let stdio = RunStdio {
            stdin: pipe::Sender::from_owned_fd(stdin_write).map_err(io_error)?,
            stdout: pipe::Receiver::from_owned_fd(stdout_read).map_err(io_error)?,
            stderr: pipe::Receiver::from_owned_fd(stderr_read).map_err(io_error)?,
        };
        let mut reply = Reply::new(report).map_err(io_error)?;
        if self.ends_on_pidfds {
            reply.ended_by(pid, pidfd).map_err(io_error)?;
        } else {
            reply.started = Some((pid, Some(pidfd)));
        }
        let mut call = Call(reply);
        let (ended, out, err) = reported::exchange(
            &mut call.0,
            spec,
            stdio,
            deadline,
            async |reply: &mut Reply| {
                kill(reply);
                // Normally immediate: the kernel empties the call's namespace.
                let _gone = timeout_at(Instant::now() + KILL_GRACE, reply.exited()).await;
            },
        )
        .await;
        let exit = match ended {
            // Killed: by the OOM killer, say, or with its sandbox (the supervisor, gone, did
            // not see it end).
            Ended::Exit(ExitKind::Signaled(libc::SIGKILL))
                if self.ends_on_pidfds
                    && !timeout(KILL_GRACE, call.0.end_reported())
                        .await
                        .unwrap_or(false) =>
            {
                self.lost.store(true, Ordering::Relaxed);
                return Err(lost().into());
            }
            Ended::Exit(exit) => exit,
            // A call that could not start reported the step that failed before its end.
            Ended::NotStarted(step, errno) => return Err(self.failure(spec, step, errno).into()),
            Ended::Lost => {
                self.lost.store(true, Ordering::Relaxed);
                return Err(lost().into());
            }
        };
        release_after_end(call, cgroups);
        Ok(ProcessOutput {
            exit,
            stdout: out,
            stderr: err,
            duration: started.elapsed(),
        })
    }

    /// The error for a call whose `step` failed with `errno`: executing the program is a spawn
    /// error, as in a cold run; any other step is an isolation error.
    fn failure(&self, spec: &ProcessSpec, step: u32, errno: i32) -> ExecError {
        let program = spec.program.to_string_lossy().into_owned();
        if step == STEP_EXEC {
            return ExecError::Spawn {
                program,
                source: std::io::Error::from_raw_os_error(errno),
            };
        }
        ExecError::Isolation {
            program,
            source: sandbox::setup_error(&self.prepared.plan, step, errno),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // The intermediate is killed and reaped with `_intermediate` (kill on drop); its
        // parent-death signal would kill the supervisor, but this does not wait for that.
        let _killed = pidfd_send_signal(&self.init, Signal::KILL);
    }
}

/// Why a call in one built sandbox failed.
enum CallFailed {
    /// The sandbox was found gone before anything of the call ran.
    Gone,
    /// The call failed.
    Error(ExecError),
}

impl From<ExecError> for CallFailed {
    fn from(error: ExecError) -> Self {
        Self::Error(error)
    }
}

/// The parent's side of one call: its report socket, its pidfd and what arrived; dropped
/// before the call's end (the run's future was dropped), it kills the call.
struct Call(Reply);

/// Removes the cgroups of an ended `call` once its report socket ends (the supervisor closes
/// it after reaping the call and releasing its mount namespace), or after [`KILL_GRACE`]
/// (what is left then is removed as soon as it can be). Off the caller's path, on the
/// runtime.
fn release_after_end(call: Call, cgroups: RunCgroups) {
    if !cgroups.is_set() {
        return;
    }
    tokio::spawn(async move {
        let mut call = call;
        let _ended = timeout(KILL_GRACE, call.0.closed()).await;
        drop(cgroups);
    });
}

/// Kills the call of `reply` once started (and so everything in its pid namespace).
fn kill(reply: &Reply) {
    if let Some(pidfd) = reply.pidfd() {
        // Failing means it is gone already.
        let _killed = pidfd_send_signal(pidfd, Signal::KILL);
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        kill(&self.0);
    }
}

/// The request for `spec` in `sandbox`: the cold run's environment and working directory.
fn request(spec: &ProcessSpec, sandbox: &Sandbox) -> Request {
    let home = sandbox.home();
    let mut vars: BTreeMap<OsString, OsString> = BTreeMap::from([
        ("PATH".into(), SANDBOX_PATH.into()),
        ("HOME".into(), home.clone().into_os_string()),
        ("TMPDIR".into(), "/tmp".into()),
    ]);
    vars.extend(spec.env.iter().cloned());
    let cwd = match &spec.cwd {
        Some(cwd) => home.join(cwd),
        None => home,
    };
    Request {
        program: spec.program.as_bytes().to_vec(),
        cwd: cwd.into_os_string().into_vec(),
        args: spec
            .args
            .iter()
            .map(|arg| arg.as_bytes().to_vec())
            .collect(),
        vars: crate::exec_args::env_entries(vars),
    }
}

/// The pid of the process `pidfd` refers to, from its `fdinfo`.
fn pidfd_pid(pidfd: &OwnedFd) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", pidfd.as_raw_fd())).ok()?;
    info.lines()
        .find_map(|line| line.strip_prefix("Pid:"))?
        .trim()
        .parse()
        .ok()
}

/// The command that builds the sandbox: its pre-exec step becomes the intermediate and the
/// init, which executes the supervisor (the program named here is never executed by the
/// standard library; it names the run in errors).
#[expect(
    clippy::disallowed_methods,
    reason = "hookbox-exec is the one place that builds commands"
)]
#[expect(unsafe_code, reason = "pre_exec builds the sandbox in the child")]
fn command(prepared: &Prepared, supervisor: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(supervisor);
    command
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    let plan = Arc::clone(&prepared.plan);
    // SAFETY: the closure runs in the forked child between fork and exec. `sandbox::enter`
    // only makes raw system calls on data the parent prepared (no allocation, no lock).
    unsafe {
        command.pre_exec(move || sandbox::enter(&plan));
    }
    command
}
