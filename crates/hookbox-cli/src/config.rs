//! `hookbox.toml`: the server's settings and the named agents (`--config FILE`, else
//! `$HOOKBOX_HOME/hookbox.toml`, else defaults).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use hookbox_agent::model::{Model, ModelConfig};
use serde::Deserialize;

/// The whole file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    /// `[server]`.
    #[serde(default)]
    pub(crate) server: ServerSection,
    /// `[agents."NAME"]`: the models requests and commands select by name.
    #[serde(default)]
    pub(crate) agents: BTreeMap<String, ModelConfig>,
}

/// `[server]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServerSection {
    pub(crate) listen: Option<String>,
    pub(crate) max_body_bytes: Option<usize>,
    pub(crate) max_upload_bytes: Option<u64>,
    pub(crate) allow_host_sources: Option<bool>,
}

impl ConfigFile {
    /// The model of the agent named `name`, built and ready; an unknown name lists the
    /// configured ones.
    pub(crate) fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        let Some(config) = self.agents.get(name) else {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            if known.is_empty() {
                bail!(
                    "no agent named `{name}`: hookbox.toml configures no agents; add an \
                     [agents.\"{name}\"] table with provider and model"
                );
            }
            bail!(
                "no agent named `{name}`; configured agents: {}",
                known.join(", ")
            );
        };
        let client = hookbox_net::GuardedClient::new(&hookbox_agent::model::client_options())
            .context("cannot build the HTTP client")?;
        hookbox_agent::model::build(config, client)
            .with_context(|| format!("cannot set up agent `{name}`"))
    }
}

/// Reads `explicit`, else `<home>/hookbox.toml` when it exists, else the defaults.
pub(crate) fn read(explicit: Option<&Path>, home: &Path) -> anyhow::Result<ConfigFile> {
    let path: PathBuf = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let path = home.join("hookbox.toml");
            if !path.exists() {
                return Ok(ConfigFile::default());
            }
            path
        }
    };
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the config file {}", path.display()))?;
    toml::from_str(&text).with_context(|| format!("invalid config file {}", path.display()))
}
