//! A call of a warm sandbox, from the supervisor's `clone3` to `exec`: the call starts as pid 1
//! of a pid namespace of its own (so that, when it exits or is killed, the kernel kills
//! everything it started, `setsid` double forks included) with a mount namespace of its own
//! (where a fresh `/proc` shows only the call's processes, never the supervisor or another
//! call, and fresh `/tmp` and `/dev/shm` hold only what the call writes), in a session of its
//! own, then confines itself exactly like a cold sandbox's program
//! ([`confine`]). All of that is done before the call's request arrives (the supervisor keeps
//! one such call started ahead, a spare); it joins its own cgroups when the parent hands them
//! over ([`join_cgroups`], still ahead of the request), and with the request takes its stdio
//! and working directory ([`run_request`]) and executes the program.
//!
//! The supervisor is single-threaded, so the child may allocate; its set-up still makes only
//! system calls on what the supervisor prepared.

use std::convert::Infallible;
use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use std::os::unix::ffi::{OsStrExt, OsStringExt};

use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags};

use super::confine::{Confinement, confine};
use super::{
    Failed, STEP_CALL_MOUNTS, STEP_CALL_START, STEP_CGROUP, STEP_CWD, STEP_DEATH, STEP_EXEC,
    STEP_FDS, STEP_STDIO, Step, check, errno,
};
use crate::exec_args::ExecArgs;

/// What every call of one warm sandbox sets up for itself, whatever its request: the same for
/// all of them, prepared by the supervisor once.
pub(crate) struct CallSetup<'a> {
    /// The options of the call's own `/tmp` and `/dev/shm` (tmpfs).
    pub(crate) scratch: &'a CStr,
    /// The sandbox's binds below `/tmp`, carried over the call's own `/tmp`.
    pub(crate) scratch_binds: &'a [ScratchBind],
    /// How the call confines itself.
    pub(crate) confinement: &'a Confinement<'a>,
}

/// The most binds below `/tmp` a call carries over its fresh `/tmp`.
pub(crate) const MAX_SCRATCH_BINDS: usize = 16;

/// A bind of the sandbox below `/tmp` (the top-most of its stack, with everything bound
/// below it), carried over each call's fresh `/tmp`: what the call creates for it there, and
/// where it is moved.
pub(crate) struct ScratchBind {
    /// Its path inside the sandbox.
    target: CString,
    /// The directories between `/tmp` and it, outermost first, made in the fresh `/tmp`.
    parents: Vec<CString>,
    /// Whether it is a directory (else a file).
    is_dir: bool,
}

impl ScratchBind {
    /// The bind at `target` (an absolute path below `/tmp`; `None` otherwise).
    pub(crate) fn new(target: Vec<u8>, is_dir: bool) -> Option<Self> {
        let path = std::path::PathBuf::from(std::ffi::OsString::from_vec(target));
        let below = path.strip_prefix("/tmp").ok()?;
        let mut parents = Vec::new();
        let mut parent = std::path::PathBuf::from("/tmp");
        let components: Vec<_> = below.components().collect();
        for component in components.iter().take(components.len().saturating_sub(1)) {
            parent.push(component);
            parents.push(CString::new(parent.as_os_str().as_bytes()).ok()?);
        }
        Some(Self {
            target: CString::new(path.into_os_string().into_vec()).ok()?,
            parents,
            is_dir,
        })
    }
}

/// `struct clone_args` of `clone3(2)` (the first version's fields).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
}

/// Starts a call: returns its pid (in the sandbox's pid namespace) and a pidfd of it, or the
/// errno of `clone3`. The child first closes every descriptor from 3 up but those in `keep`
/// (its own sockets), so that it holds nothing of the supervisor's (such as another call's
/// mount namespace, which would stay alive with it), sets itself up as [`CallSetup`] says
/// (before any request: see [`crate::warm`]'s spare calls), then never returns from `then`,
/// which it is handed the outcome of that set-up.
#[expect(unsafe_code, reason = "clone3 and the child's raw system calls")]
pub(crate) fn start_call(
    setup: &CallSetup<'_>,
    keep: &[BorrowedFd<'_>],
    then: impl FnOnce(Result<(), Failed>) -> Infallible,
) -> Result<(libc::pid_t, OwnedFd), i32> {
    let keep: Vec<libc::c_int> = keep.iter().map(AsRawFd::as_raw_fd).collect();
    let mut pidfd: libc::c_int = -1;
    let args = CloneArgs {
        flags: (libc::CLONE_PIDFD | libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64,
        pidfd: (&raw mut pidfd) as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    // SAFETY: a valid, correctly sized `clone_args` without a stack: the child continues on a
    // copy of this (single-threaded) process's memory, like after fork.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw const args,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    if pid < 0 {
        return Err(errno());
    }
    if pid == 0 {
        // `then` never returns (its result cannot exist): the child goes no further.
        then(close_all_but(keep).and_then(|()| set_up(setup)));
    }
    // SAFETY: clone3 stored a new descriptor, owned by nothing else.
    Ok((pid as libc::pid_t, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// Closes every descriptor from 3 up but those in `keep`.
#[expect(unsafe_code, reason = "raw system calls in a freshly cloned child")]
fn close_all_but(mut keep: Vec<libc::c_int>) -> Result<(), Failed> {
    keep.sort_unstable();
    // SAFETY (whole function): closes descriptors of this just cloned process, which nothing
    // here uses.
    unsafe {
        let mut closed = true;
        let mut first: libc::c_int = 3;
        for &kept in keep.iter().filter(|&&fd| fd >= 3) {
            if kept > first {
                closed &=
                    libc::syscall(libc::SYS_close_range, first, (kept - 1) as libc::c_uint, 0) == 0;
            }
            first = first.max(kept + 1);
        }
        closed &= libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0) == 0;
        if closed {
            return Ok(());
        }
        // Before Linux 5.9: each possible descriptor (up to the soft limit).
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        check(libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit).into()).at(STEP_FDS)?;
        let highest = libc::c_int::try_from(limit.rlim_cur).unwrap_or(libc::c_int::MAX);
        for fd in (3..highest).filter(|fd| !keep.contains(fd)) {
            libc::close(fd);
        }
    }
    Ok(())
}

/// The call's own steps that do not depend on its request: the parent-death signal, a
/// session, fresh `/proc`, `/tmp` and `/dev/shm` with the scratch binds carried over, and the
/// confinement; returns the step that failed, if one did.
#[expect(unsafe_code, reason = "raw system calls in a freshly cloned child")]
fn set_up(setup: &CallSetup<'_>) -> Result<(), Failed> {
    // SAFETY (whole function): raw system calls on NUL-terminated strings the supervisor
    // prepared; none allocates.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL).into()).at(STEP_DEATH)?;
        // The supervisor ignores SIGPIPE (its runtime) and may ignore SIGCHLD (to have the
        // kernel reap its calls); the program gets the defaults, as it would from any shell
        // (an ignored SIGCHLD would have the kernel reap the program's own children too).
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::signal(libc::SIGCHLD, libc::SIG_DFL);
        check(libc::setsid().into()).at(STEP_CALL_START)?;
        let private = MountFlags::NOSUID | MountFlags::NODEV;
        rustix::mount::mount(
            c"proc",
            c"/proc",
            c"proc",
            private | MountFlags::NOEXEC,
            None,
        )
        .map_err(Errno::raw_os_error)
        .at(STEP_CALL_MOUNTS)?;
        // Fresh scratch space, as a cold run gets: nothing one call leaves there reaches the
        // next (the owner's hooks and the model's code share the sandbox). The sandbox's binds
        // below `/tmp` are taken (copies, with what is bound below them) before the fresh
        // `/tmp` hides them, and put back on it.
        let mut carried: [Option<OwnedFd>; MAX_SCRATCH_BINDS] = std::array::from_fn(|_| None);
        for (slot, bind) in carried.iter_mut().zip(setup.scratch_binds) {
            let flags = OpenTreeFlags::OPEN_TREE_CLONE
                | OpenTreeFlags::OPEN_TREE_CLOEXEC
                | OpenTreeFlags::AT_RECURSIVE;
            *slot = Some(
                rustix::mount::open_tree(CWD, bind.target.as_c_str(), flags)
                    .map_err(Errno::raw_os_error)
                    .at(STEP_CALL_MOUNTS)?,
            );
        }
        for target in [c"/tmp", c"/dev/shm"] {
            rustix::mount::mount(c"tmpfs", target, c"tmpfs", private, setup.scratch)
                .map_err(Errno::raw_os_error)
                .at(STEP_CALL_MOUNTS)?;
        }
        for (tree, bind) in carried.iter().zip(setup.scratch_binds) {
            let Some(tree) = tree else { break };
            for parent in &bind.parents {
                match rustix::fs::mkdir(parent.as_c_str(), Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(errno) => return Err(errno.raw_os_error()).at(STEP_CALL_MOUNTS),
                }
            }
            let made = if bind.is_dir {
                rustix::fs::mkdir(bind.target.as_c_str(), Mode::from_raw_mode(0o755))
            } else {
                rustix::fs::open(
                    bind.target.as_c_str(),
                    OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
                    Mode::from_raw_mode(0o644),
                )
                .map(drop)
            };
            match made {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(errno) => return Err(errno.raw_os_error()).at(STEP_CALL_MOUNTS),
            }
            rustix::mount::move_mount(
                tree,
                c"",
                CWD,
                bind.target.as_c_str(),
                MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
            )
            .map_err(Errno::raw_os_error)
            .at(STEP_CALL_MOUNTS)?;
        }
    }
    confine(setup.confinement)
}

/// Joins a call's cgroups through the join files the parent passed (before its request: so
/// that everything the call starts is counted in them).
#[expect(unsafe_code, reason = "raw system calls in a call before exec")]
pub(crate) fn join_cgroups(joins: &[OwnedFd]) -> Result<(), Failed> {
    for join in joins {
        // SAFETY: writes one byte to a descriptor the parent passed.
        let written = unsafe { libc::write(join.as_raw_fd(), b"0".as_ptr().cast(), 1) };
        check(written as libc::c_long).at(STEP_CGROUP)?;
    }
    Ok(())
}

/// The steps of a call once its request has arrived, up to `exec`: takes its stdio and working
/// directory and executes `exec`; returns only with the step that failed.
#[expect(unsafe_code, reason = "raw system calls before exec")]
pub(crate) fn run_request(
    stdio: [libc::c_int; 3],
    cwd: &CStr,
    exec: &ExecArgs,
) -> Result<Infallible, Failed> {
    // SAFETY: raw system calls on descriptors the request brought and NUL-terminated strings.
    unsafe {
        for (target, &fd) in stdio.iter().enumerate() {
            check(libc::dup2(fd, target as libc::c_int).into()).at(STEP_STDIO)?;
        }
        check(libc::chdir(cwd.as_ptr()).into()).at(STEP_CWD)?;
    }
    Err(exec.exec()).at(STEP_EXEC)
}
