//! A spawned child and its process group, killed as a whole.
//!
//! The child leads its own process group (its pid is the group id). The group is SIGKILLed when
//! the child exits, when the deadline passes, and when a [`ProcessGroup`] is dropped before it was
//! reaped (the caller's future was cancelled), so no grandchild outlives the run. A keeper
//! ([`crate::keeper`]) is sent SIGTERM instead, at the same moments: it then kills every
//! descendant of its program, inside the group or not, and exits.
//!
//! The group id stays reserved for us while the leader is unreaped (a zombie still owns its pid),
//! so the group is always killed **before** the child is reaped: [`ProcessGroup::exited`] watches
//! a pidfd, which becomes readable when the child exits but does not reap it.

use std::io;
use std::process::ExitStatus;

use rustix::fd::OwnedFd;
use rustix::process::{Pid, PidfdFlags, Signal, kill_process, kill_process_group, pidfd_open};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::process::Child;

/// A running (or exited, unreaped) child that leads its own process group.
///
/// Dropping it kills the group (or tells the keeper to stop), then drops the child, which tokio
/// reaps at once if it is already dead and otherwise through its orphan queue (a command that is
/// not a keeper is spawned with `kill_on_drop`, which SIGKILLs it first).
#[derive(Debug)]
pub(crate) struct ProcessGroup {
    child: Child,
    pgid: Pid,
    /// Readable once the child has exited (a zombie) or been reaped.
    pidfd: AsyncFd<OwnedFd>,
    /// Whether the child is a keeper, which is told to stop rather than killed.
    kept: bool,
    /// Whether the group was already killed; after that it is never signalled again, because once
    /// the leader is reaped its id may be reused.
    killed: bool,
}

impl ProcessGroup {
    /// Takes charge of `child`, which must have been spawned with `process_group(0)`; `kept`
    /// when it is a keeper.
    ///
    /// On error the group is killed (when its id is known) and the child dropped, as above.
    #[expect(unsafe_code, reason = "registering the pidfd with tokio's reactor")]
    pub(crate) fn new(child: Child, kept: bool) -> io::Result<Self> {
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw)
            .ok_or_else(|| io::Error::other("the spawned child has no pid"))?;
        let pidfd = pidfd_open(pgid, PidfdFlags::NONBLOCK)
            .map_err(io::Error::from)
            .and_then(|fd| {
                // SAFETY: `fd` is an open pidfd owned by the AsyncFd, which never hands it out
                // mutably, so it stays open and refers to the same file until the AsyncFd drops.
                unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                    .map_err(io::Error::from)
            })
            .inspect_err(|_| end(pgid, kept))?;
        Ok(Self {
            child,
            pgid,
            pidfd,
            kept,
            killed: false,
        })
    }

    /// Resolves when the child has exited, without reaping it.
    pub(crate) async fn exited(&self) -> io::Result<()> {
        // Readiness is left set: once exited, always exited.
        self.pidfd.readable().await.map(drop)
    }

    /// SIGKILLs the whole group, or tells the keeper to stop (the first call only; later calls
    /// do nothing).
    pub(crate) fn kill(&mut self) {
        if !self.killed {
            self.killed = true;
            end(self.pgid, self.kept);
        }
    }

    /// SIGKILLs the whole group, a keeper included: for a keeper that did not exit when told to
    /// stop (a process it keeps froze it with SIGSTOP). What left the group with `setsid` is
    /// then out of reach. Call it only before the child is reaped (its id is the group's).
    pub(crate) fn kill_group(&mut self) {
        self.killed = true;
        let _ignored = kill_process_group(self.pgid, Signal::KILL);
    }

    /// Kills the group if that was not done yet, then waits for the child and reaps it.
    pub(crate) async fn reap(&mut self) -> io::Result<ExitStatus> {
        self.kill();
        self.child.wait().await
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Sends SIGKILL to every process in group `pgid`, or SIGTERM to its leader when that is a
/// keeper (which then kills everything it keeps and exits), with SIGCONT in case a process it
/// keeps stopped it.
///
/// Errors are ignored: ESRCH means the group is already empty, and nothing else can be done
/// about a group we may not signal.
fn end(pgid: Pid, kept: bool) {
    if kept {
        let _ignored = kill_process(pgid, Signal::TERM);
        let _ignored = kill_process(pgid, Signal::CONT);
    } else {
        let _ignored = kill_process_group(pgid, Signal::KILL);
    }
}
