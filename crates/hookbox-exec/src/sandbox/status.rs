//! The run's status socket: the children send the parent the sandbox's mount namespace, the
//! init's pidfd, the listener opened inside, or the step that failed and its errno; the parent
//! reads and explains them.

use std::io;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::OwnedFd;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, Shutdown, SocketFlags,
    SocketType, recvmsg, shutdown, socketpair,
};

use super::child::{
    self, FIRST_OP, Plan, RECORD_FAILED, RECORD_INIT, RECORD_LISTENER, RECORD_MOUNT_NS,
    RECORD_READY, STEPS,
};
use super::probe::userns_restriction;
use super::{IsolationError, Prepared};

pub(super) fn socket_pair() -> Result<(OwnedFd, OwnedFd), IsolationError> {
    socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(|error| {
        IsolationError::Unsupported(format!(
            "cannot create the status socket: {}",
            io::Error::from(error)
        ))
    })
}

/// One message from the children, with a descriptor when one was passed.
pub(crate) struct Record {
    pub(crate) kind: u32,
    pub(crate) a: u32,
    pub(crate) b: u32,
    pub(crate) fd: Option<OwnedFd>,
}

/// Receives one record without blocking: `Ok(None)` at end of stream, `WouldBlock` if none yet.
pub(crate) fn receive(fd: &OwnedFd) -> io::Result<Option<Record>> {
    let mut record = [0_u8; 12];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        fd,
        &mut [IoSliceMut::new(&mut record)],
        &mut control,
        RecvFlags::DONTWAIT | RecvFlags::CMSG_CLOEXEC,
    )?;
    if received.bytes == 0 {
        return Ok(None);
    }
    let passed = control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    });
    let word = |index: usize| {
        let mut bytes = [0; 4];
        bytes.copy_from_slice(&record[4 * index..4 * index + 4]);
        u32::from_ne_bytes(bytes)
    };
    Ok(Some(Record {
        kind: word(0),
        a: word(1),
        b: word(2),
        fd: passed,
    }))
}

impl Prepared {
    /// The failure the children reported, if any (after a failed spawn, when they are gone).
    pub(crate) fn failure(&self) -> Option<IsolationError> {
        while let Ok(Some(record)) = receive(&self.status) {
            if record.kind == RECORD_FAILED {
                return Some(setup_error(&self.plan, record.a, record.b as i32));
            }
        }
        None
    }

    /// Waits for the pidfd of the namespace's init, sent by the intermediate child, and, when
    /// a [`ListenInside`](super::ListenInside) was asked for, for the listener the init
    /// opened; with `until_ready`, also for a warm sandbox's supervisor to say it is ready.
    /// Returns the pidfd, the listener (already handed to
    /// [`ListenInside::deliver`](super::ListenInside::deliver)) and, once the supervisor said
    /// it is ready, the number it said it with.
    pub(crate) async fn init_pidfd(
        &self,
        until_ready: bool,
    ) -> (Option<OwnedFd>, Option<OwnedFd>, Option<u32>) {
        let mut pidfd = None;
        let mut listener = None;
        let mut supervisor_ready = None;
        let Some(status) = self
            .status
            .try_clone()
            .ok()
            .and_then(|fd| async_fd(fd).ok())
        else {
            return (None, None, None);
        };
        let wants_listener = self.listen_inside.is_some();
        while pidfd.is_none()
            || (wants_listener && listener.is_none())
            || (until_ready && supervisor_ready.is_none())
        {
            let Ok(mut ready) = status.readable().await else {
                break;
            };
            match receive(status.get_ref()) {
                Ok(Some(record)) if record.kind == RECORD_INIT => pidfd = record.fd,
                Ok(Some(record)) if record.kind == RECORD_MOUNT_NS => {
                    if let Some(fd) = record.fd {
                        let _first = self.mount_ns.set(fd);
                    }
                }
                Ok(Some(record)) if record.kind == RECORD_READY => {
                    supervisor_ready = Some(record.a)
                }
                Ok(Some(record)) if record.kind == RECORD_LISTENER => {
                    if let (Some(fd), Some(listen)) = (record.fd, &self.listen_inside) {
                        // Kept to shut the socket down when the run ends.
                        listener = fd.try_clone().ok();
                        (listen.deliver)(std::net::TcpListener::from(fd));
                    }
                }
                // A failed setup ends with the exec; end-of-stream comes at the exec at the
                // latest (every copy of the children's end is close-on-exec).
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => ready.clear_ready(),
                Err(_) => break,
            }
        }
        (pidfd, listener, supervisor_ready)
    }
}

/// Shuts down `listener` (a listening socket handed out through
/// [`ListenInside`](super::ListenInside)), so that
/// accepting on any copy of it fails from now on.
pub(crate) fn stop_listening(listener: &OwnedFd) {
    // Failing means the socket is no longer listening: nothing is left to stop.
    let _stopped = shutdown(listener, Shutdown::Both);
}

/// Registers `fd` (a socket or pidfd we own) with tokio's reactor, for readability.
pub(crate) fn async_fd(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    async_fd_for(fd, tokio::io::Interest::READABLE)
}

/// Registers `fd` (a socket or pidfd we own) with tokio's reactor, for `interest`.
#[expect(unsafe_code, reason = "registering a descriptor with tokio's reactor")]
pub(crate) fn async_fd_for(
    fd: OwnedFd,
    interest: tokio::io::Interest,
) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: `fd` is open and owned by the AsyncFd, which never hands it out mutably, so it
    // stays open and refers to the same file until the AsyncFd drops.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, interest) }
        .map_err(io::Error::from)
}

/// Describes step `step` of the setup (see [`child::STEPS`] and the plan's ops).
pub(crate) fn describe_step(plan: &Plan, step: u32) -> String {
    if step >= FIRST_OP {
        let index = (step - FIRST_OP) as usize;
        return match plan.ops.get(index) {
            Some(op) => format!("setting up the file system ({op:?})"),
            None => format!("setting up the file system (step {index})"),
        };
    }
    STEPS
        .get(step as usize)
        .map_or_else(|| format!("step {step}"), |s| (*s).to_owned())
}

/// An error for a failed setup step, with a clearer explanation when namespaces are refused.
pub(crate) fn setup_error(plan: &Plan, step: u32, errno: i32) -> IsolationError {
    let source = io::Error::from_raw_os_error(errno);
    if step == 2 || step == child::STEP_NET_NS {
        if let Some(reason) = userns_restriction() {
            return IsolationError::Namespaces(reason);
        }
        return IsolationError::Namespaces(format!("unshare failed: {source}"));
    }
    IsolationError::Setup {
        step: describe_step(plan, step),
        source,
    }
}
