//! The plan of one sandboxed run, prepared in the parent: every path, mount, landlock rule,
//! limit and the seccomp program, so that the forked children only make system calls.

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use landlock::{ABI, Access, AccessFs, Scope};

use rustix::fs::{Mode, OFlags};

use super::child::{self, Plan, SupervisorLaunch};
use super::layout::{CheckedBind, checked_binds, root_entries};
use super::probe::{cap_last, is_root, landlock_abi};
use super::{
    CpuShare, IsolationError, ListenInside, RunCgroups, SYSTEM_TRUST_BUNDLES, Sandbox, filter,
};
use crate::exec_args::CPointers;

/// System directories bound read-only (symlinks reproduced as symlinks).
pub(crate) const SYSTEM: &[&str] = &["usr", "bin", "sbin", "lib", "lib64", "lib32", "libx32"];

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
    /// The warm sandbox's supervisor executable, held open until the init has executed it.
    _supervisor: Option<OwnedFd>,
    /// The sandbox's mount namespace, sent by the intermediate child: held so that the
    /// namespace is torn down when this is dropped, by a blocking-pool thread, rather than
    /// at the exit of the last process in it, which the run waits for.
    pub(crate) mount_ns: OnceLock<OwnedFd>,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        let Some(mount_ns) = self.mount_ns.take() else {
            return;
        };
        // Closing the last reference unmounts everything in the namespace, which waits for
        // an RCU grace period (about a millisecond): off the caller's path when a runtime is
        // there to take it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            drop(runtime.spawn_blocking(move || drop(mount_ns)));
        }
    }
}

/// Prepares a run of a program in `sandbox`: checks the root, builds every path, the landlock
/// rules and the seccomp programs, creates the cgroups and the status socket. With
/// `supervisor` (the executable of a warm sandbox's supervisor, see [`crate::warm`]), the init
/// executes that instead of confining itself. The run's cgroups get the CPU weight of `cpu`.
///
/// Returns the preparation and the child's end of the status socket, to be closed once the
/// child is spawned.
pub(crate) fn prepare(
    sandbox: &Sandbox,
    cwd: Option<&Path>,
    supervisor: Option<&Path>,
    cpu: CpuShare,
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
        let read_only = sandbox.read_only.iter().any(|ro| ro == name)
            || sandbox
                .writable_entries
                .as_ref()
                .is_some_and(|writable| !writable.iter().any(|entry| entry == name));
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
    // The options of the private `/tmp` and `/dev/shm` (a warm sandbox's calls get fresh ones).
    let scratch = format!("mode=1777,size={memory}");
    ops.extend([
        Op::Mkdir(cstring("/newroot/tmp")?),
        Op::Tmpfs {
            target: cstring("/newroot/tmp")?,
            data: cstring(&scratch)?,
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
            data: cstring(&scratch)?,
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
        RunCgroups::create(limits, 1)
    } else {
        RunCgroups::default()
    };
    if root_user {
        cgroups.require_pids(limits)?;
        cgroups.weigh(cpu).map_err(|source| IsolationError::Setup {
            step: "setting the run's CPU weight".into(),
            source,
        })?;
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

    let (supervisor, supervisor_exe) = match supervisor {
        Some(program) => {
            let args = crate::warm::supervisor_args(
                cap_last,
                &rlimits,
                &scratch,
                &scratch_binds(&binds)?,
                landlock.as_ref(),
            );
            let (launch, exe) = supervisor_launch(program, args)?;
            (Some(launch), Some(exe))
        }
        None => (None, None),
    };
    let (status, child_end) = super::status::socket_pair()?;
    let plan = Plan {
        parent: rustix::process::getpid().as_raw_nonzero().get(),
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
        supervisor,
    };
    Ok((
        Prepared {
            plan: Arc::new(plan),
            status,
            listen_inside: sandbox.listen_inside.clone(),
            _cgroups: cgroups,
            _supervisor: supervisor_exe,
            mount_ns: OnceLock::new(),
        },
        child_end,
    ))
}

/// The binds below `/tmp`, the top-most of each stack and nested ones left out, with whether
/// each is a directory: a warm sandbox's call carries them over the fresh `/tmp` it mounts
/// (each recursively, so what is bound below one comes along), so that they are there as in a
/// cold run. At most [`child::MAX_SCRATCH_BINDS`].
fn scratch_binds(binds: &[CheckedBind]) -> Result<Vec<(CString, bool)>, IsolationError> {
    let below_tmp = |bind: &&CheckedBind| bind.target.starts_with("/tmp");
    let mut carried: Vec<&CheckedBind> = Vec::new();
    for bind in binds.iter().filter(below_tmp) {
        carried.retain(|earlier| earlier.target != bind.target);
        carried.push(bind);
    }
    let tops: Vec<&CheckedBind> = carried
        .iter()
        .copied()
        .filter(|bind| {
            !carried
                .iter()
                .any(|other| other.target != bind.target && bind.target.starts_with(&other.target))
        })
        .collect();
    if tops.len() > child::MAX_SCRATCH_BINDS {
        return Err(IsolationError::Unsupported(format!(
            "a warm sandbox carries at most {} binds below /tmp into its calls; this one has {}",
            child::MAX_SCRATCH_BINDS,
            tops.len()
        )));
    }
    tops.into_iter()
        .map(|bind| Ok((path_c(&bind.target)?, bind.is_dir)))
        .collect()
}

/// Opens the supervisor's executable and prepares its arguments (see
/// [`crate::warm::supervisor_args`]).
fn supervisor_launch(
    program: &Path,
    args: Vec<Vec<u8>>,
) -> Result<(SupervisorLaunch, OwnedFd), IsolationError> {
    let exe = rustix::fs::open(program, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()).map_err(
        |error| {
            IsolationError::Unsupported(format!(
                "cannot open the warm sandbox's supervisor `{}`: {}",
                program.display(),
                std::io::Error::from(error)
            ))
        },
    )?;
    let cstrings =
        |args: Vec<Vec<u8>>| args.into_iter().map(cstring).collect::<Result<Vec<_>, _>>();
    let args = cstrings(args)?;
    let parent_args = cstrings(crate::warm::parent_args())?;
    Ok((
        SupervisorLaunch {
            program: exe.as_raw_fd(),
            argv: CPointers::new(&args),
            envp: CPointers::new(&[]),
            _args: args,
            parent_argv: CPointers::new(&parent_args),
            _parent_args: parent_args,
        },
        exe,
    ))
}
