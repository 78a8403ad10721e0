//! What runs between `fork` and `exec`: only raw system calls on data prepared by the parent.
//!
//! The spawned child (the "intermediate") joins the run's cgroups, enters new user, mount,
//! pid, ipc, uts and cgroup namespaces, maps the caller's uid and gid to 0, and forks the
//! "init": pid 1 of the new pid namespace. The intermediate sends the parent a pidfd of the init,
//! creates the new network namespace (while the init builds the file system, on another CPU
//! when there is one; the init joins it once built, before anything else), closes everything,
//! waits for the init and exits the way it did. The init builds the new root,
//! `pivot_root`s into it, applies limits, landlock, capabilities and seccomp, and returns, so
//! that the standard library executes the program in it.
//!
//! Nothing here allocates or takes a lock: the parent may have had other threads at fork time.

use std::ffi::{CStr, CString};
use std::io;
use std::ptr;

/// Record kinds on the status socket (three native-endian `u32`s: kind, a, b).
pub(crate) const RECORD_INIT: u32 = 1;
pub(crate) const RECORD_FAILED: u32 = 2;
/// The init's listener inside the network namespace (`a` = its port), with the descriptor.
pub(crate) const RECORD_LISTENER: u32 = 3;

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
    pub(crate) parent: Option<libc::pid_t>,
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
}

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// Turns a -1 return into the errno.
fn check(ret: libc::c_long) -> Result<libc::c_long, i32> {
    if ret < 0 { Err(errno()) } else { Ok(ret) }
}

/// A failed step: reported to the parent on the status socket, then as the spawn error.
struct Failed {
    step: u32,
    errno: i32,
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
fn send_record(fd: libc::c_int, kind: u32, a: u32, b: u32, pass_fd: Option<libc::c_int>) -> bool {
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
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn write_file(path: &CStr, data: &[u8]) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated; the descriptor is ours and closed below.
    let fd = check(unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) }.into())?
        as libc::c_int;
    // SAFETY: `data` is a valid buffer of its length.
    let written = unsafe { libc::write(fd, data.as_ptr().cast(), data.len()) };
    let result = if written < 0 {
        Err(errno())
    } else if written as usize != data.len() {
        Err(libc::EIO)
    } else {
        Ok(())
    };
    // SAFETY: closing our own descriptor.
    unsafe { libc::close(fd) };
    result
}

/// Closes every descriptor from 3 up, except `keep`.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn close_from_3_except(keep: libc::c_int) {
    let ranges: [(u32, u32); 2] = if keep >= 3 {
        [(3, keep as u32 - 1), (keep as u32 + 1, u32::MAX)]
    } else {
        [(3, u32::MAX), (1, 0)]
    };
    for (first, last) in ranges {
        if first <= last {
            // SAFETY: close_range only closes descriptors; nothing here uses them afterwards.
            unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        }
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
        if let Some(parent) = plan.parent {
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL).into()).at(STEP_DEATH)?;
            if libc::getppid() != parent {
                return Err(libc::ESRCH).at(STEP_DEATH);
            }
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
        let init = check(libc::fork().into()).at(STEP_FORK)? as libc::pid_t;
        if init == 0 {
            libc::close(alive[1]);
            libc::close(net_ready[1]);
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
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status));
    }
}

/// Remount flags to keep from the mount at `path` (a bind remount may not clear locked ones).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn kept_flags(path: &CStr) -> libc::c_ulong {
    // SAFETY: statvfs fills the zeroed struct; `path` is NUL-terminated.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &raw mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms)
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MOUNT_ATTR_RDONLY`, `MOUNT_ATTR_NOSUID`, `MOUNT_ATTR_NODEV` (linux/mount.h).
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// Makes the mount at `dst` and everything below it nosuid, nodev and, if asked, read-only,
/// with one `mount_setattr` (Linux 5.12+; it only adds flags, so the flags a user namespace
/// locks need not be read first). `false` when the kernel cannot, for the remount fallback.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn set_attributes(dst: &CStr, read_only: bool) -> bool {
    let mut attr = MountAttr {
        attr_set: MOUNT_ATTR_NOSUID
            | MOUNT_ATTR_NODEV
            | if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a NUL-terminated path and a live, correctly sized `mount_attr`.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            dst.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &raw mut attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    result == 0
}

/// Bind-mounts `src` (a path, possibly `/proc/self/fd/N`) on `dst`, then remounts it with
/// nosuid, nodev and, if asked, read-only.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn bind(src: &CStr, dst: &CStr, read_only: bool, device: bool) -> Result<(), i32> {
    // SAFETY: NUL-terminated paths and null optional arguments.
    unsafe {
        check(
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                ptr::null(),
            )
            .into(),
        )?;
        if device {
            return Ok(());
        }
        if set_attributes(dst, read_only) {
            return Ok(());
        }
        let mut flags =
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV | kept_flags(dst);
        if read_only {
            flags |= libc::MS_RDONLY;
        }
        check(libc::mount(ptr::null(), dst.as_ptr(), ptr::null(), flags, ptr::null()).into())?;
    }
    Ok(())
}

/// Creates the mount point for a bind of something of type `mode` at `dst`.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn mount_point(dst: &CStr, mode: libc::mode_t) -> Result<(), i32> {
    // SAFETY: NUL-terminated paths.
    unsafe {
        if mode & libc::S_IFMT == libc::S_IFDIR {
            if libc::mkdir(dst.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                return Err(errno());
            }
        } else {
            // A file that is already there (e.g. a system trust bundle inside a read-only
            // `/etc` entry) is mounted over as it is: creating it would fail on a read-only
            // file system.
            let mut existing: libc::stat = std::mem::zeroed();
            if libc::lstat(dst.as_ptr(), &raw mut existing) == 0
                && existing.st_mode & libc::S_IFMT == libc::S_IFREG
            {
                return Ok(());
            }
            let fd = libc::open(
                dst.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                0o644,
            );
            if fd < 0 {
                return Err(errno());
            }
            libc::close(fd);
        }
    }
    Ok(())
}

/// Reproduces the symlink at `src` (read with `readlink`/`readlinkat`) at `dst`.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn copy_link(dirfd: libc::c_int, src: &CStr, dst: &CStr) -> Result<(), i32> {
    let mut target = [0_u8; 4096];
    // SAFETY: the buffer is valid for its length minus the NUL we append.
    let len = unsafe {
        libc::readlinkat(
            dirfd,
            src.as_ptr(),
            target.as_mut_ptr().cast(),
            target.len() - 1,
        )
    };
    if len < 0 {
        return Err(errno());
    }
    target[len as usize] = 0;
    // SAFETY: `target` is NUL-terminated now.
    check(unsafe { libc::symlink(target.as_ptr().cast(), dst.as_ptr()) }.into())?;
    Ok(())
}

/// Writes `/oldroot/proc/self/fd/<fd>` into `buf`, NUL-terminated.
fn fd_path(buf: &mut [u8; 64], fd: libc::c_int) -> &CStr {
    const PREFIX: &[u8] = b"/oldroot/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0_u8; 12];
    let mut n = fd.unsigned_abs();
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..count {
        buf[PREFIX.len() + i] = digits[count - 1 - i];
    }
    buf[PREFIX.len() + count] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/")
}

#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn apply(op: &Op) -> Result<(), i32> {
    // SAFETY (whole function): raw system calls with NUL-terminated paths prepared by the
    // parent, stack buffers of the stated sizes, and descriptors we own.
    unsafe {
        match op {
            Op::Private => check(
                libc::mount(
                    ptr::null(),
                    c"/".as_ptr(),
                    ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    ptr::null(),
                )
                .into(),
            )
            .map(drop),
            Op::Tmpfs { target, data } => check(
                libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    data.as_ptr().cast(),
                )
                .into(),
            )
            .map(drop),
            Op::Mkdir(path) => {
                if libc::mkdir(path.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                    return Err(errno());
                }
                Ok(())
            }
            Op::PivotRoot { new, old } => check(libc::syscall(
                libc::SYS_pivot_root,
                new.as_ptr(),
                old.as_ptr(),
            ))
            .map(drop),
            Op::Chdir(path) => check(libc::chdir(path.as_ptr()).into()).map(drop),
            Op::Detach(path) => {
                check(libc::umount2(path.as_ptr(), libc::MNT_DETACH).into()).map(drop)
            }
            Op::Host { src, dst, device } => {
                let mut stat: libc::stat = std::mem::zeroed();
                if libc::lstat(src.as_ptr(), &raw mut stat) != 0 {
                    return match errno() {
                        libc::ENOENT | libc::ENOTDIR => Ok(()),
                        other => Err(other),
                    };
                }
                if stat.st_mode & libc::S_IFMT == libc::S_IFLNK {
                    return copy_link(libc::AT_FDCWD, src, dst);
                }
                mount_point(dst, stat.st_mode)?;
                bind(src, dst, !device, *device)
            }
            Op::Bind {
                src,
                dst,
                read_only,
                copy_link: copy,
            } => {
                let fd = libc::open(
                    src.as_ptr(),
                    libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    return Err(errno());
                }
                let mut stat: libc::stat = std::mem::zeroed();
                let result = if libc::fstat(fd, &raw mut stat) != 0 {
                    Err(errno())
                } else if stat.st_mode & libc::S_IFMT == libc::S_IFLNK {
                    if *copy {
                        copy_link(fd, c"", dst)
                    } else {
                        Err(libc::ELOOP)
                    }
                } else {
                    let mut buf = [0; 64];
                    mount_point(dst, stat.st_mode)
                        .and_then(|()| bind(fd_path(&mut buf, fd), dst, *read_only, false))
                };
                libc::close(fd);
                result
            }
            Op::Symlink { target, link } => {
                check(libc::symlink(target.as_ptr(), link.as_ptr()).into()).map(drop)
            }
            Op::Proc(target) => check(
                libc::mount(
                    c"proc".as_ptr(),
                    target.as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    ptr::null(),
                )
                .into(),
            )
            .map(drop),
            Op::RemountRo(path) => check(
                libc::mount(
                    ptr::null(),
                    path.as_ptr(),
                    ptr::null(),
                    libc::MS_REMOUNT
                        | libc::MS_BIND
                        | libc::MS_RDONLY
                        | libc::MS_NOSUID
                        | libc::MS_NODEV
                        | kept_flags(path),
                    ptr::null(),
                )
                .into(),
            )
            .map(drop),
        }
    }
}

/// How the init finds the network namespace the intermediate creates after forking it.
struct NetHandoff {
    /// Read end of a pipe: one byte once the namespace exists (0) or could not be created (1);
    /// end-of-file if the intermediate died.
    ready: libc::c_int,
    /// The intermediate's directory in the host's procfs (`O_PATH`).
    proc_dir: libc::c_int,
}

/// Waits for the intermediate's network namespace and enters it (closing both descriptors).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn join_network(net: NetHandoff) -> Result<(), i32> {
    // SAFETY: reads into a local byte, opens relative to a descriptor we own, setns on the
    // descriptor just opened; every descriptor is ours and closed here.
    unsafe {
        let mut verdict = 1_u8;
        let read = loop {
            let read = libc::read(net.ready, (&raw mut verdict).cast(), 1);
            if read >= 0 || errno() != libc::EINTR {
                break read;
            }
        };
        libc::close(net.ready);
        let result = if read != 1 {
            Err(libc::ECHILD)
        } else if verdict != 0 {
            // The intermediate has reported why.
            Err(libc::EPERM)
        } else {
            let fd = libc::openat(
                net.proc_dir,
                c"ns/net".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                Err(errno())
            } else {
                let joined = check(libc::setns(fd, libc::CLONE_NEWNET).into()).map(drop);
                libc::close(fd);
                joined
            }
        };
        libc::close(net.proc_dir);
        result
    }
}

/// pid 1 of the new namespace: builds the root, confines itself and returns to exec.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn init_process(plan: &Plan, net: NetHandoff) -> Result<(), Failed> {
    for (index, op) in plan.ops.iter().enumerate() {
        apply(op).at(FIRST_OP + index as u32)?;
    }
    join_network(net).at(STEP_JOIN_NET)?;
    // SAFETY (rest of the function): raw system calls with valid arguments; the structs passed
    // by pointer are locals that outlive the calls.
    unsafe {
        check(libc::sethostname(c"sandbox".as_ptr(), 7).into()).at(STEP_HOSTNAME)?;
        loopback_up().at(STEP_LOOPBACK)?;
        if let Some(port) = plan.listen_port {
            // Created in the new network namespace, where it stays wherever it is used; the
            // parent accepts on it from outside. Our copy is closed before the program runs.
            let listener = listen_on_loopback(port).at(STEP_LISTEN)?;
            let sent = send_record(
                plan.status,
                RECORD_LISTENER,
                u32::from(port),
                0,
                Some(listener),
            );
            let sent_errno = errno();
            libc::close(listener);
            if !sent {
                return Err(sent_errno).at(STEP_LISTEN);
            }
        }
        check(libc::chdir(plan.cwd.as_ptr()).into()).at(STEP_CWD)?;
        for &(resource, soft, hard) in &plan.rlimits {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            check(libc::setrlimit(resource, &raw const limit).into()).at(STEP_RLIMIT)?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into()).at(STEP_NNP)?;
        if let Some(landlock) = &plan.landlock {
            apply_landlock(landlock).at(STEP_LANDLOCK)?;
        }
        drop_capabilities(plan.cap_last).at(STEP_CAPS)?;
        close_inherited_on_exec().at(STEP_FDS)?;
        let filter = libc::sock_fprog {
            len: plan.filter.len() as u16,
            filter: plan.filter.as_ptr().cast_mut(),
        };
        check(libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const filter,
        ))
        .at(STEP_SECCOMP)?;
    }
    // The init's copy of the status socket closes at exec (it is close-on-exec).
    Ok(())
}

/// Marks every descriptor from 3 up close-on-exec, so the program gets only its stdio: hookbox
/// may itself have inherited descriptors without that flag (from a shell, a supervisor…), and
/// the standard library passes those on.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn close_inherited_on_exec() -> Result<(), i32> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return Ok(());
    }
    // Before Linux 5.11: flag each possible descriptor (the soft limit was just set).
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the local struct.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) }.into())?;
    let highest = libc::c_int::try_from(limit.rlim_cur).unwrap_or(libc::c_int::MAX);
    for fd in 3..highest {
        // SAFETY: F_SETFD on a descriptor that may not exist fails harmlessly with EBADF.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// A TCP socket bound to `127.0.0.1:port` and listening (close-on-exec).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn listen_on_loopback(port: u16) -> Result<libc::c_int, i32> {
    // SAFETY: an all-zero sockaddr_in is valid; the struct outlives the bind call and its size
    // is passed; the socket is ours (closed on failure, else returned to the caller).
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut address: libc::sockaddr_in = std::mem::zeroed();
        address.sin_family = libc::AF_INET as libc::sa_family_t;
        address.sin_port = port.to_be();
        address.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let bound = libc::bind(
            fd,
            (&raw const address).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        if bound != 0 || libc::listen(fd, 128) != 0 {
            let failed = errno();
            libc::close(fd);
            return Err(failed);
        }
        Ok(fd)
    }
}

/// `ip link set lo up`, through an ioctl on a throwaway socket.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn loopback_up() -> Result<(), i32> {
    // SAFETY: an all-zero ifreq is valid; the name fits; the socket is ours and closed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(errno());
        }
        let mut request: libc::ifreq = std::mem::zeroed();
        request.ifr_name[0] = b'l' as libc::c_char;
        request.ifr_name[1] = b'o' as libc::c_char;
        let mut result = Ok(());
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &raw mut request) != 0 {
            result = Err(errno());
        } else {
            request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &raw mut request) != 0 {
                result = Err(errno());
            }
        }
        libc::close(fd);
        result
    }
}

#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn apply_landlock(plan: &LandlockPlan) -> Result<(), i32> {
    let attr = RulesetAttr {
        handled_access_fs: plan.handled_fs,
        handled_access_net: 0,
        scoped: plan.scoped,
    };
    // SAFETY: `attr` is valid for `attr_size` bytes (at most its full size); the descriptors
    // are ours and closed before returning.
    unsafe {
        let ruleset = check(libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            plan.attr_size,
            0,
        ))? as libc::c_int;
        let mut result = Ok(());
        for (path, access) in &plan.rules {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                // A path that is not there needs no rule.
                continue;
            }
            let rule = PathBeneathAttr {
                allowed_access: *access,
                parent_fd: fd,
            };
            let added = libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                1, // LANDLOCK_RULE_PATH_BENEATH
                &raw const rule,
                0,
            );
            libc::close(fd);
            if added != 0 {
                result = Err(errno());
                break;
            }
        }
        if result.is_ok() && libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) != 0 {
            result = Err(errno());
        }
        libc::close(ruleset);
        result
    }
}

/// Empties the bounding, ambient, inheritable, permitted and effective sets and locks the
/// securebits, so that executing a program as uid 0 grants no capability back.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn drop_capabilities(cap_last: u32) -> Result<(), i32> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    // SAFETY: prctl and capset with valid arguments; the cap structs are locals.
    unsafe {
        for cap in 0..=cap_last {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0
                && errno() != libc::EINVAL
            {
                return Err(errno());
            }
        }
        check(
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            )
            .into(),
        )?;
        check(
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                SECBIT_NOROOT
                    | SECBIT_NOROOT_LOCKED
                    | SECBIT_NO_SETUID_FIXUP
                    | SECBIT_NO_SETUID_FIXUP_LOCKED
                    | SECBIT_KEEP_CAPS_LOCKED
                    | SECBIT_NO_CAP_AMBIENT_RAISE
                    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                0,
                0,
                0,
            )
            .into(),
        )?;
        let header = CapHeader {
            version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        check(libc::syscall(
            libc::SYS_capset,
            &raw const header,
            data.as_ptr(),
        ))?;
    }
    Ok(())
}
