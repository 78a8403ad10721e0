//! Warm sandboxes: one sandbox built once, then many calls started inside it (see
//! [`WarmSandbox`]); the supervisor inside is in [`supervisor`], the request format in
//! [`request`].

pub(crate) mod request;
mod spare;
mod supervisor;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::fs::MemfdFlags;
use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
    sendmsg, socketpair,
};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Signal, pidfd_send_signal};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;
use tokio::time::{Instant, timeout, timeout_at};

use crate::reported::{self, Ended, Reply, RunStdio};
use crate::sandbox::{self, IsolationError, Prepared, RunCgroups, STEP_EXEC, Sandbox};
use crate::spawn::{KILL_GRACE, MAX_TIMEOUT, SANDBOX_PATH, StopListening};
use crate::{ExecError, ProcessOutput, ProcessSpec};
use request::Request;
pub(crate) use supervisor::supervisor_args;
pub use supervisor::{
    SUPERVISOR_ARG, SUPERVISOR_PROGRAM, supervise_if_asked, supervise_only, supervisor_program,
};

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
/// calls [`supervise_if_asked`] first. Each [`WarmSandbox::run`] then asks the supervisor to
/// start one call.
///
/// **Talking to the supervisor.** The parent and the supervisor share a Unix socket pair made
/// before the sandbox is built (the cold path's status socket): nothing in the file system, no
/// abstract name. Per call the parent creates the stdin, stdout and stderr pipes and a reply
/// socket pair, writes the request (program, arguments, environment, working directory) into a
/// memory file, and passes all five descriptors with `SCM_RIGHTS`. The supervisor answers on
/// the call's reply socket: `STARTED` with a pidfd of the call, or the step that failed, then
/// `EXITED` with its wait status. The parent feeds stdin, drains and caps the output and keeps
/// the deadline exactly as for a cold run.
///
/// **Each call** starts (`clone3`) as pid 1 of a pid namespace of its own and in a mount
/// namespace of its own with a fresh `/proc`, `/tmp` and `/dev/shm` (so that nothing one call
/// leaves in scratch space, say the model's code, reaches a later one, say an owner's hook:
/// as between cold runs), in a session of its own, then sets the
/// sandbox's rlimits, `no_new_privs`, landlock, drops every capability, marks every descriptor
/// from 3 up close-on-exec and applies the seccomp filter: the same confinement as a cold
/// sandbox's program. All of that is done before the call's request arrives: once the
/// sandbox has had a request, the supervisor keeps the next call started ahead (a *spare*,
/// waiting on a socket of its own for the request's descriptors), so the caller waits only
/// for the spare to join its cgroups, take its stdio and working directory and execute the
/// program; the first request, and requests arriving together, start theirs on demand. When
/// the call's program exits, or is killed (the deadline: the parent
/// SIGKILLs it through its pidfd; the run's future dropped: the supervisor sees the reply
/// socket hang up and kills it), the kernel kills everything else in its pid namespace,
/// `setsid` double forks included, before `EXITED` is sent: no process of a call survives
/// it. Concurrent calls are independent: each has its own namespaces, pipes and reply socket.
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
/// **Limits.** As root, each call gets cgroups of its own, made by the parent like a cold
/// run's (from the same small pool) with the sandbox's [`Limits`](crate::Limits), and joins
/// them first thing when its request arrives (before it has started anything), through
/// write-only descriptors the parent opened and
/// passed with the request (the cgroup file system is not mounted inside): one call's fork bomb
/// or memory hog is bounded by its own limits and leaves the calls beside it theirs. The
/// sandbox's own cgroups then hold only the supervisor, its spare and calls not yet moved (so a sandbox
/// whose limits leave no room beside its supervisor starts no call: it fails with an isolation
/// error, never hangs). CPU time, file size and open files are per-process rlimits as in a
/// cold run.
///
/// **Lifetime.** The supervisor dies with its parent (like a cold sandbox, it is bound to the
/// thread that started it: start it from a runtime worker, not a blocking thread that may end).
/// Dropping the `WarmSandbox` kills the whole sandbox. A supervisor killed from outside is
/// noticed: the calls in progress fail with [`ExecError::SandboxLost`], and the next call
/// builds a new sandbox first.
pub struct WarmSandbox {
    sandbox: Sandbox,
    supervisor: PathBuf,
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
        let supervisor = supervisor.into();
        let live = Live::start(&sandbox, &supervisor).await?;
        Ok(Self {
            sandbox,
            supervisor,
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
        let live = self.live().await.map_err(|source| ExecError::Isolation {
            program: program(),
            source,
        })?;
        live.call(spec, &self.sandbox).await
    }

    fn current(&self) -> Arc<Live> {
        Arc::clone(&self.live.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The running sandbox, built again if its supervisor is gone.
    async fn live(&self) -> Result<Arc<Live>, IsolationError> {
        let live = self.current();
        if live.alive() {
            return Ok(live);
        }
        let _rebuilding = self.rebuilding.lock().await;
        let live = self.current();
        if live.alive() {
            return Ok(live);
        }
        let live = Arc::new(Live::start(&self.sandbox, &self.supervisor).await?);
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = Arc::clone(&live);
        Ok(live)
    }
}

/// One built sandbox and its supervisor; killed when dropped.
struct Live {
    /// The plan, the status (control) socket and the cgroups, removed after the kill.
    prepared: Prepared,
    /// The control socket, for sending requests.
    control: AsyncFd<OwnedFd>,
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
    async fn start(sandbox: &Sandbox, supervisor: &Path) -> Result<Self, IsolationError> {
        let (prepared, child_end) = sandbox::prepare(sandbox, None, Some(supervisor))?;
        let spawned = command(&prepared, supervisor).spawn();
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
        let (Some(init), true) = (init, ready) else {
            return Err(not_ready());
        };
        let pid = pidfd_pid(&init).ok_or_else(|| IsolationError::Setup {
            step: "finding the supervisor's pid".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        })?;
        let control = prepared
            .status
            .try_clone()
            .and_then(|fd| sandbox::async_fd_for(fd, Interest::WRITABLE))
            .map_err(|source| IsolationError::Setup {
                step: "watching the control socket".into(),
                source,
            })?;
        Ok(Self {
            prepared,
            control,
            init,
            pid,
            _intermediate: intermediate,
            _listener: listener.map(StopListening),
        })
    }

    /// Whether the supervisor still runs (its pidfd is not readable yet).
    fn alive(&self) -> bool {
        let mut fds = [PollFd::new(&self.init, PollFlags::IN)];
        matches!(poll(&mut fds, Some(&Timespec::default())), Ok(0))
    }

    /// Sends one request's descriptors to the supervisor.
    async fn send(&self, fds: &[std::os::fd::BorrowedFd<'_>]) -> std::io::Result<()> {
        loop {
            let mut ready = self.control.writable().await?;
            let mut space = [std::mem::MaybeUninit::uninit();
                rustix::cmsg_space!(ScmRights(spare::MAX_REQUEST_FDS))];
            let mut ancillary = SendAncillaryBuffer::new(&mut space);
            ancillary.push(SendAncillaryMessage::ScmRights(fds));
            match sendmsg(
                self.control.get_ref(),
                &[std::io::IoSlice::new(&[0; 4])],
                &mut ancillary,
                SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
            ) {
                Ok(_) => return Ok(()),
                Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
                Err(error) => return Err(error.into()),
            }
        }
    }

    /// Runs one call (see [`WarmSandbox::run`]).
    async fn call(
        &self,
        spec: &ProcessSpec,
        sandbox: &Sandbox,
    ) -> Result<ProcessOutput, ExecError> {
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
        let (reply, reply_child) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(errno_io)?;
        let payload =
            rustix::fs::memfd_create("hookbox-call", MemfdFlags::CLOEXEC).map_err(errno_io)?;
        std::fs::File::from(payload.try_clone().map_err(io_error)?)
            .write_all(&request(spec, sandbox).encode())
            .map_err(io_error)?;
        // The call's own cgroups (as root), joined by the call before anything else: its
        // processes and memory are limited like a cold run's, apart from the calls beside it.
        // Kept until the call has ended, then pooled or removed.
        let mut cgroups = if sandbox::is_root() {
            let cgroups = RunCgroups::create(&sandbox.limits, 0);
            cgroups
                .require_pids(&sandbox.limits)
                .map_err(|source| ExecError::Isolation {
                    program: program(),
                    source,
                })?;
            cgroups
        } else {
            RunCgroups::default()
        };
        let mut fds = vec![
            payload.as_fd(),
            stdin_read.as_fd(),
            stdout_write.as_fd(),
            stderr_write.as_fd(),
            reply_child.as_fd(),
        ];
        fds.extend(cgroups.joins().map_err(io_error)?.iter().map(AsFd::as_fd));
        self.send(&fds).await.map_err(|_gone| lost())?;
        // Only the call may hold these now: end-of-file comes when it is gone.
        drop(fds);
        drop((payload, stdin_read, stdout_write, stderr_write, reply_child));

        let stdio = RunStdio {
            stdin: pipe::Sender::from_owned_fd(stdin_write).map_err(io_error)?,
            stdout: pipe::Receiver::from_owned_fd(stdout_read).map_err(io_error)?,
            stderr: pipe::Receiver::from_owned_fd(stderr_read).map_err(io_error)?,
        };
        let mut call = Call(Reply::new(reply).map_err(io_error)?);
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
            Ended::Exit(exit) => exit,
            // A call that could not start ends its reply socket without a status.
            Ended::NotStarted(step, errno) => return Err(self.failure(spec, step, errno)),
            Ended::Lost => return Err(lost()),
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

/// The parent's side of one call: its reply socket and what arrived on it; dropped before
/// the call's end (the run's future was dropped), it kills the call (the supervisor, seeing
/// the reply socket hang up, would kill it too).
struct Call(Reply);

/// Gives the cgroups of an ended `call` back once its reply socket ends: the supervisor closes
/// it after releasing the call's mount namespace (whose `/tmp` pages are charged to them), so
/// a later call that takes them from the pool starts with nothing of this one's charged there.
/// Off the caller's path, on the runtime; when the end does not come within [`KILL_GRACE`],
/// they are given back as any others (pooled only when `cgroup.procs` is empty).
fn release_after_end(mut call: Call, mut cgroups: RunCgroups) {
    if !cgroups.is_set() {
        return;
    }
    tokio::spawn(async move {
        if let Ok(None) = timeout(KILL_GRACE, call.0.exited()).await {
            cgroups.emptied();
        }
        drop(cgroups);
    });
}

/// Kills the call of `reply` once started (and so everything in its pid namespace).
fn kill(reply: &Reply) {
    if let Some((_, Some(pidfd))) = &reply.started {
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
