//! A call of a warm sandbox, from the supervisor's `clone` to `exec`: the call starts as pid 1
//! of a pid namespace of its own (so that, when it exits or is killed, the kernel kills
//! everything it started, `setsid` double forks included) with a mount namespace of its own
//! (where a fresh `/proc` shows only the call's processes, never the supervisor or another
//! call, and fresh `/tmp` and `/dev/shm` hold only what the call writes) and an IPC namespace of
//! its own (SysV shared memory, semaphores and message queues, POSIX message queues: none
//! another call made is visible, and what the call leaves is freed with the namespace when
//! its last process is gone), in a session of its own, then confines itself exactly like a cold sandbox's program
//! ([`confine`]). All of that is done before the call's request arrives (the supervisor keeps
//! one such call started ahead, a spare); it joins its own cgroups when the parent hands them
//! over ([`join_cgroups`], still ahead of the request), and with the request takes its stdio
//! and working directory ([`run_request`]) and executes the program.
//!
//! **The call shares the supervisor's memory until it executes its program** (`CLONE_VM`, as
//! `posix_spawn` does, but without suspending the supervisor): starting it copies no page
//! table, it takes no copy-on-write fault, and its `execve` tears no copy of the supervisor's
//! memory down (on a 2-processor VM that tear-down, with its TLB shoot-down, was the larger
//! part of a call's `execve`). So from its `clone` to its `execve` the call runs beside the
//! supervisor like a thread the C library does not know about, and must behave like one:
//! - it runs on a stack of its own and lays its request out in an arena of its own, both in a
//!   [`CallMemory`] the supervisor maps for it and unmaps only once it has ended;
//! - it never allocates (the allocator would race with the supervisor's), panics or takes a
//!   lock, and reads nothing the supervisor could free or change: the [`CallSetup`] lives as
//!   long as the supervisor and never changes, and [`start_call`] copies the rest into the
//!   call's own memory before the `clone`;
//! - `errno` is the supervisor's too (one thread-local storage). The call reads it only right
//!   after one of its C library calls failed (its set-up's, and `execve`'s while it searches
//!   `PATH`; its other steps go through `rustix`, which does not touch it), and the
//!   supervisor, once it has started calls, makes no C library call that can fail but
//!   `clone`: only two failures at the same instant could misreport one errno (and stop a
//!   `PATH` search early), never touch memory.

use std::convert::Infallible;
use std::ffi::{CStr, CString, c_void};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::ptr::NonNull;

use rustix::fs::{CWD, Mode, OFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MoveMountFlags, OpenTreeFlags};

use super::confine::{Confinement, confine};
use super::{
    Failed, STEP_CALL_MOUNTS, STEP_CALL_START, STEP_CGROUP, STEP_CWD, STEP_DEATH, STEP_EXEC,
    STEP_FDS, STEP_STDIO, Step, check, errno,
};

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

/// The bytes below a call's stack that fault instead of growing into something else.
const GUARD_BYTES: usize = 4096;
/// A call's stack: its set-up and request steps need a few KiB; only what is touched is ever
/// backed.
const STACK_BYTES: usize = 256 << 10;
/// A call's arena: room to lay out any request `execve` would take (at most 6 MiB of
/// arguments and environment, pointers included, whatever the stack limit): the request, then
/// its strings again and its pointers. Reserved, not backed, until touched (`MAP_NORESERVE`;
/// under strict overcommit accounting it is committed whole).
pub(crate) const ARENA_BYTES: usize = 16 << 20;

/// The memory a call runs in from its `clone` to its `execve` (see the module's doc): a guard
/// page, its stack and its arena, mapped by the supervisor for this call alone; unmapped when
/// dropped, which the supervisor does only once the call has ended.
pub(crate) struct CallMemory {
    base: NonNull<c_void>,
}

impl CallMemory {
    const BYTES: usize = GUARD_BYTES + STACK_BYTES + ARENA_BYTES;

    /// Maps a call's memory; the errno otherwise.
    #[expect(unsafe_code, reason = "mapping the call's memory")]
    pub(crate) fn map() -> Result<Self, Errno> {
        use rustix::mm::{MapFlags, MprotectFlags, ProtFlags};
        // SAFETY: a fresh anonymous mapping, which nothing else refers to.
        let base = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                Self::BYTES,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::NORESERVE | MapFlags::STACK,
            )?
        };
        let memory = Self {
            base: NonNull::new(base).ok_or(Errno::NOMEM)?,
        };
        // SAFETY: the first page of the mapping just made, which nothing uses.
        unsafe { rustix::mm::mprotect(base, GUARD_BYTES, MprotectFlags::empty())? };
        Ok(memory)
    }

    /// The top of the call's stack (16-byte aligned: page-aligned).
    fn stack_top(&self) -> *mut c_void {
        self.arena().cast()
    }

    /// The start of the call's arena ([`ARENA_BYTES`] long).
    #[expect(unsafe_code, reason = "an address within the mapping")]
    fn arena(&self) -> *mut u8 {
        // SAFETY: within the mapping.
        unsafe {
            self.base
                .as_ptr()
                .cast::<u8>()
                .add(GUARD_BYTES + STACK_BYTES)
        }
    }
}

impl Drop for CallMemory {
    #[expect(unsafe_code, reason = "unmapping the call's memory")]
    fn drop(&mut self) {
        // SAFETY: the whole mapping made by `map`; the call that used it has ended.
        let _unmapped = unsafe { rustix::mm::munmap(self.base.as_ptr(), Self::BYTES) };
    }
}

/// What a call's first steps need, copied into its own memory before the `clone`.
struct CallStart {
    /// The set-up, which lives as long as the supervisor and never changes.
    setup: *const CallSetup<'static>,
    /// The descriptors it keeps (its own sockets).
    keep: [libc::c_int; 2],
    /// Its arena.
    arena: *mut u8,
    /// What it does once set up; never returns.
    then: Then,
}

/// What a call does once set up (with the outcome of its set-up, the descriptors it kept and
/// its arena, [`ARENA_BYTES`] long): it must never return, allocate, panic or take a lock.
pub(crate) type Then = fn(Result<(), Failed>, [libc::c_int; 2], &mut [u8]) -> !;

/// Starts a call in `memory` (which must outlive it): returns its pid (in the sandbox's pid
/// namespace) and a pidfd of it, or the errno of `clone`. The child first closes every
/// descriptor from 3 up but the two in `keep` (its own sockets), so that it holds nothing of
/// the supervisor's (such as another call's mount namespace, which would stay alive with it),
/// sets itself up as [`CallSetup`] says (before any request: see [`crate::warm`]'s spare
/// calls), then calls `then`, which never returns.
#[expect(unsafe_code, reason = "clone and the child's raw system calls")]
pub(crate) fn start_call(
    setup: &CallSetup<'_>,
    keep: [BorrowedFd<'_>; 2],
    memory: &CallMemory,
    then: Then,
) -> Result<(libc::pid_t, OwnedFd), i32> {
    let keep = keep.map(|fd| fd.as_raw_fd());
    let start = CallStart {
        setup: std::ptr::from_ref(setup).cast(),
        keep,
        arena: memory.arena(),
        then,
    };
    let arg = memory.arena().cast::<CallStart>();
    // SAFETY: the arena is page-aligned, large enough, and the call's alone; the call reads
    // this before anything else there.
    unsafe { arg.write(start) };
    let mut pidfd: libc::c_int = -1;
    let flags = libc::CLONE_VM
        | libc::CLONE_PIDFD
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWIPC
        | libc::SIGCHLD;
    // SAFETY: `call_main` runs on the call's own stack and reads only its `CallStart` and
    // what that points to (see the module's doc); with `CLONE_PIDFD` the pidfd is stored in
    // `pidfd` (the parent-tid argument).
    let pid = unsafe {
        libc::clone(
            call_main,
            memory.stack_top(),
            flags,
            arg.cast(),
            &raw mut pidfd,
        )
    };
    if pid < 0 {
        return Err(errno());
    }
    // SAFETY: clone stored a new descriptor, owned by nothing else.
    Ok((pid, unsafe { OwnedFd::from_raw_fd(pidfd) }))
}

/// A call's first function, on its own stack (see [`start_call`]).
#[expect(unsafe_code, reason = "the call's entry from clone")]
extern "C" fn call_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `start_call` wrote a `CallStart` there for this call alone; it is read once,
    // before the arena is used for anything else.
    let start = unsafe { arg.cast::<CallStart>().read() };
    // SAFETY: the set-up outlives every call (see `CallStart::setup`).
    let setup = unsafe { &*start.setup };
    let prepared = close_all_but(start.keep).and_then(|()| set_up(setup));
    // SAFETY: the call's own arena, `ARENA_BYTES` long, which nothing else uses until it ends.
    let arena = unsafe { std::slice::from_raw_parts_mut(start.arena, ARENA_BYTES) };
    (start.then)(prepared, start.keep, arena)
}

/// Closes every descriptor from 3 up but those in `keep`.
#[expect(unsafe_code, reason = "raw system calls in a freshly cloned child")]
fn close_all_but(mut keep: [libc::c_int; 2]) -> Result<(), Failed> {
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
pub(crate) fn join_cgroups<'a>(joins: impl Iterator<Item = BorrowedFd<'a>>) -> Result<(), Failed> {
    for join in joins {
        match rustix::io::write(join, b"0") {
            Ok(1) => {}
            Ok(_) => return Err(libc::EIO).at(STEP_CGROUP),
            Err(errno) => return Err(errno.raw_os_error()).at(STEP_CGROUP),
        }
    }
    Ok(())
}

/// The steps of a call once its request has arrived, up to `exec`: takes `stdio` and its
/// working directory, then `exec`utes the program (which returns only with the errno it
/// failed with); returns only with the step that failed.
pub(crate) fn run_request(
    [stdin, stdout, stderr]: [BorrowedFd<'_>; 3],
    cwd: &CStr,
    exec: impl FnOnce() -> i32,
) -> Result<Infallible, Failed> {
    let stdio = rustix::stdio::dup2_stdin(stdin)
        .and_then(|()| rustix::stdio::dup2_stdout(stdout))
        .and_then(|()| rustix::stdio::dup2_stderr(stderr));
    stdio.map_err(Errno::raw_os_error).at(STEP_STDIO)?;
    rustix::process::chdir(cwd)
        .map_err(Errno::raw_os_error)
        .at(STEP_CWD)?;
    Err(exec()).at(STEP_EXEC)
}
