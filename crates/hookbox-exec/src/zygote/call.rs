//! One run forked from a zygote: the request and descriptors sent, stdin fed and the output
//! drained and capped as in a cold run, the deadline kept, the keeper's records read.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use rustix::fs::MemfdFlags;
use rustix::net::{
    AddressFamily, SendAncillaryBuffer, SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
    sendmsg, socketpair,
};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, Signal, kill_process_group, pidfd_send_signal};
use tokio::net::unix::pipe;
use tokio::time::{Instant, timeout_at};

use super::Zygote;
use crate::reported::{self, Ended, Reply, RunStdio};
use crate::sandbox;
use crate::spawn::{KILL_GRACE, MAX_TIMEOUT};
use crate::warm::request::Request;
use crate::{ExecError, ProcessOutput, ProcessSpec};

/// Descriptors sent with each run: the request, stdin, stdout, stderr, the reply socket.
const RUN_FDS: usize = 5;

/// Runs `spec` in `zygote` with the environment `vars`; `None` when the zygote could not be
/// handed the run (it is gone), so that nothing ran.
pub(super) async fn run(
    zygote: &Zygote,
    spec: &ProcessSpec,
    vars: BTreeMap<OsString, OsString>,
) -> Option<Result<ProcessOutput, ExecError>> {
    let program = || spec.program.to_string_lossy().into_owned();
    let io_error = |source: std::io::Error| ExecError::Spawn {
        program: program(),
        source,
    };
    let started = Instant::now();
    let deadline = started + spec.timeout.min(MAX_TIMEOUT);
    let prepared = Prepared::new(spec, vars).map_err(io_error);
    let prepared = match prepared {
        Ok(prepared) => prepared,
        Err(error) => return Some(Err(error)),
    };
    send(zygote, &prepared.theirs()).await.ok()?;
    Some(prepared.finish(spec, started, deadline).await)
}

/// A run's descriptors, before and after they are handed to the zygote.
struct Prepared {
    request: OwnedFd,
    stdin: (OwnedFd, OwnedFd),
    stdout: (OwnedFd, OwnedFd),
    stderr: (OwnedFd, OwnedFd),
    reply: (OwnedFd, OwnedFd),
}

impl Prepared {
    /// The pipes, the reply socket pair and the request's memory file of `spec`.
    fn new(spec: &ProcessSpec, vars: BTreeMap<OsString, OsString>) -> std::io::Result<Self> {
        let cwd = match &spec.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir()?,
        };
        let request = rustix::fs::memfd_create("hookbox-python-run", MemfdFlags::CLOEXEC)?;
        std::fs::File::from(request.try_clone()?).write_all(
            &Request {
                program: spec.program.as_bytes().to_vec(),
                cwd: cwd.into_os_string().into_vec(),
                args: spec
                    .args
                    .iter()
                    .map(|arg| arg.as_bytes().to_vec())
                    .collect(),
                vars: crate::exec_args::env_entries(vars),
            }
            .encode(),
        )?;
        let pipe = || pipe_with(PipeFlags::CLOEXEC);
        Ok(Self {
            request,
            stdin: pipe()?,
            stdout: pipe()?,
            stderr: pipe()?,
            reply: socketpair(
                AddressFamily::UNIX,
                SocketType::SEQPACKET,
                SocketFlags::CLOEXEC,
                None,
            )?,
        })
    }

    /// The descriptors the run gets, in the order the zygote takes them.
    fn theirs(&self) -> [std::os::fd::BorrowedFd<'_>; RUN_FDS] {
        [
            self.request.as_fd(),
            self.stdin.0.as_fd(),
            self.stdout.1.as_fd(),
            self.stderr.1.as_fd(),
            self.reply.1.as_fd(),
        ]
    }

    /// Feeds stdin, drains the output and waits for the keeper's report until `deadline`
    /// (the zygote has the run's descriptors, ours of them are closed first).
    async fn finish(
        self,
        spec: &ProcessSpec,
        started: Instant,
        deadline: Instant,
    ) -> Result<ProcessOutput, ExecError> {
        let program = || spec.program.to_string_lossy().into_owned();
        let io_error = |source: std::io::Error| ExecError::Spawn {
            program: program(),
            source,
        };
        // Only the run may hold these now: end-of-file comes when it is gone.
        let Self {
            request,
            stdin,
            stdout,
            stderr,
            reply,
        } = self;
        drop((request, stdin.0, stdout.1, stderr.1, reply.1));
        let stdio = RunStdio {
            stdin: pipe::Sender::from_owned_fd(stdin.1).map_err(io_error)?,
            stdout: pipe::Receiver::from_owned_fd(stdout.0).map_err(io_error)?,
            stderr: pipe::Receiver::from_owned_fd(stderr.0).map_err(io_error)?,
        };
        let mut run = Run(Reply::new(reply.0).map_err(io_error)?);
        let (ended, out, err) = reported::exchange(&mut run.0, spec, stdio, deadline, stop).await;
        let exit = match ended {
            Ended::Exit(exit) => exit,
            Ended::NotStarted(_step, errno) => {
                return Err(ExecError::Spawn {
                    program: program(),
                    source: std::io::Error::from_raw_os_error(errno),
                });
            }
            Ended::Lost => {
                return Err(ExecError::Wait {
                    program: program(),
                    source: std::io::Error::other(
                        "the keeper of the warm interpreter's run was killed",
                    ),
                });
            }
        };
        Ok(ProcessOutput {
            exit,
            stdout: out,
            stderr: err,
            duration: started.elapsed(),
        })
    }
}

/// Sends one run's descriptors to the zygote.
async fn send(zygote: &Zygote, fds: &[std::os::fd::BorrowedFd<'_>]) -> std::io::Result<()> {
    loop {
        let mut ready = zygote.control.writable().await?;
        let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(RUN_FDS))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        ancillary.push(SendAncillaryMessage::ScmRights(fds));
        match sendmsg(
            zygote.control.get_ref(),
            &[std::io::IoSlice::new(b"run")],
            &mut ancillary,
            SendFlags::DONTWAIT | SendFlags::NOSIGNAL,
        ) {
            Ok(_) => return Ok(()),
            Err(rustix::io::Errno::AGAIN) => ready.clear_ready(),
            Err(error) => return Err(error.into()),
        }
    }
}

/// Our side of one run: its reply socket (hanging it up tells the keeper to kill everything)
/// and what arrived on it (`STARTED` brings the keeper's pid and a pidfd of it).
struct Run(Reply);

/// Tells the keeper of `reply`'s run to kill it (the reply socket hung up, the keeper woken
/// should it be stopped); a keeper still there after [`KILL_GRACE`] is killed with its
/// process group.
async fn stop(reply: &mut Reply) {
    let _hung_up = rustix::net::shutdown(reply.socket(), rustix::net::Shutdown::Both);
    let Some((pid, Some(pidfd))) = reply.started.take() else {
        return;
    };
    let _woken = pidfd_send_signal(&pidfd, Signal::CONT);
    let Ok(keeper) = sandbox::async_fd(pidfd) else {
        return;
    };
    let gone = timeout_at(Instant::now() + KILL_GRACE, keeper.readable()).await;
    if gone.is_err() {
        // Still there, so its group (led by it: `setsid`) is certainly its own.
        if let Some(group) = Pid::from_raw(pid as i32) {
            let _killed = kill_process_group(group, Signal::KILL);
        }
        let _killed = pidfd_send_signal(keeper.get_ref(), Signal::KILL);
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        // A run dropped before its end: the reply socket closes with `self`, which tells the
        // keeper to kill everything; wake it should it be stopped.
        if let Some((_, Some(pidfd))) = &self.0.started {
            let _woken = pidfd_send_signal(pidfd, Signal::CONT);
        }
    }
}
