//! Running a child inside an isolated Linux sandbox.
//!
//! See the crate documentation for what the sandbox is made of. The parent prepares every
//! path, map, rule and filter ([`plan`]); the forked children only make raw system calls
//! ([`child`]) and report a failed step over the run's status socket ([`status`]); [`probe`]
//! finds out what the kernel and this process allow.

mod cgroup;
mod child;
mod filter;
mod layout;
mod plan;
mod probe;
mod status;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use landlock::ABI;

pub(crate) use cgroup::RunCgroups;
pub(crate) use child::run as enter;
pub(crate) use child::{
    CONTROL_FD, CallMemory, CallSetup, Confinement, Failed, LandlockPlan, MAX_SCRATCH_BINDS,
    RECORD_EXITED, RECORD_FAILED, RECORD_READY, RECORD_STARTED, STEP_CALL_START, STEP_EXEC,
    STEP_REQUEST, ScratchBind, join_cgroups, run_request, send_record, start_call,
};
pub(crate) use filter::program as seccomp_program;
pub(crate) use plan::{Prepared, prepare};
pub use probe::check_isolation;
pub(crate) use probe::is_root;
pub(crate) use status::{Record, async_fd, async_fd_for, receive, setup_error, stop_listening};

/// Resource limits for everything running inside one sandboxed run.
///
/// How each is enforced depends on who runs hookbox:
///
/// | limit | as root | as another user |
/// |---|---|---|
/// | `memory_bytes` | cgroup memory limit for the whole sandbox, or per call of a warm sandbox (v1 `memory.limit_in_bytes`, or v2 `memory.max`) | `RLIMIT_AS` **per process** (no cgroup) |
/// | `max_processes` | cgroup `pids.max` for the whole sandbox, or per call of a warm sandbox; a run is refused when no pids cgroup can be created | `RLIMIT_NPROC`, counted per sandbox (its own user namespace) |
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

/// How much of the CPU a sandboxed run gets while other runs want it too: the weight of its
/// cgroup (v1 `cpu.shares`, v2 `cpu.weight`), where hookbox can create `cpu` cgroups.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CpuShare {
    /// A small share (the default): the model's code, and anything else sandboxed, yields to
    /// hooks and to hookbox itself; with the machine to itself it still gets every core.
    #[default]
    Yielding,
    /// A hundred times that: a hook, which must answer within its timeout however many busy
    /// loops the model's code keeps running beside it.
    Hook,
}

impl CpuShare {
    /// The cgroup v2 `cpu.weight` (1 to 10000; the kernel's default is 100).
    fn weight(self) -> u64 {
        match self {
            Self::Yielding => 10,
            Self::Hook => 1000,
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
    /// When set, the only top-level entries of `root` mounted read-write: every other entry
    /// (whenever it was added) is read-only, whatever `read_only` says. `None`: all but
    /// `read_only`.
    pub writable_entries: Option<Vec<String>>,
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

/// The top-level directories a sandbox takes from this host, read-only (those the host has):
/// a path below one of them names the same file inside as here.
pub const HOST_SYSTEM_DIRS: &[&str] = plan::SYSTEM;

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
            writable_entries: None,
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
        let host = layout::canonical_dir(dir)?;
        Ok(Self {
            root: None,
            read_only: Vec::new(),
            writable_entries: None,
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
        let root = probe::is_root();
        let cgroups = if root {
            RunCgroups::create(&self.limits, 1)
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
            landlock: probe::landlock_abi() != ABI::Unsupported,
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
