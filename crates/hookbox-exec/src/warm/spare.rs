//! Spare calls: the supervisor starts each call before its request arrives, so that what does
//! not depend on the request (the call's `clone3` into namespaces of its own, its fresh
//! `/proc`, `/tmp` and `/dev/shm`, its confinement: landlock, capabilities, seccomp) is done
//! while the previous call runs, not while the caller waits.
//!
//! A spare waits on a socket of its own for the request's descriptors; with them it joins the
//! call's cgroups before anything else (it has started nothing yet, so everything the call
//! starts is counted there), reads the request, takes its stdio and working directory and
//! executes the program. A step that failed, its own set-up's included, is reported on the
//! request's reply socket, exactly as a call started on demand reports it. A spare is only a
//! process of the supervisor's, in namespaces of its own: no call can see, signal or reach it.

use std::convert::Infallible;
use std::ffi::{CString, OsStr};
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use rustix::io::Errno;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType, recvmsg, sendmsg, socketpair,
};
use rustix::process::{Signal, pidfd_send_signal};

use super::request::Request;
use crate::exec_args::ExecArgs;
use crate::sandbox::{
    CallSetup, Failed, RECORD_FAILED, STEP_EXEC, STEP_REQUEST, run_request, send_record, start_call,
};

/// Descriptors of a request: its memory file, the call's stdin, stdout and stderr, its reply
/// socket.
pub(super) const REQUEST_FDS: usize = 5;

/// The most cgroup files a request brings (v1 `pids` and `memory`, or one v2 cgroup).
const JOIN_FDS: usize = 2;

/// The most descriptors one request may carry.
pub(crate) const MAX_REQUEST_FDS: usize = REQUEST_FDS + JOIN_FDS;

/// A call started ahead of its request, waiting for it.
pub(super) struct Spare {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    /// The supervisor's end of the spare's socket.
    socket: OwnedFd,
}

impl Spare {
    /// Starts a spare set up as `setup` says; the errno of what failed otherwise.
    pub(super) fn start(setup: &CallSetup<'_>) -> Result<Self, Errno> {
        let (socket, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::SEQPACKET,
            SocketFlags::CLOEXEC,
            None,
        )?;
        let (pid, pidfd) = start_call(setup, theirs.as_fd(), |prepared| {
            become_call(prepared, theirs.as_fd())
        })
        .map_err(Errno::from_raw_os_error)?;
        Ok(Self { pid, pidfd, socket })
    }

    /// Hands a request's descriptors (see [`receive`]) to this spare, which becomes the call:
    /// its pid and pidfd. When the spare cannot take them, it is killed and reaped, and the
    /// errno returned.
    pub(super) fn hand(self, fds: &[OwnedFd]) -> Result<(libc::pid_t, OwnedFd), Errno> {
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(AsFd::as_fd).collect();
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_REQUEST_FDS))];
        let mut ancillary = SendAncillaryBuffer::new(&mut space);
        ancillary.push(SendAncillaryMessage::ScmRights(&borrowed));
        match sendmsg(
            &self.socket,
            &[std::io::IoSlice::new(&[0; 4])],
            &mut ancillary,
            SendFlags::NOSIGNAL,
        ) {
            Ok(_) => Ok((self.pid, self.pidfd)),
            Err(errno) => {
                let _killed = pidfd_send_signal(&self.pidfd, Signal::KILL);
                // SAFETY: waits for our own child, just killed.
                #[expect(unsafe_code, reason = "waitpid on our own child")]
                unsafe {
                    libc::waitpid(self.pid, std::ptr::null_mut(), 0);
                }
                Err(errno)
            }
        }
    }
}

/// Receives one request's descriptors on `socket`: `Ok(None)` at end of file.
pub(super) fn receive(
    socket: BorrowedFd<'_>,
    flags: RecvFlags,
) -> Result<Option<Vec<OwnedFd>>, Errno> {
    let mut header = [0_u8; 4];
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_REQUEST_FDS))];
    let mut ancillary = RecvAncillaryBuffer::new(&mut space);
    let received = recvmsg(
        socket,
        &mut [IoSliceMut::new(&mut header)],
        &mut ancillary,
        flags | RecvFlags::CMSG_CLOEXEC,
    )?;
    if received.bytes == 0 {
        return Ok(None);
    }
    let fds = ancillary
        .drain()
        .filter_map(|message| match message {
            RecvAncillaryMessage::ScmRights(fds) => Some(fds),
            _ => None,
        })
        .flatten()
        .collect();
    Ok(Some(fds))
}

/// In the spare, once set up (`prepared`): waits for the request on `socket` and runs it, or
/// reports what failed on its reply socket and exits with 127; exits without a request when
/// the supervisor closes the socket. Never returns.
fn become_call(prepared: Result<(), Failed>, socket: BorrowedFd<'_>) -> Infallible {
    let fds = loop {
        match receive(socket, RecvFlags::empty()) {
            Ok(Some(fds)) => break fds,
            Err(Errno::INTR) => {}
            Ok(None) | Err(_) => exit(0),
        }
    };
    run(prepared, fds);
    exit(127)
}

/// Runs the request of `fds` after the set-up's outcome `prepared`; returns only after a
/// failed step, reported on the reply socket (a request without one is dropped).
fn run(prepared: Result<(), Failed>, mut fds: Vec<OwnedFd>) {
    if !(REQUEST_FDS..=MAX_REQUEST_FDS).contains(&fds.len()) {
        return;
    }
    let joins = fds.split_off(REQUEST_FDS);
    let Ok([payload, stdin, stdout, stderr, reply]): Result<[OwnedFd; REQUEST_FDS], _> =
        fds.try_into()
    else {
        return;
    };
    let failed = match prepared.and_then(|()| program(payload)) {
        Err(failed) => failed,
        Ok((exec, cwd)) => {
            let joins: Vec<libc::c_int> = joins.iter().map(AsRawFd::as_raw_fd).collect();
            let stdio = [stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd()];
            let Err(failed) = run_request(&joins, stdio, &cwd, &exec);
            failed
        }
    };
    let _sent = send_record(
        reply.as_raw_fd(),
        RECORD_FAILED,
        failed.step,
        failed.errno as u32,
        None,
    );
}

/// The program, arguments, environment and working directory of the request in the memory
/// file `payload`.
fn program(payload: OwnedFd) -> Result<(ExecArgs, CString), Failed> {
    let invalid = |step| Failed {
        step,
        errno: libc::EINVAL,
    };
    let request = Request::read(payload).ok_or_else(|| invalid(STEP_REQUEST))?;
    let exec = ExecArgs::new(
        OsStr::from_bytes(&request.program),
        request.args.iter().map(|arg| OsStr::from_bytes(arg)),
        request.vars,
    );
    match (exec, CString::new(request.cwd)) {
        (Ok(exec), Ok(cwd)) => Ok((exec, cwd)),
        _ => Err(invalid(STEP_EXEC)),
    }
}

/// Exits the spare at once (nothing of the supervisor's copied memory is flushed or run).
fn exit(code: libc::c_int) -> ! {
    // SAFETY: plain system call.
    #[expect(unsafe_code, reason = "_exit has no safe wrapper here")]
    unsafe {
        libc::_exit(code)
    }
}
