//! Runs whose process another process starts and reports on over a reply socket (a warm
//! sandbox's call, started by its supervisor; a warm interpreter's run, started by its
//! zygote's keeper): the records that arrive on the socket, and the exchange that feeds stdin,
//! drains and caps the output and keeps the deadline exactly as a cold run does.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::pin::pin;
use std::process::ExitStatus;

use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;
use tokio::time::{Instant, timeout_at};

use crate::capture::{self, CapturedOutput};
use crate::sandbox::{self, RECORD_EXITED, RECORD_FAILED, RECORD_STARTED};
use crate::spawn::KILL_GRACE;
use crate::{ExitKind, ProcessSpec};

/// The caller's end of a run's reply socket, and what arrived on it.
pub(crate) struct Reply {
    socket: AsyncFd<OwnedFd>,
    /// `STARTED`'s number (the pid of what started) and descriptor (a pidfd of it), once it
    /// arrived.
    pub(crate) started: Option<(u32, Option<OwnedFd>)>,
    /// `FAILED`'s step and errno, if it arrived: the run did not start.
    pub(crate) failed: Option<(u32, i32)>,
    /// A pidfd of the run whose end is read from it, not reported (see [`Reply::ended_by`]).
    ended_by: Option<AsyncFd<OwnedFd>>,
    /// Whether `EXITED` arrived.
    reported_exit: bool,
}

impl Reply {
    /// Watches `socket` (made non-blocking).
    pub(crate) fn new(socket: OwnedFd) -> std::io::Result<Self> {
        Ok(Self {
            socket: sandbox::async_fd(socket)?,
            started: None,
            failed: None,
            ended_by: None,
            reported_exit: false,
        })
    }

    /// Reads the run's end from `pidfd` (the run's, pid `pid`): its wait status once the
    /// kernel reaped it (Linux 6.15's `PIDFD_INFO_EXIT`; see [`exit_status`]), not from an
    /// `EXITED` record. A `FAILED` record is still read from the socket.
    pub(crate) fn ended_by(&mut self, pid: u32, pidfd: OwnedFd) -> std::io::Result<()> {
        self.ended_by = Some(sandbox::async_fd(pidfd)?);
        self.started = Some((pid, None));
        Ok(())
    }

    /// A pidfd of the run, once started.
    pub(crate) fn pidfd(&self) -> Option<BorrowedFd<'_>> {
        match (&self.started, &self.ended_by) {
            (Some((_, Some(pidfd))), _) => Some(pidfd.as_fd()),
            (_, Some(pidfd)) => Some(pidfd.get_ref().as_fd()),
            _ => None,
        }
    }

    /// The socket itself.
    pub(crate) fn socket(&self) -> &OwnedFd {
        self.socket.get_ref()
    }

    /// Reads the socket until the run's wait status arrives; `None` if the socket ends first
    /// (the reporter is gone). Cancel-safe: what arrived is kept in `self`.
    pub(crate) async fn exited(&mut self) -> Option<i32> {
        if let Some(pidfd) = &self.ended_by {
            let status = loop {
                let mut ready = pidfd.readable().await.ok()?;
                // Readable at the exit; the status is there once the kernel reaped it.
                if let Some(status) = exit_status(pidfd.get_ref().as_fd()) {
                    break status;
                }
                ready.clear_ready();
            };
            // What failed was reported before the exit.
            while let Ok(Some(record)) = sandbox::receive(self.socket.get_ref()) {
                self.keep(record);
            }
            return Some(status);
        }
        self.reported().await
    }

    /// Reads the socket until `EXITED` arrives: its wait status; `None` if the socket ends
    /// first (the reporter is gone). Cancel-safe.
    pub(crate) async fn reported(&mut self) -> Option<i32> {
        loop {
            let mut ready = self.socket.readable().await.ok()?;
            match sandbox::receive(self.socket.get_ref()) {
                Ok(Some(record)) => {
                    if let Some(status) = self.keep(record) {
                        return Some(status);
                    }
                }
                Ok(None) => return None,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                    ready.clear_ready();
                }
                Err(_) => return None,
            }
        }
    }

    /// Whether the reporter reported the end (`EXITED`), waiting for it if it did not arrive
    /// yet; `false` once the socket ends without it (the reporter is gone).
    pub(crate) async fn end_reported(&mut self) -> bool {
        self.reported_exit || self.reported().await.is_some()
    }

    /// Reads the socket to its end (the reporter closed it).
    pub(crate) async fn closed(&mut self) {
        while self.reported().await.is_some() {}
    }

    /// Keeps what `record` says; its status when it is `EXITED`.
    fn keep(&mut self, record: sandbox::Record) -> Option<i32> {
        match record.kind {
            RECORD_STARTED => self.started = Some((record.a, record.fd)),
            RECORD_FAILED => self.failed = Some((record.a, record.b as i32)),
            RECORD_EXITED => {
                self.reported_exit = true;
                return Some(record.a as i32);
            }
            _ => {}
        }
        None
    }
}

/// The wait status of the reaped process of `pidfd`, kept by the kernel for its pidfds since
/// Linux 6.15 (`PIDFD_INFO_EXIT`); `None` before it was reaped or on an older kernel.
#[expect(unsafe_code, reason = "the PIDFD_GET_INFO ioctl has no safe wrapper")]
pub(crate) fn exit_status(pidfd: BorrowedFd<'_>) -> Option<i32> {
    // SAFETY: an all-zero `pidfd_info` is valid; the ioctl writes at most its size.
    unsafe {
        let mut info: libc::pidfd_info = std::mem::zeroed();
        info.mask = u64::from(libc::PIDFD_INFO_EXIT);
        let done = libc::ioctl(pidfd.as_raw_fd(), libc::PIDFD_GET_INFO, &raw mut info);
        (done == 0 && info.mask & u64::from(libc::PIDFD_INFO_EXIT) != 0).then_some(info.exit_code)
    }
}

/// How a reported run ended.
pub(crate) enum Ended {
    /// It ended with this status, or was stopped at its deadline ([`ExitKind::TimedOut`]).
    Exit(ExitKind),
    /// It did not start: the step and errno reported.
    NotStarted(u32, i32),
    /// The reporter went away without its status.
    Lost,
}

/// The run's stdio, our ends.
pub(crate) struct RunStdio {
    /// Where `spec.stdin` is written.
    pub(crate) stdin: pipe::Sender,
    /// Its stdout.
    pub(crate) stdout: pipe::Receiver,
    /// Its stderr.
    pub(crate) stderr: pipe::Receiver,
}

/// Feeds `spec.stdin`, drains stdout and stderr (each capped at `spec.output_limit`) and waits
/// on `reply` for the run's end until `deadline`, when `stop` ends it; then drains what is
/// left for at least [`KILL_GRACE`]. A run that did not start or whose reporter went away
/// ends without its output.
pub(crate) async fn exchange(
    reply: &mut Reply,
    spec: &ProcessSpec,
    stdio: RunStdio,
    deadline: Instant,
    stop: impl AsyncFnOnce(&mut Reply),
) -> (Ended, CapturedOutput, CapturedOutput) {
    let mut out = CapturedOutput::default();
    let mut err = CapturedOutput::default();
    let ended = {
        let mut io = pin!(capture::exchange(
            Some((stdio.stdin, spec.stdin.as_slice())),
            Some(stdio.stdout),
            Some(stdio.stderr),
            [&mut out, &mut err],
            spec.output_limit,
        ));
        let mut io_done = false;
        let exited = tokio::select! {
            exited = timeout_at(deadline, reply.exited()) => exited,
            () = &mut io => {
                io_done = true;
                timeout_at(deadline, reply.exited()).await
            }
        };
        let drain_until = deadline.max(Instant::now() + KILL_GRACE);
        let ended = match (exited, reply.failed) {
            (Ok(_), Some((step, errno))) => Ended::NotStarted(step, errno),
            (Ok(Some(status)), None) => {
                let status = ExitStatus::from_raw(status);
                Ended::Exit(match status.code() {
                    Some(code) => ExitKind::Exited(code),
                    None => ExitKind::Signaled(status.signal().unwrap_or_default()),
                })
            }
            (Ok(None), None) => Ended::Lost,
            (Err(_elapsed), _) => {
                stop(reply).await;
                Ended::Exit(ExitKind::TimedOut)
            }
        };
        if !io_done && matches!(ended, Ended::Exit(_)) {
            let _partial = timeout_at(drain_until, io).await;
        }
        ended
    };
    (ended, out, err)
}
