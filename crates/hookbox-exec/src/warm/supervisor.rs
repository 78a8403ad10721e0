//! The supervisor: pid 1 of a warm sandbox, the program given to
//! [`WarmSandbox::start`](super::WarmSandbox::start) re-executed by the sandbox's init with
//! [`SUPERVISOR_ARG`] (see [`supervise_if_asked`]).
//!
//! It inherits the namespaces and the file system of the sandbox and the control socket as
//! descriptor 3, and nothing else; it is not itself
//! confined (it needs its capabilities inside the sandbox's user namespace to start calls in
//! namespaces of their own). It is single-threaded: one `poll` loop over the control socket,
//! the pidfd of each running call and each call's reply socket.
//!
//! - A request on the control socket (see [`super::request`]) with five descriptors (the
//!   request's memory file, the call's stdin, stdout and stderr, its reply socket), and as root
//!   the files through which the call joins its own cgroups, starts the call and answers
//!   `STARTED` with a pidfd of it on the reply socket. The call is the spare started after
//!   the previous request (see [`super::spare`]), or one started now for the first request
//!   and for requests that arrive together; a new spare is started after each request.
//! - A call's pidfd becoming readable means the call and everything it started are gone: it
//!   is reaped and its wait status sent as `EXITED`.
//! - A reply socket hung up means the caller stopped waiting (a timeout, or its future was
//!   dropped): the call is killed.
//! - End of file on the control socket means the parent is gone: the supervisor exits, and
//!   the kernel kills everything left in the sandbox.

use std::ffi::{CString, OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use rustix::net::RecvFlags;
use rustix::process::{Signal, pidfd_send_signal};

use super::spare::{self, MAX_REQUEST_FDS, REQUEST_FDS, Spare};
use crate::sandbox::{
    CONTROL_FD, CallSetup, Confinement, LandlockPlan, MAX_SCRATCH_BINDS, RECORD_EXITED,
    RECORD_FAILED, RECORD_READY, RECORD_STARTED, STEP_CALL_START, ScratchBind, seccomp_program,
    send_record,
};

/// The argument (right after the program's name) that makes [`supervise_if_asked`] run the
/// supervisor.
pub const SUPERVISOR_ARG: &str = "--hookbox-sandbox-supervisor";

/// The name of the program that is only a warm sandbox's supervisor, installed next to
/// hookbox (see [`supervisor_program`]).
pub const SUPERVISOR_PROGRAM: &str = "hookbox-sandbox-supervisor";

/// The program this process's warm sandboxes run as their supervisor: [`SUPERVISOR_PROGRAM`]
/// next to this process's executable when it is there (a small program that only supervises,
/// so an idle sandbox costs a fraction of the memory hookbox itself would), else this program
/// itself (`/proc/self/exe`, whose `main` must call [`supervise_if_asked`] first).
pub fn supervisor_program() -> std::path::PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(SUPERVISOR_PROGRAM)))
        .filter(|program| program.is_file())
        .unwrap_or_else(|| "/proc/self/exe".into())
}

/// The `main` of a program that is only a warm sandbox's supervisor: supervises when started
/// as one, else says what it is for and exits with status 2.
pub fn supervise_only() -> ! {
    supervise_if_asked();
    let _written = writeln!(
        std::io::stderr(),
        "this program only runs as a warm sandbox's supervisor ({SUPERVISOR_ARG}), started by \
         hookbox"
    );
    std::process::exit(2)
}

/// Runs this process as a warm sandbox's supervisor and exits, when it was started as one (its
/// first argument is [`SUPERVISOR_ARG`]); returns at once otherwise.
///
/// A program given to [`WarmSandbox::start`](super::WarmSandbox::start) must call this first
/// thing in `main` (hookbox does). Started that way anywhere else than as pid 1 of a warm
/// sandbox, it refuses and exits with status 2.
pub fn supervise_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(SUPERVISOR_ARG)) {
        return;
    }
    let code = match Settings::parse(args) {
        Some(settings) if rustix::process::getpid().as_raw_nonzero().get() == 1 => serve(&settings),
        _ => {
            let _written = writeln!(
                std::io::stderr(),
                "{SUPERVISOR_ARG} is for hookbox's own use: the supervisor of a warm sandbox"
            );
            2
        }
    };
    std::process::exit(code)
}

/// The supervisor's arguments: its name, [`SUPERVISOR_ARG`], the highest capability number,
/// the calls' resource limits, the options of each call's fresh `/tmp` and `/dev/shm` (tmpfs),
/// the binds each call carries over its fresh `/tmp` (their number, then `d` or `f` and the
/// path of each), and the landlock rules (`no-landlock`, or `landlock`, the attribute size,
/// the handled rights, the scopes, then each rule's rights and path): what it needs to start
/// each call like a cold sandbox's program.
pub(crate) fn supervisor_args(
    cap_last: u32,
    rlimits: &[(libc::__rlimit_resource_t, u64, u64)],
    scratch: &str,
    scratch_binds: &[(CString, bool)],
    landlock: Option<&LandlockPlan>,
) -> Vec<Vec<u8>> {
    let limits: Vec<String> = rlimits
        .iter()
        .map(|(resource, soft, hard)| format!("{resource}:{soft}:{hard}"))
        .collect();
    let mut args: Vec<Vec<u8>> = [
        "hookbox-sandbox-supervisor".to_owned(),
        SUPERVISOR_ARG.to_owned(),
        cap_last.to_string(),
        limits.join(","),
        scratch.to_owned(),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    args.push(scratch_binds.len().to_string().into_bytes());
    for (path, is_dir) in scratch_binds {
        args.push(if *is_dir {
            b"d".to_vec()
        } else {
            b"f".to_vec()
        });
        args.push(path.as_bytes().to_vec());
    }
    match landlock {
        None => args.push(b"no-landlock".to_vec()),
        Some(plan) => {
            for number in ["landlock".to_owned(), plan.attr_size.to_string()]
                .into_iter()
                .chain([plan.handled_fs, plan.scoped].map(|bits| bits.to_string()))
            {
                args.push(number.into_bytes());
            }
            for (path, access) in &plan.rules {
                args.push(access.to_string().into_bytes());
                args.push(path.as_bytes().to_vec());
            }
        }
    }
    args
}

/// What the supervisor was started with (see [`supervisor_args`]).
struct Settings {
    cap_last: u32,
    rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    scratch: CString,
    scratch_binds: Vec<ScratchBind>,
    landlock: Option<LandlockPlan>,
}

impl Settings {
    fn parse(args: impl Iterator<Item = OsString>) -> Option<Self> {
        let mut args = args.map(OsString::into_vec);
        let number = |args: &mut dyn Iterator<Item = Vec<u8>>| -> Option<u64> {
            String::from_utf8(args.next()?).ok()?.parse().ok()
        };
        let cap_last = u32::try_from(number(&mut args)?).ok()?;
        let limits = String::from_utf8(args.next()?).ok()?;
        let rlimits = limits
            .split(',')
            .filter(|limit| !limit.is_empty())
            .map(|limit| {
                let mut parts = limit.split(':');
                let mut number = || parts.next()?.parse::<u64>().ok();
                let resource = libc::__rlimit_resource_t::try_from(number()?).ok()?;
                Some((resource, number()?, number()?))
            })
            .collect::<Option<Vec<_>>>()?;
        let scratch = CString::new(args.next()?).ok()?;
        let carried = usize::try_from(number(&mut args)?).ok()?;
        if carried > MAX_SCRATCH_BINDS {
            return None;
        }
        let scratch_binds = (0..carried)
            .map(|_| {
                let is_dir = match args.next()?.as_slice() {
                    b"d" => true,
                    b"f" => false,
                    _ => return None,
                };
                ScratchBind::new(args.next()?, is_dir)
            })
            .collect::<Option<Vec<_>>>()?;
        let landlock = match args.next()?.as_slice() {
            b"no-landlock" => None,
            b"landlock" => {
                let attr_size = usize::try_from(number(&mut args)?).ok()?;
                let handled_fs = number(&mut args)?;
                let scoped = number(&mut args)?;
                let mut rules = Vec::new();
                while let Some(access) = number(&mut args) {
                    rules.push((CString::new(args.next()?).ok()?, access));
                }
                Some(LandlockPlan {
                    attr_size,
                    handled_fs,
                    scoped,
                    rules,
                })
            }
            _ => return None,
        };
        Some(Self {
            cap_last,
            rlimits,
            scratch,
            scratch_binds,
            landlock,
        })
    }
}

/// A running call.
struct Running {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    /// The call's mount namespace, held so that its tear-down (its `/proc`, `/tmp` and
    /// `/dev/shm` unmounted, their pages freed) is not part of the call's exit, which its
    /// caller waits for, but happens after `EXITED` is sent, when this is dropped: before
    /// `reply` (declared after it), so that the caller, seeing the reply socket end, knows
    /// nothing of the call is left charged to its cgroups. No spare inherits it (a spare
    /// closes every descriptor but its own socket).
    _mounts: Option<OwnedFd>,
    /// Where the call's end is reported; `None` once the caller hung up (the call was killed).
    reply: Option<OwnedFd>,
}

/// The supervisor's loop; returns the exit code once the parent is gone.
fn serve(settings: &Settings) -> i32 {
    // SAFETY: descriptor 3 was set up by the init for this process alone.
    #[expect(unsafe_code, reason = "taking ownership of the inherited descriptor")]
    let control = unsafe { OwnedFd::from_raw_fd(CONTROL_FD) };
    if rustix::io::fcntl_setfd(&control, rustix::io::FdFlags::CLOEXEC).is_err() {
        return 1;
    }
    // Not dumpable: nothing inside may open its `/proc` entries, even with the same uid.
    // SAFETY: plain prctl.
    #[expect(unsafe_code, reason = "prctl has no safe wrapper here")]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let Ok(filter) = seccomp_program() else {
        return 1;
    };
    let confinement = Confinement {
        rlimits: &settings.rlimits,
        landlock: settings.landlock.as_ref(),
        cap_last: settings.cap_last,
        filter,
    };
    let setup = CallSetup {
        scratch: &settings.scratch,
        scratch_binds: &settings.scratch_binds,
        confinement: &confinement,
    };
    // The next call, started ahead of its request once the sandbox has had one.
    let mut spare: Option<Spare> = None;
    if !send_record(control.as_raw_fd(), RECORD_READY, 0, 0, None) {
        return 1;
    }
    let mut calls: Vec<Running> = Vec::new();
    loop {
        let (control_ready, events) = {
            let mut fds = vec![PollFd::new(&control, PollFlags::IN)];
            for call in &calls {
                fds.push(PollFd::new(&call.pidfd, PollFlags::IN));
                // Hang-ups are always reported, whatever is asked for.
                let reply = call.reply.as_ref().map_or(call.pidfd.as_fd(), AsFd::as_fd);
                fds.push(PollFd::from_borrowed_fd(reply, PollFlags::empty()));
            }
            match poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(_) => return 1,
            }
            let ready = |fd: &PollFd<'_>| !fd.revents().is_empty();
            let calls: Vec<(bool, bool)> = fds[1..]
                .chunks(2)
                .map(|pair| (ready(&pair[0]), ready(&pair[1])))
                .collect();
            (ready(&fds[0]), calls)
        };
        let mut events = events.into_iter();
        calls.retain_mut(|call| {
            let (exited, hung_up) = events.next().unwrap_or_default();
            if exited {
                finish(call);
                return false;
            }
            if hung_up && call.reply.is_some() {
                // The caller stopped waiting: the call ends now, and is reaped when it has.
                let _killed = pidfd_send_signal(&call.pidfd, Signal::KILL);
                call.reply = None;
            }
            true
        });
        if control_ready {
            match spare::receive(control.as_fd(), RecvFlags::DONTWAIT) {
                Ok(Some(fds)) => calls.extend(start(fds, &setup, spare.take())),
                Ok(None) => return 0,
                Err(Errno::AGAIN | Errno::INTR) => {}
                Err(_) => return 1,
            }
            // Only now, with the request's descriptors closed here, so that it holds none.
            if spare.is_none() {
                spare = Spare::start(&setup).ok();
            }
        }
    }
}

/// Reaps an exited call and reports its wait status to its caller, if still there.
fn finish(call: &Running) {
    let mut status = 0;
    // SAFETY: waits for our own child, which has exited (its pidfd is readable).
    #[expect(unsafe_code, reason = "waitpid on our own child")]
    let reaped = unsafe { libc::waitpid(call.pid, &raw mut status, 0) };
    if let (Some(reply), true) = (&call.reply, reaped == call.pid) {
        let _sent = send_record(reply.as_raw_fd(), RECORD_EXITED, status as u32, 0, None);
    }
}

/// Starts the call of one request in `spare` (or, without one or when it is gone, in a call
/// started now); reports why it could not on the request's reply socket otherwise.
fn start(fds: Vec<OwnedFd>, setup: &CallSetup<'_>, spare: Option<Spare>) -> Option<Running> {
    if !(REQUEST_FDS..=MAX_REQUEST_FDS).contains(&fds.len()) {
        return None;
    }
    let started = match spare.map(|spare| spare.hand(&fds)) {
        Some(Ok(started)) => Ok(started),
        _ => Spare::start(setup).and_then(|spare| spare.hand(&fds)),
    };
    let reply = fds.into_iter().nth(REQUEST_FDS - 1)?;
    match started {
        Ok((pid, pidfd)) => {
            let _sent = send_record(
                reply.as_raw_fd(),
                RECORD_STARTED,
                pid as u32,
                0,
                Some(pidfd.as_raw_fd()),
            );
            let mounts = rustix::fs::open(
                format!("/proc/{pid}/ns/mnt"),
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok();
            Some(Running {
                pid,
                pidfd,
                _mounts: mounts,
                reply: Some(reply),
            })
        }
        Err(errno) => {
            let _sent = send_record(
                reply.as_raw_fd(),
                RECORD_FAILED,
                STEP_CALL_START,
                errno.raw_os_error() as u32,
                None,
            );
            None
        }
    }
}
