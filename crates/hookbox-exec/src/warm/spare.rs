//! Spare calls: the supervisor starts each call before its request exists, so that what does
//! not depend on the request (the call's `clone` into namespaces of its own, its fresh
//! `/proc`, `/tmp` and `/dev/shm`, its confinement: landlock, capabilities, seccomp) is done
//! while the previous call runs, not while the caller waits.
//!
//! The supervisor hands each spare to the parent ([`Message::SPARE`]): the parent's end of the
//! spare's request socket, the parent's end of its report socket and a pidfd of it. From then
//! on the parent talks to the spare directly: it hands it its cgroups as soon as it has it
//! ([`Message::CGROUPS`]; the spare joins them at once, before it has started anything, so
//! everything the call starts is counted there), and later the request
//! ([`Message::REQUEST`]); the spare reads the request, takes its stdio and working directory
//! and executes the program. A step that failed, its own set-up's included, is reported on the
//! report socket, where the supervisor reports the call's end (`EXITED`) after it. A spare is
//! only a process of the supervisor's, in namespaces of its own: no call can see, signal or
//! reach it.

use std::convert::Infallible;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType, recvmsg, sendmsg, socketpair,
};

use super::launch::lay_out;
use crate::sandbox::{
    CallMemory, CallSetup, Failed, RECORD_FAILED, STEP_REQUEST, join_cgroups, run_request,
    send_record, start_call,
};

/// The most descriptors one message carries (a request's four).
const MAX_FDS: usize = 4;

/// One message on a warm sandbox's sockets: what it is, a number, descriptors.
pub(super) struct Message {
    /// One of the kinds below.
    pub(super) kind: u32,
    /// The kind's number.
    pub(super) value: u32,
    /// The kind's descriptors.
    pub(super) fds: Vec<OwnedFd>,
}

impl Message {
    /// Parent to supervisor: start `value` more spares.
    pub(super) const WANT: u32 = 1;
    /// Supervisor to parent: a spare, pid `value`; its request socket, its report socket and
    /// a pidfd of it (the parent's copies).
    pub(super) const SPARE: u32 = 2;
    /// Supervisor to parent: a spare asked for could not be started (`value`, the errno).
    pub(super) const NO_SPARE: u32 = 3;
    /// Parent to spare: the files through which it joins its cgroups.
    pub(super) const CGROUPS: u32 = 4;
    /// Parent to spare: the request (its memory file, the call's stdin, stdout and stderr).
    pub(super) const REQUEST: u32 = 5;
    /// Parent to supervisor, before any [`Message::WANT`]: report each call's end
    /// (`EXITED`) even where the kernel could reap the calls.
    pub(super) const REPORT_ENDS: u32 = 6;

    /// Sends a message of `kind` and `value` with `fds` on `socket`: never blocks when
    /// `flags` has `DONTWAIT`.
    pub(super) fn send(
        socket: BorrowedFd<'_>,
        kind: u32,
        value: u32,
        fds: &[BorrowedFd<'_>],
        flags: SendFlags,
    ) -> Result<(), Errno> {
        let mut header = [0_u8; 8];
        header[..4].copy_from_slice(&kind.to_le_bytes());
        header[4..].copy_from_slice(&value.to_le_bytes());
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty() {
            ancillary.push(SendAncillaryMessage::ScmRights(fds));
        }
        sendmsg(
            socket,
            &[std::io::IoSlice::new(&header)],
            &mut ancillary,
            flags | SendFlags::NOSIGNAL,
        )
        .map(drop)
    }

    /// Receives one message on `socket` (its descriptors close-on-exec): `Ok(None)` at end of
    /// file.
    pub(super) fn receive(socket: BorrowedFd<'_>, flags: RecvFlags) -> Result<Option<Self>, Errno> {
        let mut fds = Default::default();
        Ok(
            Self::receive_into(socket, flags, &mut fds)?.map(|(kind, value)| Self {
                kind,
                value,
                fds: fds.into_iter().flatten().collect(),
            }),
        )
    }

    /// Receives one message on `socket` without allocating (as a call must before it
    /// executes): its kind and number, its descriptors (close-on-exec) put in `fds`;
    /// `Ok(None)` at end of file.
    fn receive_into(
        socket: BorrowedFd<'_>,
        flags: RecvFlags,
        fds: &mut [Option<OwnedFd>; MAX_FDS],
    ) -> Result<Option<(u32, u32)>, Errno> {
        let mut header = [0_u8; 8];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut ancillary = RecvAncillaryBuffer::new(&mut space);
        let received = recvmsg(
            socket,
            &mut [IoSliceMut::new(&mut header)],
            &mut ancillary,
            flags | RecvFlags::CMSG_CLOEXEC,
        )?;
        let received_fds = ancillary
            .drain()
            .filter_map(|message| match message {
                RecvAncillaryMessage::ScmRights(fds) => Some(fds),
                _ => None,
            })
            .flatten();
        for (slot, fd) in fds.iter_mut().zip(received_fds) {
            *slot = Some(fd);
        }
        if received.bytes == 0 {
            return Ok(None);
        }
        let (kind, value) = header.split_at(4);
        let number = |bytes: &[u8]| bytes.try_into().map_or(0, u32::from_le_bytes);
        Ok(Some((number(kind), number(value))))
    }
}

/// A spare as the supervisor keeps it: until its end is reported.
pub(super) struct Spare {
    /// Its pid.
    pub(super) pid: libc::pid_t,
    /// A pidfd of it.
    pub(super) pidfd: OwnedFd,
    /// Its report socket (the supervisor's copy), where `EXITED` goes.
    pub(super) report: OwnedFd,
    /// The memory it runs in until it executes its program: unmapped once it has ended, when
    /// this is dropped (declared last: after its end is reported).
    _memory: CallMemory,
}

/// The parent's ends of a new spare's sockets: its request socket and its report socket.
pub(super) struct ParentEnds {
    /// Where the parent sends the spare its cgroups and its request.
    pub(super) request: OwnedFd,
    /// Where the parent reads a failed step and the end.
    pub(super) report: OwnedFd,
}

impl Spare {
    /// Starts a spare set up as `setup` says, and the parent's ends of its sockets; the errno
    /// of what failed otherwise.
    pub(super) fn start(setup: &CallSetup<'_>) -> Result<(Self, ParentEnds), Errno> {
        let pair = || {
            socketpair(
                AddressFamily::UNIX,
                SocketType::SEQPACKET,
                SocketFlags::CLOEXEC,
                None,
            )
        };
        let (request, requests) = pair()?;
        let (report, reports) = pair()?;
        let memory = CallMemory::map()?;
        let (pid, pidfd) = start_call(
            setup,
            [requests.as_fd(), reports.as_fd()],
            &memory,
            become_call,
        )
        .map_err(Errno::from_raw_os_error)?;
        // The supervisor reports the end on the spare's own end of the report socket; its
        // copy of the request socket would keep the spare from seeing the parent go.
        drop(requests);
        Ok((
            Self {
                pid,
                pidfd,
                report: reports,
                _memory: memory,
            },
            ParentEnds { request, report },
        ))
    }
}

/// In the spare, once set up (`prepared`), with its request socket and its report socket and
/// its `arena`: joins the cgroups that come on the request socket, waits for
/// the request there and runs it, or reports what failed on the report socket and exits with
/// 127; exits without a request when the parent closes its end. Never returns, and never
/// allocates (it shares the supervisor's memory: see [`start_call`]).
fn become_call(
    prepared: Result<(), Failed>,
    [requests, report]: [libc::c_int; 2],
    arena: &mut [u8],
) -> ! {
    // SAFETY: the spare's own sockets, which `start_call` kept open.
    #[expect(unsafe_code, reason = "the descriptors kept by start_call")]
    let requests = unsafe { BorrowedFd::borrow_raw(requests) };
    let mut ready = prepared;
    let mut fds: [Option<OwnedFd>; MAX_FDS] = Default::default();
    loop {
        match Message::receive_into(requests, RecvFlags::empty(), &mut fds) {
            Ok(Some((Message::REQUEST, _))) => break,
            Ok(Some((Message::CGROUPS, _))) => {
                let joins = fds.iter().flatten().map(AsFd::as_fd);
                ready = ready.and_then(|()| join_cgroups(joins));
            }
            Ok(Some(_)) | Err(Errno::INTR) => {}
            Ok(None) | Err(_) => exit(0),
        }
        fds = Default::default();
    }
    let Err(failed) = ready.and_then(|()| run(&fds, arena));
    let _sent = send_record(
        report,
        RECORD_FAILED,
        failed.step,
        failed.errno as u32,
        None,
    );
    exit(127)
}

/// Runs the request of `fds` (its memory file, stdin, stdout, stderr), laid out in `arena`;
/// returns only with the step that failed.
fn run(fds: &[Option<OwnedFd>; MAX_FDS], arena: &mut [u8]) -> Result<Infallible, Failed> {
    let [Some(payload), Some(stdin), Some(stdout), Some(stderr)] = fds else {
        return Err(Failed {
            step: STEP_REQUEST,
            errno: libc::EINVAL,
        });
    };
    let launch = lay_out(payload.as_fd(), arena)?;
    run_request(
        [stdin.as_fd(), stdout.as_fd(), stderr.as_fd()],
        launch.cwd(),
        || launch.exec(),
    )
}

/// Exits the spare at once (nothing of the supervisor's copied memory is flushed or run).
fn exit(code: libc::c_int) -> ! {
    // SAFETY: plain system call.
    #[expect(unsafe_code, reason = "_exit has no safe wrapper here")]
    unsafe {
        libc::_exit(code)
    }
}
