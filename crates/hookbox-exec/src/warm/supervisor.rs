//! The supervisor: pid 1 of a warm sandbox, the program given to
//! [`WarmSandbox::start`](super::WarmSandbox::start) re-executed by the sandbox's init with
//! [`SUPERVISOR_ARG`] (see [`supervise_if_asked`]).
//!
//! It inherits the namespaces and the file system of the sandbox and the control socket as
//! descriptor 3, and nothing else; it is not itself
//! confined (it needs its capabilities inside the sandbox's user namespace to start calls in
//! namespaces of their own). It is single-threaded: one `poll` loop over the control socket
//! and the pidfd of each spare it handed out. It starts calls; it never sees their requests.
//!
//! - [`Message::WANT`] on the control socket: it starts that many spares (see
//!   [`super::spare`]: each a call set up ahead of its request) and hands each to the parent
//!   ([`Message::SPARE`]), or says why it could not ([`Message::NO_SPARE`]). The parent then
//!   sends the spare its cgroups and its request directly.
//! - A spare's pidfd becoming readable means the call and everything it started are gone (or
//!   the spare ended unused): it is reaped and its wait status sent as `EXITED` on its report
//!   socket (where the kernel reaps the calls, see [`READY_ENDS_ON_PIDFDS`], `EXITED` only
//!   confirms the end), which the supervisor then closes, after releasing the call's mount
//!   namespace.
//! - End of file on the control socket means the parent is gone: the supervisor exits, and
//!   the kernel kills everything left in the sandbox.

use std::ffi::{CString, OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;
use rustix::net::{RecvFlags, SendFlags};

use super::spare::{Message, Spare};
use crate::sandbox::{
    CONTROL_FD, CallSetup, Confinement, LandlockPlan, MAX_SCRATCH_BINDS, RECORD_EXITED,
    RECORD_READY, ScratchBind, seccomp_program, send_record,
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
/// first argument is [`SUPERVISOR_ARG`]), or as the sandbox's first process, which waits for
/// the supervisor (its one argument is [`PARENT_ARG`](super::PARENT_ARG)); returns at once
/// otherwise.
///
/// A program given to [`WarmSandbox::start`](super::WarmSandbox::start) must call this first
/// thing in `main` (hookbox does). Started that way anywhere else than as pid 1 of a warm
/// sandbox, or as a parent without a child, it refuses and exits with status 2.
pub fn supervise_if_asked() {
    if super::parent::asked() {
        super::parent::wait_for_the_supervisor();
    }
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

/// The number `READY` says when the kernel reaps the calls (the supervisor ignores
/// `SIGCHLD`): the parent reads each call's end and wait status from its pidfd (Linux 6.15's
/// `PIDFD_INFO_EXIT`), one process wake-up fewer than waiting for `EXITED`, which is sent
/// otherwise (`READY` says 0).
pub(super) const READY_ENDS_ON_PIDFDS: u32 = 1;

/// The most spares one [`Message::WANT`] starts.
const MAX_WANTED: u32 = 64;

/// A spare handed to the parent, until its end has been reported.
struct Running {
    /// The spare's mount namespace, held so that its tear-down (its `/proc`, `/tmp` and
    /// `/dev/shm` unmounted, their pages freed) is not part of the call's exit, which its
    /// caller waits for, but happens after `EXITED` is sent, when this is dropped: before
    /// `spare` (declared after it, with the supervisor's copy of the report socket), so that
    /// the caller, seeing the report socket end, knows nothing of the call is left charged to
    /// its cgroups. No spare inherits it (a spare closes every descriptor but its own
    /// sockets).
    _mounts: Option<OwnedFd>,
    spare: Spare,
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
    let mut kernel_reaps = pidfds_keep_exit_status();
    if kernel_reaps {
        // Each spare sets `SIGCHLD` back to its default.
        set_sigchld(libc::SIG_IGN);
    }
    let ready = if kernel_reaps {
        READY_ENDS_ON_PIDFDS
    } else {
        0
    };
    if !send_record(control.as_raw_fd(), RECORD_READY, ready, 0, None) {
        return 1;
    }
    let mut running: Vec<Running> = Vec::new();
    loop {
        let (control_ready, exited) = {
            let mut fds = vec![PollFd::new(&control, PollFlags::IN)];
            fds.extend(
                running
                    .iter()
                    .map(|call| PollFd::new(&call.spare.pidfd, PollFlags::IN)),
            );
            match poll(&mut fds, None) {
                Ok(_) | Err(Errno::INTR) => {}
                Err(_) => return 1,
            }
            let ready = |fd: &PollFd<'_>| !fd.revents().is_empty();
            let exited: Vec<bool> = fds[1..].iter().map(ready).collect();
            (ready(&fds[0]), exited)
        };
        let mut exited = exited.into_iter();
        running.retain(|call| {
            let ended = exited.next().unwrap_or_default();
            if ended {
                report_end(&call.spare, kernel_reaps);
            }
            !ended
        });
        if control_ready {
            match Message::receive(control.as_fd(), RecvFlags::DONTWAIT) {
                Ok(Some(message)) if message.kind == Message::WANT => {
                    for _ in 0..message.value.min(MAX_WANTED) {
                        running.extend(hand_out(&control, &setup));
                    }
                }
                Ok(Some(message)) if message.kind == Message::REPORT_ENDS && running.is_empty() => {
                    if kernel_reaps {
                        set_sigchld(libc::SIG_DFL);
                        kernel_reaps = false;
                    }
                }
                Ok(Some(_)) | Err(Errno::AGAIN | Errno::INTR) => {}
                Ok(None) => return 0,
                Err(_) => return 1,
            }
        }
    }
}

/// Sets the disposition of `SIGCHLD`: ignored, the kernel reaps the children as they exit.
fn set_sigchld(disposition: libc::sighandler_t) {
    // SAFETY: plain system call.
    #[expect(unsafe_code, reason = "signal has no safe wrapper here")]
    unsafe {
        libc::signal(libc::SIGCHLD, disposition);
    }
}

/// Whether the kernel keeps the wait status of a reaped child for its pidfds (Linux 6.15's
/// `PIDFD_INFO_EXIT`): tried on a child that exits at once.
fn pidfds_keep_exit_status() -> bool {
    // SAFETY: this process is single-threaded; the child only exits.
    #[expect(unsafe_code, reason = "fork and _exit have no safe wrapper here")]
    let pid = unsafe {
        let pid = libc::fork();
        if pid == 0 {
            libc::_exit(0);
        }
        pid
    };
    // A fork refused (say by the sandbox's process limit) leaves `EXITED` reports.
    let Some(child) = (pid > 0)
        .then(|| rustix::process::Pid::from_raw(pid))
        .flatten()
    else {
        return false;
    };
    // Opened while the child cannot be reaped yet: `SIGCHLD` is not ignored.
    let pidfd = rustix::process::pidfd_open(child, rustix::process::PidfdFlags::empty());
    // SAFETY: waits for our own child.
    #[expect(unsafe_code, reason = "waitpid on our own child")]
    unsafe {
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    pidfd.is_ok_and(|pidfd| crate::reported::exit_status(pidfd.as_fd()).is_some())
}

/// Reports an ended spare's end on its report socket: its wait status, reaped here, or, when
/// the kernel reaped it (`kernel_reaps`; the parent read the status from its pidfd), only that
/// the supervisor saw it end (a call killed by SIGKILL is told apart from one killed with its
/// sandbox by this record).
fn report_end(spare: &Spare, kernel_reaps: bool) {
    let mut status = 0;
    if !kernel_reaps {
        // SAFETY: waits for our own child, which has exited (its pidfd is readable).
        #[expect(unsafe_code, reason = "waitpid on our own child")]
        let reaped = unsafe { libc::waitpid(spare.pid, &raw mut status, 0) };
        if reaped != spare.pid {
            return;
        }
    }
    // Failing means the parent no longer waits for it.
    let _sent = send_record(
        spare.report.as_raw_fd(),
        RECORD_EXITED,
        status as u32,
        0,
        None,
    );
}

/// Starts a spare and hands it to the parent on `control` (or says why it could not); the
/// spare to watch until its end.
fn hand_out(control: &OwnedFd, setup: &CallSetup<'_>) -> Option<Running> {
    match Spare::start(setup) {
        Ok((spare, ends)) => {
            let mounts = rustix::fs::open(
                format!("/proc/{}/ns/mnt", spare.pid),
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok();
            // Not sent means the parent is gone: the spare sees its request socket end and
            // exits, and is reaped like any other.
            let _sent = Message::send(
                control.as_fd(),
                Message::SPARE,
                spare.pid as u32,
                &[
                    ends.request.as_fd(),
                    ends.report.as_fd(),
                    spare.pidfd.as_fd(),
                ],
                SendFlags::empty(),
            );
            Some(Running {
                _mounts: mounts,
                spare,
            })
        }
        Err(errno) => {
            let _sent = Message::send(
                control.as_fd(),
                Message::NO_SPARE,
                errno.raw_os_error() as u32,
                &[],
                SendFlags::empty(),
            );
            None
        }
    }
}
