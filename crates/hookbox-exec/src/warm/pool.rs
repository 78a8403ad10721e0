//! The parent's side of a warm sandbox's spares (see [`super::spare`]): the spares its
//! supervisor handed over, each given its own cgroups as soon as it arrives (so that joining
//! them is not on a call's path), and the calls waiting for one. One spare is kept ahead of
//! the calls: taking one asks the supervisor for the next.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};
use tokio::io::unix::AsyncFd;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::spare::Message;
use crate::Limits;
use crate::sandbox::{self, IsolationError, RunCgroups};

/// A spare the parent holds: a call set up ahead of its request, in its cgroups.
pub(super) struct ReadySpare {
    /// Its pid, in the sandbox's pid namespace.
    pub(super) pid: u32,
    /// A pidfd of it.
    pub(super) pidfd: OwnedFd,
    /// Where its request goes.
    pub(super) request: OwnedFd,
    /// Where a failed step and its end (`EXITED`) arrive.
    pub(super) report: OwnedFd,
    /// Its cgroups (as root; none otherwise), already handed to it, or why they could not be.
    pub(super) cgroups: Result<RunCgroups, IsolationError>,
}

/// Why no spare could be had.
pub(super) enum NoSpare {
    /// The supervisor could not start one: the errno.
    NotStarted(i32),
    /// The supervisor is gone.
    Gone,
}

/// What the calls and the receiving task share.
#[derive(Default)]
struct State {
    /// Spares received, not yet taken.
    ready: Vec<ReadySpare>,
    /// Spares asked for, not yet received.
    asked: usize,
    /// Calls waiting for a spare.
    waiting: usize,
    /// Errnos of spares the supervisor could not start, one for each waiting call to fail with.
    failed: Vec<i32>,
    /// Whether the supervisor is gone (its control socket ended).
    gone: bool,
}

struct Shared {
    control: AsyncFd<OwnedFd>,
    state: Mutex<State>,
    arrived: Notify,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the supervisor for enough spares that each waiting call gets one and one is left
    /// ahead; marks it gone when it cannot be asked.
    fn ask(&self, state: &mut State) {
        if state.gone {
            return;
        }
        let wanted = state.waiting + 1;
        let coming = state.ready.len() + state.asked;
        if coming >= wanted {
            return;
        }
        let more = wanted - coming;
        match Message::send(
            self.control.get_ref().as_fd(),
            Message::WANT,
            u32::try_from(more).unwrap_or(u32::MAX),
            &[],
            SendFlags::DONTWAIT,
        ) {
            Ok(()) => state.asked += more,
            Err(_) => state.gone = true,
        }
    }
}

/// A warm sandbox's spares, on the parent's side; stops receiving them when dropped.
pub(super) struct Spares {
    shared: Arc<Shared>,
    receiving: JoinHandle<()>,
}

impl Spares {
    /// Receives the spares the supervisor sends on `control` (a task on the runtime), handing
    /// each cgroups with `limits` at once when this process is root.
    pub(super) fn new(control: OwnedFd, limits: Limits) -> std::io::Result<Self> {
        let control = sandbox::async_fd_for(
            control,
            tokio::io::Interest::READABLE | tokio::io::Interest::WRITABLE,
        )?;
        let shared = Arc::new(Shared {
            control,
            state: Mutex::new(State::default()),
            arrived: Notify::new(),
        });
        let receiving = tokio::spawn(receive(Arc::clone(&shared), limits));
        Ok(Self { shared, receiving })
    }

    /// Asks the supervisor, before any spare, to report each call's end (`EXITED`) rather
    /// than let the kernel reap the calls.
    pub(super) fn report_ends(&self) -> Result<(), Errno> {
        Message::send(
            self.shared.control.get_ref().as_fd(),
            Message::REPORT_ENDS,
            0,
            &[],
            SendFlags::DONTWAIT,
        )
    }

    /// Whether the supervisor is gone: its end of the control socket is closed.
    pub(super) fn supervisor_gone(&self) -> bool {
        let mut fds = [rustix::event::PollFd::new(
            self.shared.control.get_ref(),
            rustix::event::PollFlags::empty(),
        )];
        let polled = rustix::event::poll(&mut fds, Some(&rustix::event::Timespec::default()));
        self.shared.state().gone
            || polled.is_err()
            || fds[0].revents().contains(rustix::event::PollFlags::HUP)
    }

    /// A spare for one call: one held, else the next to arrive. Asks for the next one ahead.
    pub(super) async fn take(&self) -> Result<ReadySpare, NoSpare> {
        let mut waiting: Option<Waiting<'_>> = None;
        loop {
            let arrived = self.shared.arrived.notified();
            let mut arrived = std::pin::pin!(arrived);
            arrived.as_mut().enable();
            {
                let mut state = self.shared.state();
                let taken = if let Some(spare) = state.ready.pop() {
                    Some(Ok(spare))
                } else if let Some(errno) = state.failed.pop() {
                    Some(Err(NoSpare::NotStarted(errno)))
                } else if state.gone || self.receiving.is_finished() {
                    // The receiving task also ends with the runtime it was started on.
                    Some(Err(NoSpare::Gone))
                } else {
                    None
                };
                if let Some(taken) = taken {
                    if let Some(waiting) = waiting.take() {
                        waiting.leave(&mut state);
                    }
                    self.shared.ask(&mut state);
                    return taken;
                }
                if waiting.is_none() {
                    state.waiting += 1;
                    waiting = Some(Waiting(&self.shared, true));
                }
                self.shared.ask(&mut state);
            }
            arrived.await;
        }
    }
}

/// A call counted in [`State::waiting`]; uncounted when dropped (its call was dropped).
struct Waiting<'a>(&'a Shared, bool);

impl Waiting<'_> {
    /// Uncounts the call under the lock already held.
    fn leave(mut self, state: &mut State) {
        state.waiting -= 1;
        self.1 = false;
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.1 {
            self.0.state().waiting -= 1;
        }
    }
}

impl Drop for Spares {
    fn drop(&mut self) {
        self.receiving.abort();
    }
}

/// Receives spares on the control socket until it ends, then marks the supervisor gone.
async fn receive(shared: Arc<Shared>, limits: Limits) {
    loop {
        let Ok(mut ready) = shared.control.readable().await else {
            break;
        };
        match Message::receive(shared.control.get_ref().as_fd(), RecvFlags::DONTWAIT) {
            Ok(Some(message)) if message.kind == Message::SPARE => {
                let spare = take_over(message, &limits);
                let mut state = shared.state();
                state.asked = state.asked.saturating_sub(1);
                state.ready.extend(spare);
            }
            Ok(Some(message)) if message.kind == Message::NO_SPARE => {
                let mut state = shared.state();
                state.asked = state.asked.saturating_sub(1);
                state.failed.push(message.value as i32);
            }
            Ok(Some(_)) => continue,
            Err(Errno::AGAIN) => {
                ready.clear_ready();
                continue;
            }
            Err(Errno::INTR) => continue,
            Ok(None) | Err(_) => break,
        }
        shared.arrived.notify_waiters();
    }
    shared.state().gone = true;
    shared.arrived.notify_waiters();
}

/// The spare of a [`Message::SPARE`], handed its cgroups; `None` when the message is not
/// one.
fn take_over(message: Message, limits: &Limits) -> Option<ReadySpare> {
    let [request, report, pidfd]: [OwnedFd; 3] = message.fds.try_into().ok()?;
    let cgroups = if sandbox::is_root() {
        hand_cgroups(&request, limits)
    } else {
        Ok(RunCgroups::default())
    };
    Some(ReadySpare {
        pid: message.value,
        pidfd,
        request,
        report,
        cgroups,
    })
}

/// Makes a call's own cgroups (new ones, never another call's: see [`RunCgroups::fresh`]) and
/// sends the spare behind `request` the files
/// to join them: its processes and memory are then limited like a cold run's, apart from the
/// calls beside it.
fn hand_cgroups(request: &OwnedFd, limits: &Limits) -> Result<RunCgroups, IsolationError> {
    let mut cgroups = RunCgroups::fresh(limits, 0);
    cgroups.require_pids(limits)?;
    let joins = cgroups.joins().map_err(|source| IsolationError::Setup {
        step: "opening a warm call's cgroups".into(),
        source,
    })?;
    let joins: Vec<_> = joins.iter().map(AsFd::as_fd).collect();
    // A spare that cannot take them is dead: its request fails to send, and another is taken.
    let _sent = Message::send(
        request.as_fd(),
        Message::CGROUPS,
        0,
        &joins,
        SendFlags::DONTWAIT,
    );
    Ok(cgroups)
}
