//! The Interactions API behind the HTTP layer: a create request becomes agent inputs, an
//! environment (reused, created or updated), a stored interaction and a run of the agent loop
//! whose every step and hook trace is recorded; get, cancel, delete and the streaming events
//! read the store.
//!
//! Decisions the spec leaves open (`spec/interactions-api.md` §11):
//!
//! * `previous_interaction_id` continues the conversation: the steps of every interaction in the
//!   chain (oldest first) are the model's history; `steps` in the reply are this interaction's
//!   only, input first. Without `environment`, the environment of the previous interaction is
//!   reused, so a second turn works in the same files.
//! * A string `environment` reuses that environment; an object creates one, or updates the one
//!   its `environment_id` names. `tools: [{"type": "code_execution"}]` without an environment gets
//!   a fresh empty one. With an environment the five built-in tools are offered.
//! * `store: false` is accepted but the interaction is stored anyway: background runs, streaming
//!   replay, idempotent retries and `previous_interaction_id` all read the store. Delete it with
//!   `DELETE /{v}/interactions/{id}`.
//! * Idempotency: the SDK retries a create (408/409/429/5xx, connection errors) and sends no
//!   idempotency header, so the key is an `Idempotency-Key` header when the client sends one,
//!   else the exact body: the same body while the first interaction runs, or within
//!   [`ServiceConfig::idempotency_window`] (60 s) of its last change, is that interaction (its
//!   tools ran once). A retry of a run still going waits for it (unless `background`). A client
//!   that means to send the same body twice in a minute sends distinct `Idempotency-Key`s.
//! * Cancel stops a running interaction (status `cancelled`, the task is aborted); a finished one
//!   is returned unchanged. Delete cancels first.

mod events;
mod request;

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookbox_env::{DiskBudget, Environment, EnvironmentSpec, Environments, Isolation, StoreError};
use hookbox_store::{
    Append, DEFAULT_HISTORY_DEPTH, Error as StoreFailure, InteractionWithSteps, NewInteraction,
    NewStep, NewTrace, SqliteStore, Status, Store, Timestamp, Update,
};
use serde_json::{Value, json};
use tokio::sync::watch;

use events::Partial;
pub use events::{Event, events_after};
/// The options of the client that carries HTTP hooks ([`ServiceConfig::hook_http`]).
pub use hookbox_net::ClientOptions as HookClientOptions;
/// The options of the sandboxes' egress proxy ([`ServiceConfig::egress_proxy`]).
pub use hookbox_net::ProxyOptions as EgressProxyOptions;
pub use request::{CreateRequest, EnvironmentChoice};

use crate::interaction::{Agent, RunEvent, RunStatus};
use crate::tool_call::SandboxTools;
use hookbox_llm::{Model, ModelConfig};

/// How many earlier interactions with an identical body a create looks through.
const MAX_IDENTICAL_BODIES: u32 = 1000;

/// How the service runs interactions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceConfig {
    /// The agents a request's `agent` may name (`[agents."NAME"]` of hookbox.toml).
    pub agents: BTreeMap<String, ModelConfig>,
    /// Whether environment sources may read the server's filesystem.
    pub allow_host_sources: bool,
    /// Model turns per interaction before it ends `incomplete`.
    pub max_turns: u32,
    /// Tokens per interaction (input plus output) before it ends `incomplete` with
    /// `budget_exceeded`; `None`: no limit.
    pub max_tokens: Option<u64>,
    /// How long after an interaction last changed a create with the same body counts as a retry
    /// of it (a running one always does). The SDK retries within about 30 s of a failed
    /// attempt.
    pub idempotency_window: Duration,
    /// Where tools and command hooks run.
    pub isolation: Isolation,
    /// The options of the client that carries HTTP hooks: address rules, extra roots, static
    /// overrides and the credential source (default: the strict defaults, no credentials).
    pub hook_http: HookClientOptions,
    /// The options of the egress proxy the service builds once and serves every sandbox's
    /// network through (on `127.0.0.1:3128` inside, under the environment's `network`, with
    /// `credential`s from [`hook_http`](Self::hook_http)'s source). `None` (the default): sandboxes
    /// have no network at all.
    pub egress_proxy: Option<EgressProxyOptions>,
    /// The disk budget of new environments (`[sandbox] disk_bytes` and `disk_inodes`); default
    /// [`DiskBudget::DEFAULT`].
    pub disk_budget: DiskBudget,
}

impl ServiceConfig {
    /// Defaults: no agents, no host sources, 32 turns, a one-minute idempotency window, sandboxed,
    /// strict HTTP hooks.
    pub fn new() -> Self {
        Self {
            agents: BTreeMap::new(),
            allow_host_sources: false,
            max_turns: 32,
            max_tokens: None,
            idempotency_window: Duration::from_secs(60),
            isolation: Isolation::Sandboxed,
            hook_http: HookClientOptions::default(),
            egress_proxy: None,
            disk_budget: DiskBudget::DEFAULT,
        }
    }
}

impl Default for ServiceConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// What kind of failure a [`ServiceError`] is (the HTTP layer picks the status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The request is wrong (400).
    InvalidArgument,
    /// No such interaction or environment (404).
    NotFound,
    /// The server is not set up for the request, e.g. an agent without its API key (400).
    FailedPrecondition,
    /// Something broke inside hookbox (500).
    Internal,
}

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ServiceError {
    /// The kind.
    pub kind: ErrorKind,
    /// What was wrong and what to do.
    pub message: String,
}

impl ServiceError {
    /// An invalid request.
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::InvalidArgument,
            message: message.into(),
        }
    }

    fn not_found(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::NotFound,
            message: message.into(),
        }
    }

    fn precondition(message: impl Into<String>) -> Self {
        Self {
            kind: ErrorKind::FailedPrecondition,
            message: message.into(),
        }
    }

    fn internal(context: &str, cause: &dyn std::fmt::Display) -> Self {
        Self {
            kind: ErrorKind::Internal,
            message: format!("{context}: {cause}"),
        }
    }
}

impl From<StoreFailure> for ServiceError {
    fn from(err: StoreFailure) -> Self {
        match err {
            StoreFailure::NotFound { .. } => Self::not_found(err.to_string()),
            StoreFailure::IdempotencyMismatch { .. } | StoreFailure::InvalidInput { .. } => {
                Self::invalid(err.to_string())
            }
            StoreFailure::Stopped { .. } => Self::precondition(err.to_string()),
            other => Self::internal("interaction store failure", &other),
        }
    }
}

impl From<StoreError> for ServiceError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::NotFound { .. } => Self::not_found(err.to_string()),
            StoreError::Source { .. }
            | StoreError::Update { .. }
            | StoreError::Misplaced { .. } => Self::invalid(err.to_string()),
            StoreError::NoHome | StoreError::Io { .. } | StoreError::Disk(_) => {
                Self::internal("environment store failure", &err)
            }
        }
    }
}

/// What a create produced.
#[derive(Debug, Clone)]
pub struct CreateOutcome {
    /// The interaction's id.
    pub id: String,
    /// The interaction object as it stands when the call returns.
    pub interaction: Value,
    /// Whether the request asked for server-sent events.
    pub stream: bool,
}

/// A run in progress: how to stop it and how to wait for it.
struct RunHandle {
    abort: tokio::task::AbortHandle,
    done: watch::Receiver<bool>,
}

/// Runs and records interactions.
pub struct InteractionService {
    config: ServiceConfig,
    store: Arc<dyn Store>,
    environments: Environments,
    http: hookbox_hooks::HookClients,
    /// The models' client, built once: building one loads the system's trust roots.
    model_http: hookbox_net::GuardedClient,
    /// The sandboxes' egress proxy ([`ServiceConfig::egress_proxy`]).
    egress: Option<hookbox_net::EgressProxy>,
    runs: Mutex<HashMap<String, RunHandle>>,
    /// The text each running interaction is streaming, by interaction id.
    live: Arc<Mutex<HashMap<String, Partial>>>,
    /// Bumped whenever a running interaction changes (a step, streamed text, its end).
    changes: Arc<watch::Sender<u64>>,
}

impl std::fmt::Debug for InteractionService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InteractionService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl InteractionService {
    /// Opens the service in hookbox home `home`: `home/hookbox.db` (interactions left running
    /// by a previous process are marked failed) and `home/environments`.
    pub fn open(home: &Path, config: ServiceConfig) -> Result<Arc<Self>, ServiceError> {
        let store = SqliteStore::open(home.join("hookbox.db"))
            .map_err(|err| ServiceError::internal("cannot open the interaction store", &err))?;
        let environments = Environments::open_with_network(home, &config.hook_http)?
            .with_host_sources(config.allow_host_sources)
            .with_disk_budget(config.disk_budget)
            .with_hook_file_check(Arc::new(crate::OwnerHookFiles))
            .with_progress(hookbox_env::logged_progress());
        let http = hookbox_hooks::HookClients::new(&config.hook_http)
            .map_err(|err| ServiceError::internal("cannot build the hooks' HTTP clients", &err))?;
        let model_http = hookbox_net::GuardedClient::new(&hookbox_llm::client_options())
            .map_err(|err| ServiceError::internal("cannot build the models' HTTP client", &err))?;
        let egress = match &config.egress_proxy {
            Some(options) => Some(hookbox_net::EgressProxy::new(options.clone()).map_err(
                |err| ServiceError::internal("cannot build the sandboxes' egress proxy", &err),
            )?),
            None => None,
        };
        Ok(Arc::new(Self {
            egress,
            config,
            store: Arc::new(store),
            environments,
            http,
            model_http,
            runs: Mutex::new(HashMap::new()),
            live: Arc::new(Mutex::new(HashMap::new())),
            changes: Arc::new(watch::channel(0).0),
        }))
    }

    /// Creates an interaction from the create body `body`; `idempotency_key` is the client's
    /// `Idempotency-Key` header, if any. Without `background` (and without `stream`) it returns
    /// once the run has finished. Retries are deduplicated only within `scope` (the caller's API
    /// key): one caller's key or body never replays another caller's interaction.
    pub async fn create(
        self: &Arc<Self>,
        body: Value,
        idempotency_key: Option<String>,
        scope: &str,
    ) -> Result<CreateOutcome, ServiceError> {
        let scope = if scope.is_empty() {
            String::new()
        } else {
            format!("{scope}/")
        };
        let request = CreateRequest::parse(&body, self.config.allow_host_sources)?;
        let (model, stream_text) = self.model(&request)?;
        let key = match idempotency_key {
            Some(key) => {
                let key = format!("client:{scope}{key}");
                let store = Arc::clone(&self.store);
                let lookup = key.clone();
                if let Some(id) = blocking(move || store.interaction_for_key(&lookup)).await? {
                    let store = Arc::clone(&self.store);
                    let owned = id.clone();
                    let existing = blocking(move || store.get_interaction(&owned)).await?;
                    if existing.request != body {
                        return Err(ServiceError::invalid(format!(
                            "the Idempotency-Key was already used for interaction `{id}` with a \
                             different request; resend the same request or use a new key"
                        )));
                    }
                    return self.replay(id, &request).await;
                }
                Some(key)
            }
            None => match self.body_idempotency(&body, &scope).await? {
                Ok(existing) => return self.replay(existing, &request).await,
                Err(key) => Some(key).filter(|key| !key.is_empty()),
            },
        };
        // Conversation history and the environment the previous turn used.
        let mut history = Vec::new();
        let mut inherited_environment = None;
        if let Some(previous) = &request.previous_interaction_id {
            let store = Arc::clone(&self.store);
            let previous_id = previous.clone();
            let chain = blocking(move || store.history(&previous_id, DEFAULT_HISTORY_DEPTH))
                .await
                .map_err(|err| match err.kind {
                    ErrorKind::NotFound => ServiceError::not_found(format!(
                        "invalid request at `$.previous_interaction_id`: interaction \
                         `{previous}` not found"
                    )),
                    _ => err,
                })?;
            for entry in &chain.interactions {
                history.extend(entry.steps.iter().map(|step| step.body.clone()));
            }
            inherited_environment = chain
                .interactions
                .last()
                .and_then(|last| last.interaction.environment_id.clone());
        }
        let mut input = request.input.clone();
        name_function_results(&mut input, &history);

        let (environment, created_environment) = self
            .environment(&request, inherited_environment.as_deref())
            .await?;
        let new = NewInteraction {
            id: None,
            agent: request.agent.clone(),
            status: Status::InProgress,
            environment_id: environment.as_ref().map(|env| env.id().to_owned()),
            previous_interaction_id: request.previous_interaction_id.clone(),
            request: body,
            idempotency_key: key,
        };
        let store = Arc::clone(&self.store);
        let created = match blocking(move || store.create_interaction(new)).await {
            Ok(created) => created,
            Err(err) => {
                self.discard_environment(
                    created_environment
                        .then_some(environment.as_ref())
                        .flatten(),
                );
                return Err(err);
            }
        };
        if !created.created {
            // A concurrent identical request won the race: drop what this one prepared.
            self.discard_environment(
                created_environment
                    .then_some(environment.as_ref())
                    .flatten(),
            );
            return self.replay(created.interaction.id, &request).await;
        }
        let id = created.interaction.id;
        let tools = match &environment {
            Some(environment) => Some(Arc::new(self.tools(environment).map_err(|err| {
                ServiceError::internal("cannot open the environment's tools", &err)
            })?)),
            None => None,
        };
        let agent = Agent {
            model,
            tools,
            functions: request.functions.clone(),
            system: request.system_instruction.clone(),
            max_turns: self.config.max_turns,
            max_tokens: self.config.max_tokens,
        };
        let done = self.spawn_run(&id, agent, stream_text, history, input);
        if !request.background && !request.stream {
            wait(done).await;
        }
        Ok(CreateOutcome {
            interaction: self.get(&id).await?,
            id,
            stream: request.stream,
        })
    }

    /// The sandboxed tools of `environment`, reaching the network through the egress proxy.
    fn tools(
        &self,
        environment: &Environment,
    ) -> Result<SandboxTools, crate::tool_call::ToolCallError> {
        let tools = SandboxTools::with_hook_clients(
            environment.clone(),
            self.config.isolation,
            self.http.clone(),
        )?;
        match &self.egress {
            Some(proxy) => tools.with_egress(
                proxy.clone(),
                self.config
                    .hook_http
                    .credentials
                    .as_ref()
                    .map(hookbox_net::SharedCredentials::source),
            ),
            None => Ok(tools),
        }
    }

    /// The interaction object of `id`.
    pub async fn get(&self, id: &str) -> Result<Value, ServiceError> {
        Ok(view(&self.load(id).await?))
    }

    /// The stored interaction with its steps.
    pub async fn load(&self, id: &str) -> Result<InteractionWithSteps, ServiceError> {
        let store = Arc::clone(&self.store);
        let id = id.to_owned();
        blocking(move || store.get_interaction_with_steps(&id)).await
    }

    /// The events of `id` after `last_event_id` (all when `None`), including the text of a step
    /// still being streamed, and whether the sequence is complete (the interaction has stopped).
    pub async fn events(
        &self,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<(Vec<Event>, bool), ServiceError> {
        let stored = self.load(id).await?;
        let partial = lock(&self.live).get(id).cloned();
        Ok(events::events_live(
            &stored,
            partial.as_ref(),
            last_event_id,
        ))
    }

    /// A receiver that sees a change whenever a running interaction changes: a step, streamed
    /// text, its end.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Waits until the run of `id` (if one is going in this process) finishes or `timeout`
    /// passes.
    pub async fn wait_for(&self, id: &str, timeout: Duration) {
        let done = self.runs_lock().get(id).map(|run| run.done.clone());
        if let Some(done) = done {
            let _ = tokio::time::timeout(timeout, wait(done)).await;
        }
    }

    /// Cancels `id`: a running interaction becomes `cancelled` and its run stops; a finished
    /// one is returned unchanged.
    pub async fn cancel(&self, id: &str) -> Result<Value, ServiceError> {
        let current = self.load(id).await?;
        if current.interaction.status.is_running() {
            let store = Arc::clone(&self.store);
            let live = Arc::clone(&self.live);
            let owned = id.to_owned();
            let update = Update {
                status: Some(Status::Cancelled),
                ..Update::default()
            };
            let updated =
                tokio::task::spawn_blocking(move || settle(store.as_ref(), &live, &owned, update))
                    .await
                    .map_err(|err| ServiceError::internal("a store task failed", &err))?;
            bump(&self.changes);
            match updated {
                // `Stopped`: it finished meanwhile; return it as it is.
                Ok(_) | Err(StoreFailure::Stopped { .. }) => {}
                Err(err) => return Err(err.into()),
            }
            let handle = self.runs_lock().remove(id);
            if let Some(handle) = handle {
                handle.abort.abort();
            }
        }
        self.get(id).await
    }

    /// Deletes `id` (cancelling it first when it runs), with its steps and traces.
    pub async fn delete(&self, id: &str) -> Result<(), ServiceError> {
        self.cancel(id).await?;
        let store = Arc::clone(&self.store);
        let id = id.to_owned();
        blocking(move || store.delete_interaction(&id)).await
    }

    /// The model of the agent `request` names (by `agent` or `model`), with the request's
    /// `generation_config` applied, and whether it streams its text.
    fn model(&self, request: &CreateRequest) -> Result<(Arc<dyn Model>, bool), ServiceError> {
        let name = &request.agent;
        let Some(config) = self.config.agents.get(name) else {
            let known: Vec<&str> = self.config.agents.keys().map(String::as_str).collect();
            let (path, meaning) = if request.model_form {
                (
                    "$.model",
                    "; on hookbox `model` names an agent configured in hookbox.toml",
                )
            } else {
                ("$.agent", "")
            };
            return Err(ServiceError::invalid(if known.is_empty() {
                format!(
                    "invalid request at `{path}`: no agent named `{name}`{meaning}; this server \
                     configures no agents (add an [agents.\"{name}\"] table to hookbox.toml)"
                )
            } else {
                format!(
                    "invalid request at `{path}`: no agent named `{name}`{meaning}; configured \
                     agents: {}",
                    known.join(", ")
                )
            }));
        };
        let mut config = config.clone();
        if let Some(temperature) = request.generation.temperature {
            config.temperature = Some(hookbox_llm::Temperature(temperature));
        }
        if let Some(max) = request.generation.max_output_tokens {
            config.max_tokens = Some(max);
        }
        let model = hookbox_llm::build(&config, self.model_http.clone()).map_err(|err| {
            ServiceError::precondition(format!("agent `{name}` cannot run: {err}"))
        })?;
        Ok((model, config.stream))
    }

    /// Whether `body` repeats a create whose interaction is still running or changed within the
    /// idempotency window: `Ok(id)` of that interaction, else `Err(key)`, a fresh key for this
    /// one. Keys are `body:<scope><hash>:<length>:<n>`, `n` counting identical bodies.
    async fn body_idempotency(
        &self,
        body: &Value,
        scope: &str,
    ) -> Result<Result<String, String>, ServiceError> {
        let text = body.to_string();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let base = format!("body:{scope}{:016x}:{}", hasher.finish(), text.len());
        let window = i64::try_from(self.config.idempotency_window.as_millis()).unwrap_or(i64::MAX);
        let now = Timestamp::now().unix_millis();
        for n in 0..MAX_IDENTICAL_BODIES {
            let key = format!("{base}:{n}");
            let store = Arc::clone(&self.store);
            let lookup = key.clone();
            let Some(id) = blocking(move || store.interaction_for_key(&lookup)).await? else {
                return Ok(Err(key));
            };
            let store = Arc::clone(&self.store);
            let owned = id.clone();
            let existing = blocking(move || store.get_interaction(&owned)).await?;
            let recent = existing.status.is_running()
                || now.saturating_sub(existing.updated.unix_millis()) <= window;
            if existing.request == *body && recent {
                return Ok(Ok(id));
            }
        }
        // Pathological: that many identical bodies. Run it without a key.
        Ok(Err(String::new()))
    }

    /// The answer to a retried create: the first interaction, once finished unless the request
    /// is a background or streaming one.
    async fn replay(
        &self,
        id: String,
        request: &CreateRequest,
    ) -> Result<CreateOutcome, ServiceError> {
        if !request.background && !request.stream {
            loop {
                let current = self.load(&id).await?;
                if !current.interaction.status.is_running() {
                    break;
                }
                let running = self.runs_lock().get(&id).map(|run| run.done.clone());
                match running {
                    Some(done) => wait(done).await,
                    None => tokio::time::sleep(Duration::from_millis(100)).await,
                }
            }
        }
        Ok(CreateOutcome {
            interaction: self.get(&id).await?,
            id,
            stream: request.stream,
        })
    }

    /// The environment of the run and whether it was created for it.
    async fn environment(
        &self,
        request: &CreateRequest,
        inherited: Option<&str>,
    ) -> Result<(Option<Environment>, bool), ServiceError> {
        let not_found = |id: &str, path: &str| {
            ServiceError::not_found(format!(
                "invalid request at `{path}`: environment `{id}` not found; create one with \
                 POST /{{v}}/environments or pass an environment object"
            ))
        };
        match &request.environment {
            Some(EnvironmentChoice::Existing(id)) => {
                let environment = self.environments.get(id).map_err(|err| match err {
                    StoreError::NotFound { .. } => not_found(id, "$.environment"),
                    other => other.into(),
                })?;
                Ok((Some(environment), false))
            }
            Some(EnvironmentChoice::Config(spec)) => {
                let created = spec.environment_id.is_none();
                let environment = self
                    .environments
                    .apply(spec)
                    .await
                    .map_err(|err| match err {
                        StoreError::NotFound { id } => {
                            not_found(&id, "$.environment.environment_id")
                        }
                        other => other.into(),
                    })?;
                Ok((Some(environment), created))
            }
            None => match inherited {
                Some(id) => {
                    let environment = self.environments.get(id).map_err(|err| match err {
                        StoreError::NotFound { .. } => ServiceError::not_found(format!(
                            "the previous interaction's environment `{id}` no longer exists; \
                             pass `environment` to choose another"
                        )),
                        other => other.into(),
                    })?;
                    Ok((Some(environment), false))
                }
                None if request.code_execution => {
                    let spec = EnvironmentSpec::default();
                    Ok((Some(self.environments.create(&spec).await?), true))
                }
                None => Ok((None, false)),
            },
        }
    }

    /// Removes an environment created for a create that did not go ahead.
    fn discard_environment(&self, environment: Option<&Environment>) {
        if let Some(environment) = environment {
            // Its record goes with it: the environments keep theirs in the store.
            let _ = self.environments.delete(environment.id());
        }
    }

    fn runs_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RunHandle>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts the run of `id` on a task; the receiver turns `true` when it is over.
    fn spawn_run(
        self: &Arc<Self>,
        id: &str,
        agent: Agent,
        stream_text: bool,
        history: Vec<Value>,
        input: Vec<Value>,
    ) -> watch::Receiver<bool> {
        let (done_tx, done_rx) = watch::channel(false);
        let service = Arc::clone(self);
        let run_id = id.to_owned();
        let guard = RunGuard {
            service: Arc::clone(self),
            id: id.to_owned(),
            done: done_tx,
        };
        // Hold the lock while spawning so the task cannot finish before it is registered.
        let mut runs = self.runs_lock();
        let task = tokio::spawn(async move {
            let _guard = guard;
            service
                .run(&run_id, agent, stream_text, history, input)
                .await;
        });
        runs.insert(
            id.to_owned(),
            RunHandle {
                abort: task.abort_handle(),
                done: done_rx.clone(),
            },
        );
        done_rx
    }

    /// Runs the agent, storing each step as it is made, then the traces and the outcome. With
    /// `stream_text` the model's text is streamed: its pieces are visible to
    /// [`events`](Self::events) as they arrive, and their lengths are stored with the step.
    async fn run(
        &self,
        id: &str,
        agent: Agent,
        stream_text: bool,
        history: Vec<Value>,
        input: Vec<Value>,
    ) {
        // (step index, step, byte lengths of its streamed pieces)
        let (steps_tx, mut steps_rx) =
            tokio::sync::mpsc::unbounded_channel::<(usize, Value, Option<Vec<usize>>)>();
        let store = Arc::clone(&self.store);
        let live = Arc::clone(&self.live);
        let changes = Arc::clone(&self.changes);
        let recorder_id = id.to_owned();
        let recorder = tokio::spawn(async move {
            while let Some((index, step, lengths)) = steps_rx.recv().await {
                let store = Arc::clone(&store);
                let live = Arc::clone(&live);
                let id = recorder_id.clone();
                let stored =
                    blocking(move || record_step(store.as_ref(), &live, &id, index, step, lengths))
                        .await;
                bump(&changes);
                if stored.is_err() {
                    // Cancelled or deleted: nothing more to record.
                    break;
                }
            }
        });
        let live = Arc::clone(&self.live);
        let changes = Arc::clone(&self.changes);
        let owner = id.to_owned();
        let mut index = 0usize;
        let mut lengths: Vec<usize> = Vec::new();
        let mut on_event = move |event: RunEvent<'_>| match event {
            RunEvent::Text(piece) => {
                lengths.push(piece.len());
                lock(&live)
                    .entry(owner.clone())
                    .or_insert_with(|| Partial {
                        index,
                        pieces: Vec::new(),
                    })
                    .pieces
                    .push(piece.to_owned());
                bump(&changes);
            }
            RunEvent::Step(step) => {
                let streamed = std::mem::take(&mut lengths);
                let streamed =
                    (!streamed.is_empty() && step["type"] == "model_output").then_some(streamed);
                let _ = steps_tx.send((index, step.clone(), streamed));
                index += 1;
            }
        };
        let outcome = if stream_text {
            agent
                .run_streaming(&history, input, Some(id), &mut on_event)
                .await
        } else {
            let mut on_step = |step: &Value| on_event(RunEvent::Step(step));
            agent.run(&history, input, Some(id), &mut on_step).await
        };
        drop(on_event);
        let _ = recorder.await;
        let status = match outcome.status {
            RunStatus::Completed => Status::Completed,
            RunStatus::RequiresAction => Status::RequiresAction,
            RunStatus::Incomplete => Status::Incomplete,
            RunStatus::Failed => Status::Failed,
        };
        let append = Append {
            steps: Vec::new(),
            traces: outcome
                .traces
                .into_iter()
                .map(|(index, entry)| NewTrace {
                    step_index: u32::try_from(index).ok(),
                    entry,
                })
                .collect(),
            update: Some(Update {
                status: Some(status),
                usage: Some(outcome.usage),
                error: outcome.error,
                ..Update::default()
            }),
        };
        let store = Arc::clone(&self.store);
        let owned = id.to_owned();
        let _ = blocking(move || store.append(&owned, append)).await;
        lock(&self.live).remove(id);
        bump(&self.changes);
    }
}

/// Locks `mutex`, whether or not a holder panicked.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Tells [`InteractionService::changes`] receivers that something changed.
fn bump(changes: &watch::Sender<u64>) {
    changes.send_modify(|version| *version = version.wrapping_add(1));
}

/// Stores step `index` of `id`, with the byte lengths of its streamed pieces, and retires the
/// streamed text it completes, under the lock of `live` (so [`settle`] cannot store it twice).
fn record_step(
    store: &dyn Store,
    live: &Mutex<HashMap<String, Partial>>,
    id: &str,
    index: usize,
    step: Value,
    lengths: Option<Vec<usize>>,
) -> Result<(), StoreFailure> {
    let mut live = lock(live);
    let mut append = Append {
        steps: vec![NewStep::new(step)],
        ..Append::default()
    };
    if let Some(lengths) = lengths {
        let current = store.get_interaction(id)?;
        let mut outputs = current.outputs.unwrap_or_else(|| json!({}));
        outputs["deltas"][index.to_string()] = json!(lengths);
        append.update = Some(Update {
            outputs: Some(outputs),
            ..Update::default()
        });
    }
    let stored = store.append(id, append);
    if live.get(id).is_some_and(|partial| partial.index <= index) {
        live.remove(id);
    }
    stored.map(|_| ())
}

/// Applies `update` to `id`. Text the run was still streaming becomes its last `model_output`
/// step first, so what a stream showed stays a prefix of what a replay shows.
fn settle(
    store: &dyn Store,
    live: &Mutex<HashMap<String, Partial>>,
    id: &str,
    mut update: Update,
) -> Result<hookbox_store::Interaction, StoreFailure> {
    let mut live = lock(live);
    let mut append = Append::default();
    if let Some(partial) = live.remove(id) {
        let current = store.get_interaction_with_steps(id)?;
        if current.steps.len() == partial.index && current.interaction.status.is_running() {
            let text = partial.pieces.concat();
            append
                .steps
                .push(NewStep::new(crate::interaction::model_output(&text)));
            let mut outputs = current.interaction.outputs.unwrap_or_else(|| json!({}));
            outputs["deltas"][partial.index.to_string()] =
                json!(partial.pieces.iter().map(String::len).collect::<Vec<_>>());
            update.outputs = Some(outputs);
        }
    }
    append.update = Some(update);
    Ok(store.append(id, append)?.interaction)
}

/// Cleans up after a run however it ends (finished, aborted, panicked): an interaction still
/// marked running is marked failed, the run is unregistered and waiters are woken.
struct RunGuard {
    service: Arc<InteractionService>,
    id: String,
    done: watch::Sender<bool>,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if let Ok(current) = self.service.store.get_interaction(&self.id)
            && current.status.is_running()
        {
            let update = Update {
                status: Some(Status::Failed),
                error: Some(json!({"code": "internal", "message": "the run stopped unexpectedly"})),
                ..Update::default()
            };
            let _ = settle(
                self.service.store.as_ref(),
                &self.service.live,
                &self.id,
                update,
            );
        }
        lock(&self.service.live).remove(&self.id);
        bump(&self.service.changes);
        self.service.runs_lock().remove(&self.id);
        let _ = self.done.send(true);
    }
}

/// Waits until `done` is `true` (or its sender is gone).
async fn wait(mut done: watch::Receiver<bool>) {
    let _ = done.wait_for(|finished| *finished).await;
}

/// Runs a store call off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreFailure> + Send + 'static,
) -> Result<T, ServiceError> {
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.map_err(ServiceError::from),
        Err(err) => Err(ServiceError::internal("a store task failed", &err)),
    }
}

/// Gives `function_result` input steps without a `name` the name of the call they answer.
fn name_function_results(input: &mut [Value], history: &[Value]) {
    for step in input.iter_mut() {
        if step["type"] != "function_result" || step.get("name").is_some() {
            continue;
        }
        let name = history
            .iter()
            .rev()
            .find(|call| call["type"] == "function_call" && call["id"] == step["call_id"])
            .and_then(|call| call["name"].as_str())
            .map(str::to_owned);
        if let Some(name) = name {
            step["name"] = name.into();
        }
    }
}

/// `model` when the interaction was created in the model form, else `agent`.
pub(crate) fn name_field(stored: &InteractionWithSteps) -> &'static str {
    if stored.interaction.request.get("model").is_some() {
        "model"
    } else {
        "agent"
    }
}

/// The interaction object (§4) of a stored interaction.
pub fn view(stored: &InteractionWithSteps) -> Value {
    let interaction = &stored.interaction;
    let mut object = json!({
        "id": interaction.id,
        "status": interaction.status.as_str(),
        name_field(stored): interaction.agent,
        "created": interaction.created.to_string(),
        "updated": interaction.updated.to_string(),
        "steps": stored.steps.iter().map(|step| step.body.clone()).collect::<Vec<_>>(),
    });
    if let Some(environment_id) = &interaction.environment_id {
        object["environment_id"] = environment_id.clone().into();
    }
    if let Some(previous) = &interaction.previous_interaction_id {
        object["previous_interaction_id"] = previous.clone().into();
    }
    for echoed in [
        "system_instruction",
        "tools",
        "labels",
        "agent_config",
        "generation_config",
        "service_tier",
    ] {
        if let Some(value) = interaction.request.get(echoed) {
            object[echoed] = value.clone();
        }
    }
    if let Some(usage) = &interaction.usage {
        object["usage"] = usage.clone();
    }
    if let Some(error) = &interaction.error {
        object["errors"] = json!([error]);
    }
    object
}
