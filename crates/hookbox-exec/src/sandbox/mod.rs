//! Running a child inside an isolated Linux sandbox.
//!
//! See the crate documentation for what the sandbox is made of. The parent prepares every
//! path, map, rule and filter ([`prepare`]); the forked children only make raw system calls
//! ([`child`]).

mod cgroup;
mod child;
mod filter;

use std::ffi::CString;
use std::io;
use std::io::IoSliceMut;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use landlock::{ABI, Access, AccessFs, Scope};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, Shutdown, SocketFlags,
    SocketType, recvmsg, shutdown, socketpair,
};

pub(crate) use cgroup::RunCgroups;
pub(crate) use child::{
    FIRST_OP, Plan, RECORD_FAILED, RECORD_INIT, RECORD_LISTENER, STEPS, run as enter,
};

/// Resource limits for everything running inside one sandboxed run.
///
/// How each is enforced depends on who runs hookbox:
///
/// | limit | as root | as another user |
/// |---|---|---|
/// | `memory_bytes` | cgroup memory limit for the whole sandbox (v1 `memory.limit_in_bytes`, or v2 `memory.max`) | `RLIMIT_AS` **per process** (no cgroup) |
/// | `max_processes` | cgroup `pids.max` for the whole sandbox; a run is refused when no pids cgroup can be created | `RLIMIT_NPROC`, counted per sandbox (its own user namespace) |
/// | `cpu_seconds` | `RLIMIT_CPU` per process | same |
/// | `file_size_bytes` | `RLIMIT_FSIZE` per process | same |
/// | `open_files` | `RLIMIT_NOFILE` per process | same |
///
/// As root without a memory cgroup, memory falls back to `RLIMIT_AS` per process too.
/// [`Sandbox::enforcement`] tells what a run in this process would get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Memory for the whole sandbox, in bytes.
    pub memory_bytes: u64,
    /// Processes (and threads) alive at once inside the sandbox; 0 means no limit.
    pub max_processes: u64,
    /// CPU time per process, in seconds.
    pub cpu_seconds: u64,
    /// Largest file a process may write, in bytes.
    pub file_size_bytes: u64,
    /// Open file descriptors per process.
    pub open_files: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            memory_bytes: 2 * 1024 * 1024 * 1024,
            max_processes: 256,
            cpu_seconds: 600,
            file_size_bytes: 1024 * 1024 * 1024,
            open_files: 1024,
        }
    }
}

/// Where and how a sandboxed child runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sandbox {
    /// Host directory whose top-level entries appear at `/` inside (an environment's `root`).
    /// `workspace` must exist in it; it is mounted read-write at `/workspace`. `None` for a
    /// sandbox made only of [`Sandbox::binds`] (see [`Sandbox::over_directory`]).
    pub root: Option<PathBuf>,
    /// Entries of `root` that are mounted read-only (by default `.agents`): top-level names, or
    /// `/`-separated paths below a top-level directory (such as `workspace/.agents`), which
    /// are bound read-only over themselves; such a path must exist and not be a symlink.
    pub read_only: Vec<String>,
    /// Host directories (or files) bound at paths of their own inside, besides `root`.
    pub binds: Vec<Bind>,
    /// Resource limits.
    pub limits: Limits,
    /// A TCP listener to open on `127.0.0.1` inside the sandbox's network namespace and hand
    /// to the caller (see [`ListenInside`]); none by default.
    pub listen_inside: Option<ListenInside>,
    /// A host file of PEM certificates mounted read-only over the system's trust bundles
    /// inside (those of [`SYSTEM_TRUST_BUNDLES`] that are regular files on the host), so that
    /// programs trusting the system store trust these certificates; none by default.
    pub trust_bundle: Option<PathBuf>,
}

/// Where distributions keep the system's bundle of trusted CA certificates.
pub const SYSTEM_TRUST_BUNDLES: &[&str] = &[
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
];

/// Receives the listener of a [`ListenInside`], once per run.
pub type ListenerSink = Arc<dyn Fn(std::net::TcpListener) + Send + Sync>;

/// A TCP listener opened inside a sandbox, so that its programs can reach a service of the
/// caller (such as an egress proxy) at `127.0.0.1:port` while having no other network.
///
/// The sandbox's init, once `lo` is up in the new network namespace and before the program
/// runs, binds a TCP socket to `127.0.0.1:port` there, listens, and sends it to the parent
/// over the run's status socket; its own copy is closed, so the program never holds it. A
/// socket stays in the namespace it was created in, so the caller, outside, accepts the
/// connections made to `127.0.0.1:port` inside. [`ListenInside::deliver`] is called with it
/// (in blocking mode; set it non-blocking before handing it to tokio) from the task running
/// the program, before that program is waited for; each run gets a listener of its own. When
/// the run ends, hookbox shuts the socket down (`shutdown(2)`), so that accepting on it fails
/// from then on; the caller should drop its listener then.
#[derive(Clone)]
pub struct ListenInside {
    /// The port on `127.0.0.1` inside the sandbox ([`ListenInside::DEFAULT_PORT`] by default).
    pub port: u16,
    /// Called with the listener of each run.
    pub deliver: ListenerSink,
}

impl ListenInside {
    /// The port used unless told otherwise (the usual HTTP proxy port).
    pub const DEFAULT_PORT: u16 = 3128;

    /// A listener on `127.0.0.1:port` inside, handed to `deliver`.
    pub fn new(port: u16, deliver: impl Fn(std::net::TcpListener) + Send + Sync + 'static) -> Self {
        Self {
            port,
            deliver: Arc::new(deliver),
        }
    }
}

impl std::fmt::Debug for ListenInside {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ListenInside")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl PartialEq for ListenInside {
    fn eq(&self, other: &Self) -> bool {
        self.port == other.port && Arc::ptr_eq(&self.deliver, &other.deliver)
    }
}

impl Eq for ListenInside {}

/// A host directory (or file) made visible inside a sandbox at `target`.
///
/// The host path is canonicalised when the run is prepared and opened without following a
/// final symlink. `target` must be absolute, without `.` or `..` components, and outside the
/// sandbox's own directories (`/usr`, `/etc`, `/proc`, `/dev`, …) except below `/tmp` (the
/// private tmpfs). Missing parent directories of `target` are created in the sandbox's own
/// file system (never on the host). Binds may not nest in one another, except that a later
/// bind may show a part of an earlier directory bind again at the same place (its host path
/// is the earlier host path joined with the same relative path): to make that part read-only
/// inside a writable directory, or to pin it (a mount point cannot be renamed or removed from
/// inside the sandbox).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bind {
    /// The host path.
    pub host: PathBuf,
    /// Where it appears inside the sandbox.
    pub target: PathBuf,
    /// Whether the sandbox may write below it (read-only otherwise, by mount and landlock).
    pub writable: bool,
}

impl Sandbox {
    /// A sandbox over `root` with `.agents` read-only and the default limits.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: Some(root.into()),
            read_only: vec![".agents".into()],
            binds: Vec::new(),
            limits: Limits::default(),
            listen_inside: None,
            trust_bundle: None,
        }
    }

    /// A sandbox whose only host directory is `dir`, bound read-write at its own canonical
    /// absolute path (so paths inside and outside agree), which is also the working directory
    /// and `HOME`; everything else as in any sandbox, with the default limits.
    pub fn over_directory(dir: &Path) -> Result<Self, IsolationError> {
        let host = canonical_dir(dir)?;
        Ok(Self {
            root: None,
            read_only: Vec::new(),
            binds: vec![Bind {
                target: host.clone(),
                host,
                writable: true,
            }],
            limits: Limits::default(),
            listen_inside: None,
            trust_bundle: None,
        })
    }

    /// The default working directory and `HOME` inside: `/workspace` with a root, else the
    /// first bind's target, else `/tmp`.
    pub fn home(&self) -> PathBuf {
        match (&self.root, self.binds.first()) {
            (Some(_), _) => PathBuf::from("/workspace"),
            (None, Some(bind)) => bind.target.clone(),
            (None, None) => PathBuf::from("/tmp"),
        }
    }

    /// How the limits of this sandbox would be enforced by a run from this process (this
    /// creates and removes the run's cgroups to find out).
    pub fn enforcement(&self) -> Enforcement {
        let root = is_root();
        let cgroups = if root {
            RunCgroups::create(&self.limits)
        } else {
            RunCgroups::default()
        };
        Enforcement {
            memory: if cgroups.memory {
                LimitMode::Cgroup
            } else {
                LimitMode::PerProcessRlimit
            },
            processes: if cgroups.pids {
                LimitMode::Cgroup
            } else if root {
                LimitMode::NotEnforced
            } else {
                LimitMode::PerSandboxRlimit
            },
            landlock: landlock_abi() != ABI::Unsupported,
        }
    }
}

/// How one limit is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitMode {
    /// By a cgroup covering the whole sandbox.
    Cgroup,
    /// By an rlimit counted over the whole sandbox (`RLIMIT_NPROC` in its user namespace).
    PerSandboxRlimit,
    /// By an rlimit on each process separately (`RLIMIT_AS`).
    PerProcessRlimit,
    /// Not at all (a run asking for it is refused).
    NotEnforced,
}

/// What a sandboxed run from this process gets; see [`Sandbox::enforcement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Enforcement {
    /// How `memory_bytes` is enforced.
    pub memory: LimitMode,
    /// How `max_processes` is enforced.
    pub processes: LimitMode,
    /// Whether landlock is applied (the kernel supports it); without it the read-only mounts
    /// still hold.
    pub landlock: bool,
}

/// Why a sandbox cannot be set up. hookbox never falls back to running unisolated.
#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    /// This process may not create the namespaces the sandbox needs.
    #[error("cannot create the sandbox namespaces: {0}")]
    Namespaces(String),
    /// The sandbox description is unusable.
    #[error("bad sandbox root `{}`: {reason}", path.display())]
    Root {
        /// The root in question.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The kernel or the host lacks something the sandbox needs.
    #[error("{0}")]
    Unsupported(String),
    /// A [`Bind`] is unusable.
    #[error("bad sandbox bind `{}`: {reason}", path.display())]
    Bind {
        /// The bind's host path or target in question.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A step of setting the sandbox up failed in the child.
    #[error("sandbox setup failed while {step}: {source}")]
    Setup {
        /// The step that failed.
        step: String,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
}

/// System directories bound read-only (symlinks reproduced as symlinks).
const SYSTEM: &[&str] = &["usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32"];

/// The only entries of the host's `/etc` visible inside (read-only): what programs need to
/// load libraries, resolve users and names, and verify certificates. Never `shadow`,
/// `gshadow`, `sudoers`, `ssh`, or anything else holding secrets.
const ETC_ALLOWLIST: &[&str] = &[
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "gai.conf",
    "protocols",
    "services",
    "networks",
    "localtime",
    "timezone",
    "mime.types",
    "magic",
    "magic.mime",
    "os-release",
    "debian_version",
    "lsb-release",
    "bash.bashrc",
    "profile",
    "inputrc",
    "locale.alias",
    "python3",
    "python3.11",
    "python3.12",
    "python3.13",
    "perl",
];

/// Names a root entry may not have: they are the sandbox's own.
const RESERVED: &[&str] = &[
    "usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32", "etc", "proc", "dev", "tmp", "sys",
    "oldroot", "newroot",
];

/// Host device nodes bound into `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

fn cstring(bytes: impl AsRef<[u8]>) -> Result<CString, IsolationError> {
    CString::new(bytes.as_ref())
        .map_err(|_| IsolationError::Unsupported("a path holds a NUL byte".into()))
}

fn path_c(path: &Path) -> Result<CString, IsolationError> {
    cstring(path.as_os_str().as_bytes())
}

fn join(prefix: &str, path: &Path) -> Result<CString, IsolationError> {
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    cstring(bytes)
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The kernel's landlock ABI, capped at the newest one this code was written for (V6: file
/// system rights and scopes). Asked once per process.
fn landlock_abi() -> ABI {
    static ABI_VERSION: OnceLock<i32> = OnceLock::new();
    let version = *ABI_VERSION.get_or_init(|| {
        #[expect(
            unsafe_code,
            reason = "the landlock crate keeps its version query private (`LandlockStatus::current`)"
        )]
        // SAFETY: with a null attribute, size 0 and the VERSION flag, the call only returns a
        // number.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0_usize,
                1_u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        i32::try_from(version.min(6)).unwrap_or(0)
    });
    ABI::from(version)
}

/// The highest capability number of the kernel (read once per process).
fn cap_last() -> u32 {
    static CAP_LAST: OnceLock<u32> = OnceLock::new();
    *CAP_LAST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(63)
    })
}

/// Everything prepared for one sandboxed run.
pub(crate) struct Prepared {
    /// The plan the pre-exec closure runs.
    pub(crate) plan: Arc<Plan>,
    /// The parent's end of the status socket.
    pub(crate) status: OwnedFd,
    /// Where the listener opened inside goes, if one is asked for.
    pub(crate) listen_inside: Option<ListenInside>,
    /// The run's cgroups, held only to be removed on drop.
    _cgroups: RunCgroups,
}

/// Prepares a run of a program in `sandbox`: checks the root, builds every path, the landlock
/// rules and the seccomp programs, creates the cgroups and the status socket.
///
/// Returns the preparation and the child's end of the status socket, to be closed once the
/// child is spawned.
pub(crate) fn prepare(
    sandbox: &Sandbox,
    cwd: Option<&Path>,
    die_with_parent: bool,
) -> Result<(Prepared, OwnedFd), IsolationError> {
    let (root, entries) = match &sandbox.root {
        Some(root) => {
            let (root, entries) = root_entries(root)?;
            (Some(root), entries)
        }
        None => (None, Vec::new()),
    };
    if root.is_none() && sandbox.binds.is_empty() {
        return Err(IsolationError::Unsupported(
            "a sandbox needs a root directory or at least one bind".into(),
        ));
    }
    let binds = checked_binds(&sandbox.binds, &entries)?;

    let abi = landlock_abi();
    let read = AccessFs::from_read(abi).bits();
    let all = AccessFs::from_all(abi).bits();
    let file_all = AccessFs::from_file(abi).bits();
    let mut writable: Vec<(CString, u64)> = vec![
        (cstring("/tmp")?, all),
        (cstring("/dev")?, all),
        (cstring("/dev/shm")?, all),
    ];

    use child::Op;
    let mut ops = vec![
        Op::Private,
        Op::Tmpfs {
            target: cstring("/tmp")?,
            data: cstring("mode=0700,size=1m")?,
        },
        Op::Mkdir(cstring("/tmp/oldroot")?),
        Op::Mkdir(cstring("/tmp/newroot")?),
        Op::PivotRoot {
            new: cstring("/tmp")?,
            old: cstring("/tmp/oldroot")?,
        },
        Op::Chdir(cstring("/")?),
        Op::Tmpfs {
            target: cstring("/newroot")?,
            data: cstring("mode=0755,size=1m")?,
        },
    ];
    for dir in SYSTEM {
        ops.push(Op::Host {
            src: cstring(format!("/oldroot/{dir}"))?,
            dst: cstring(format!("/newroot/{dir}"))?,
            device: false,
        });
    }
    ops.push(Op::Mkdir(cstring("/newroot/etc")?));
    for name in ETC_ALLOWLIST {
        ops.push(Op::Host {
            src: cstring(format!("/oldroot/etc/{name}"))?,
            dst: cstring(format!("/newroot/etc/{name}"))?,
            device: false,
        });
    }
    for (name, kind) in &entries {
        let Some(root) = &root else { break };
        let read_only = sandbox.read_only.iter().any(|ro| ro == name);
        let inside = format!("/{name}");
        ops.push(Op::Bind {
            src: join("/oldroot", &root.join(name))?,
            dst: cstring(format!("/newroot{inside}"))?,
            read_only,
            copy_link: true,
        });
        if !read_only && !kind.is_symlink() {
            writable.push((
                cstring(&inside)?,
                if kind.is_dir() { all } else { file_all },
            ));
        }
    }
    // Read-only directories below a top-level entry (e.g. `workspace/.agents`): bound over
    // themselves, read-only, on top of that entry. A missing one or a symlink fails the run.
    for nested in sandbox.read_only.iter().filter(|ro| ro.contains('/')) {
        let Some(root) = &root else { break };
        let bad = |reason: &str| IsolationError::Bind {
            path: PathBuf::from(nested),
            reason: reason.to_owned(),
        };
        let names: Vec<&str> = nested.split('/').collect();
        if names.iter().any(|name| matches!(*name, "" | "." | "..")) {
            return Err(bad(
                "a read-only path is relative, without `.`, `..` or empty parts",
            ));
        }
        if !entries
            .iter()
            .any(|(name, kind)| name == names[0] && kind.is_dir())
        {
            return Err(bad(
                "a read-only path must lie in a directory of the sandbox root",
            ));
        }
        ops.push(Op::Bind {
            src: join("/oldroot", &root.join(nested))?,
            dst: cstring(format!("/newroot/{nested}"))?,
            read_only: true,
            copy_link: false,
        });
    }
    let memory = sandbox.limits.memory_bytes.max(1024 * 1024);
    ops.extend([
        Op::Mkdir(cstring("/newroot/tmp")?),
        Op::Tmpfs {
            target: cstring("/newroot/tmp")?,
            data: cstring(format!("mode=1777,size={memory}"))?,
        },
    ]);
    // After the private /tmp, so that binds below /tmp land on it.
    for bind in &binds {
        let mut ancestors: Vec<&Path> = bind.target.ancestors().skip(1).collect();
        ancestors.reverse();
        // A part of an earlier bind is there already: nothing to create (on the host).
        if !bind.nested {
            for ancestor in ancestors.into_iter().skip(1) {
                ops.push(Op::Mkdir(join("/newroot", ancestor)?));
            }
        }
        ops.push(Op::Bind {
            src: join("/oldroot", &bind.host)?,
            dst: join("/newroot", &bind.target)?,
            read_only: !bind.writable,
            copy_link: false,
        });
        if bind.writable {
            writable.push((
                path_c(&bind.target)?,
                if bind.is_dir { all } else { file_all },
            ));
        }
    }
    if let Some(bundle) = &sandbox.trust_bundle {
        if !bundle.is_absolute() {
            return Err(IsolationError::Bind {
                path: bundle.clone(),
                reason: "the trust bundle must be an absolute host path".to_owned(),
            });
        }
        // Over the host's bundles, which are inside the read-only `/etc` entries bound above.
        for system in SYSTEM_TRUST_BUNDLES {
            let is_file = std::fs::symlink_metadata(system).is_ok_and(|meta| meta.is_file());
            if is_file {
                ops.push(Op::Bind {
                    src: join("/oldroot", bundle)?,
                    dst: cstring(format!("/newroot{system}"))?,
                    read_only: true,
                    copy_link: false,
                });
            }
        }
    }
    // A directory of the root tmpfs (read-only with it at the end): no tmpfs of its own.
    ops.push(Op::Mkdir(cstring("/newroot/dev")?));
    for device in DEVICES {
        ops.push(Op::Host {
            src: cstring(format!("/oldroot/dev/{device}"))?,
            dst: cstring(format!("/newroot/dev/{device}"))?,
            device: true,
        });
    }
    for (target, link) in [
        ("/proc/self/fd", "fd"),
        ("/proc/self/fd/0", "stdin"),
        ("/proc/self/fd/1", "stdout"),
        ("/proc/self/fd/2", "stderr"),
    ] {
        ops.push(Op::Symlink {
            target: cstring(target)?,
            link: cstring(format!("/newroot/dev/{link}"))?,
        });
    }
    ops.extend([
        Op::Mkdir(cstring("/newroot/dev/shm")?),
        Op::Tmpfs {
            target: cstring("/newroot/dev/shm")?,
            data: cstring(format!("mode=1777,size={memory}"))?,
        },
        Op::Mkdir(cstring("/newroot/proc")?),
        Op::Proc(cstring("/newroot/proc")?),
        Op::Chdir(cstring("/newroot")?),
        Op::PivotRoot {
            new: cstring(".")?,
            old: cstring(".")?,
        },
        Op::Detach(cstring(".")?),
        Op::Chdir(cstring("/")?),
        Op::RemountRo(cstring("/")?),
    ]);

    let landlock = (abi != ABI::Unsupported).then(|| {
        let mut rules = vec![(c"/".to_owned(), read)];
        rules.extend(writable);
        child::LandlockPlan {
            attr_size: match abi {
                ABI::Unsupported | ABI::V1 | ABI::V2 | ABI::V3 => 8,
                ABI::V4 | ABI::V5 => 16,
                _ => 24,
            },
            handled_fs: all,
            scoped: Scope::from_all(abi).bits(),
            rules,
        }
    });

    let root_user = is_root();
    let limits = &sandbox.limits;
    let cgroups = if root_user {
        RunCgroups::create(limits)
    } else {
        RunCgroups::default()
    };
    if root_user {
        cgroups.require_pids(limits)?;
    }
    let mut rlimits = vec![
        (
            libc::RLIMIT_CPU,
            limits.cpu_seconds,
            limits.cpu_seconds.saturating_add(1),
        ),
        (
            libc::RLIMIT_FSIZE,
            limits.file_size_bytes,
            limits.file_size_bytes,
        ),
        (libc::RLIMIT_NOFILE, limits.open_files, limits.open_files),
        (libc::RLIMIT_CORE, 0, 0),
    ];
    if !cgroups.memory {
        rlimits.push((libc::RLIMIT_AS, limits.memory_bytes, limits.memory_bytes));
    }
    if !root_user && limits.max_processes > 0 {
        rlimits.push((
            libc::RLIMIT_NPROC,
            limits.max_processes,
            limits.max_processes,
        ));
    }

    let cap_last = cap_last();
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let cwd = match cwd {
        Some(cwd) => path_c(&sandbox.home().join(cwd))?,
        None => path_c(&sandbox.home())?,
    };

    let (status, child_end) = socket_pair()?;
    let plan = Plan {
        parent: die_with_parent.then(|| rustix::process::getpid().as_raw_nonzero().get()),
        cgroup_procs: cgroups.procs.clone(),
        uid_map: format!("0 {uid} 1\n").into_bytes(),
        gid_map: format!("0 {gid} 1\n").into_bytes(),
        ops,
        rlimits,
        landlock,
        cap_last,
        filter: filter::program()?,
        cwd,
        status: child_end.as_raw_fd(),
        listen_port: sandbox.listen_inside.as_ref().map(|listen| listen.port),
    };
    Ok((
        Prepared {
            plan: Arc::new(plan),
            status,
            listen_inside: sandbox.listen_inside.clone(),
            _cgroups: cgroups,
        },
        child_end,
    ))
}

/// The canonical form of `root` and its top-level entries (sorted by name), checked to hold
/// `workspace` and nothing that would hide the sandbox's own directories.
fn root_entries(
    root_path: &Path,
) -> Result<(PathBuf, Vec<(String, std::fs::FileType)>), IsolationError> {
    let bad_root = |reason: String| IsolationError::Root {
        path: root_path.to_path_buf(),
        reason,
    };
    let root = root_path
        .canonicalize()
        .map_err(|error| bad_root(error.to_string()))?;
    if !root.join("workspace").is_dir() {
        return Err(bad_root("it has no `workspace` directory".into()));
    }
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(&root).map_err(|error| bad_root(error.to_string()))? {
        let entry = entry.map_err(|error| bad_root(error.to_string()))?;
        let name = entry.file_name();
        let Some(text) = name.to_str() else {
            return Err(bad_root(format!("entry {name:?} is not UTF-8")));
        };
        if RESERVED.contains(&text) {
            return Err(bad_root(format!(
                "entry `{text}` would hide the sandbox's own `/{text}`"
            )));
        }
        let kind = entry
            .file_type()
            .map_err(|error| bad_root(error.to_string()))?;
        entries.push((text.to_owned(), kind));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((root, entries))
}

/// The canonical path of the host directory `dir`.
fn canonical_dir(dir: &Path) -> Result<PathBuf, IsolationError> {
    let bad = |reason: String| IsolationError::Bind {
        path: dir.to_path_buf(),
        reason,
    };
    let host = dir.canonicalize().map_err(|error| bad(error.to_string()))?;
    if !host.is_dir() {
        return Err(bad("it is not a directory".into()));
    }
    Ok(host)
}

/// A bind checked and resolved by [`checked_binds`].
struct CheckedBind {
    /// The canonical host path.
    host: PathBuf,
    /// The target inside.
    target: PathBuf,
    writable: bool,
    is_dir: bool,
    /// Whether it shows a part of an earlier bind again.
    nested: bool,
}

/// Checks every bind (see [`Bind`]) against the sandbox's own directories, the root's
/// `entries` and each other; canonicalises the host paths.
fn checked_binds(
    binds: &[Bind],
    entries: &[(String, std::fs::FileType)],
) -> Result<Vec<CheckedBind>, IsolationError> {
    use std::path::Component;
    let mut checked: Vec<CheckedBind> = Vec::new();
    for bind in binds {
        let bad = |reason: String| IsolationError::Bind {
            path: bind.target.clone(),
            reason,
        };
        let mut components = bind.target.components();
        if components.next() != Some(Component::RootDir) {
            return Err(bad("the target must be an absolute path".into()));
        }
        let names: Vec<&str> = components
            .map(|component| match component {
                Component::Normal(name) => name
                    .to_str()
                    .ok_or_else(|| bad("the target is not UTF-8".into())),
                _ => Err(bad("the target may not hold `.` or `..`".into())),
            })
            .collect::<Result<_, _>>()?;
        let Some(first) = names.first() else {
            return Err(bad("the target may not be `/`".into()));
        };
        let below_tmp = *first == "tmp" && names.len() > 1;
        if RESERVED.contains(first) && !below_tmp {
            return Err(bad(format!(
                "the target would hide or lie in the sandbox's own `/{first}`"
            )));
        }
        if entries.iter().any(|(name, _)| name == first) {
            return Err(bad(format!(
                "the target lies in `/{first}`, an entry of the sandbox root"
            )));
        }
        let host = bind
            .host
            .canonicalize()
            .map_err(|error| IsolationError::Bind {
                path: bind.host.clone(),
                reason: error.to_string(),
            })?;
        if let Some(other) = checked.iter().find(|other| {
            other.target.starts_with(&bind.target)
                || (bind.target.starts_with(&other.target) && !same_place(other, &host, bind))
        }) {
            return Err(bad(format!(
                "binds may not nest (this one and `{}`), except to bind a part of an earlier \
                 bind again at its own place",
                other.target.display()
            )));
        }
        let meta = std::fs::metadata(&host).map_err(|error| IsolationError::Bind {
            path: bind.host.clone(),
            reason: error.to_string(),
        })?;
        if !meta.is_dir() && !meta.is_file() {
            return Err(IsolationError::Bind {
                path: bind.host.clone(),
                reason: "it is neither a directory nor a regular file".into(),
            });
        }
        let nested = checked
            .iter()
            .any(|other| bind.target.starts_with(&other.target));
        checked.push(CheckedBind {
            host,
            nested,
            target: bind.target.clone(),
            writable: bind.writable,
            is_dir: meta.is_dir(),
        });
    }
    Ok(checked)
}

/// Whether `bind` (whose host path is `host`, canonical) shows, beneath the earlier bind
/// `outer`, the very part of `outer` that is there anyway: a re-bind that only changes
/// whether that part is writable, or pins it (a mount point cannot be renamed or removed).
fn same_place(outer: &CheckedBind, host: &Path, bind: &Bind) -> bool {
    outer.is_dir
        && bind
            .target
            .strip_prefix(&outer.target)
            .is_ok_and(|below| !below.as_os_str().is_empty() && outer.host.join(below) == host)
}

fn socket_pair() -> Result<(OwnedFd, OwnedFd), IsolationError> {
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
    /// a [`ListenInside`] was asked for, for the listener the init opened; returns the pidfd
    /// and the listener (already handed to [`ListenInside::deliver`]).
    pub(crate) async fn init_pidfd(&self) -> (Option<OwnedFd>, Option<OwnedFd>) {
        let mut pidfd = None;
        let mut listener = None;
        let Some(status) = self
            .status
            .try_clone()
            .ok()
            .and_then(|fd| async_fd(fd).ok())
        else {
            return (None, None);
        };
        let wants_listener = self.listen_inside.is_some();
        while pidfd.is_none() || (wants_listener && listener.is_none()) {
            let Ok(mut ready) = status.readable().await else {
                break;
            };
            match receive(status.get_ref()) {
                Ok(Some(record)) if record.kind == RECORD_INIT => pidfd = record.fd,
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
        (pidfd, listener)
    }
}

/// Shuts down `listener` (a listening socket handed out through [`ListenInside`]), so that
/// accepting on any copy of it fails from now on.
pub(crate) fn stop_listening(listener: &OwnedFd) {
    // Failing means the socket is no longer listening: nothing is left to stop.
    let _stopped = shutdown(listener, Shutdown::Both);
}

/// Registers `fd` (a socket or pidfd we own) with tokio's reactor, for readability.
#[expect(unsafe_code, reason = "registering a descriptor with tokio's reactor")]
pub(crate) fn async_fd(fd: OwnedFd) -> io::Result<tokio::io::unix::AsyncFd<OwnedFd>> {
    // SAFETY: `fd` is open and owned by the AsyncFd, which never hands it out mutably, so it
    // stays open and refers to the same file until the AsyncFd drops.
    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
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

fn read_sysctl(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// A known configuration that forbids this process to create user namespaces.
fn userns_restriction() -> Option<String> {
    if read_sysctl("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some(
            "user namespaces are disabled (sysctl user.max_user_namespaces=0); enable them".into(),
        );
    }
    if is_root() {
        return None;
    }
    if read_sysctl("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some(
            "unprivileged user namespaces are disabled (sysctl \
             kernel.unprivileged_userns_clone=0); run as root or enable them"
                .into(),
        );
    }
    if read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1")
    {
        return Some(
            "AppArmor restricts unprivileged user namespaces (sysctl \
             kernel.apparmor_restrict_unprivileged_userns=1); run as root, allow them, or \
             give hookbox an AppArmor profile with `userns`"
                .into(),
        );
    }
    None
}

/// Checks, cheaply, that this process can create the namespaces a sandbox needs (user,
/// mount, pid, net, ipc, uts, cgroup) and map its ids, by forking a child that tries.
pub fn check_isolation() -> Result<(), IsolationError> {
    if let Some(reason) = userns_restriction() {
        return Err(IsolationError::Namespaces(reason));
    }
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let uid_map = format!("0 {uid} 1\n").into_bytes();
    let gid_map = format!("0 {gid} 1\n").into_bytes();
    let status = probe(&uid_map, &gid_map)?;
    if status == 0 {
        return Ok(());
    }
    let (step, errno) = (status >> 8, status & 0xff);
    let what = match step {
        1 => {
            "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS)"
        }
        2 => "denying setgroups",
        3 => "writing the gid map",
        4 => "writing the uid map",
        _ => "mounting a tmpfs in the new mount namespace",
    };
    Err(IsolationError::Namespaces(format!(
        "{what} failed: {}",
        io::Error::from_raw_os_error(errno)
    )))
}

/// Forks a child that creates the namespaces; returns `step << 8 | errno` of what failed (0 if
/// all went well; errno is kept modulo 32, enough for the errors that matter here).
#[expect(unsafe_code, reason = "fork, and raw system calls in the forked child")]
fn probe(uid_map: &[u8], gid_map: &[u8]) -> Result<i32, IsolationError> {
    fn write(path: &std::ffi::CStr, data: &[u8]) -> bool {
        // SAFETY: NUL-terminated path, valid buffer, our own descriptor.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return false;
            }
            let ok = libc::write(fd, data.as_ptr().cast(), data.len()) == data.len() as isize;
            libc::close(fd);
            ok
        }
    }
    // SAFETY: the child only makes async-signal-safe calls on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(IsolationError::Namespaces(format!(
            "fork failed: {}",
            io::Error::last_os_error()
        )));
    }
    if pid == 0 {
        // SAFETY: raw system calls with valid arguments, then _exit.
        unsafe {
            let flags = libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS;
            if libc::unshare(flags) != 0 {
                fail_small(1);
            }
            if !write(c"/proc/self/setgroups", b"deny") {
                fail_small(2);
            }
            if !write(c"/proc/self/gid_map", gid_map) {
                fail_small(3);
            }
            if !write(c"/proc/self/uid_map", uid_map) {
                fail_small(4);
            }
            if libc::mount(
                c"tmpfs".as_ptr(),
                c"/tmp".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            ) != 0
            {
                fail_small(5);
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let reaped = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if reaped == pid {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(IsolationError::Namespaces(format!(
                "waiting for the probe failed: {error}"
            )));
        }
    }
    if !libc::WIFEXITED(status) {
        return Err(IsolationError::Namespaces(
            "the namespace probe was killed".into(),
        ));
    }
    let code = libc::WEXITSTATUS(status);
    Ok(if code == 0 {
        0
    } else {
        (code >> 5) << 8 | (code & 0x1f)
    })
}

/// In the probe child: exits with `step` in bits 5..8 and errno (mod 32) in bits 0..5.
#[expect(unsafe_code, reason = "_exit in the forked probe child")]
fn fail_small(step: i32) -> ! {
    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(1) & 0x1f;
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(step << 5 | errno) }
}
