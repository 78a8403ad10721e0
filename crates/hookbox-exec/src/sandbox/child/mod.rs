//! What runs between `fork` and `exec`: only raw system calls on data prepared by the parent.
//!
//! The spawned child (the "intermediate") joins the run's cgroups, enters new user, mount,
//! pid, ipc, uts and cgroup namespaces, maps the caller's uid and gid to 0, and forks the
//! "init": pid 1 of the new pid namespace. The intermediate sends the parent a pidfd of the init,
//! creates the new network namespace (while the init builds the file system, on another CPU
//! when there is one; the init joins it once built, before anything else), closes everything,
//! waits for the init and exits the way it did (in a warm sandbox, once the init has executed
//! the supervisor, it executes the supervisor's program to do that, so that it keeps no copy
//! of the parent's memory: see `crate::warm::PARENT_ARG`). The init builds the new root,
//! `pivot_root`s into it, applies limits, landlock, capabilities and seccomp, and returns, so
//! that the standard library executes the program in it.
//!
//! Nothing here allocates or takes a lock: the parent may have had other threads at fork time.
//!
//! The intermediate is here; the init is in [`init`], which builds the file system
//! ([`mounts`]), joins the network namespace and opens what is asked inside ([`network`]), and
//! confines itself ([`confine`]).

mod call;
mod confine;
mod init;
mod mounts;
mod network;

use std::ffi::{CStr, CString};
use std::io;
use std::ptr;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::after_fork::{close_from_3_except, errno, exit_like};
use crate::exec_args::CPointers;
pub(crate) use call::{
    CallMemory, CallSetup, MAX_SCRATCH_BINDS, ScratchBind, join_cgroups, run_request, start_call,
};
pub(crate) use confine::Confinement;
use init::init_process;
use network::NetHandoff;

/// Record kinds on the status socket (three native-endian `u32`s: kind, a, b).
pub(crate) const RECORD_INIT: u32 = 1;
pub(crate) const RECORD_FAILED: u32 = 2;
/// The init's listener inside the network namespace (`a` = its port), with the descriptor.
pub(crate) const RECORD_LISTENER: u32 = 3;
/// A warm sandbox's supervisor is running and reads calls.
pub(crate) const RECORD_READY: u32 = 4;
/// On a call's reply socket: the call started (`a` = its pid in the sandbox), with a pidfd.
pub(crate) const RECORD_STARTED: u32 = 5;
/// On a call's reply socket: the call ended (`a` = its wait status) and so did everything it
/// started.
pub(crate) const RECORD_EXITED: u32 = 6;

/// The sandbox's mount namespace, with its descriptor, held by the parent until the run ends.
pub(crate) const RECORD_MOUNT_NS: u32 = 7;

/// The descriptor of the control socket in a warm sandbox's supervisor (the status socket).
pub(crate) const CONTROL_FD: libc::c_int = 3;

/// Steps of the intermediate, for error reports (ops of the init are numbered from
/// [`FIRST_OP`]).
pub(crate) const STEPS: &[&str] = &[
    "setting the parent-death signal",
    "joining the run's cgroups",
    "creating the namespaces (unshare)",
    "denying setgroups in the new user namespace",
    "writing the gid map",
    "writing the uid map",
    "forking the namespace's init",
    "opening a pidfd of the init",
    "setting the hostname",
    "bringing up the loopback interface",
    "setting resource limits",
    "setting no_new_privs",
    "applying landlock",
    "dropping capabilities",
    "applying the seccomp filter",
    "changing to the working directory",
    "marking inherited descriptors close-on-exec",
    "opening the listener on 127.0.0.1 inside the sandbox",
    "creating the network namespace",
    "joining the network namespace",
    "starting the warm sandbox's supervisor",
    "starting the call in namespaces of its own",
    "mounting the call's /proc, /tmp and /dev/shm",
    "giving the call its stdin, stdout and stderr",
    "executing the program",
    "reading the call's request",
];
const STEP_DEATH: u32 = 0;
const STEP_CGROUP: u32 = 1;
const STEP_UNSHARE: u32 = 2;
const STEP_SETGROUPS: u32 = 3;
const STEP_GID_MAP: u32 = 4;
const STEP_UID_MAP: u32 = 5;
const STEP_FORK: u32 = 6;
const STEP_PIDFD: u32 = 7;
const STEP_HOSTNAME: u32 = 8;
const STEP_LOOPBACK: u32 = 9;
const STEP_RLIMIT: u32 = 10;
const STEP_NNP: u32 = 11;
const STEP_LANDLOCK: u32 = 12;
const STEP_CAPS: u32 = 13;
const STEP_SECCOMP: u32 = 14;
const STEP_CWD: u32 = 15;
const STEP_FDS: u32 = 16;
const STEP_LISTEN: u32 = 17;
pub(crate) const STEP_NET_NS: u32 = 18;
const STEP_JOIN_NET: u32 = 19;
const STEP_SUPERVISOR: u32 = 20;
pub(crate) const STEP_CALL_START: u32 = 21;
const STEP_CALL_MOUNTS: u32 = 22;
const STEP_STDIO: u32 = 23;
pub(crate) const STEP_EXEC: u32 = 24;
pub(crate) const STEP_REQUEST: u32 = 25;
/// Step number of `ops[0]`.
pub(crate) const FIRST_OP: u32 = 100;

/// One filesystem operation of the init, with every path prepared by the parent.
#[derive(Debug)]
pub(crate) enum Op {
    /// Makes every mount private, so nothing propagates back to the host.
    Private,
    /// Mounts a fresh tmpfs with these options.
    Tmpfs { target: CString, data: CString },
    /// Creates a directory (an existing one is fine).
    Mkdir(CString),
    /// `pivot_root(new, old)`.
    PivotRoot { new: CString, old: CString },
    /// `chdir`.
    Chdir(CString),
    /// Lazily unmounts a whole tree.
    Detach(CString),
    /// A host system path: absent ⇒ skipped, symlink ⇒ reproduced, directory or file ⇒
    /// bound (read-only and nosuid/nodev unless `device`).
    Host {
        src: CString,
        dst: CString,
        device: bool,
    },
    /// A host path opened without following a final symlink and bound from its descriptor: a
    /// top-level entry of the sandbox root (`copy_link`: a symlink is reproduced as a symlink)
    /// or a path bound at a target of its own ([`super::Bind`]; a symlink fails with `ELOOP`).
    /// Never follows a link.
    Bind {
        src: CString,
        dst: CString,
        read_only: bool,
        copy_link: bool,
    },
    /// Creates a symlink `link` → `target`.
    Symlink { target: CString, link: CString },
    /// Mounts the procfs of the new pid namespace.
    Proc(CString),
    /// Remounts a mount we created read-only.
    RemountRo(CString),
}

/// Landlock rules, computed by the parent for the kernel's ABI.
#[derive(Debug)]
pub(crate) struct LandlockPlan {
    /// Size of `struct landlock_ruleset_attr` for that ABI.
    pub(crate) attr_size: usize,
    pub(crate) handled_fs: u64,
    pub(crate) scoped: u64,
    /// (path inside the new root, allowed access) pairs.
    pub(crate) rules: Vec<(CString, u64)>,
}

/// Everything the children need, prepared by the parent.
#[derive(Debug)]
pub(crate) struct Plan {
    /// The process that spawns the intermediate, which dies with it.
    pub(crate) parent: libc::pid_t,
    pub(crate) cgroup_procs: Vec<CString>,
    pub(crate) uid_map: Vec<u8>,
    pub(crate) gid_map: Vec<u8>,
    pub(crate) ops: Vec<Op>,
    pub(crate) rlimits: Vec<(libc::__rlimit_resource_t, u64, u64)>,
    pub(crate) landlock: Option<LandlockPlan>,
    pub(crate) cap_last: u32,
    /// The seccomp program.
    pub(crate) filter: &'static [libc::sock_filter],
    pub(crate) cwd: CString,
    /// The child's end of the status socket.
    pub(crate) status: libc::c_int,
    /// The port of a TCP listener the init opens on 127.0.0.1 inside the new network
    /// namespace and sends to the parent ([`RECORD_LISTENER`]), if any.
    pub(crate) listen_port: Option<u16>,
    /// For a warm sandbox: the supervisor the init executes instead of confining itself.
    pub(crate) supervisor: Option<SupervisorLaunch>,
}

/// How the init of a warm sandbox executes its supervisor, and the intermediate the same
/// program as the sandbox's first process (see `crate::warm::PARENT_ARG`).
#[derive(Debug)]
pub(crate) struct SupervisorLaunch {
    /// The supervisor's executable, opened by the parent (close-on-exec).
    pub(crate) program: libc::c_int,
    /// Its arguments (owned here; `argv` points into them).
    pub(crate) _args: Vec<CString>,
    /// Null-terminated pointers to `_args`.
    pub(crate) argv: CPointers,
    /// The intermediate's arguments (owned here; `parent_argv` points into them).
    pub(crate) _parent_args: Vec<CString>,
    /// Null-terminated pointers to `_parent_args`.
    pub(crate) parent_argv: CPointers,
    /// An empty environment.
    pub(crate) envp: CPointers,
}

/// Turns a -1 return into the errno.
fn check(ret: libc::c_long) -> Result<libc::c_long, i32> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

/// A failed step: reported to the parent on the status socket, then as the spawn error.
pub(crate) struct Failed {
    pub(crate) step: u32,
    pub(crate) errno: i32,
}

trait Step<T> {
    fn at(self, step: u32) -> Result<T, Failed>;
}

impl<T> Step<T> for Result<T, i32> {
    fn at(self, step: u32) -> Result<T, Failed> {
        self.map_err(|errno| Failed { step, errno })
    }
}

/// Sends one record (and `pass_fd`, if any) on the status socket; whether it was sent.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(crate) fn send_record(
    fd: libc::c_int,
    kind: u32,
    a: u32,
    b: u32,
    pass_fd: Option<libc::c_int>,
) -> bool {
    let record = [kind, a, b];
    let mut iov = libc::iovec {
        iov_base: record.as_ptr().cast_mut().cast(),
        iov_len: std::mem::size_of_val(&record),
    };
    // Room for one descriptor, aligned for cmsghdr.
    let mut control = [0_u64; 4];
    // SAFETY: an all-zero msghdr is a valid empty message; the pointers set below point to
    // locals that outlive the sendmsg call, and CMSG_* only compute offsets inside `control`,
    // which is large enough for one descriptor (CMSG_SPACE(4) = 24 bytes on 64-bit Linux).
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &raw mut iov;
        msg.msg_iovlen = 1;
        if let Some(pass) = pass_fd {
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = libc::CMSG_SPACE(4) as _;
            let cmsg = libc::CMSG_FIRSTHDR(&raw const msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(4) as _;
            ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>(), pass);
        }
        libc::sendmsg(fd, &raw const msg, libc::MSG_NOSIGNAL) >= 0
    }
}

/// Writes all of `data` to the file at `path`.
fn write_file(path: &CStr, data: &[u8]) -> Result<(), i32> {
    let fd = rustix::fs::open(path, OFlags::WRONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(Errno::raw_os_error)?;
    match rustix::io::write(&fd, data) {
        Ok(written) if written == data.len() => Ok(()),
        Ok(_) => Err(libc::EIO),
        Err(error) => Err(error.raw_os_error()),
    }
}

/// In a warm sandbox's intermediate: once the init has executed the supervisor (end of file
/// on `started`), executes the supervisor's program as the sandbox's first process (see
/// `crate::warm::PARENT_ARG`), which keeps none of the memory this copy of the starting
/// process shares with it. Returns only when that fails.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn become_the_parent(started: libc::c_int, launch: &SupervisorLaunch) {
    // SAFETY: raw system calls on descriptors this process owns, a local buffer and
    // null-terminated arrays prepared by the parent.
    unsafe {
        let mut byte = 0_u8;
        while libc::read(started, (&raw mut byte).cast(), 1) < 0 && errno() == libc::EINTR {}
        libc::close(started);
        // The program executed in the init's root: until the init had executed the
        // supervisor, this process's root was the one being built (a bare tmpfs for a while).
        // Standard input and output stay (`/dev/null`); nothing else may stay open.
        if confine::close_inherited_on_exec().is_err() {
            return;
        }
        libc::syscall(
            libc::SYS_execveat,
            launch.program,
            c"".as_ptr(),
            launch.parent_argv.as_ptr(),
            launch.envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        );
    }
}

/// The body of `pre_exec` in the spawned child. Returns only in the init, ready to exec.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(crate) fn run(plan: &Plan) -> io::Result<()> {
    match intermediate(plan) {
        Ok(()) => Ok(()),
        Err(Failed { step, errno }) => {
            let _sent = send_record(plan.status, RECORD_FAILED, step, errno as u32, None);
            // SAFETY: plain system call.
            unsafe { libc::close(plan.status) };
            Err(io::Error::from_raw_os_error(errno))
        }
    }
}

#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn intermediate(plan: &Plan) -> Result<(), Failed> {
    // SAFETY (whole function): raw system calls with valid, NUL-terminated or sized arguments
    // prepared by the parent; none allocates.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL).into()).at(STEP_DEATH)?;
        if libc::getppid() != plan.parent {
            return Err(libc::ESRCH).at(STEP_DEATH);
        }
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
        for procs in &plan.cgroup_procs {
            write_file(procs, b"0").at(STEP_CGROUP)?;
        }
        // The network namespace (about half a millisecond to create) is created after the
        // fork below, by this process while the init builds the file system, and joined by
        // the init before anything of the network is used (see `NetHandoff`).
        let flags = libc::CLONE_NEWUSER
            | libc::CLONE_NEWNS
            | libc::CLONE_NEWPID
            | libc::CLONE_NEWIPC
            | libc::CLONE_NEWUTS
            | libc::CLONE_NEWCGROUP;
        check(libc::unshare(flags).into()).at(STEP_UNSHARE)?;
        write_file(c"/proc/self/setgroups", b"deny").at(STEP_SETGROUPS)?;
        write_file(c"/proc/self/gid_map", &plan.gid_map).at(STEP_GID_MAP)?;
        write_file(c"/proc/self/uid_map", &plan.uid_map).at(STEP_UID_MAP)?;
        // The parent holds the new mount namespace until after the run, so that its
        // teardown (an RCU grace period for unmounting its ~40 mounts) is not part of the
        // last exit in it, which the parent waits for. Sent before the init's pidfd, which
        // ends the parent's wait for records; without it, the teardown happens at exit.
        let mount_ns = libc::open(
            c"/proc/self/ns/mnt".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if mount_ns >= 0 {
            let _sent = send_record(plan.status, RECORD_MOUNT_NS, 0, 0, Some(mount_ns));
            libc::close(mount_ns);
        }

        // The init learns of the intermediate's death through this pipe (it cannot compare
        // getppid: in its namespace the parent is always 0).
        let mut alive = [0; 2];
        check(libc::pipe2(alive.as_mut_ptr(), libc::O_CLOEXEC).into()).at(STEP_FORK)?;
        // Where the init learns that our new network namespace exists, and how it finds it:
        // our /proc directory (in the host's procfs, opened now so that no later change of
        // root or mounts matters).
        let mut net_ready = [0; 2];
        check(libc::pipe2(net_ready.as_mut_ptr(), libc::O_CLOEXEC).into()).at(STEP_FORK)?;
        let own_proc = check(
            libc::open(
                c"/proc/self".as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
            .into(),
        )
        .at(STEP_NET_NS)? as libc::c_int;
        // A warm sandbox's: ends (the init's copy closed) when the init has executed the
        // supervisor, its file system built, or died.
        let mut supervisor_started = [-1; 2];
        if plan.supervisor.is_some() {
            check(libc::pipe2(supervisor_started.as_mut_ptr(), libc::O_CLOEXEC).into())
                .at(STEP_FORK)?;
        }
        let init = check(libc::fork().into()).at(STEP_FORK)? as libc::pid_t;
        if init == 0 {
            libc::close(alive[1]);
            libc::close(net_ready[1]);
            if supervisor_started[0] >= 0 {
                libc::close(supervisor_started[0]);
            }
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL).into()).at(STEP_DEATH)?;
            let mut poll = libc::pollfd {
                fd: alive[0],
                events: libc::POLLIN,
                revents: 0,
            };
            if libc::poll(&raw mut poll, 1, 0) != 0 {
                // The intermediate is already gone.
                libc::_exit(1);
            }
            libc::close(alive[0]);
            return init_process(
                plan,
                NetHandoff {
                    ready: net_ready[0],
                    proc_dir: own_proc,
                },
            );
        }

        // The intermediate: hand the parent a pidfd of the init, which cannot be recycled
        // while we have not reaped it.
        libc::close(alive[0]);
        libc::close(net_ready[0]);
        libc::close(own_proc);
        let pidfd = libc::syscall(libc::SYS_pidfd_open, init, 0) as libc::c_int;
        let _sent = if pidfd >= 0 {
            send_record(plan.status, RECORD_INIT, init as u32, 0, Some(pidfd))
        } else {
            send_record(plan.status, RECORD_FAILED, STEP_PIDFD, errno() as u32, None)
        };
        // Owned by our user namespace, like the others; the init waits for the byte (0, or 1
        // after a failure, reported to the parent first) and joins it.
        let verdict: u8 = if libc::unshare(libc::CLONE_NEWNET) == 0 {
            0
        } else {
            let _sent = send_record(
                plan.status,
                RECORD_FAILED,
                STEP_NET_NS,
                errno() as u32,
                None,
            );
            1
        };
        libc::write(net_ready[1], (&raw const verdict).cast(), 1);
        if let Some(launch) = &plan.supervisor {
            libc::close(supervisor_started[1]);
            become_the_parent(supervisor_started[0], launch);
            // Still here: this copy waits for the init instead, as a cold sandbox's does.
        }
        // Nothing else of ours may keep a pipe or the exec-error channel open.
        close_from_3_except(alive[1]);
        for fd in 0..3 {
            libc::close(fd);
        }
        let mut status = 0;
        loop {
            let reaped = libc::waitpid(init, &raw mut status, 0);
            if reaped == init {
                break;
            }
            if reaped < 0 && errno() != libc::EINTR {
                libc::_exit(127);
            }
        }
        exit_like(status)
    }
}
