//! hookbox's one runtime assembly: [`Runtime::from_config`] turns a [`Config`]
//! (`hookbox.toml`) into what every interface needs — the store, the environments, the
//! credential store, the sandboxes' egress proxy, the HTTP hooks' clients and the named
//! [`Agents`] (each checked once, at build). `hookbox serve`, `hookbox exec`, `hookbox demo`
//! and SDK mode build it the same way; an interface adds only its own wire format and
//! listening options.
//!
//! It sits between the interfaces and `hookbox-agent`: it knows the agent's sandbox tools
//! ([`Runtime::sandbox_tools`]) but no wire format. Its errors are `anyhow` chains: its
//! callers are start-up paths that print them; every problem names the file and the key.

mod agents;
mod audit;
mod config;
mod home_lock;
mod in_place;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hookbox_agent::{OwnerHookFiles, SandboxTools, ToolCallError};
use hookbox_env::{CredentialStore, Environment, Environments, Isolation, WarmSandboxes};
use hookbox_hooks::{HookClients, HttpRunner, OutboxSink, PolicyHttpRunner};
use hookbox_net::{ClientOptions, EgressPolicy, EgressProxy, GuardedClient, SharedCredentials};
use hookbox_store::{SqliteStore, Store};

use crate::audit::StoreOutbox;

pub use agents::{Agents, NamedAgent};
pub use audit::{AuditDeliverer, AuditSection, AuditSettings, DurationValue, WebhookSigner};
pub use config::{
    Addresses, Config, NetworkSection, SandboxSection, SdkDomains, SdkSection, ServerSection,
};
pub use home_lock::HomeLock;
pub use in_place::in_place;

/// Everything an interface serves from, built once from a [`Config`].
pub struct Runtime {
    config: Config,
    store: Arc<dyn Store>,
    environments: Environments,
    hook_options: ClientOptions,
    hook_clients: HookClients,
    egress: EgressProxy,
    agents: Agents,
    max_turns: u32,
    code_timeout: Duration,
    audit: AuditSettings,
    outbox: StoreOutbox,
    sdk_domains: SdkDomains,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.config)
            .field("agents", &self.agents)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Builds the runtime of `config` in its hookbox home: opens `hookbox.db` (without
    /// recovering interrupted interactions: that is the server's job, see
    /// [`Store::recover`]) and `environments/` (new ones get `[sandbox]`'s disk budget and,
    /// with `[server] allow_host_sources`, may read this host's files), loads the credential
    /// store, builds the HTTP hooks' clients and the egress proxy from `[network]`, and checks
    /// every agent and every value. The first problem is an error naming the file and key.
    pub fn from_config(config: &Config) -> anyhow::Result<Self> {
        let home = &config.home;
        let max_turns = config.max_turns()?;
        let code_timeout = config.code_timeout()?;
        let credentials = CredentialStore::open(home)
            .with_context(|| format!("cannot open the credentials in {}", home.display()))?;
        let hook_options = ClientOptions {
            credentials: Some(SharedCredentials::new(credentials)),
            ..config.hook_client_options()?
        };
        let environments = Environments::open_with_network(home, &hook_options)
            .with_context(|| format!("cannot open the environments in {}", home.display()))?
            .with_host_sources(config.server.allow_host_sources.unwrap_or(false))
            .with_disk_budget(config.disk_budget()?)
            .with_disk_reserve(config.disk_reserve())
            .with_hook_file_check(Arc::new(OwnerHookFiles))
            .with_progress(hookbox_env::logged_progress());
        let hook_clients =
            HookClients::new(&hook_options).context("cannot build the HTTP hooks' clients")?;
        let egress = EgressProxy::new(config.egress_proxy_options()?)
            .context("cannot build the sandboxes' egress proxy")?;
        let model_client = GuardedClient::new(&hookbox_llm::client_options())
            .context("cannot build the models' HTTP client")?;
        let agents = Agents::new(config, model_client)?;
        let audit = config.audit.settings(&config.name())?;
        let sdk_domains = config.sdk_domains()?;
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open_without_recovery(home.join("hookbox.db"))
                .with_context(|| format!("cannot open the store in {}", home.display()))?,
        );
        let outbox = StoreOutbox {
            store: Arc::clone(&store),
            stored: Arc::default(),
        };
        Ok(Self {
            config: config.clone(),
            store,
            environments,
            hook_options,
            hook_clients,
            egress,
            agents,
            max_turns,
            code_timeout,
            audit,
            outbox,
            sdk_domains,
        })
    }

    /// This runtime serving a long-lived process (`hookbox serve`): each environment's
    /// sandboxed code and command hooks (without egress) run in its warm sandbox, supervised by
    /// [`hookbox_exec::supervisor_program`] (`hookbox-sandbox-supervisor` next to this program,
    /// else this program, whose `main` must then call `hookbox_exec::supervise_if_asked`
    /// first) and stopped after `[sandbox] idle_timeout_secs` without calls. One-shot
    /// processes (`hookbox exec`) keep a sandbox per run.
    pub fn for_serving(mut self) -> anyhow::Result<Self> {
        let idle_timeout = self.config.idle_timeout()?;
        self.environments = self.environments.with_warm_sandboxes(WarmSandboxes::new(
            hookbox_exec::supervisor_program(),
            idle_timeout,
        ));
        Ok(self)
    }

    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The hookbox home.
    pub fn home(&self) -> &Path {
        &self.config.home
    }

    /// The store (`hookbox.db`): interactions, steps, traces, API keys and owners.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The environments (`environments/`).
    pub fn environments(&self) -> &Environments {
        &self.environments
    }

    /// The options the HTTP hooks' clients were built with (`[network]` and the credential
    /// store); callers that need a variant (the demo's local receiver) start from these.
    pub fn hook_options(&self) -> &ClientOptions {
        &self.hook_options
    }

    /// The HTTP hooks' clients.
    pub fn hook_clients(&self) -> &HookClients {
        &self.hook_clients
    }

    /// What SDK sessions' HTTP hooks are sent through: the runtime's hook clients (`[network]`,
    /// the credential store) under the public egress policy.
    pub fn session_http_hooks(&self) -> Arc<dyn HttpRunner> {
        Arc::new(PolicyHttpRunner {
            clients: self.hook_clients.clone(),
            policy: EgressPolicy::PUBLIC,
        })
    }

    /// `[sdk] allowed_domains` and `denied_domains`, checked: the network SDK sessions'
    /// sandboxed `Bash` may have at most, through [`egress_proxy`](Self::egress_proxy).
    pub fn sdk_domains(&self) -> &SdkDomains {
        &self.sdk_domains
    }

    /// The sandboxes' egress proxy (`[network]`'s address rules, name overrides and roots).
    pub fn egress_proxy(&self) -> &EgressProxy {
        &self.egress
    }

    /// The store's outbox, where `at_least_once` HTTP hooks' events wait for
    /// [`AuditDeliverer`].
    pub fn outbox(&self) -> Arc<dyn OutboxSink> {
        Arc::new(self.outbox.clone())
    }

    /// The named agents.
    pub fn agents(&self) -> &Agents {
        &self.agents
    }

    /// Model turns per interaction (`[server] max_turns`, default 32).
    pub fn max_turns(&self) -> u32 {
        self.max_turns
    }

    /// `[audit]`, checked.
    pub fn audit(&self) -> &AuditSettings {
        &self.audit
    }

    /// Tokens per interaction, input plus output (`[server] max_tokens`; `None`: no limit).
    pub fn max_tokens(&self) -> Option<u64> {
        self.config.server.max_tokens
    }

    /// The sandboxed tools of `environment`, its HTTP hooks sent with the runtime's clients.
    pub fn sandbox_tools(
        &self,
        environment: &Environment,
        isolation: Isolation,
    ) -> Result<SandboxTools, ToolCallError> {
        self.sandbox_tools_with_hooks(environment, isolation, self.hook_clients.clone())
    }

    /// The sandboxed tools of `environment` with HTTP hooks sent through `hook_clients`: the
    /// sandbox reaches the network through the runtime's egress proxy, under the environment's
    /// `network`, with `credential`s from the credential store; `code_execution` runs for at
    /// most `[sandbox] code_timeout_secs`; `at_least_once` HTTP hooks store their events in the
    /// store's outbox, for [`AuditDeliverer`].
    pub fn sandbox_tools_with_hooks(
        &self,
        environment: &Environment,
        isolation: Isolation,
        hook_clients: HookClients,
    ) -> Result<SandboxTools, ToolCallError> {
        let tools = SandboxTools::with_hook_clients(environment.clone(), isolation, hook_clients)?
            .with_code_timeout(self.code_timeout)
            .with_outbox(self.outbox())
            .with_warm_sandboxes(self.environments.warm_sandboxes().cloned());
        tools.with_egress(
            self.egress.clone(),
            self.hook_options
                .credentials
                .as_ref()
                .map(SharedCredentials::source),
        )
    }
}
