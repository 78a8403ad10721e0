//! The Interactions API behind its HTTP handlers (`crate::interactions`): a create request becomes agent inputs, an
//! environment (reused, created or updated), a stored interaction and a run of the agent loop
//! whose every step and hook trace is recorded; get, cancel, delete and the streaming events
//! read the store.
//!
//! Decisions the spec leaves open (`docs/wire/interactions-api.md` §11):
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
//! * Idempotency: only what is provably a retry is deduplicated: a create with the
//!   `Idempotency-Key` of an earlier one (any time; another body with it is an error), or,
//!   without the header, one whose exact body matches a create whose request is still open and
//!   unanswered (the SDK gave up waiting and retried; its tools ran once). A retry of a run
//!   still going waits for it (unless `background`). The same body sent again after the first
//!   was answered is a new interaction.
//! * Cancel stops a running interaction (status `cancelled`, the task is aborted); a finished one
//!   is returned unchanged. Delete cancels first.
//!
//! The parts: [`request`] parses a create body, [`steps`] translates the agent's steps to and
//! from their JSON, [`view`] renders the interaction object,
//! [`events`] derives its server-sent events, [`idempotency`] recognises retries, [`runs`]
//! registers runs and records what they make, [`error`] says what failed.

mod call_records;
mod error;
mod events;
mod idempotency;
mod request;
mod runs;
mod steps;
mod view;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookbox_env::{Environment, EnvironmentSpec, Isolation, StoreError};
use hookbox_runtime::Runtime;
use hookbox_store::{
    DEFAULT_HISTORY_DEPTH, Error as StoreFailure, InteractionWithSteps, NewInteraction, Status,
    Update,
};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use hookbox_agent::interaction::Agent;
use hookbox_llm::Model;

use crate::drain::Drain;

pub(crate) use error::{ErrorKind, ServiceError};
pub(crate) use events::Event;
use idempotency::{OpenCreate, OpenCreates};
use request::{CreateRequest, EnvironmentChoice};
use runs::{LiveRun, RunGuard, RunHandle, lock, settle, wait};
pub(crate) use view::view;

/// What a create produced.
#[derive(Debug)]
pub(crate) struct CreateOutcome {
    /// The interaction's id.
    pub(crate) id: String,
    /// The interaction object as it stands when the call returns.
    pub(crate) interaction: Value,
    /// Whether the request asked for server-sent events.
    pub(crate) stream: bool,
    /// Keeps the create's body open to retries until the answer is being written (drop it
    /// then).
    pub(crate) open: Option<OpenCreate>,
}

/// Runs and records interactions, over the runtime's store, environments, agents and tools.
pub(crate) struct InteractionService {
    runtime: Arc<Runtime>,
    /// Whether environment sources may read the server's filesystem.
    allow_host_sources: bool,
    runs: Mutex<HashMap<String, RunHandle>>,
    /// What each running interaction shows beyond its stored steps, and its event channel.
    live: Arc<Mutex<HashMap<String, LiveRun>>>,
    /// The body keys of creates still open and unanswered.
    open_creates: OpenCreates,
}

impl InteractionService {
    /// The service of `runtime`; first marks failed the interactions a previous process left
    /// running in its store.
    pub(crate) fn open(runtime: Arc<Runtime>) -> Result<Arc<Self>, StoreFailure> {
        runtime.store().recover()?;
        Ok(Arc::new(Self {
            allow_host_sources: runtime.config().server.allow_host_sources.unwrap_or(false),
            runtime,
            runs: Mutex::new(HashMap::new()),
            live: Arc::new(Mutex::new(HashMap::new())),
            open_creates: OpenCreates::default(),
        }))
    }

    /// Creates an interaction from the create body `body`; `idempotency_key` is the client's
    /// `Idempotency-Key` header, if any. Without `background` (and without `stream`) it returns
    /// once the run has finished. Retries are deduplicated only within `scope` (the caller's API
    /// key): one caller's key or body never replays another caller's interaction. The run is
    /// tracked on `drain`, the server's, when given: it ends `failed` when the server stops it.
    pub(crate) async fn create(
        self: &Arc<Self>,
        body: Value,
        idempotency_key: Option<String>,
        scope: &str,
        drain: Option<Drain>,
    ) -> Result<CreateOutcome, ServiceError> {
        let scope = if scope.is_empty() {
            String::new()
        } else {
            format!("{scope}/")
        };
        let request = CreateRequest::parse(&body, self.allow_host_sources)?;
        let (model, stream_text) = self.model(&request)?;
        let mut open = None;
        let key = match idempotency_key {
            Some(key) => {
                let key = format!("client:{scope}{key}");
                let store = Arc::clone(self.runtime.store());
                let lookup = key.clone();
                if let Some(id) = blocking(move || store.interaction_for_key(&lookup)).await? {
                    let store = Arc::clone(self.runtime.store());
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
                Err(key) => {
                    open = Some(OpenCreate::hold(&self.open_creates, &key));
                    Some(key).filter(|key| !key.is_empty())
                }
            },
        };
        // Conversation history and the environment the previous turn used.
        let mut history = Vec::new();
        let mut inherited_environment = None;
        if let Some(previous) = &request.previous_interaction_id {
            let store = Arc::clone(self.runtime.store());
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
        let store = Arc::clone(self.runtime.store());
        let created = match blocking(move || store.create_interaction(new)).await {
            Ok(created) => created,
            Err(err) => {
                self.discard_environment(
                    created_environment
                        .then_some(environment.as_ref())
                        .flatten(),
                )
                .await;
                return Err(err);
            }
        };
        if !created.created {
            // A concurrent identical request won the race: drop what this one prepared.
            self.discard_environment(
                created_environment
                    .then_some(environment.as_ref())
                    .flatten(),
            )
            .await;
            return self.replay(created.interaction.id, &request).await;
        }
        let id = created.interaction.id;
        // From here on, whatever happens ends the interaction: its run, or this guard.
        let environment_id = environment.as_ref().map(|env| env.id().to_owned());
        let guard = RunGuard::new(self, &id, environment_id);
        let tools = match environment
            .as_ref()
            .map(|environment| {
                self.runtime
                    .sandbox_tools(environment, Isolation::Sandboxed)
            })
            .transpose()
        {
            Ok(tools) => tools.map(Arc::new),
            Err(err) => {
                let message = format!("cannot open the environment's tools: {err}");
                tracing::error!(interaction = %id, "{message}");
                self.fail(&id, "internal", message).await?;
                drop(guard);
                return Ok(CreateOutcome {
                    interaction: self.get(&id).await?,
                    id,
                    stream: request.stream,
                    open,
                });
            }
        };
        let agent = Agent {
            model,
            tools,
            functions: request.functions.clone(),
            system: request.system_instruction.clone(),
            max_turns: self.runtime.max_turns(),
            max_tokens: self.runtime.max_tokens(),
        };
        let history = history.iter().filter_map(steps::parse).collect();
        let done = self.spawn_run(guard, drain, agent, stream_text, history, input);
        if !request.background && !request.stream {
            wait(done).await;
        }
        Ok(CreateOutcome {
            interaction: self.get(&id).await?,
            id,
            stream: request.stream,
            open,
        })
    }

    /// The interaction object of `id`.
    pub(crate) async fn get(&self, id: &str) -> Result<Value, ServiceError> {
        Ok(view(&self.load(id).await?))
    }

    /// The stored interaction with its steps.
    pub(crate) async fn load(&self, id: &str) -> Result<InteractionWithSteps, ServiceError> {
        let store = Arc::clone(self.runtime.store());
        let id = id.to_owned();
        blocking(move || store.get_interaction_with_steps(&id)).await
    }

    /// The events of `id` after `last_event_id` (all when `None`), including the text of a step
    /// still being streamed, and whether the sequence is complete (the interaction has stopped).
    pub(crate) async fn events(
        &self,
        id: &str,
        last_event_id: Option<u64>,
    ) -> Result<(Vec<Event>, bool), ServiceError> {
        // The live text first, the store second: a step stored in between is then read whole
        // from the store (its streamed text is ignored as not the next step). In the other order
        // a step stored in between would be in neither, and its `step.start` and first deltas,
        // published before the caller subscribed, would be lost.
        let partial = lock(&self.live).get(id).and_then(|run| run.partial.clone());
        let stored = self.load(id).await?;
        Ok(events::events_live(
            &stored,
            partial.as_ref(),
            last_event_id,
        ))
    }

    /// The events of `id`'s run from now on, if it is running in this process; the receiver
    /// closes when the run ends (its last events are then in the store). Subscribe before
    /// reading [`events`](Self::events), so that nothing falls between the two.
    pub(crate) fn follow(&self, id: &str) -> Option<broadcast::Receiver<Event>> {
        lock(&self.live).get(id).map(|run| run.events.subscribe())
    }

    /// Cancels `id`: a running interaction becomes `cancelled` and its run stops; a finished
    /// one is returned unchanged.
    pub(crate) async fn cancel(&self, id: &str) -> Result<Value, ServiceError> {
        let current = self.load(id).await?;
        if current.interaction.status.is_running() {
            let update = Update {
                status: Some(Status::Cancelled),
                ..Update::default()
            };
            self.stop(id, update).await?;
        }
        self.get(id).await
    }

    /// Ends running interaction `id` `failed` with the error `code` saying `message`, in one
    /// write.
    async fn fail(&self, id: &str, code: &str, message: String) -> Result<(), ServiceError> {
        let store = Arc::clone(self.runtime.store());
        let live = Arc::clone(&self.live);
        let owned = id.to_owned();
        let update = Update {
            status: Some(Status::Failed),
            error: Some(serde_json::json!({"code": code, "message": message})),
            ..Update::default()
        };
        blocking(move || settle(store.as_ref(), &live, &owned, update).map(drop)).await
    }

    /// Ends the run of `id` with `update` and aborts its task (which kills its calls); when it
    /// has finished meanwhile, leaves it as it is. Returns what says when the task is gone.
    async fn stop(
        &self,
        id: &str,
        update: Update,
    ) -> Result<Option<watch::Receiver<bool>>, ServiceError> {
        let store = Arc::clone(self.runtime.store());
        let live = Arc::clone(&self.live);
        let owned = id.to_owned();
        let updated =
            tokio::task::spawn_blocking(move || settle(store.as_ref(), &live, &owned, update))
                .await
                .map_err(|err| ServiceError::internal("a store task failed", &err))?;
        match updated {
            // `Stopped`: it finished meanwhile.
            Ok(_) | Err(StoreFailure::Stopped { .. }) => {}
            Err(err) => return Err(err.into()),
        }
        let handle = self.runs_lock().remove(id);
        Ok(handle.map(|handle| {
            handle.abort.abort();
            handle.done
        }))
    }

    /// Stops every run of this process in `environment`, which is being deleted, and waits
    /// until their tasks (and so their calls) are gone: each ends `failed`, saying why.
    pub(crate) async fn stop_runs_in(&self, environment: &str) -> Result<(), ServiceError> {
        let running: Vec<String> = self
            .runs_lock()
            .iter()
            .filter(|(_, run)| run.environment.as_deref() == Some(environment))
            .map(|(id, _)| id.clone())
            .collect();
        for id in running {
            let update = Update {
                status: Some(Status::Failed),
                error: Some(json!({
                    "code": "environment_deleted",
                    "message": format!(
                        "environment {environment} was deleted while this interaction ran in \
                         it; its calls were stopped"
                    ),
                })),
                ..Update::default()
            };
            if let Some(done) = self.stop(&id, update).await? {
                wait(done).await;
            }
            tracing::info!(interaction = %id, environment, "run stopped: its environment is deleted");
        }
        Ok(())
    }

    /// Deletes `id` (cancelling it first when it runs), with its steps and traces.
    pub(crate) async fn delete(&self, id: &str) -> Result<(), ServiceError> {
        self.cancel(id).await?;
        let store = Arc::clone(self.runtime.store());
        let id = id.to_owned();
        blocking(move || store.delete_interaction(&id)).await
    }

    /// The model of the agent `request` names (by `agent` or `model`), with the request's
    /// `generation_config` applied, and whether it streams its text.
    fn model(&self, request: &CreateRequest) -> Result<(Arc<dyn Model>, bool), ServiceError> {
        let name = &request.agent;
        let agents = self.runtime.agents();
        let Some(agent) = agents.get(name) else {
            let known: Vec<&str> = agents.iter().map(|(name, _)| name).collect();
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
        let mut config = agent.config.clone();
        if let Some(temperature) = request.generation.temperature {
            config.temperature = Some(hookbox_llm::Temperature(temperature));
        }
        if let Some(max) = request.generation.max_output_tokens {
            config.max_tokens = Some(max);
        }
        let model = agents.build(&config).map_err(|err| {
            ServiceError::precondition(format!("agent `{name}` cannot run: {err}"))
        })?;
        Ok((model, config.stream))
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
            open: None,
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
                let environment = self
                    .runtime
                    .environments()
                    .get(id)
                    .map_err(|err| match err {
                        StoreError::NotFound { .. } => not_found(id, "$.environment"),
                        other => other.into(),
                    })?;
                Ok((Some(environment), false))
            }
            Some(EnvironmentChoice::Config(spec)) => {
                let created = spec.environment_id.is_none();
                let environment = self
                    .runtime
                    .environments()
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
            None => {
                match inherited {
                    Some(id) => {
                        let environment = self.runtime.environments().get(id).map_err(|err| match err {
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
                        Ok((Some(self.runtime.environments().create(&spec).await?), true))
                    }
                    None => Ok((None, false)),
                }
            }
        }
    }

    /// Removes an environment created for a create that did not go ahead (its directory and
    /// file system, off the async threads).
    async fn discard_environment(&self, environment: Option<&Environment>) {
        if let Some(environment) = environment {
            let runtime = Arc::clone(&self.runtime);
            let id = environment.id().to_owned();
            let _ = tokio::task::spawn_blocking(move || {
                // Its record goes with it: the environments keep theirs in the store.
                let _ = runtime.environments().delete(&id);
            })
            .await;
        }
    }
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
