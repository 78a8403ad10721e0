//! Spawning one child in its own process group and collecting what it did.

use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::pin::pin;
use std::process::Stdio;
use std::time::Duration;

use rustix::pipe::PipeFlags;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::time::{Instant, timeout_at};

use crate::capture::{self, CapturedOutput};
use crate::group::ProcessGroup;
use crate::keeper::{self, KeeperPlan};
use crate::sandbox::{self, CpuShare, IsolationError, Prepared, Sandbox};

/// `PATH` inside a sandbox.
pub const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Longest wait honoured; longer timeouts are clamped to it.
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 60 * 60);

/// After the group is killed, how long hookbox still waits, at least, for the child to be reaped
/// and for the pipes to reach end-of-file (a process that escaped the group may hold them open).
pub(crate) const KILL_GRACE: Duration = Duration::from_millis(250);

/// What to run: program, arguments, working directory, environment, stdin and limits.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// Program to execute (looked up on `PATH` when it has no slash).
    pub program: OsString,
    /// Arguments after the program name.
    pub args: Vec<OsString>,
    /// Working directory; the caller's when `None`. In a sandbox it is a path inside the
    /// sandbox (relative ones are relative to [`Sandbox::home`]), that home when `None`.
    pub cwd: Option<PathBuf>,
    /// Start from an empty environment instead of inheriting the caller's. A sandboxed child
    /// never inherits the caller's environment: it starts from `PATH`, `HOME` ([`Sandbox::home`]) and
    /// `TMPDIR=/tmp`, whatever this says.
    pub env_clear: bool,
    /// Variables set on top of the (inherited or empty) environment.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to the child's stdin, which is then closed.
    pub stdin: Vec<u8>,
    /// Wall-clock limit; when it passes the whole process group is killed (clamped to a year).
    pub timeout: Duration,
    /// Bytes kept from each of stdout and stderr; the rest is read and dropped.
    pub output_limit: usize,
    /// Make sure nothing the program starts outlives its run, nor hookbox, even when hookbox is
    /// killed outright (every other exit path of hookbox already kills the process group).
    ///
    /// On the host the program then runs under a keeper (see [`crate`]'s documentation): a
    /// child subreaper that dies with hookbox and kills every descendant of the program, even
    /// those that called `setsid`, when the program exits, the timeout passes or the run is
    /// dropped. Without it, only the program's process group is killed, so a descendant that
    /// left the group may outlive the run (and keep the output pipes open until the timeout).
    /// It costs a fork of the calling process instead of the standard library's `posix_spawn`
    /// fast path: about 0.7 ms more in a small process, and more as the caller's memory grows
    /// (about 10 ms more with 64 MiB written; see BENCHMARKS.md).
    ///
    /// A sandbox always dies with hookbox (its processes are bound to it and to their pid
    /// namespace), whatever this says.
    pub die_with_parent: bool,
    /// Run the program inside this sandbox (see the crate documentation). hookbox never falls
    /// back to running it unsandboxed: when isolation fails, [`run`] returns
    /// [`ExecError::Isolation`].
    pub sandbox: Option<Sandbox>,
    /// The sandboxed run's share of the CPU beside other runs ([`CpuShare::Yielding`] unless
    /// it is a hook's).
    pub cpu: CpuShare,
}

impl ProcessSpec {
    /// Default cap on each of stdout and stderr: 1 MiB.
    pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

    /// `/bin/sh -c COMMAND`, inheriting the environment, with the default output cap, dying
    /// with hookbox.
    pub fn shell(command: &str, timeout: Duration) -> Self {
        Self {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), command.into()],
            cwd: None,
            env_clear: false,
            env: Vec::new(),
            stdin: Vec::new(),
            timeout,
            output_limit: Self::DEFAULT_OUTPUT_LIMIT,
            die_with_parent: true,
            sandbox: None,
            cpu: CpuShare::Yielding,
        }
    }
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// It exited by itself with this status code.
    Exited(i32),
    /// It was ended by this signal (not by hookbox's timeout).
    Signaled(i32),
    /// The timeout passed and hookbox killed its process group.
    TimedOut,
}

/// Everything observed about one finished child.
#[derive(Debug, Clone)]
pub struct ProcessOutput {
    /// How it ended.
    pub exit: ExitKind,
    /// What it wrote to stdout (capped).
    pub stdout: CapturedOutput,
    /// What it wrote to stderr (capped).
    pub stderr: CapturedOutput,
    /// From spawn to reaping.
    pub duration: Duration,
}

/// Why a child could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The program could not be started (not found, not executable, bad cwd, …).
    #[error("could not start `{program}`: {source}")]
    Spawn {
        /// The program that failed to start.
        program: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the child failed.
    #[error("could not wait for `{program}`: {source}")]
    Wait {
        /// The program being waited for.
        program: String,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
    /// The warm sandbox running the program stopped during the call (its supervisor died);
    /// the call was lost. The next call builds a new sandbox.
    #[error("the warm sandbox running `{program}` stopped during the call")]
    SandboxLost {
        /// The program that was running.
        program: String,
    },
    /// The sandbox could not be set up; nothing was run.
    #[error("refusing to run `{program}` unsandboxed: {source}")]
    Isolation {
        /// The program that was to run.
        program: String,
        /// What is missing or failed.
        #[source]
        source: IsolationError,
    },
}

/// Runs `spec` to completion (or to its timeout) and reports what happened.
///
/// The child runs in its own process group, with stdin fed from `spec.stdin` while stdout and
/// stderr are read, each capped at `spec.output_limit`. When the child exits by itself its
/// whole group is killed (a background grandchild cannot keep the pipes open), the pipes are
/// drained until end-of-file or the deadline, and the child's own status is reported. When the
/// deadline passes first the group is killed and the result is [`ExitKind::TimedOut`], returned
/// within a fraction of a second. Dropping the returned future kills the group too; tokio reaps
/// the child.
pub async fn run(spec: &ProcessSpec) -> Result<ProcessOutput, ExecError> {
    let program = || spec.program.to_string_lossy().into_owned();
    let started = Instant::now();
    let deadline = started + spec.timeout.min(MAX_TIMEOUT);

    let Spawned {
        stdin,
        stdout,
        stderr,
        mut group,
        prepared,
        keeper_report,
    } = spawn(spec)?;
    // The sandbox's init (pid 1 of its namespace): once it is gone, so is everything inside.
    let (init, listener) = match &prepared {
        Some(prepared) => match timeout_at(deadline, prepared.init_pidfd(false)).await {
            Ok((pidfd, listener, _ready)) => {
                (pidfd.and_then(|fd| sandbox::async_fd(fd).ok()), listener)
            }
            Err(_elapsed) => (None, None),
        },
        None => (None, None),
    };
    // Whatever happens next, the listener handed out stops accepting when the run ends.
    let _stop_listening = listener.map(StopListening);

    let mut out = CapturedOutput::default();
    let mut err = CapturedOutput::default();
    let (exit, duration) = {
        let mut io = pin!(capture::exchange(
            stdin.map(|stdin| (stdin, spec.stdin.as_slice())),
            stdout,
            stderr,
            [&mut out, &mut err],
            spec.output_limit,
        ));
        let mut io_done = false;

        // Run until the child exits or the deadline passes, feeding and draining meanwhile.
        let exited = tokio::select! {
            exited = timeout_at(deadline, group.exited()) => exited,
            _ = &mut io => {
                io_done = true;
                timeout_at(deadline, group.exited()).await
            }
        };
        let timed_out = match exited {
            Ok(Ok(())) => false,
            Err(_elapsed) => true,
            Ok(Err(source)) => {
                return Err(ExecError::Wait {
                    program: program(),
                    source,
                });
            }
        };

        // Either way nothing in the group may outlive the child.
        group.kill();
        let drain_until = deadline.max(Instant::now() + KILL_GRACE);
        let exit = if timed_out {
            // A keeper that is still there when the grace ends was frozen by what it keeps:
            // the whole group goes instead.
            if timeout_at(drain_until, group.exited()).await.is_err() {
                group.kill_group();
            }
            // Normally immediate; a child stuck in the kernel is left to tokio's reaping.
            let _reaped = timeout_at(Instant::now() + KILL_GRACE, group.reap()).await;
            ExitKind::TimedOut
        } else {
            // Already a zombie: reaping does not block.
            let status = group.reap().await.map_err(|source| ExecError::Wait {
                program: program(),
                source,
            })?;
            if let Some(errno) = keeper_report.as_ref().and_then(keeper::read_failed_start) {
                return Err(ExecError::Spawn {
                    program: program(),
                    source: std::io::Error::from_raw_os_error(errno),
                });
            }
            // wait(2) without WUNTRACED reports only exits and deaths by signal.
            match status.code() {
                Some(code) => ExitKind::Exited(code),
                None => ExitKind::Signaled(status.signal().unwrap_or_default()),
            }
        };
        if let Some(init) = &init {
            // Killing the intermediate killed the init (parent-death signal), whose exit
            // completes only once the kernel has killed and reaped the whole namespace.
            let _gone = timeout_at(drain_until, init.readable()).await;
        }
        if !io_done {
            let _partial = timeout_at(drain_until, io).await;
        }
        (exit, started.elapsed())
    };
    // Removes the run's cgroups (now empty).
    drop(prepared);
    Ok(ProcessOutput {
        exit,
        stdout: out,
        stderr: err,
        duration,
    })
}

/// A child just spawned for a [`ProcessSpec`]: its pipes, its process group and, in a sandbox,
/// the run's preparation (held until the run ends: it removes the run's cgroups).
pub(crate) struct Spawned {
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) stdout: Option<ChildStdout>,
    pub(crate) stderr: Option<ChildStderr>,
    pub(crate) group: ProcessGroup,
    pub(crate) prepared: Option<Prepared>,
    /// For a kept run, the read end of the keeper's report pipe (see
    /// [`keeper::read_failed_start`]).
    pub(crate) keeper_report: Option<OwnedFd>,
}

/// Prepares `spec`'s sandbox (if any) in this process and spawns the child in its own process
/// group, with piped stdio: the one spawn path of [`run`] and [`crate::spawn_interactive`].
pub(crate) fn spawn(spec: &ProcessSpec) -> Result<Spawned, ExecError> {
    let program = || spec.program.to_string_lossy().into_owned();
    let (prepared, child_end) = match &spec.sandbox {
        Some(sandbox) => {
            let (prepared, child_end) =
                sandbox::prepare(sandbox, spec.cwd.as_deref(), None, spec.cpu).map_err(
                    |source| ExecError::Isolation {
                        program: program(),
                        source,
                    },
                )?;
            (Some(prepared), Some(child_end))
        }
        None => (None, None),
    };
    let kept = prepared.is_none() && spec.die_with_parent;
    let report = kept
        .then(|| rustix::pipe::pipe_with(PipeFlags::CLOEXEC | PipeFlags::NONBLOCK))
        .transpose()
        .map_err(|errno| ExecError::Spawn {
            program: program(),
            source: errno.into(),
        })?;
    let spawned = command(
        spec,
        prepared.as_ref(),
        report.as_ref().map(|(_, write)| write.as_fd()),
    )
    .and_then(|mut command| command.spawn());
    // The children hold their own copies; ours would keep the status socket (and the keeper's
    // report pipe) from ending.
    drop(child_end);
    let keeper_report = report.map(|(read, _write)| read);
    let mut child =
        spawned.map_err(
            |source| match prepared.as_ref().and_then(Prepared::failure) {
                Some(failure) => ExecError::Isolation {
                    program: program(),
                    source: failure,
                },
                None => ExecError::Spawn {
                    program: program(),
                    source,
                },
            },
        )?;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let group = ProcessGroup::new(child, kept).map_err(|source| ExecError::Wait {
        program: program(),
        source,
    })?;
    Ok(Spawned {
        stdin,
        stdout,
        stderr,
        group,
        prepared,
        keeper_report,
    })
}

/// Shuts down a listener opened inside the sandbox ([`crate::ListenInside`]) when dropped.
pub(crate) struct StopListening(pub(crate) std::os::fd::OwnedFd);

impl Drop for StopListening {
    fn drop(&mut self) {
        sandbox::stop_listening(&self.0);
    }
}

/// The command for `spec`: its own process group, piped stdio, killed with the caller.
///
/// With `die_with_parent`, the child becomes the program's keeper (see [`crate::keeper`]),
/// which dies with the thread that spawned it, killing everything the program started. That
/// thread is the caller's, and a runtime may end it before the run ends (tokio ends a
/// blocking thread idle for 10 s, and a worker that blocked in place becomes one): a known
/// limit of cold runs, which warm sandboxes avoid by forking from a thread that never ends
/// (`warm::spawner`). In a sandbox, the pre-exec step builds the sandbox instead (see
/// [`crate::sandbox`]), bound to that thread the same way. Fails only on a NUL byte in the
/// program, an argument or the environment of a kept run.
#[expect(
    clippy::disallowed_methods,
    reason = "hookbox-exec is the one place that builds commands"
)]
#[expect(
    unsafe_code,
    reason = "pre_exec becomes the keeper or builds the sandbox in the child"
)]
fn command(
    spec: &ProcessSpec,
    sandboxed: Option<&Prepared>,
    keeper_report: Option<BorrowedFd<'_>>,
) -> std::io::Result<Command> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(prepared) = sandboxed {
        command
            .env_clear()
            .env("PATH", SANDBOX_PATH)
            .env(
                "HOME",
                spec.sandbox
                    .as_ref()
                    .map_or_else(|| "/workspace".into(), Sandbox::home),
            )
            .env("TMPDIR", "/tmp")
            .envs(spec.env.iter().map(|(key, value)| (key, value)));
        let plan = std::sync::Arc::clone(&prepared.plan);
        // SAFETY: the closure runs in the forked child between fork and exec. `sandbox::child`
        // only makes raw system calls on data the parent prepared (no allocation, no lock);
        // see that module.
        unsafe {
            command.pre_exec(move || sandbox::enter(&plan));
        }
        return Ok(command);
    }
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    if let Some(report) = keeper_report {
        let plan = KeeperPlan::new(spec, report)?;
        // Killing the keeper outright would orphan what it keeps: the run's group tells it to
        // stop instead (see `ProcessGroup`), and tokio reaps it once it has.
        command.kill_on_drop(false);
        // SAFETY: the closure runs in the forked child between fork and exec, and never
        // returns there unless a step failed. `keeper::run` only makes raw system calls on
        // data the parent prepared (no allocation, no lock); see that module.
        unsafe {
            command.pre_exec(move || keeper::run(&plan));
        }
        return Ok(command);
    }
    if spec.env_clear {
        command.env_clear();
    }
    command.envs(spec.env.iter().map(|(key, value)| (key, value)));
    Ok(command)
}
