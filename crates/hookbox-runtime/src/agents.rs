//! The named agents of `hookbox.toml` (`[agents."NAME"]`), each checked once when the runtime
//! is built, so a mistake in the file stops `hookbox serve` at start, not at the first request.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::bail;
use hookbox_llm::{Model, ModelConfig, ModelError};
use hookbox_net::GuardedClient;

use crate::Config;
use crate::config::{key_error, toml_key};

/// One checked agent: its configuration and its model's label (e.g. `gemini:gemini-2.5-flash`).
#[derive(Debug, Clone)]
pub struct NamedAgent {
    /// The `[agents."NAME"]` table, with its `script` path made absolute.
    pub config: ModelConfig,
    /// The model's label, as [`Model::label`] gives it.
    pub label: String,
}

/// The agents requests and commands select by name, and the one client their models share.
#[derive(Debug, Clone)]
pub struct Agents {
    agents: BTreeMap<String, NamedAgent>,
    /// The models' client, built once: building one loads the system's trust roots.
    client: GuardedClient,
}

impl Agents {
    /// Checks every agent of `config` (a model name where the provider needs one, a `script`
    /// file that exists and parses for `scripted`) and that `[sdk] default_agent` names one;
    /// the first problem is an error naming the file and the key, e.g.
    /// `hookbox.toml: [agents.x] script: /abs/path: no such file`. API keys are read when a
    /// model is built, not here.
    pub fn new(config: &Config, client: GuardedClient) -> anyhow::Result<Self> {
        let mut agents = BTreeMap::new();
        for (name, model) in &config.agents {
            let label = check(config, name, model, &client)?;
            agents.insert(
                name.clone(),
                NamedAgent {
                    config: model.clone(),
                    label,
                },
            );
        }
        if let Some(name) = &config.sdk.default_agent
            && !agents.contains_key(name)
        {
            let known: Vec<&str> = agents.keys().map(String::as_str).collect();
            return Err(key_error(
                &config.name(),
                "[sdk] default_agent",
                &format!("no agent is named {name:?}"),
                &format!(
                    "write the name of one of the file's [agents.NAME] tables (configured: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
        Ok(Self { agents, client })
    }

    /// The agents by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &NamedAgent)> {
        self.agents
            .iter()
            .map(|(name, agent)| (name.as_str(), agent))
    }

    /// The agent named `name`.
    pub fn get(&self, name: &str) -> Option<&NamedAgent> {
        self.agents.get(name)
    }

    /// The model of `config` (an agent's, possibly with a request's overrides), through the
    /// shared client, its API key read from the process environment now.
    pub fn build(&self, config: &ModelConfig) -> Result<Arc<dyn Model>, ModelError> {
        hookbox_llm::build(config, self.client.clone())
    }

    /// The model of the agent named `name`; an unknown name lists the configured ones.
    pub fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        let Some(agent) = self.agents.get(name) else {
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
        self.build(&agent.config)
            .map_err(|err| anyhow::anyhow!("cannot set up agent `{name}`: {err}"))
    }
}

/// Checks agent `name` of `config` and returns its model's label. The model is built with a
/// stand-in API key: keys are looked up at each build, so a key set later still works.
fn check(
    config: &Config,
    name: &str,
    model: &ModelConfig,
    client: &GuardedClient,
) -> anyhow::Result<String> {
    let key = |field: &str| format!("{}: [agents.{}] {field}", config.name(), toml_key(name));
    if let Some(script) = &model.script
        && !script.is_file()
    {
        bail!(
            "{}: {}: no such file; give the path of a JSON file of turns (relative paths are \
             relative to this file)",
            key("script"),
            script.display()
        );
    }
    match hookbox_llm::build_with_env(model, client.clone(), |_| {
        Some("checked-at-start".to_owned())
    }) {
        Ok(built) => Ok(built.label().to_owned()),
        Err(ModelError::Config { field, reason }) => bail!("{}: {reason}", key(field)),
        Err(ModelError::Script { path, reason }) => {
            bail!("{}: {}: {reason}", key("script"), path.display())
        }
        Err(other) => bail!("{}: {other}", key("provider")),
    }
}
