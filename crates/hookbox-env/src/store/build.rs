//! Creating and updating environments: sources staged, hook files checked, then placed and
//! recorded.

use std::fs;
use std::path::Path;

use hookbox_exec::disk::DiskBudget;
use hookbox_store::Timestamp;

use crate::agents;
use crate::disk::{self, IMAGE};
use crate::environment::{Environment, ID_PREFIX, Metadata, SourceSummary};
use crate::hook_check;
use crate::place;
use crate::sandbox_path::WORKSPACE;
use crate::sources::materialise;
use crate::spec::EnvironmentSpec;

use super::records::{Records, token};
use super::staging::{
    Staging, UNCOMMITTED, create_dir, remove_environment_dir, remove_leftovers, with_budget_hint,
};
use super::{Environments, StoreError, io_error, root_of};

impl Environments {
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
        let mut lease = None;
        let root = match &budget {
            Some(budget) => {
                let image = staging.path.join(IMAGE);
                let mount = disk::create(&image, budget, self.disk_reserve).await;
                staging.image = Some(image.clone());
                let mount = mount?;
                // Held from here, so that no other process unmounts it as unused meanwhile.
                lease = Some(disk::lease(&image)?);
                disk::root(&mount)
            }
            None => staging.path.join("root"),
        };
        create_dir(&root.join(WORKSPACE))?;
        // The base's `.agents` directories its owner did not supply stay the model's, unless
        // this spec's sources write there: then the owner takes them over (emptied first).
        let mut models_agents = Vec::new();
        if let Some(base) = &base {
            materialise::copy_tree(base.root(), &root).map_err(|problem| {
                StoreError::Misplaced {
                    path: "$.from_environment".to_owned(),
                    problem: with_budget_hint(problem, budget),
                }
            })?;
            for dir in base.not_owners_agents() {
                if writes_into(spec, &dir) {
                    agents::take_over(&root, &dir).map_err(io_error(
                        "remove what the model put in",
                        &root.join(dir.trim_start_matches('/')),
                    ))?;
                } else {
                    models_agents.push(dir);
                }
            }
        }
        staging
            .materialise(spec, &root, &self.remote(), budget)
            .await?;
        create_dir(&root.join(WORKSPACE))?;
        self.check_hook_files(&root, &models_agents, None)
            .map_err(|refused| refused_in(spec, &refused))?;
        let owners: Vec<String> = agents::present_in(&root)
            .into_iter()
            .filter(|dir| !models_agents.contains(dir))
            .collect();
        refuse_links_out(spec, &root, &owners)?;
        let now = Timestamp::now().to_string();
        let meta = Metadata {
            id: format!("{ID_PREFIX}{}", token()?),
            created: now.clone(),
            updated: now,
            from_environment: spec.from_environment.clone(),
            agents_writable: spec.agents_writable.unwrap_or(false),
            owner_agents: owners,
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
        let lease = lease.map(|lease| self.keep_lease(&meta.id, lease));
        let environment = Environment::new(meta, root, self.run_dir.clone());
        Ok(match lease {
            Some(lease) => environment.with_lease(lease),
            None => environment,
        })
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
        if current.metadata().agents_writable && spec.agents_writable == Some(false) {
            return Err(StoreError::Misplaced {
                path: "$.agents_writable".to_owned(),
                problem: "`true` cannot be turned off: sessions opened before can still write \
                          the `.agents` directories, and what the model wrote there would run as \
                          the owner's hooks; create a new environment without it whose sources \
                          supply the `.agents` directories"
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
        // A `.agents` directory the model may write in (see `agents::owner_may_add`) is never
        // taken over: every file a hook runs is one the owner wrote.
        let not_owners = current.not_owners_agents();
        if let Some(dir) = agents::present_in(&staged_root)
            .into_iter()
            .find(|dir| not_owners.contains(dir) && !agents::owner_may_add(dir))
        {
            return Err(StoreError::Update {
                id: id.to_owned(),
                problem: agents::not_the_owners(&dir),
            });
        }
        self.check_hook_files(&staged_root, &[], Some((current.root(), &not_owners)))
            .map_err(|refused| refused_in(spec, &refused))?;
        refuse_links_out(spec, &staged_root, &agents::present_in(&staged_root))?;
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
        Ok(current.with_metadata(meta))
    }

    /// Records that the owner wrote `path` (a sandbox path, e.g. by an upload): when it lies in
    /// a `.agents` directory the owner may add (see `agents::owner_may_add`), that directory is
    /// the owner's from now on (read-only to the model unless `agents_writable`).
    pub fn record_owner_write(&self, id: &str, path: &str) -> Result<Environment, StoreError> {
        let current = self.get(id)?;
        let path = format!("/{}", path.trim_start_matches('/'));
        let dirs: Vec<String> = agents::AGENTS_DIRS
            .iter()
            .map(|dir| format!("/{dir}"))
            .filter(|dir| path.starts_with(&format!("{dir}/")) && agents::owner_may_add(dir))
            .collect();
        if dirs.iter().all(|dir| current.owner_agents().contains(dir)) {
            return Ok(current);
        }
        let mut meta = current.metadata().clone();
        add_owner_agents(&mut meta, dirs);
        self.save(&meta)?;
        Ok(current.with_metadata(meta))
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
        let not_owners = environment.not_owners_agents();
        hook_check::check_text(check, &shown, content, |script| {
            !agents::lies_in(script, &not_owners)
                && std::fs::symlink_metadata(
                    environment.root().join(script.trim_start_matches('/')),
                )
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
        not_owners: &[String],
        fallback: Option<(&Path, &[String])>,
    ) -> Result<(), hook_check::Refused> {
        match &self.hook_files {
            Some(check) => hook_check::check_root(check.as_ref(), root, not_owners, fallback),
            None => Ok(()),
        }
    }

    /// Stores the changed metadata of an existing environment: its secrets, then its record,
    /// then removes secrets a network without them left behind.
    fn save(&self, meta: &Metadata) -> Result<(), StoreError> {
        let dir = self.dir.join(&meta.id);
        Records::write_secrets(&dir, meta)?;
        self.records.put(meta)?;
        Records::remove_stale_secrets(&dir, meta)
    }
}

/// The error for a hook file refused after `spec`'s sources were staged.
fn refused_in(spec: &EnvironmentSpec, refused: &hook_check::Refused) -> StoreError {
    StoreError::Misplaced {
        path: writer(spec, &refused.file),
        problem: format!("{refused}; nothing was written"),
    }
}

/// Refuses a link leading out of one of the owner's `.agents` directories `dirs` in the staged
/// `root` (see [`agents::link_out`]), at the source that wrote it.
fn refuse_links_out(
    spec: &EnvironmentSpec,
    root: &Path,
    dirs: &[String],
) -> Result<(), StoreError> {
    for dir in dirs {
        let found = agents::link_out(root, dir)
            .map_err(io_error("inspect", &root.join(dir.trim_start_matches('/'))))?;
        if let Some((link, target)) = found {
            return Err(StoreError::Misplaced {
                path: writer(spec, &link),
                problem: format!(
                    "`{link}` is a symbolic link to `{target}`, out of `{dir}`: an owner hook \
                     would run what lies there, which the model may write; supply the file \
                     itself, or a relative link that stays in `{dir}`; nothing was written"
                ),
            });
        }
    }
    Ok(())
}

/// The JSON path of the last source of `spec` that wrote the sandbox path `file` (or
/// `from_environment`, which copied it).
fn writer(spec: &EnvironmentSpec, file: &str) -> String {
    let writer = spec.sources.iter().rposition(|source| {
        let target = source.target().to_string();
        let target = target.trim_end_matches('/');
        file == target || file.starts_with(&format!("{target}/"))
    });
    match writer {
        Some(index) => format!("$.sources[{index}]"),
        None => "$.from_environment".to_owned(),
    }
}

/// Whether a source of `spec` writes into the sandbox directory `dir` (or replaces it).
fn writes_into(spec: &EnvironmentSpec, dir: &str) -> bool {
    spec.sources.iter().any(|source| {
        let target = source.target().to_string();
        let target = target.trim_end_matches('/');
        target == dir
            || target.starts_with(&format!("{dir}/"))
            || dir.starts_with(&format!("{target}/"))
    })
}

/// Adds `dirs` to the `.agents` directories the owner supplied, keeping them in trust order.
fn add_owner_agents(meta: &mut Metadata, dirs: Vec<String>) {
    meta.owner_agents.extend(dirs);
    meta.owner_agents.sort_by_key(String::len);
    meta.owner_agents.dedup();
}
