//! One stored environment: its metadata and where its files are.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookbox_exec::disk::DiskBudget;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::disk::Lease;
use crate::env_vars::{EnvValue, EnvVar};
use crate::sandbox_path::{AGENTS, WORKSPACE};
use crate::sources::{DirectoryKind, Source};

/// Prefix of every environment id (`env_` + 26 lowercase base32 characters).
pub(crate) const ID_PREFIX: &str = "env_";

/// Whether `id` has the shape of an environment id (so it is safe as a directory name).
pub(crate) fn is_environment_id(id: &str) -> bool {
    hookbox_store::is_generated_id(ID_PREFIX, id)
}

/// What one source put in the environment, as recorded in its metadata (inline contents are
/// not duplicated: they are in the files).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSummary {
    /// `inline`, `repository`, `gcs` or `local`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Sandbox path written, e.g. `/.agents/hooks.json`.
    pub target: String,
    /// Repository URL, directory or `gs://` prefix the files came from (not for `inline`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Branch or tag cloned (`repository` only).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Size of the file written (`inline` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
}

impl SourceSummary {
    /// The summary of `source`.
    pub(crate) fn of(source: &Source) -> Self {
        let target = source.target().to_string();
        match source {
            Source::Inline { content, .. } => Self {
                kind: "inline".to_owned(),
                target,
                source: None,
                git_ref: None,
                size_bytes: Some(content.len() as u64),
            },
            Source::Repository { url, git_ref, .. } => Self {
                kind: "repository".to_owned(),
                target,
                source: Some(url.clone()),
                git_ref: git_ref.clone(),
                size_bytes: None,
            },
            Source::CloudStorage { bucket, prefix, .. } => Self {
                kind: "gcs".to_owned(),
                target,
                source: Some(format!("gs://{bucket}/{prefix}")),
                git_ref: None,
                size_bytes: None,
            },
            Source::Directory { kind, dir, .. } => Self {
                kind: match kind {
                    DirectoryKind::Gcs => "gcs",
                    DirectoryKind::Local => "local",
                }
                .to_owned(),
                target,
                source: Some(dir.display().to_string()),
                git_ref: None,
                size_bytes: None,
            },
        }
    }
}

/// An environment's record: kept in the hookbox database (see `records`), its allowlist's
/// `transform` secrets beside its root.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Metadata {
    pub(crate) id: String,
    pub(crate) created: String,
    pub(crate) updated: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) from_environment: Option<String>,
    pub(crate) agents_writable: bool,
    /// The `.agents` directories (`/.agents`, `/workspace/.agents`) the owner supplied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) owner_agents: Vec<String>,
    pub(crate) sources: Vec<SourceSummary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) network: Option<Value>,
    pub(crate) env: Vec<EnvVar>,
    /// The disk budget its file system was made with; `None` for an environment kept in a
    /// plain directory (a server that cannot mount).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) limits: Option<DiskLimits>,
}

impl Metadata {
    /// The metadata as JSON with every `transform` header value of the allowlist replaced by
    /// `[REDACTED]`: what the database keeps and the API shows.
    pub(crate) fn redacted(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(network) = value.get_mut("network") {
            redact_network(network);
        }
        value
    }
}

/// Replaces every `transform` header value of `network`'s allowlist with `[REDACTED]`; says
/// whether there was any.
pub(crate) fn redact_network(network: &mut Value) -> bool {
    let rules = network.get_mut("allowlist").and_then(Value::as_array_mut);
    let mut any = false;
    for transform in rules
        .into_iter()
        .flatten()
        .filter_map(|rule| rule.get_mut("transform"))
    {
        redact_headers(transform);
        any = true;
    }
    any
}

/// The `limits` recorded for an environment with a disk budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct DiskLimits {
    pub(crate) disk_bytes: u64,
    pub(crate) disk_inodes: u64,
}

impl From<DiskBudget> for DiskLimits {
    fn from(budget: DiskBudget) -> Self {
        Self {
            disk_bytes: budget.bytes,
            disk_inodes: budget.inodes,
        }
    }
}

/// A stored environment.
#[derive(Debug, Clone)]
pub struct Environment {
    meta: Metadata,
    root: PathBuf,
    /// The directory of this process under the hookbox home, where its runs' host-side files
    /// (CA bundles) are written.
    run_dir: PathBuf,
    /// Keeps its file system mounted while this (or a clone) lives; none when it has no disk
    /// budget or was only described.
    _lease: Option<Arc<Lease>>,
}

impl Environment {
    /// Pairs metadata with the root directory it describes; `run_dir` is this process's
    /// directory under the hookbox home.
    pub(crate) fn new(meta: Metadata, root: PathBuf, run_dir: PathBuf) -> Self {
        Self {
            meta,
            root,
            run_dir,
            _lease: None,
        }
    }

    /// The same environment, its file system kept mounted by `lease`.
    pub(crate) fn with_lease(self, lease: Arc<Lease>) -> Self {
        Self {
            _lease: Some(lease),
            ..self
        }
    }

    /// The same environment (root, lease) described by `meta`, after an update.
    pub(crate) fn with_metadata(self, meta: Metadata) -> Self {
        Self { meta, ..self }
    }

    /// This process's directory under the hookbox home (`<home>/run/<pid>-<start>/`), where
    /// the files its sandboxes need on the host are written.
    pub(crate) fn run_dir(&self) -> &Path {
        &self.run_dir
    }

    /// The id, `env_…`.
    pub fn id(&self) -> &str {
        &self.meta.id
    }

    /// When it was created (ISO-8601 UTC, `YYYY-MM-DDThh:mm:ssZ`).
    pub fn created(&self) -> &str {
        &self.meta.created
    }

    /// When it was last updated (ISO-8601 UTC).
    pub fn updated(&self) -> &str {
        &self.meta.updated
    }

    /// The environment it was copied from, if any.
    pub fn from_environment(&self) -> Option<&str> {
        self.meta.from_environment.as_deref()
    }

    /// The host directory whose top-level entries are the sandbox's `/` (has `workspace/`).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether the `.agents` directories are writable to the model (hookbox extension;
    /// read-only by default).
    pub fn agents_writable(&self) -> bool {
        self.meta.agents_writable
    }

    /// The size and inode count of its file system; `None` when it has no disk budget (made
    /// by a hookbox that could not mount file systems).
    pub fn disk_budget(&self) -> Option<DiskBudget> {
        self.meta.limits.map(|limits| DiskBudget {
            bytes: limits.disk_bytes,
            inodes: limits.disk_inodes,
        })
    }

    /// Variables to set in the sandbox (credentials by id only).
    pub fn env_vars(&self) -> &[EnvVar] {
        &self.meta.env
    }

    /// The network policy as given (validated in shape only); `None` when none was given.
    pub fn network(&self) -> Option<&Value> {
        self.meta.network.as_ref()
    }

    /// What each source applied so far wrote, in order (updates append).
    pub fn sources(&self) -> &[SourceSummary] {
        &self.meta.sources
    }

    /// The `.agents` directories the owner supplied through sources, updates and uploads
    /// (sandbox paths: `/.agents`, `/workspace/.agents`).
    pub fn owner_agents(&self) -> &[String] {
        &self.meta.owner_agents
    }

    /// The `.agents` directories hooks are discovered in that the owner has not supplied
    /// (sandbox paths): the model's, whether or not they exist.
    pub(crate) fn not_owners_agents(&self) -> Vec<String> {
        crate::agents::AGENTS_DIRS
            .iter()
            .map(|dir| format!("/{dir}"))
            .filter(|dir| !self.meta.owner_agents.contains(dir))
            .collect()
    }

    /// The `.agents` directories read-only to the model (sandbox paths): none when the
    /// environment sets `agents_writable`; otherwise `/.agents` (which only the owner can
    /// create) and `/workspace/.agents` when the owner supplied it.
    pub fn protected_agents_dirs(&self) -> Vec<String> {
        if self.meta.agents_writable {
            return Vec::new();
        }
        let mut dirs = vec![format!("/{AGENTS}")];
        dirs.extend(
            self.meta
                .owner_agents
                .iter()
                .filter(|dir| dir.as_str() != format!("/{AGENTS}"))
                .cloned(),
        );
        dirs
    }

    /// Entries of the root that the sandbox mounts read-only, relative to `/`: the
    /// [`protected_agents_dirs`](Self::protected_agents_dirs).
    pub fn read_only_entries(&self) -> Vec<String> {
        self.protected_agents_dirs()
            .iter()
            .map(|dir| dir.trim_start_matches('/').to_owned())
            .collect()
    }

    /// The sandbox that code and command hooks of this environment run in: its root's
    /// top-level entries at `/`, read-only but for an allowlist (as the file tools'):
    /// `workspace`, and `.agents` when the environment sets `agents_writable` (every other
    /// entry an owner supplies, `/package.json`, `/node_modules`…, lies above every owner hook
    /// script, where interpreters look for their start-up files),
    /// and the owner's `/workspace/.agents` also at `/.hookbox/workspace/.agents`, where hooks
    /// run it from (see [`hook_command`](Self::hook_command)).
    pub fn sandbox(&self) -> hookbox_exec::Sandbox {
        hookbox_exec::Sandbox {
            read_only: self.read_only_entries(),
            writable_entries: Some(
                std::iter::once(WORKSPACE)
                    .chain(self.meta.agents_writable.then_some(AGENTS))
                    .map(str::to_owned)
                    .collect(),
            ),
            binds: crate::hook_view::binds(self.root(), &self.protected_agents_dirs()),
            ..hookbox_exec::Sandbox::new(self.root())
        }
    }

    /// A command hook's `command` as it runs in the sandbox: its literal paths into the
    /// owner's `/workspace/.agents` lead through `/.hookbox` instead, so that no directory
    /// the model can write is an ancestor of the hook's script and nothing the model put there
    /// (`package.json`, `node_modules`, `pyvenv.cfg`…) is read as the hook starts.
    pub fn hook_command(&self, command: &str) -> String {
        crate::hook_view::map_command(command, &self.protected_agents_dirs())
    }

    /// Variables with literal values, as `(name, value)`, for a process in this environment.
    /// Credential-backed variables are left out: secrets never enter the sandbox (they are
    /// injected by the egress proxy instead).
    pub fn literal_env_vars(&self) -> Vec<(String, String)> {
        self.meta
            .env
            .iter()
            .filter_map(|var| match &var.value {
                EnvValue::Literal(value) => Some((var.name.clone(), value.clone())),
                EnvValue::Credential { .. } => None,
            })
            .collect()
    }

    /// The environment as the API and the CLI show it: its metadata plus `status`, with every
    /// `transform` header value of the allowlist replaced by `[REDACTED]` (they are secrets the
    /// egress proxy injects; only the header names are shown).
    pub fn to_json(&self) -> Value {
        let mut value = self.meta.redacted();
        if let Value::Object(object) = &mut value {
            object.insert("status".to_owned(), "active".into());
        }
        value
    }

    /// The metadata, for rewriting after an update.
    pub(crate) fn metadata(&self) -> &Metadata {
        &self.meta
    }
}

/// Replaces every header value of a `transform` (an object, or a list of objects) with
/// `[REDACTED]`.
fn redact_headers(transform: &mut Value) {
    match transform {
        Value::Object(headers) => {
            for value in headers.values_mut() {
                *value = "[REDACTED]".into();
            }
        }
        Value::Array(list) => list.iter_mut().for_each(redact_headers),
        _ => {}
    }
}
