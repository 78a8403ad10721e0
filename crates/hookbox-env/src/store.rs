//! Environments: their records in the hookbox database (see `records`), their files in
//! `<home>/environments/<id>/root/` (or on the file system of `<id>/disk.img`).

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookbox_exec::disk::{DiskBudget, DiskError};
use hookbox_net::{ClientOptions, CredentialSource, EgressPolicy, GuardedClient};
use hookbox_store::Timestamp;
use rustix::fs::FlockOperation;
use rustix::io::Errno;

use crate::agents;
use crate::credentials::CredentialStore;
use crate::disk::{self, IMAGE};
use crate::env_vars::EnvValue;
use crate::environment::{Environment, ID_PREFIX, Metadata, SourceSummary, is_environment_id};
use crate::gcs;
use crate::git;
use crate::hook_check::{self, HookFileCheck};
use crate::materialise::{self, Remote, SourceFailure};
use crate::place;
use crate::progress::ProgressReport;
use crate::records::{LEGACY_METADATA, Records, token};
use crate::sandbox_path::WORKSPACE;
use crate::sources::Source;
use crate::spec::EnvironmentSpec;

/// Marks an environment directory renamed into place whose record is not stored yet; removed
/// by [`Environments::open`] if a crash left it so.
const UNCOMMITTED: &str = ".uncommitted";

/// Prefix of directories being built; removed by [`Environments::open`] after a crash.
const STAGING_PREFIX: &str = ".staging-";

/// Prefix of directories being deleted; removed by [`Environments::open`] after a crash.
const TRASH_PREFIX: &str = ".trash-";

/// Why an environment operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No environment has this id (or the id is malformed).
    #[error("environment `{id}` not found; list the environments to see which exist")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// A source could not be written; nothing was changed.
    #[error("invalid environment at `$.sources[{index}]`: {problem}")]
    Source {
        /// Index of the source in the spec's `sources`.
        index: usize,
        /// What went wrong and what to do.
        problem: String,
    },
    /// The update's files clash with the environment's; nothing was changed.
    #[error("cannot update environment `{id}`: {problem}")]
    Update {
        /// The environment.
        id: String,
        /// What went wrong and what to do.
        problem: String,
    },
    /// The spec asks for something this operation does not do.
    #[error("invalid environment at `{path}`: {problem}")]
    Misplaced {
        /// JSON path of the field.
        path: String,
        /// What to do instead.
        problem: String,
    },
    /// The environment's file system (its disk budget) could not be made, mounted or
    /// unmounted.
    #[error(transparent)]
    Disk(#[from] DiskError),
    /// No place to keep environments was configured.
    #[error("cannot tell where to keep environments: set HOOKBOX_HOME (or XDG_DATA_HOME or HOME)")]
    NoHome,
    /// A filesystem operation on hookbox's own files failed.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
}

/// The `Io` error for `action` on `path`.
pub(crate) fn io_error(
    action: &'static str,
    path: &Path,
) -> impl FnOnce(io::Error) -> StoreError + use<> {
    let path = path.to_path_buf();
    move |source| StoreError::Io {
        action,
        path,
        source,
    }
}

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
    /// Their records.
    records: Records,
    /// Where creates and updates report the progress of clones and bucket copies.
    progress: Option<ProgressReport>,
    /// The check of the hook files owners supply; none checks nothing.
    hook_files: Option<Arc<dyn HookFileCheck>>,
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
        let var =
            |name| std::env::var_os(name).filter(|value: &std::ffi::OsString| !value.is_empty());
        if let Some(home) = var("HOOKBOX_HOME") {
            return Ok(PathBuf::from(home));
        }
        if let Some(data) = var("XDG_DATA_HOME") {
            return Ok(PathBuf::from(data).join("hookbox"));
        }
        var("HOME")
            .map(|home| PathBuf::from(home).join(".local/share/hookbox"))
            .ok_or(StoreError::NoHome)
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
        }
        Ok(Self {
            dir,
            http: None,
            network: ClientOptions::default(),
            allow_host_sources: false,
            disk,
            records,
            progress: None,
            hook_files: None,
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

    /// Creates an environment from `spec` (it must not name `environment_id`). Either the
    /// whole environment appears or nothing does: it is built in a staging directory that is
    /// renamed into place, then its record is stored (a crash in between leaves a directory
    /// marked uncommitted, which [`open`](Self::open) removes).
    pub async fn create(&self, spec: &EnvironmentSpec) -> Result<Environment, StoreError> {
        if spec.environment_id.is_some() {
            return Err(StoreError::Misplaced {
                path: "$.environment_id".to_owned(),
                problem: "creating an environment cannot update one; call update (or apply)"
                    .to_owned(),
            });
        }
        let base = spec
            .from_environment
            .as_deref()
            .map(|from| self.get(from))
            .transpose()?;
        self.check_credentials(spec)?;
        let budget = self.budget_for(spec)?;
        let mut staging = Staging::new(&self.dir)?;
        let root = match &budget {
            Some(budget) => {
                let image = staging.path.join(IMAGE);
                let mount = disk::create(&image, budget).await;
                staging.image = Some(image);
                disk::root(&mount?)
            }
            None => staging.path.join("root"),
        };
        create_dir(&root.join(WORKSPACE))?;
        if let Some(base) = &base {
            materialise::copy_tree(base.root(), &root).map_err(|problem| {
                StoreError::Misplaced {
                    path: "$.from_environment".to_owned(),
                    problem: with_budget_hint(problem, budget),
                }
            })?;
        }
        staging
            .materialise(spec, &root, &self.remote(), budget)
            .await?;
        create_dir(&root.join(WORKSPACE))?;
        self.check_hook_files(&root, None)
            .map_err(|refused| refused_in(spec, &refused))?;
        let now = Timestamp::now().to_string();
        let meta = Metadata {
            id: hookbox_store::new_id(ID_PREFIX).map_err(io_error(
                "read random bytes from",
                Path::new("/dev/urandom"),
            ))?,
            created: now.clone(),
            updated: now,
            from_environment: spec.from_environment.clone(),
            agents_writable: spec.agents_writable.unwrap_or(false),
            owner_agents: agents::present_in(&root),
            sources: spec.sources.iter().map(SourceSummary::of).collect(),
            network: spec.network.clone(),
            env: spec.env.clone().unwrap_or_default(),
            limits: budget.map(Into::into),
        };
        Records::write_secrets(&staging.path, &meta)?;
        let marker = staging.path.join(UNCOMMITTED);
        fs::write(&marker, b"").map_err(io_error("create", &marker))?;
        let final_dir = self.dir.join(&meta.id);
        fs::rename(&staging.path, &final_dir).map_err(io_error("move into place", &final_dir))?;
        // Still locked by `staging`: `open` in another process leaves it alone meanwhile.
        if let Err(err) = self.records.put(&meta) {
            let _ = remove_environment_dir(&self.dir, &final_dir);
            return Err(err);
        }
        let marker = final_dir.join(UNCOMMITTED);
        fs::remove_file(&marker).map_err(io_error("remove", &marker))?;
        let root = root_of(&meta, &final_dir)?;
        Ok(Environment::new(meta, root))
    }

    /// The budget of the environment `spec` creates: the server's, lowered by `spec.limits`;
    /// `None` when this server cannot mount file systems (then `limits` is refused).
    fn budget_for(&self, spec: &EnvironmentSpec) -> Result<Option<DiskBudget>, StoreError> {
        match (self.disk, spec.limits) {
            (Some(server), limits) => limits
                .unwrap_or_default()
                .within(server)
                .map(Some)
                .map_err(|(path, problem)| StoreError::Misplaced { path, problem }),
            (None, Some(_)) => Err(StoreError::Misplaced {
                path: "$.limits".to_owned(),
                problem: "this server cannot enforce disk budgets (it needs root and \
                          /dev/loop-control to mount a file system per environment); leave \
                          `limits` out"
                    .to_owned(),
            }),
            (None, None) => Ok(None),
        }
    }

    /// Adds `spec`'s sources to environment `id` (files they write replace existing ones) and
    /// replaces its network, env and `agents_writable` where `spec` gives them. Sources are
    /// fetched into a staging directory first; nothing changes if any of them fails.
    pub async fn update(
        &self,
        id: &str,
        spec: &EnvironmentSpec,
    ) -> Result<Environment, StoreError> {
        let current = self.get(id)?;
        if let Some(other) = spec.environment_id.as_deref().filter(|other| *other != id) {
            return Err(StoreError::Misplaced {
                path: "$.environment_id".to_owned(),
                problem: format!("names `{other}`, but the update is for `{id}`"),
            });
        }
        if spec.from_environment.is_some() {
            return Err(StoreError::Misplaced {
                path: "$.from_environment".to_owned(),
                problem: "an existing environment cannot be re-based; create a new one".to_owned(),
            });
        }
        if spec.limits.is_some() {
            return Err(StoreError::Misplaced {
                path: "$.limits".to_owned(),
                problem: "an environment's disk budget is fixed when it is created; create a \
                          new one with `from_environment` and the `limits` you need"
                    .to_owned(),
            });
        }
        self.check_credentials(spec)?;
        let budget = current.disk_budget();
        // With a budget, stage on the environment's own file system: the staged files count
        // against it, and they are renamed into place without crossing file systems.
        let staging_dir = match (budget, current.root().parent()) {
            (Some(_), Some(mount)) => {
                remove_leftovers(mount)?;
                mount.to_path_buf()
            }
            _ => self.dir.clone(),
        };
        let staging = Staging::new(&staging_dir)?;
        let staged_root = staging.path.join("root");
        create_dir(&staged_root)?;
        staging
            .materialise(spec, &staged_root, &self.remote(), budget)
            .await?;
        self.check_hook_files(&staged_root, Some(current.root()))
            .map_err(|refused| refused_in(spec, &refused))?;
        place::place(&staged_root, current.root()).map_err(|problem| StoreError::Update {
            id: id.to_owned(),
            problem,
        })?;
        let mut meta = current.metadata().clone();
        meta.updated = Timestamp::now().to_string();
        add_owner_agents(&mut meta, agents::present_in(&staged_root));
        meta.sources
            .extend(spec.sources.iter().map(SourceSummary::of));
        if let Some(network) = &spec.network {
            meta.network = Some(network.clone());
        }
        if let Some(env) = &spec.env {
            meta.env = env.clone();
        }
        if let Some(agents_writable) = spec.agents_writable {
            meta.agents_writable = agents_writable;
        }
        self.save(&meta)?;
        Ok(Environment::new(meta, current.root().to_path_buf()))
    }

    /// Records that the owner wrote `path` (a sandbox path, e.g. by an upload): when it lies in
    /// one of the `.agents` directories hooks are discovered in, that directory is the owner's
    /// from now on (read-only to the model unless `agents_writable`).
    pub fn record_owner_write(&self, id: &str, path: &str) -> Result<Environment, StoreError> {
        let current = self.get(id)?;
        let path = format!("/{}", path.trim_start_matches('/'));
        let dirs: Vec<String> = agents::AGENTS_DIRS
            .iter()
            .map(|dir| format!("/{dir}"))
            .filter(|dir| path.starts_with(&format!("{dir}/")))
            .collect();
        if dirs.iter().all(|dir| current.owner_agents().contains(dir)) {
            return Ok(current);
        }
        let mut meta = current.metadata().clone();
        add_owner_agents(&mut meta, dirs);
        self.save(&meta)?;
        Ok(Environment::new(meta, current.root().to_path_buf()))
    }

    /// Checks a file the owner is about to write at `path` (a sandbox path) with `content`, as
    /// an upload does: a hook file must parse with no error and name only existing
    /// `.agents` scripts (see [`create`](Self::create)); other files pass.
    pub fn check_owner_file(
        &self,
        environment: &Environment,
        path: &str,
        content: &[u8],
    ) -> Result<(), StoreError> {
        let shown = format!("/{}", path.trim_start_matches('/'));
        let is_hook_file = agents::AGENTS_DIRS
            .iter()
            .any(|dir| shown == format!("/{dir}/hooks.json"));
        let Some(check) = self.hook_files.as_deref().filter(|_| is_hook_file) else {
            return Ok(());
        };
        hook_check::check_text(check, &shown, content, |script| {
            std::fs::symlink_metadata(environment.root().join(script.trim_start_matches('/')))
                .is_ok()
        })
        .map_err(|refused| StoreError::Misplaced {
            path: shown.clone(),
            problem: format!("{refused}; nothing was written"),
        })
    }

    /// Checks the hook files in `root` (see [`hook_check::check_root`]) when there is a check.
    fn check_hook_files(
        &self,
        root: &Path,
        fallback: Option<&Path>,
    ) -> Result<(), hook_check::Refused> {
        match &self.hook_files {
            Some(check) => hook_check::check_root(check.as_ref(), root, fallback),
            None => Ok(()),
        }
    }

    /// Stores the changed metadata of an existing environment: its secrets, then its record.
    fn save(&self, meta: &Metadata) -> Result<(), StoreError> {
        Records::write_secrets(&self.dir.join(&meta.id), meta)?;
        self.records.put(meta)
    }

    /// What remote sources need: the client and the hookbox home.
    fn remote(&self) -> Remote<'_> {
        Remote {
            client: self.http.as_ref(),
            home: self.home(),
            clones: git::CloneRules {
                network: &self.network,
                allow_host_sources: self.allow_host_sources,
            },
            progress: self.progress.as_deref(),
        }
    }

    /// The hookbox home these environments are kept under.
    fn home(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }

    /// Refuses a spec that names a credential this server does not hold (in
    /// `network.allowlist[i].credential`, an `env` value or a `gs://` source), or binds one to a
    /// domain it may not be sent to (an allowlist entry's `domain`, Cloud Storage's host),
    /// before anything is written.
    fn check_credentials(&self, spec: &EnvironmentSpec) -> Result<(), StoreError> {
        let network = spec
            .network
            .as_ref()
            .filter(|network| names_credential(network));
        let mut wanted: Vec<(String, &str, Option<&str>)> = Vec::new();
        for var in spec.env.iter().flatten() {
            if let EnvValue::Credential { credential } = &var.value {
                wanted.push((format!("$.env.{}.credential", var.name), credential, None));
            }
        }
        for (index, source) in spec.sources.iter().enumerate() {
            if let Source::CloudStorage {
                credential: Some(credential),
                ..
            } = source
            {
                let path = format!("$.sources[{index}].credential");
                wanted.push((path, credential, Some(gcs::HOST)));
            }
        }
        let Some(first_path) = network
            .map(|_| "$.network".to_owned())
            .or_else(|| wanted.first().map(|(path, _, _)| path.clone()))
        else {
            return Ok(());
        };
        let store = CredentialStore::open(self.home()).map_err(|err| StoreError::Misplaced {
            path: first_path,
            problem: format!("cannot read the credential store: {err}"),
        })?;
        if let Some(network) = network {
            EgressPolicy::from_network_with_credentials(Some(network), &store).map_err(
                |error| StoreError::Misplaced {
                    path: format!("$.{}", error.path),
                    problem: error.reason,
                },
            )?;
        }
        for (path, id, host) in wanted {
            let found = store.credential(id).map_err(|err| StoreError::Misplaced {
                path: path.clone(),
                problem: format!("cannot read credential `{id}`: {err}"),
            })?;
            let Some(found) = found else {
                return Err(StoreError::Misplaced {
                    path,
                    problem: format!(
                        "this server has no credential named `{id}`; add it with \
                         `hookbox credentials add {id} --domain HOST` (the value is read from \
                         stdin)"
                    ),
                });
            };
            if let Some(host) = host
                && let Err(problem) = gcs::check_credential_domain(id, &found, host)
            {
                return Err(StoreError::Misplaced { path, problem });
            }
        }
        Ok(())
    }

    /// Updates the environment `spec.environment_id` names, or creates one if it names none.
    pub async fn apply(&self, spec: &EnvironmentSpec) -> Result<Environment, StoreError> {
        match &spec.environment_id {
            Some(id) => self.update(id, spec).await,
            None => self.create(spec).await,
        }
    }

    /// The environment `id`, its file system mounted (again, after a reboot) if it has a disk
    /// budget.
    pub fn get(&self, id: &str) -> Result<Environment, StoreError> {
        let meta = self.metadata(id)?;
        let dir = self.dir.join(id);
        if meta.limits.is_some() {
            disk::mount(&dir.join(IMAGE))?;
        }
        let root = root_of(&meta, &dir)?;
        Ok(Environment::new(meta, root))
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
                Ok(root) => all.push(Environment::new(meta, root)),
                Err(StoreError::NotFound { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        all.sort_by(|a, b| (a.created(), a.id()).cmp(&(b.created(), b.id())));
        Ok(all)
    }

    /// Deletes environment `id` and all its files (unmounting its file system, whose loop
    /// device then detaches itself).
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let meta = self.metadata(id)?;
        let dir = self.dir.join(id);
        if meta.limits.is_some() {
            disk::unmount(&dir.join(IMAGE))?;
        }
        self.records.remove(id)?;
        remove_environment_dir(&self.dir, &dir)
    }
}

/// Removes the `.staging-*` and `.trash-*` directories in `dir` that no live operation holds
/// (a crash's leftovers), unmounting a staged environment's file system first.
fn remove_leftovers(dir: &Path) -> Result<(), StoreError> {
    for entry in fs::read_dir(dir).map_err(io_error("read", dir))? {
        let entry = entry.map_err(io_error("read", dir))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with(STAGING_PREFIX) || name.starts_with(TRASH_PREFIX)) {
            continue;
        }
        let path = entry.path();
        // Another process's create or update in progress holds its staging directory locked.
        let Ok(handle) = File::open(&path) else {
            continue;
        };
        if rustix::fs::flock(&handle, FlockOperation::NonBlockingLockExclusive).is_err() {
            continue;
        }
        let image = path.join(IMAGE);
        if image.exists() {
            disk::unmount(&image)?;
        }
        fs::remove_dir_all(&path).map_err(io_error("remove leftover", &path))?;
    }
    Ok(())
}

/// Settles the environment directories against their records: a directory a crash left
/// uncommitted (renamed into place, its record not stored) is removed unless a live create
/// holds it; an `environment.json` of an older hookbox is imported. A directory with neither a
/// record nor either file is left alone (it is not listed).
fn settle_directories(dir: &Path, records: &Records) -> Result<(), StoreError> {
    let recorded: std::collections::HashSet<String> = records.ids()?.into_iter().collect();
    for entry in fs::read_dir(dir).map_err(io_error("read", dir))? {
        let entry = entry.map_err(io_error("read", dir))?;
        let Some(id) = entry
            .file_name()
            .to_str()
            .filter(|name| is_environment_id(name))
            .map(str::to_owned)
        else {
            continue;
        };
        let path = entry.path();
        let marker = path.join(UNCOMMITTED);
        if marker.exists() {
            if recorded.contains(&id) {
                fs::remove_file(&marker).map_err(io_error("remove", &marker))?;
            } else if let Ok(handle) = File::open(&path)
                && rustix::fs::flock(&handle, FlockOperation::NonBlockingLockExclusive).is_ok()
            {
                let image = path.join(IMAGE);
                if image.exists() {
                    disk::unmount(&image)?;
                }
                remove_environment_dir(dir, &path)?;
            }
        } else if !recorded.contains(&id) && path.join(LEGACY_METADATA).exists() {
            records.import_legacy(&path)?;
        }
    }
    Ok(())
}

/// Removes the environment directory `env_dir` of `dir`: renamed aside first, so that a
/// crash leaves a `.trash-*` directory that [`Environments::open`] removes.
fn remove_environment_dir(dir: &Path, env_dir: &Path) -> Result<(), StoreError> {
    let trash = dir.join(format!("{TRASH_PREFIX}{}", token()?));
    fs::rename(env_dir, &trash).map_err(io_error("move aside", env_dir))?;
    fs::remove_dir_all(&trash).map_err(io_error("remove", &trash))
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

/// `problem` with a note that the disk budget is used up, when it says so (`ENOSPC`,
/// `EDQUOT`) and there is a budget.
fn with_budget_hint(problem: String, budget: Option<DiskBudget>) -> String {
    let full = [Errno::NOSPC, Errno::DQUOT]
        .iter()
        .any(|errno| problem.contains(&format!("(os error {})", errno.raw_os_error())));
    match budget {
        Some(budget) if full => format!(
            "{problem}; the environment's disk budget ({} bytes, {} inodes) is used up: make \
             the sources smaller or ask for larger `limits` (up to the server's)",
            budget.bytes, budget.inodes
        ),
        _ => problem,
    }
}

/// A private directory (under `environments/`, or on an environment's file system for an
/// update), locked while it lives and removed when dropped unless renamed away; a staged
/// environment's file system is unmounted with it.
struct Staging {
    path: PathBuf,
    image: Option<PathBuf>,
    _lock: File,
}

impl Staging {
    /// Creates and locks `dir/.staging-<random>`.
    fn new(dir: &Path) -> Result<Self, StoreError> {
        let path = dir.join(format!("{STAGING_PREFIX}{}", token()?));
        create_dir(&path)?;
        let lock = File::open(&path).map_err(io_error("open", &path))?;
        rustix::fs::flock(&lock, FlockOperation::LockExclusive)
            .map_err(|err| io_error("lock", &path)(err.into()))?;
        Ok(Self {
            path,
            image: None,
            _lock: lock,
        })
    }

    /// Writes `spec`'s sources below `root`, cloning into a scratch directory; a failure for
    /// want of room says that `budget` is used up.
    async fn materialise(
        &self,
        spec: &EnvironmentSpec,
        root: &Path,
        remote: &Remote<'_>,
        budget: Option<DiskBudget>,
    ) -> Result<(), StoreError> {
        let scratch = self.path.join("scratch");
        create_dir(&scratch)?;
        materialise::materialise(&spec.sources, root, &scratch, remote)
            .await
            .map_err(|SourceFailure { index, problem }| StoreError::Source {
                index,
                problem: with_budget_hint(problem, budget),
            })?;
        fs::remove_dir_all(&scratch).map_err(io_error("remove", &scratch))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Already renamed into place on success; otherwise `open` retries what fails here.
        if self.path.exists() {
            if let Some(image) = &self.image {
                let _ = disk::unmount(image);
            }
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// The error for a hook file refused after `spec`'s sources were staged: at the last source
/// that wrote it (or `from_environment`, which copied it).
fn refused_in(spec: &EnvironmentSpec, refused: &hook_check::Refused) -> StoreError {
    let writer = spec.sources.iter().rposition(|source| {
        let target = source.target().to_string();
        let target = target.trim_end_matches('/');
        refused.file == target || refused.file.starts_with(&format!("{target}/"))
    });
    StoreError::Misplaced {
        path: match writer {
            Some(index) => format!("$.sources[{index}]"),
            None => "$.from_environment".to_owned(),
        },
        problem: format!("{refused}; nothing was written"),
    }
}

/// Adds `dirs` to the `.agents` directories the owner supplied, keeping them in trust order.
fn add_owner_agents(meta: &mut Metadata, dirs: Vec<String>) {
    meta.owner_agents.extend(dirs);
    meta.owner_agents.sort_by_key(String::len);
    meta.owner_agents.dedup();
}

/// Creates `path` and its missing parents.
fn create_dir(path: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(path).map_err(io_error("create", path))
}

/// Whether some `allowlist` entry of `network` names a `credential`.
fn names_credential(network: &serde_json::Value) -> bool {
    network
        .get("allowlist")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|entries| {
            entries
                .iter()
                .any(|entry| entry.get("credential").is_some())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_removes_leftovers_of_a_crash() {
        let home = tempfile::tempdir().unwrap();
        let envs = home.path().join("environments");
        fs::create_dir_all(envs.join(".staging-abc/root/workspace")).unwrap();
        fs::create_dir_all(envs.join(".trash-abc/root")).unwrap();
        Environments::open(home.path()).unwrap();
        let left: Vec<_> = fs::read_dir(&envs).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn open_keeps_what_a_live_create_of_another_process_stages() {
        let home = tempfile::tempdir().unwrap();
        let envs = home.path().join("environments");
        fs::create_dir_all(&envs).unwrap();
        // What another process's create holds (flock: per open file, so this conflicts too).
        let live = Staging::new(&envs).unwrap();
        fs::write(live.path.join("file"), "x").unwrap();
        Environments::open(home.path()).unwrap();
        assert!(live.path.join("file").exists());
        drop(live);
        let left: Vec<_> = fs::read_dir(&envs).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
