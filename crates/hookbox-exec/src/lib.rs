//! The only place hookbox spawns processes.
//!
//! Every child runs in its own process group with its stdin fed from memory, its stdout and
//! stderr read concurrently and capped, a deadline after which the **whole group** is killed
//! (grandchildren included). The group is also killed when the direct child exits, so a
//! background grandchild that keeps a pipe open cannot stall the caller. Children are always
//! reaped: no zombies, no leaked descriptors.
//!
//! # The keeper
//!
//! With [`ProcessSpec::die_with_parent`] (the default of [`ProcessSpec::shell`]), a host run goes
//! further: the direct child is a **keeper**, a child subreaper bound to hookbox by a
//! parent-death signal, which starts the program (without copying hookbox's memory a second
//! time) and, when the program exits, the deadline passes, the run is dropped or hookbox dies
//! (even by `kill -9`), kills every descendant of the program, including those that called
//! `setsid` and left the group, before it exits itself. So the run returns as soon as the
//! program has exited, and nothing it started survives it. This needs
//! `/proc/thread-self/children` (Linux built with `CONFIG_PROC_CHILDREN`, as distributions'
//! kernels are); without it, descendants outside the group are only reaped as they exit.
//!
//! This crate knows nothing about hooks or agents; it runs a [`ProcessSpec`] and reports a
//! [`ProcessOutput`]. [`spawn_interactive`] starts one the same way (same sandbox, keeper and
//! process group) for a caller to talk to over its stdin and stdout, with no deadline: the
//! child lives until it exits or its [`Interactive`] handle is dropped.
//!
//! Linux only (5.3 or later): the child's exit is watched through a pidfd, so that its group can
//! be killed while the group id is still certainly ours (before the child is reaped).
//!
//! # The sandbox
//!
//! With [`ProcessSpec::sandbox`] set, [`run`] executes the program in an isolated sandbox built
//! from raw system calls (no bubblewrap, no libseccomp, nothing installed at run time). When
//! any part of it cannot be set up, `run` returns [`ExecError::Isolation`] and runs nothing:
//! there is no fallback to running unsandboxed. [`check_isolation`] is a cheap probe (one
//! fork) of whether this process can create the namespaces at all.
//!
//! **Processes.** The spawned child (the one watched through its pidfd, leading the process
//! group) joins the run's cgroups, enters new user, mount, pid, net, ipc, uts and cgroup
//! namespaces, maps the caller's uid and gid to 0 (after denying `setgroups`), and forks pid 1
//! of the new pid namespace, which becomes the program (the network namespace is created by
//! the intermediate just after that fork, in parallel with the building of the file system,
//! and pid 1 joins it before it sets anything else up; it is owned by the sandbox's user
//! namespace like the others). The intermediate closes every other
//! descriptor, waits for pid 1 and exits the same way (re-raising its signal); pid 1 marks
//! every descriptor from 3 up close-on-exec, so the program gets only its stdio. Both always
//! have `PR_SET_PDEATHSIG(SIGKILL)` (whatever [`ProcessSpec::die_with_parent`] says), so
//! killing the intermediate (timeout, exit, cancellation, or hookbox dying) kills pid 1, and
//! the kernel then kills everything in the namespace, including `setsid` double forks. `run`
//! returns only after pid 1 is gone, which the kernel completes once the namespace is empty
//! (bounded by a short grace after a kill). The caller holds the sandbox's mount namespace
//! (a descriptor the intermediate sends) until then and closes it on tokio's blocking pool,
//! so that unmounting its mounts (an RCU grace period) is not part of the wait.
//!
//! **File system.** A fresh tmpfs becomes `/` (`pivot_root`; the host root is detached, and
//! `/` is remounted read-only at the end), holding: `/usr`, `/bin`, `/sbin`, `/lib`, `/lib64`,
//! `/lib32`, `/libx32` bound read-only from the host (symlinks, as on merged-/usr Debian,
//! reproduced as symlinks); an allowlist of `/etc` entries bound read-only (`ld.so.*`,
//! `alternatives`, `ssl`, `ca-certificates`, `passwd`, `group`, `nsswitch.conf`, `hosts`, …,
//! never `shadow`, `gshadow`, `sudoers`, `ssh`); each top-level entry of [`Sandbox::root`] at
//! `/<entry>`, read-write except those named in [`Sandbox::read_only`] (entries are opened
//! without following links and bound from their descriptor; a symlink entry is reproduced as
//! a symlink, never followed on the host); a private tmpfs `/tmp`; a fresh `/proc` of the new
//! pid namespace; a read-only `/dev` (a directory of the root tmpfs) with `null`, `zero`,
//! `full`, `random`, `urandom` bound from the host, `fd`/`stdin`/`stdout`/`stderr` symlinks and
//! a tmpfs `/dev/shm`; each [`Bind`] of [`Sandbox::binds`] at its target (missing parents created
//! in the sandbox's own tmpfs; read-write ones writable through landlock too). A sandbox may
//! have binds only and no root ([`Sandbox::over_directory`]: one host directory at its own
//! path, the working directory and `HOME`). There is no `/sys`, and nothing of the host's `/root`, `/home`, `/tmp`, `/var` or `/run`
//! beyond the binds.
//! All binds are `nosuid`, `nodev` (except the device nodes). The working directory is
//! [`Sandbox::home`] (`/workspace` with a root; or [`ProcessSpec::cwd`], a path inside the
//! sandbox), the hostname `sandbox`. The environment is never inherited from the caller:
//! `PATH`, `HOME` (the same [`Sandbox::home`]), `TMPDIR=/tmp`, then
//! [`ProcessSpec::env`].
//!
//! **Network.** An empty network namespace with only `lo` (brought up): any other destination
//! is `ENETUNREACH`. With [`Sandbox::listen_inside`], pid 1 also opens a TCP listener on
//! `127.0.0.1:PORT` there and hands it to the caller ([`ListenInside`]), who accepts the
//! sandbox's connections from outside: the one way a sandboxed program can reach a service of
//! the caller (an egress proxy), without a relay process or a socket file.
//!
//! **Privileges.** The program runs as uid 0 *inside* the user namespace (the caller's uid
//! outside), with no capability: the bounding, ambient, inheritable, permitted and effective
//! sets are emptied and the securebits `NOROOT`/`NO_SETUID_FIXUP`/`NO_CAP_AMBIENT_RAISE` set
//! and locked, so executing programs as uid 0 grants nothing back; `no_new_privs` is set.
//! Landlock (when the kernel has it; ABI up to 6) allows reading and executing everywhere but
//! writing only beneath `/workspace`, the other read-write entries and read-write binds, `/tmp`, `/dev` and
//! `/dev/shm`, and scopes signals and abstract Unix sockets to the sandbox; on a kernel without
//! landlock it is skipped ([`Sandbox::enforcement`] says so) and the read-only mounts still
//! hold. One seccomp filter (classic BPF written by hand, built once per process in the parent,
//! the call number found by binary search) makes these fail with `EPERM`: `mount`, `umount2`, `pivot_root`, `chroot` and the new mount API,
//! `unshare`, `setns`, `clone` with any namespace flag, `ptrace`, `process_vm_*`, `kcmp`,
//! `link` and `linkat` (a hard link, unlike a symbolic one, cannot be resolved before hooks
//! judge a path: a second name for a private file would pass a gate under the name it allows),
//! `bpf`, `keyctl`, `add_key`, `request_key`, `io_uring_*`, `perf_event_open`, `userfaultfd`,
//! `kexec_*`, module loading, `open_by_handle_at`, `swapon`/`swapoff`, `reboot`, `acct`,
//! `quotactl`, `syslog`, clock setting, `sethostname`, `iopl`/`ioperm`, `personality`
//! changes, `ioctl(TIOCSTI)` and `ioctl(TIOCLINUX)` (masked compare), and x32 system calls;
//! `clone3` fails with `ENOSYS` (its flags cannot be inspected; the C library falls back to
//! `clone`); `socket` and `socketpair` fail with `EAFNOSUPPORT` for every family but
//! `AF_UNIX`, `AF_INET` and `AF_INET6` (no vsock, which is not namespaced and reaches a VM's
//! hypervisor; no netlink, packet, alg, key, bluetooth, xdp…; nothing inside needs netlink:
//! `lo` is brought up before the filter, and glibc's `getaddrinfo` copes without it).
//!
//! **Limits** ([`Limits`]): see its table. As root, a per-run cgroup (v1 `pids` and `memory`
//! under this process's own cgroups, or v2 when those controllers are delegated) caps
//! processes and memory for the whole sandbox; it is created before the spawn (or taken from
//! a small pool of emptied ones with the same limits, with nothing unreclaimable charged) and
//! pooled or removed after the run. Without a pids cgroup, a root run with a process limit is
//! refused (root is exempt from `RLIMIT_NPROC`). As another user, `RLIMIT_NPROC` is counted within the
//! sandbox's own user namespace, and memory is `RLIMIT_AS` per process. CPU time, file size and
//! open files are per-process rlimits; core dumps are off.
//!
//! **Warm sandboxes.** [`WarmSandbox`] builds the same sandbox once and runs many calls in it,
//! each started by a supervisor inside (hookbox re-executed; see [`supervise_if_asked`]) in
//! pid, mount and IPC namespaces and cgroups of its own and confined exactly like the program
//! above; see the type's documentation for what calls can and cannot reach.
//!
//! **Warm interpreters.** [`PythonZygotes`] runs `python3 SCRIPT` on the host forked from an
//! interpreter started once, with the keeper's semantics (nothing a run starts survives it);
//! see the type's documentation.
//!
//! **Known limits.** Only x86_64 and aarch64 get seccomp filters (elsewhere a sandboxed run is
//! refused). Mounts below a bound host directory keep their own flags. The pid-1 program does
//! not reap orphans it did not start (they are zombies until the run ends). Everything between
//! fork and exec is async-signal-safe: the parent prepares every path, map, rule and filter.

mod after_fork;
mod capture;
mod detach;
pub mod disk;
mod exec_args;
mod group;
mod interactive;
mod keeper;
mod reported;
mod sandbox;
mod spawn;
mod warm;
mod zygote;

pub use capture::CapturedOutput;
pub use detach::{DetachedSpec, spawn_detached};
pub use interactive::{Interactive, spawn_interactive};
pub use sandbox::{
    Bind, CpuShare, Enforcement, HOST_SYSTEM_DIRS, IsolationError, LimitMode, Limits, ListenInside,
    ListenerSink, SYSTEM_TRUST_BUNDLES, Sandbox, check_isolation,
};
pub use spawn::{ExecError, ExitKind, ProcessOutput, ProcessSpec, SANDBOX_PATH, run};
pub use warm::{
    PARENT_ARG, SUPERVISOR_ARG, SUPERVISOR_PROGRAM, WarmFootprint, WarmSandbox, supervise_if_asked,
    supervise_only, supervisor_program, warm_sandbox_footprint,
};
pub use zygote::PythonZygotes;
