//! Per-run cgroups (v1 `pids`, `memory` and `cpu`, or v2 when those controllers are delegated),
//! created by the parent before the spawn: one per cold run, and one per call of a warm
//! sandbox (the call joins it through descriptors the parent opened, see
//! [`RunCgroups::joins`]).
//!
//! **A run starts in cgroups with nothing charged.** A cold run's cgroups, once everything
//! inside has died, go back to a small pool for the next cold run with the same limits
//! (creating and removing them costs about 0.4 ms a run), and are taken from it only while
//! still empty and uncharged: no process, and no memory charged that the kernel could not
//! reclaim for the next run (anonymous, shared or locked; see `UNRECLAIMABLE`). Memory
//! outlives the processes that charged it: a SysV segment is freed only with its IPC
//! namespace, shortly after the sandbox's end; pooled cgroups still charged with such memory
//! are removed instead, so no run is ever short of its limit because of an earlier one. A
//! warm call's cgroups are never pooled ([`RunCgroups::fresh`]): each call, an owner's hook
//! as much as the model's code, gets new ones, removed after it. Emptied cgroups a dead hookbox process left behind are removed the
//! first time this process creates one.
//!
//! **Hooks come first for the CPU.** Each run's `cpu` cgroup gets the weight of its
//! [`CpuShare`], set for the run ([`RunCgroups::weigh`]): a hook's is a hundred times that of
//! the model's code, so busy loops in a call cannot starve a gate running beside them in the
//! same sandbox past its timeout. Without a `cpu` controller runs share the CPU as processes.
//!
//! Used when hookbox runs as root, where `RLIMIT_NPROC` does not apply.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock, PoisonError};
use std::time::Duration;

use super::{CpuShare, IsolationError, Limits};

/// Distinguishes the runs of one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// Emptied cgroups waiting for a run with the same limits.
static POOL: Mutex<Vec<RunCgroups>> = Mutex::new(Vec::new());

/// Emptied cgroups kept per process, at most.
const POOL_SIZE: usize = 4;

/// Prefix of the cgroups hookbox creates: `hookbox-<pid>-<n>`.
const PREFIX: &str = "hookbox-";

/// What the cgroups of one run enforce.
#[derive(Debug, Default)]
pub(crate) struct RunCgroups {
    /// Directories created for this run (removed on drop).
    dirs: Vec<PathBuf>,
    /// Files the child writes `0` into, to join the cgroups, before entering its namespaces:
    /// `tasks` for v1, `cgroup.procs` for v2 (see [`RunCgroups::push_join`]).
    pub(crate) procs: Vec<CString>,
    /// Whether a `pids` limit is in force.
    pub(crate) pids: bool,
    /// Whether a `memory` limit is in force.
    pub(crate) memory: bool,
    /// The file of the `cpu` cgroup's weight, when there is one: v1 `cpu.shares` or v2
    /// `cpu.weight` (see [`RunCgroups::weigh`]).
    cpu: Option<PathBuf>,
    /// The limits the cgroups were set up with (`None` for an empty set).
    limits: Option<Limits>,
    /// hookbox's own processes counted besides the program's (see [`RunCgroups::create`]).
    helpers: u64,
    /// The join files opened for a warm call (see [`RunCgroups::joins`]).
    joins: Vec<OwnedFd>,
    /// Whether these go back to the pool once emptied (a cold run's; see
    /// [`RunCgroups::fresh`]).
    reusable: bool,
}

/// The path of this process's cgroup for `controller` (v1), or for the unified hierarchy
/// when `controller` is empty (`/proc/self/cgroup` is read once per process).
fn own_path(controller: &str) -> Option<String> {
    static OWN: OnceLock<String> = OnceLock::new();
    let text = OWN.get_or_init(|| std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default());
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = if controller.is_empty() {
            controllers.is_empty()
        } else {
            controllers.split(',').any(|c| c == controller)
        };
        matches.then(|| path.to_owned())
    })
}

fn write(path: &Path, value: &str) -> std::io::Result<()> {
    std::fs::write(path, value)
}

impl RunCgroups {
    /// Creates the cgroups limiting `limits` for one run, nested under this process's own
    /// cgroups, with room for `helpers` processes of hookbox's own besides the program's
    /// [`Limits::max_processes`] (a cold run's intermediate process: 1; a warm call joins
    /// its cgroups itself and is the program: 0). What could not be created is left out (see
    /// the flags).
    ///
    /// Taken from the pool when an empty and uncharged set with the same limits waits there,
    /// and pooled again after the run.
    pub(crate) fn create(limits: &Limits, helpers: u64) -> Self {
        if let Some(ready) = take_pooled(limits, helpers) {
            return ready;
        }
        let mut cgroups = Self::fresh(limits, helpers);
        cgroups.reusable = true;
        cgroups
    }

    /// Like [`RunCgroups::create`], but always new and never pooled, removed once emptied: a
    /// warm call's, so that no call, and no hook, runs in cgroups another call ran in.
    pub(crate) fn fresh(limits: &Limits, helpers: u64) -> Self {
        static SWEEP: Once = Once::new();
        SWEEP.call_once(remove_stale);
        let mut cgroups = Self::default();
        cgroups.limits = Some(limits.clone());
        cgroups.helpers = helpers;
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let base = Path::new("/sys/fs/cgroup");
        // cgroup v1 controllers.
        for controller in ["pids", "memory"] {
            let Some(own) = own_path(controller) else {
                continue;
            };
            let dir = base
                .join(controller)
                .join(own.trim_start_matches('/'))
                .join(&name);
            if std::fs::create_dir(&dir).is_err() {
                continue;
            }
            cgroups.dirs.push(dir.clone());
            let ok = match controller {
                "pids" => write(
                    &dir.join("pids.max"),
                    &limits.max_processes.saturating_add(helpers).to_string(),
                )
                .is_ok(),
                _ => {
                    let bytes = limits.memory_bytes.to_string();
                    let ok = write(&dir.join("memory.limit_in_bytes"), &bytes).is_ok();
                    let memsw = dir.join("memory.memsw.limit_in_bytes");
                    // Without swap accounting there is nothing to set; with it, no swapping
                    // past the limit.
                    ok && (!memsw.exists() || write(&memsw, &bytes).is_ok())
                }
            };
            if ok {
                cgroups.flag(controller);
                cgroups.push_join(&dir, "tasks");
            }
        }
        // cgroup v1 `cpu`, weighed per run.
        if let Some(own) = own_path("cpu") {
            let dir = base
                .join("cpu")
                .join(own.trim_start_matches('/'))
                .join(&name);
            if std::fs::create_dir(&dir).is_ok() {
                cgroups.dirs.push(dir.clone());
                cgroups.cpu = Some(dir.join("cpu.shares"));
                cgroups.push_join(&dir, "tasks");
            }
        }
        // cgroup v2, when the controllers are delegated to our cgroup's children.
        if !(cgroups.pids && cgroups.memory && cgroups.cpu.is_some()) {
            cgroups.create_v2(limits, helpers, &name);
        }
        cgroups
    }

    fn flag(&mut self, controller: &str) {
        match controller {
            "pids" => self.pids = true,
            _ => self.memory = true,
        }
    }

    /// Adds `dir/file` to the files the child joins through.
    ///
    /// On v1 that is `tasks`: writing `0` there moves only the calling thread, which the
    /// kernel does without write-locking the global `cgroup_threadgroup_rwsem`, whereas
    /// `cgroup.procs` takes that lock, and taking it waits for an RCU grace period (measured
    /// 6–7 ms here, against 45 µs for `tasks`). The child writing is single-threaded (just
    /// forked), so moving its thread moves the whole process, and everything it forks
    /// afterwards starts in the cgroup. v2 has no such file outside threaded cgroups.
    fn push_join(&mut self, dir: &Path, file: &str) {
        if let Ok(path) = CString::new(dir.join(file).as_os_str().as_bytes()) {
            self.procs.push(path);
        }
    }

    fn create_v2(&mut self, limits: &Limits, helpers: u64, name: &str) {
        let Some(own) = own_path("") else { return };
        // Where the unified hierarchy is mounted (looked up once per process).
        static MOUNT: OnceLock<Option<PathBuf>> = OnceLock::new();
        let Some(mount) = MOUNT.get_or_init(|| {
            let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
            mounts.lines().find_map(|line| {
                let mut fields = line.split_whitespace();
                let (_source, target, kind) = (fields.next()?, fields.next()?, fields.next()?);
                (kind == "cgroup2").then(|| PathBuf::from(target))
            })
        }) else {
            return;
        };
        let parent = mount.join(own.trim_start_matches('/'));
        let delegated =
            std::fs::read_to_string(parent.join("cgroup.subtree_control")).unwrap_or_default();
        let has = |c: &str| delegated.split_whitespace().any(|d| d == c);
        let wanted: Vec<&str> = ["pids", "memory", "cpu"]
            .into_iter()
            .filter(|&c| has(c) && !self.has(c))
            .collect();
        if wanted.is_empty() {
            return;
        }
        let dir = parent.join(name);
        if std::fs::create_dir(&dir).is_err() {
            return;
        }
        self.dirs.push(dir.clone());
        let mut any = false;
        for controller in wanted {
            let ok = match controller {
                "pids" => write(
                    &dir.join("pids.max"),
                    &limits.max_processes.saturating_add(helpers).to_string(),
                )
                .is_ok(),
                "cpu" => {
                    self.cpu = Some(dir.join("cpu.weight"));
                    any = true;
                    continue;
                }
                _ => {
                    let bytes = limits.memory_bytes.to_string();
                    write(&dir.join("memory.max"), &bytes).is_ok()
                        && write(&dir.join("memory.swap.max"), "0").is_ok()
                }
            };
            if ok {
                self.flag(controller);
                any = true;
            }
        }
        if any {
            self.push_join(&dir, "cgroup.procs");
        }
    }

    /// The files the process to limit writes `0` into to join these cgroups (close-on-exec,
    /// write-only), opened the first time: for a warm call, whose supervisor cannot name them
    /// (the cgroup file system is not mounted inside the sandbox). The kernel checks the right to move a process with the credentials of
    /// the opener, this process.
    pub(crate) fn joins(&mut self) -> std::io::Result<&[OwnedFd]> {
        use std::os::unix::fs::OpenOptionsExt;
        if self.joins.len() != self.procs.len() {
            self.joins = self
                .procs
                .iter()
                .map(|procs| {
                    std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_CLOEXEC)
                        .open(std::ffi::OsStr::from_bytes(procs.as_bytes()))
                        .map(OwnedFd::from)
                })
                .collect::<std::io::Result<_>>()?;
        }
        Ok(&self.joins)
    }

    /// Whether any cgroup was created.
    pub(crate) fn is_set(&self) -> bool {
        !self.dirs.is_empty()
    }

    fn has(&self, controller: &str) -> bool {
        match controller {
            "pids" => self.pids,
            "cpu" => self.cpu.is_some(),
            _ => self.memory,
        }
    }

    /// Gives the run in these cgroups the CPU weight of `share` (nothing without a `cpu`
    /// cgroup). Set for each run: a pooled or warm set may have held another kind of run.
    pub(crate) fn weigh(&self, share: CpuShare) -> std::io::Result<()> {
        let Some(file) = &self.cpu else {
            return Ok(());
        };
        let weight = share.weight();
        // v1 `cpu.shares` counts 1024 where v2 `cpu.weight` counts 100.
        let value = if file.ends_with("cpu.shares") {
            weight * 1024 / 100
        } else {
            weight
        };
        write(file, &value.to_string())
    }

    /// Whether a process cap is in force; errors when it is needed and is not.
    pub(crate) fn require_pids(&self, limits: &Limits) -> Result<(), IsolationError> {
        if limits.max_processes == 0 || self.pids {
            return Ok(());
        }
        Err(IsolationError::Unsupported(
            "running as root, the process limit needs a writable `pids` cgroup \
             (/sys/fs/cgroup/pids, or cgroup v2 with `pids` delegated), and none could be \
             created (RLIMIT_NPROC does not apply to root); set `Limits::max_processes` to 0 \
             to run without a process limit"
                .into(),
        ))
    }
}

/// A pooled set of cgroups set up for `limits` and `helpers` that is empty and uncharged, if
/// one is waiting; those found still charged are removed.
fn take_pooled(limits: &Limits, helpers: u64) -> Option<RunCgroups> {
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    loop {
        let index = pool
            .iter()
            .position(|ready| ready.limits.as_ref() == Some(limits) && ready.helpers == helpers)?;
        let mut ready = pool.swap_remove(index);
        if all_empty(&ready.dirs) && uncharged(&ready.dirs) {
            return Some(ready);
        }
        // Removed when dropped, never pooled again.
        ready.reusable = false;
    }
}

/// Whether no process is left in any of `dirs`.
fn all_empty(dirs: &[PathBuf]) -> bool {
    dirs.iter().all(|dir| {
        std::fs::read_to_string(dir.join("cgroup.procs")).is_ok_and(|procs| procs.trim().is_empty())
    })
}

/// The counters of `memory.stat` (v1 and v2 names) that count memory the kernel cannot reclaim
/// without swap (a run's cgroups allow none): anonymous memory, shared memory and tmpfs pages
/// (a SysV segment whose IPC namespace is not freed yet, say), locked pages. A run left
/// nothing charged when each reads 0; what else may stay charged (file pages, kernel caches)
/// the kernel reclaims when a later run needs the room.
const UNRECLAIMABLE: [&str; 5] = ["rss", "rss_huge", "anon", "shmem", "unevictable"];

/// Whether nothing the kernel cannot reclaim is charged in `dirs` (see [`UNRECLAIMABLE`]) and
/// no process is counted (`pids.current`), in the cgroups that have those controllers.
fn uncharged(dirs: &[PathBuf]) -> bool {
    dirs.iter().all(|dir| {
        holds(&dir.join("pids.current"), |count| count.trim() == "0")
            && holds(&dir.join("memory.stat"), |stat| {
                stat.lines().all(|line| {
                    line.split_once(' ').is_none_or(|(counter, value)| {
                        !UNRECLAIMABLE.contains(&counter) || value.trim() == "0"
                    })
                })
            })
    })
}

/// Whether the text of `file` passes `check`; true when the cgroup has no such file (not
/// that controller), false when it cannot be read.
fn holds(file: &Path, check: impl Fn(&str) -> bool) -> bool {
    match std::fs::read_to_string(file) {
        Ok(text) => check(&text),
        Err(error) => error.kind() == std::io::ErrorKind::NotFound,
    }
}

/// Removes the emptied `hookbox-<pid>-<n>` cgroups of processes that no longer exist, next to
/// this process's own cgroups (v1 `pids`, `memory` and `cpu`, and v2).
fn remove_stale() {
    let base = Path::new("/sys/fs/cgroup");
    let mut parents: Vec<PathBuf> = ["pids", "memory", "cpu"]
        .into_iter()
        .filter_map(|controller| {
            own_path(controller).map(|own| base.join(controller).join(own.trim_start_matches('/')))
        })
        .collect();
    if let Some(own) = own_path("") {
        parents.push(base.join(own.trim_start_matches('/')));
        parents.push(base.join("unified").join(own.trim_start_matches('/')));
    }
    for parent in parents {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|name| name.strip_prefix(PREFIX))
                .and_then(|rest| rest.split('-').next())
            else {
                continue;
            };
            if !Path::new("/proc").join(pid).exists() {
                // Fails harmlessly while something still runs inside.
                let _ = std::fs::remove_dir(entry.path());
            }
        }
    }
}

impl Drop for RunCgroups {
    fn drop(&mut self) {
        if let Some(limits) = self.limits.take()
            && self.reusable
            && !self.dirs.is_empty()
            && all_empty(&self.dirs)
        {
            let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            if pool.len() < POOL_SIZE {
                pool.push(Self {
                    dirs: std::mem::take(&mut self.dirs),
                    procs: std::mem::take(&mut self.procs),
                    pids: self.pids,
                    memory: self.memory,
                    cpu: self.cpu.take(),
                    limits: Some(limits),
                    helpers: self.helpers,
                    joins: Vec::new(),
                    reusable: true,
                });
                return;
            }
        }
        let mut left = std::mem::take(&mut self.dirs);
        left.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
        if left.is_empty() {
            return;
        }
        // The last processes of a killed sandbox may take a moment to go.
        let _detached = std::thread::Builder::new()
            .name("hookbox-cgroup-cleanup".into())
            .spawn(move || {
                for _ in 0..500 {
                    std::thread::sleep(Duration::from_millis(10));
                    left.retain(|dir| std::fs::remove_dir(dir).is_err() && dir.exists());
                    if left.is_empty() {
                        return;
                    }
                }
            });
    }
}
