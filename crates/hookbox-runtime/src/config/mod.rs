//! `hookbox.toml`, the one settings type of every interface (`--config FILE`, else
//! `$HOOKBOX_HOME/hookbox.toml`, else defaults). Relative paths in it (`agents.*.script`,
//! `[network] extra_ca_certs`) are resolved against the file's directory when it is read.

//!
//! Every error about the file names it, the key as the file spells it (`[network]
//! resolve."a b"`) and what a valid value looks like, once: `FILE: KEY: PROBLEM; HINT`. Values
//! are checked when the runtime is built ([`checks`]); what the TOML parser refuses (syntax,
//! types, unknown keys) is reported the same way, with the line ([`toml_error`]).

mod checks;
mod toml_error;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use hookbox_llm::{Model, ModelConfig};
use serde::Deserialize;

pub use checks::SdkDomains;
pub(crate) use checks::{key_error, toml_key};

/// The whole file, and the hookbox home it configures.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The hookbox home (`$HOOKBOX_HOME`): the store, environments and credentials live below
    /// it.
    #[serde(skip)]
    pub home: PathBuf,
    /// The file this was read from (`None`: the defaults); errors name it.
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// `[server]`.
    #[serde(default)]
    pub server: ServerSection,
    /// `[agents."NAME"]`: the models requests and commands select by name.
    #[serde(default)]
    pub agents: BTreeMap<String, ModelConfig>,
    /// `[network]`: how the HTTP hooks' client reaches its receivers.
    #[serde(default)]
    pub network: NetworkSection,
    /// `[sdk]`: SDK mode (the stream-json protocol the Python agent SDKs speak).
    #[serde(default)]
    pub sdk: SdkSection,
    /// `[sandbox]`: what each environment's sandbox may use.
    #[serde(default)]
    pub sandbox: SandboxSection,
    /// `[audit]`: durable delivery of `at_least_once` HTTP hooks.
    #[serde(default)]
    pub audit: crate::audit::AuditSection,
    /// `[policy]`: where `hookbox hook` finds the machine's managed policy.
    #[serde(default)]
    pub policy: PolicySection,
}

/// `[policy]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    /// The managed policy file `hookbox hook` loads first (default
    /// `/etc/hookbox/policy.json`); relative to the config file's directory.
    pub managed: Option<PathBuf>,
    /// How many of `hookbox hook`'s decisions the decision log keeps (default 100000; 0: none
    /// are logged).
    pub keep_decisions: Option<u64>,
}

impl PolicySection {
    /// [`PolicySection::keep_decisions`] or its default.
    pub fn keep_decisions(&self) -> u64 {
        self.keep_decisions.unwrap_or(100_000)
    }
}

/// `[sandbox]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    /// Size of each new environment's file system in bytes (default 2 GiB).
    pub disk_bytes: Option<u64>,
    /// Inodes (files, directories, links) of each new environment's file system (default
    /// 100,000, or one per KiB of `disk_bytes` if that is fewer).
    pub disk_inodes: Option<u64>,
    /// Bytes a new environment's file system must leave free on the home's, for the store's
    /// own writes (default 512 MiB): every budget is reserved on the host when its environment
    /// is created, and a create that would leave less is refused.
    pub disk_reserve_bytes: Option<u64>,
    /// The time limit of one `code_execution` in seconds (default 300); the model may ask for
    /// less with the tool's `timeout` argument, never for more.
    pub code_timeout_secs: Option<u64>,
    /// How long `hookbox serve` keeps an environment's warm sandbox without calls, in seconds
    /// (default 300).
    pub idle_timeout_secs: Option<u64>,
}

/// `[sdk]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdkSection {
    /// The agent an SDK session uses when the SDK passes no `--model`.
    pub default_agent: Option<String>,
    /// The hosts SDK sessions' sandboxed `Bash` may reach through the egress proxy (`*`,
    /// `*.example.com`, `api.example.com`): the ceiling, which the settings'
    /// `sandbox.network.allowedDomains` can narrow but never widen. Empty (the default): no
    /// network.
    #[serde(default)]
    pub allowed_domains: Vec<String>,
    /// Hosts SDK sessions never reach, whatever is allowed (the settings'
    /// `sandbox.network.deniedDomains` add to them).
    #[serde(default)]
    pub denied_domains: Vec<String>,
}

/// `[server]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// The address `hookbox serve` listens on (default `127.0.0.1:8080`).
    pub listen: Option<String>,
    /// Largest request body in bytes (default 16 MiB).
    pub max_body_bytes: Option<usize>,
    /// Largest file a resumable upload may declare, in bytes (default 1 GiB).
    pub max_upload_bytes: Option<u64>,
    /// Whether environment sources may read this host's filesystem (default `false`).
    pub allow_host_sources: Option<bool>,
    /// Model turns an interaction may take (default 32, at least 1).
    pub max_turns: Option<u32>,
    /// Tokens an interaction may use (default: no limit).
    pub max_tokens: Option<u64>,
    /// Host names answered besides the listen address (421 for others).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Connections served at once (503 above).
    pub max_connections: Option<usize>,
    /// Connections from one address that have not presented an API key yet (above, its oldest
    /// is pushed out).
    pub max_unauthenticated_per_peer: Option<usize>,
    /// Seconds to wait for a request's headers.
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds a request body may pause.
    pub idle_timeout_secs: Option<u64>,
    /// Seconds `serve` lets requests and runs in flight finish after SIGTERM (default 30).
    pub shutdown_timeout_secs: Option<u64>,
}

/// `[network]`: address rules, extra trust roots and static name overrides for the client that
/// carries HTTP hooks. Relative `extra_ca_certs` paths are relative to the config file
/// ([`Config::read`] resolves them).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkSection {
    /// Let HTTP hooks reach loopback receivers (default `false`; hooks only, never models).
    #[serde(default)]
    pub permit_loopback_hooks: bool,
    /// Non-public ranges HTTP hooks may reach anyway, e.g. `"10.77.0.0/24"`.
    #[serde(default)]
    pub allow_private_cidrs: Vec<String>,
    /// PEM files of extra root certificates trusted for HTTP hooks.
    #[serde(default)]
    pub extra_ca_certs: Vec<PathBuf>,
    /// Static name overrides like curl's `--resolve`: a name to one address or a list of them.
    #[serde(default)]
    pub resolve: BTreeMap<String, Addresses>,
    /// Let `hookbox env create`/`update` clone `repository` sources that are paths or
    /// `file://` URLs on this machine (default `false`; remote clones follow the rules above).
    #[serde(default)]
    pub allow_host_sources: bool,
}

/// One address or several, as `[network] resolve` values.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    untagged,
    expecting = "not an address; write an IP address such as \"10.77.0.2\", or a list such as \
                 [\"10.77.0.2\", \"fd00::2\"]"
)]
pub enum Addresses {
    /// `"10.77.0.2"`.
    One(String),
    /// `["10.77.0.2", "10.77.0.3"]`.
    Many(Vec<String>),
}

impl Config {
    /// The defaults for hookbox home `home` (no file).
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            ..Self::default()
        }
    }

    /// Reads `explicit`, else `<home>/hookbox.toml` when it exists, else the defaults, for
    /// hookbox home `home`; relative paths in the file are resolved against its directory.
    pub fn read(explicit: Option<&Path>, home: &Path) -> anyhow::Result<Self> {
        let path: PathBuf = match explicit {
            Some(path) => path.to_path_buf(),
            None => {
                let path = home.join("hookbox.toml");
                if !path.exists() {
                    return Ok(Self::new(home));
                }
                path
            }
        };
        // Only a regular file, at once and bounded: a FIFO or device here must not hang every
        // `hookbox hook` call.
        let text = hookbox_hooks::read_policy_text(&path, hookbox_hooks::Links::Follow)
            .and_then(|text| text.ok_or_else(|| std::io::ErrorKind::NotFound.into()))
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        Self::parse(&text, &path, home)
    }

    /// Parses `text`, the contents of the file at `path`, for hookbox home `home`; relative
    /// paths in it are resolved against `path`'s directory.
    pub fn parse(text: &str, path: &Path, home: &Path) -> anyhow::Result<Self> {
        let mut config: Self =
            toml::from_str(text).map_err(|error| toml_error::describe(path, text, error))?;
        let base = path.parent().unwrap_or(Path::new(""));
        let base = std::path::absolute(base).unwrap_or_else(|_| base.to_path_buf());
        for agent in config.agents.values_mut() {
            if let Some(script) = &mut agent.script {
                *script = base.join(&*script);
            }
        }
        for certificate in &mut config.network.extra_ca_certs {
            *certificate = base.join(&*certificate);
        }
        if let Some(managed) = &mut config.policy.managed {
            *managed = base.join(&*managed);
        }
        config.home = home.to_path_buf();
        config.file = Some(path.to_path_buf());
        Ok(config)
    }

    /// How errors name this file: its path, or `hookbox.toml` for the defaults.
    pub fn name(&self) -> String {
        self.file.as_ref().map_or_else(
            || "hookbox.toml".to_owned(),
            |path| path.display().to_string(),
        )
    }

    /// The model of the agent named `name`, built with a client of its own; an unknown name
    /// lists the configured ones, and every agent is checked first. For callers without a
    /// [`Runtime`](crate::Runtime) (SDK mode); [`Agents::model`](crate::Agents::model) shares
    /// one client.
    pub fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        let client = hookbox_net::GuardedClient::new(&hookbox_llm::client_options())
            .context("cannot build the HTTP client")?;
        crate::Agents::new(self, client)?.model(name)
    }
}
