//! Environments: their records in the hookbox database (see [`records`]), their files in
//! `<home>/environments/<id>/root/` (or on the file system of `<id>/disk.img`).
//!
//! [`Environments`] is opened and read here; creating and updating them is in `build`, the
//! credentials a spec names are checked in `spec_credentials`, the staging, crash recovery and
//! removal of their directories is in `staging`, and this process's directory under the home
//! (swept of dead processes' ones) in `run_dir`.

mod build;
mod error;
mod records;
mod run_dir;
mod spec_credentials;
mod staging;

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hookbox_exec::disk::DiskBudget;
use hookbox_net::{ClientOptions, GuardedClient};

use crate::disk::{self, IMAGE};
use crate::environment::{Environment, Metadata, is_environment_id};
use crate::hook_check::HookFileCheck;
use crate::progress::ProgressReport;
use crate::sources::git;
use crate::sources::materialise::Remote;
use crate::spec::EnvironmentSpec;
use crate::warm::WarmSandboxes;
use crate::warm::status::WarmStatus;

pub use error::StoreError;
pub(crate) use error::io_error;
use records::Records;
use staging::{remove_environment_dir, remove_leftovers, settle_directories};

/// The environments kept under one hookbox home.
#[derive(Clone)]
pub struct Environments {
    dir: PathBuf,
    http: Option<GuardedClient>,
    /// The operator's network settings, for repository clones.
    network: ClientOptions,
    /// Whether repositories on this machine (`file://`, paths) may be cloned.
    allow_host_sources: bool,
    disk: Option<DiskBudget>,
    /// The bytes a new environment's image must leave free on the home's file system.
    disk_reserve: u64,
    /// Their records.
    records: Records,
    /// Where creates and updates report the progress of clones and bucket copies.
    progress: Option<ProgressReport>,
    /// The check of the hook files owners supply; none checks nothing.
    hook_files: Option<Arc<dyn HookFileCheck>>,
    /// This process's directory under the home (see [`run_dir`]).
    run_dir: PathBuf,
    /// The warm sandboxes of a serving process, stopped before their environment is deleted.
    warm: Option<WarmSandboxes>,
    /// The file systems this process uses, by environment id: mounted while these handles (and
    /// every [`Environment`] got from them) live, unmounted after the last one on the host.
    leases: Arc<Mutex<HashMap<String, Arc<disk::Lease>>>>,
}

impl std::fmt::Debug for Environments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environments")
            .field("dir", &self.dir)
            .field("allow_host_sources", &self.allow_host_sources)
            .field("disk", &self.disk)
            .field("hook_files", &self.hook_files)
            .finish_non_exhaustive()
    }
}

impl Environments {
    /// `$HOOKBOX_HOME`, else `$XDG_DATA_HOME/hookbox`, else `$HOME/.local/share/hookbox`.
    pub fn default_home() -> Result<PathBuf, StoreError> {
        Self::home_in(|name| std::env::var_os(name))
    }

    /// [`default_home`](Self::default_home) for a process whose environment `var` reads (e.g.
    /// a caller of `hookbox daemon`).
    pub fn home_in(
        var: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<PathBuf, StoreError> {
        // One rule, shared with the thin client `hookbox-hook` (which finds the daemon by it).
        hookbox_handoff::place::home_in(var).ok_or(StoreError::NoHome)
    }

    /// Opens (creating them if needed) `<home>/environments` and the records in
    /// `<home>/hookbox.db`, removing what an interrupted create, update or delete left behind
    /// (and unmounting the file systems of environments whose home was removed without
    /// hookbox). Environments an older hookbox described in an `environment.json` are imported
    /// into the database, once. New environments get the default disk budget
    /// ([`DiskBudget::DEFAULT`]) when this process can mount file systems, and none otherwise
    /// (see [`disk_budget`](Self::disk_budget)).
    pub fn open(home: &Path) -> Result<Self, StoreError> {
        let dir = home.join("environments");
        fs::create_dir_all(&dir).map_err(io_error("create", &dir))?;
        remove_leftovers(&dir)?;
        let records = Records::open(home)?;
        settle_directories(&dir, &records)?;
        let disk = hookbox_exec::disk::can_mount().then_some(DiskBudget::DEFAULT);
        if disk.is_some() {
            disk::sweep_orphans()?;
            // What a killed process left mounted in this home.
            disk::sweep_unleased(
                records
                    .ids()?
                    .into_iter()
                    .map(|id| dir.join(id).join(IMAGE)),
            );
        }
        let run_dir = run_dir::open(home)?;
        Ok(Self {
            dir,
            run_dir,
            http: None,
            network: ClientOptions::default(),
            allow_host_sources: false,
            disk,
            disk_reserve: Self::DEFAULT_DISK_RESERVE,
            records,
            progress: None,
            hook_files: None,
            warm: None,
            leases: Arc::default(),
        })
    }

    /// The same environments, new ones getting `budget` (the server's `[sandbox] disk_bytes`
    /// and `disk_inodes`; a spec's `limits` may lower it) when this process can mount file
    /// systems.
    #[must_use]
    pub fn with_disk_budget(self, budget: DiskBudget) -> Self {
        Self {
            disk: self.disk.map(|_| budget),
            ..self
        }
    }

    /// What [`with_disk_reserve`](Self::with_disk_reserve) keeps free by default: 512 MiB.
    pub const DEFAULT_DISK_RESERVE: u64 = 512 << 20;

    /// The same environments, a new one refused (with [`StoreError::Disk`], naming the free
    /// space and the budget) unless its whole budget can be reserved on the home's file system
    /// with `bytes` still free beside it, for the store's own writes (its database, uploads,
    /// clones).
    #[must_use]
    pub fn with_disk_reserve(self, bytes: u64) -> Self {
        Self {
            disk_reserve: bytes,
            ..self
        }
    }

    /// The budget new environments get; `None` when this process cannot mount file systems
    /// (not root, or no `/dev/loop-control`): environments are then plain directories with
    /// no disk budget, and callers should warn about it.
    pub fn disk_budget(&self) -> Option<DiskBudget> {
        self.disk
    }

    /// Opens the store (as [`open`](Self::open)) with `gs://` sources fetched through a guarded
    /// client built from `options`, the operator's network settings (extra roots, private
    /// ranges, static names), which repository clones follow too; loopback is never permitted
    /// for sources.
    pub fn open_with_network(home: &Path, options: &ClientOptions) -> Result<Self, StoreError> {
        let client = GuardedClient::new(&ClientOptions {
            permit_loopback: false,
            ..options.clone()
        })
        .map_err(|err| StoreError::Io {
            action: "set up the HTTP client for the sources of",
            path: home.to_path_buf(),
            source: io::Error::other(err),
        })?;
        Ok(Self {
            network: options.clone(),
            ..Self::open(home)?.with_http_client(client)
        })
    }

    /// The same environments, cloning `repository` sources on this machine (`file://` URLs and
    /// paths) when `allow` is true; they are refused by default.
    #[must_use]
    pub fn with_host_sources(self, allow: bool) -> Self {
        Self {
            allow_host_sources: allow,
            ..self
        }
    }

    /// The same environments, refusing the hook files owners supply (through sources, updates and
    /// uploads) that `check` refuses, or whose commands name `.agents` scripts that do not
    /// exist; nothing is written then. Without a check, hook files are not checked: every
    /// server and command that takes environments from owners gives hookbox-agent's
    /// `OwnerHookFiles`.
    #[must_use]
    pub fn with_hook_file_check(self, check: Arc<dyn HookFileCheck>) -> Self {
        Self {
            hook_files: Some(check),
            ..self
        }
    }

    /// The same environments, whose sandboxed tools run in `warm` (see
    /// [`BuiltinTools::with_warm_sandboxes`](crate::BuiltinTools::with_warm_sandboxes)), each
    /// stopped before its environment is deleted; `warm` publishes its list in this process's
    /// directory under the home, for [`warm_status`](Self::warm_status).
    #[must_use]
    pub fn with_warm_sandboxes(self, warm: WarmSandboxes) -> Self {
        warm.publish_to(self.run_dir.join(crate::warm::status::FILE_NAME));
        Self {
            warm: Some(warm),
            ..self
        }
    }

    /// The warm sandboxes that the processes serving this home (`hookbox serve`) run now,
    /// sorted by environment id, as they published them.
    pub fn warm_status(&self) -> Vec<WarmStatus> {
        crate::warm::status::read_all(&self.home().join("run"))
    }

    /// The warm sandboxes, when these environments have them (`hookbox serve`).
    pub fn warm_sandboxes(&self) -> Option<&WarmSandboxes> {
        self.warm.as_ref()
    }

    /// The same environments, reporting the progress of repository clones and bucket copies
    /// (of creates and updates) to `report`.
    #[must_use]
    pub fn with_progress(self, report: ProgressReport) -> Self {
        Self {
            progress: Some(report),
            ..self
        }
    }

    /// The same environments, with `gs://` sources fetched through `client` instead of a
    /// guarded client with the strict default options (HTTPS only, public addresses only).
    #[must_use]
    pub fn with_http_client(self, client: GuardedClient) -> Self {
        Self {
            http: Some(client),
            ..self
        }
    }

    /// Updates the environment `spec.environment_id` names, or creates one if it names none.
    pub async fn apply(&self, spec: &EnvironmentSpec) -> Result<Environment, StoreError> {
        match &spec.environment_id {
            Some(id) => self.update(id, spec).await,
            None => self.create(spec).await,
        }
    }

    /// The environment `id`, its file system mounted (again, after a reboot) if it has a disk
    /// budget, and kept mounted while the environment, or these environments, live.
    pub fn get(&self, id: &str) -> Result<Environment, StoreError> {
        let environment = self.describe(id)?;
        if environment.metadata().limits.is_none() {
            return Ok(environment);
        }
        let lease = self.lease(id, &self.dir.join(id))?;
        Ok(environment.with_lease(lease))
    }

    /// The environment `id` as its record describes it, mounting nothing: for reading its
    /// metadata (its files may not be reachable through it).
    pub fn describe(&self, id: &str) -> Result<Environment, StoreError> {
        let meta = self.metadata(id)?;
        let root = root_of(&meta, &self.dir.join(id))?;
        Ok(Environment::new(meta, root, self.run_dir.clone()))
    }

    /// This process's lease on the file system of environment `id` (in `dir`), mounting it
    /// first if no process holds one.
    fn lease(&self, id: &str, dir: &Path) -> Result<Arc<disk::Lease>, StoreError> {
        let mut leases = self.leases.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(lease) = leases.get(id) {
            return Ok(Arc::clone(lease));
        }
        let lease = Arc::new(disk::lease(&dir.join(IMAGE))?);
        leases.insert(id.to_owned(), Arc::clone(&lease));
        Ok(lease)
    }

    /// Keeps `lease`, on the file system of the new environment `id`, as this process's.
    fn keep_lease(&self, id: &str, lease: disk::Lease) -> Arc<disk::Lease> {
        let lease = Arc::new(lease);
        self.leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned(), Arc::clone(&lease));
        lease
    }

    /// The metadata of environment `id`.
    fn metadata(&self, id: &str) -> Result<Metadata, StoreError> {
        let not_found = || StoreError::NotFound { id: id.to_owned() };
        if !is_environment_id(id) {
            return Err(not_found());
        }
        let dir = self.dir.join(id);
        if !dir.is_dir() {
            return Err(not_found());
        }
        self.records.load(id, &dir)?.ok_or_else(not_found)
    }

    /// Every environment, oldest first.
    pub fn list(&self) -> Result<Vec<Environment>, StoreError> {
        let mut all = Vec::new();
        for id in self.records.ids()? {
            let meta = match self.metadata(&id) {
                Ok(meta) => meta,
                Err(StoreError::NotFound { .. }) => continue,
                Err(err) => return Err(err),
            };
            match root_of(&meta, &self.dir.join(&id)) {
                Ok(root) => all.push(Environment::new(meta, root, self.run_dir.clone())),
                Err(StoreError::NotFound { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        all.sort_by(|a, b| (a.created(), a.id()).cmp(&(b.created(), b.id())));
        Ok(all)
    }

    /// Deletes environment `id` and all its files (unmounting its file system, whose loop
    /// device then detaches itself), after stopping its warm sandbox. A process without warm
    /// sandboxes of its own (`hookbox env rm`) refuses with [`StoreError::InUse`] while a
    /// serving process runs the environment's warm sandbox (its files are mounted there).
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let meta = self.metadata(id)?;
        match &self.warm {
            Some(warm) => warm.stop(id),
            None => {
                if let Some(running) = self
                    .warm_status()
                    .into_iter()
                    .find(|status| status.environment_id == id)
                {
                    return Err(StoreError::InUse {
                        id: id.to_owned(),
                        supervisor_pid: running.supervisor_pid,
                    });
                }
            }
        }
        let dir = self.dir.join(id);
        self.leases
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(id);
        if meta.limits.is_some() {
            disk::unmount(&dir.join(IMAGE))?;
        }
        self.records.remove(id)?;
        remove_environment_dir(&self.dir, &dir)
    }

    /// What remote sources need: the client and the hookbox home.
    fn remote(&self) -> Remote<'_> {
        Remote {
            client: self.http.as_ref(),
            home: self.home(),
            clones: git::CloneRules {
                network: &self.network,
                run_dir: &self.run_dir,
                allow_host_sources: self.allow_host_sources,
            },
            progress: self.progress.as_deref(),
        }
    }

    /// The hookbox home these environments are kept under.
    fn home(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }
}

/// Where the root of the environment described by `meta` in `dir` is: on its file system
/// (mounted or not) when it has a disk budget, else `dir/root`.
fn root_of(meta: &Metadata, dir: &Path) -> Result<PathBuf, StoreError> {
    if meta.limits.is_some() {
        Ok(disk::root(&disk::mount_point(&dir.join(IMAGE))?))
    } else {
        Ok(dir.join("root"))
    }
}
