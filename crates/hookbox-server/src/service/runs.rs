//! The run registry: each run on its own task, its steps recorded as they are made, the text
//! it streams held live ([`Partial`]) until its step is stored, every change published as
//! events on the run's own broadcast channel ([`LiveRun`]), and cleanup however it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hookbox_agent::interaction::{Agent, RunEvent, RunStatus, Step};
use hookbox_store::{Append, Error as StoreFailure, NewStep, Status, Store, Update};
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use super::call_records::trace_entries;
use super::events::{Event, Partial, step_events, streamed_delta, streamed_start};
use super::steps::{parse, render};
use super::{InteractionService, blocking};
use crate::drain::Drain;

/// Events a run's channel holds for a stream that has not read them yet; one that falls
/// further behind catches up from the store.
const LIVE_EVENTS: usize = 1024;

/// What a running interaction shows beyond its stored steps, and where its events go.
pub(super) struct LiveRun {
    /// The text of the step being streamed, not stored yet.
    pub(super) partial: Option<Partial>,
    /// The id the next event gets.
    next_event: u64,
    /// The run's events as they happen; dropped (closing every receiver) when the run ends.
    pub(super) events: broadcast::Sender<Event>,
}

impl LiveRun {
    /// Gives `event` the next id and publishes it (nobody may be listening).
    fn publish(&mut self, event: (&'static str, Value)) {
        let _ = self.events.send(Event::new(self.next_event, event));
        self.next_event += 1;
    }
}

/// One step of the run, as it is stored.
struct MadeStep {
    /// Its index in the interaction.
    index: usize,
    /// The step's JSON.
    body: Value,
    /// The byte lengths of its streamed pieces, when it was streamed.
    lengths: Option<Vec<usize>>,
    /// The hook traces of the tool call whose result it is (stored with it).
    traces: Vec<Value>,
}

/// A run in progress: how to stop it and how to wait for it, and the environment it runs in.
pub(super) struct RunHandle {
    pub(super) abort: tokio::task::AbortHandle,
    pub(super) done: watch::Receiver<bool>,
    pub(super) environment: Option<String>,
}

impl InteractionService {
    pub(super) fn runs_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RunHandle>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts the run of `guard`'s interaction on a task, tracked on `drain`
    /// when given (the run ends `failed`, its tool call in flight killed, when the server stops
    /// it); the receiver turns `true` when it is over.
    pub(super) fn spawn_run(
        self: &Arc<Self>,
        guard: RunGuard,
        drain: Option<Drain>,
        agent: Agent,
        stream_text: bool,
        history: Vec<Step>,
        input: Vec<Value>,
    ) -> watch::Receiver<bool> {
        let done_rx = guard.done.subscribe();
        let guard_environment = guard.environment.clone();
        let service = Arc::clone(self);
        let run_id = guard.id.clone();
        let id = run_id.clone();
        // Only `interaction.created` (id 0) precedes the run's first step.
        lock(&self.live).insert(
            id.clone(),
            LiveRun {
                partial: None,
                next_event: 1,
                events: broadcast::channel(LIVE_EVENTS).0,
            },
        );
        // Hold the lock while spawning so the task cannot finish before it is registered.
        let mut runs = self.runs_lock();
        let task = tokio::spawn(async move {
            let _guard = guard;
            let _tracked = drain.as_ref().map(|drain| drain.track(&run_id));
            let stopped = async {
                match &drain {
                    Some(drain) => drain.stopped().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = service.run(&run_id, agent, stream_text, history, input) => {}
                // The run, and with it its tool call in flight, is dropped first.
                reason = stopped => {
                    let _ = service.fail(&run_id, "server_stopped", reason).await;
                }
            }
        });
        runs.insert(
            id,
            RunHandle {
                abort: task.abort_handle(),
                done: done_rx.clone(),
                environment: guard_environment,
            },
        );
        done_rx
    }

    /// Runs the agent, storing each step as it is made (a tool call's result with its hook
    /// traces, so a run cut short keeps the traces of the calls it made), then the outcome.
    /// Each step is stored before the agent goes on, so what the model is shown next (a
    /// tool's result) is in the store before the model sees it, even if the server is then
    /// killed. With `stream_text` the model's text is streamed: its pieces are published as
    /// they arrive, and their lengths are stored with the step. The input steps (checked
    /// request JSON) are stored as given; the steps the agent makes, rendered.
    async fn run(
        &self,
        id: &str,
        agent: Agent,
        stream_text: bool,
        history: Vec<Step>,
        input: Vec<Value>,
    ) {
        // Every checked input step (`user_input`, `function_result`) parses, so the agent's
        // first steps, its input echoed, are these in order.
        let input_steps: Vec<Step> = input.iter().filter_map(parse).collect();
        let store = Arc::clone(self.runtime.store());
        let live = Arc::clone(&self.live);
        // Cleared when a step cannot be stored (the interaction was cancelled or deleted):
        // nothing more is recorded or published.
        let mut recording = true;
        let mut index = 0usize;
        let mut lengths: Vec<usize> = Vec::new();
        let mut traces: Vec<Value> = Vec::new();
        let mut on_event = |event: RunEvent<'_>| match event {
            // An empty piece shows nothing, and a replay could not cut it out again.
            RunEvent::Text("") => {}
            RunEvent::Text(piece) => {
                lengths.push(piece.len());
                if recording {
                    publish_text(&live, id, index, piece.to_owned());
                }
            }
            RunEvent::Record(record) => traces.extend(trace_entries(record)),
            RunEvent::Step(step) => {
                let streamed = std::mem::take(&mut lengths);
                let streamed = (!streamed.is_empty() && matches!(step, Step::ModelOutput(_)))
                    .then_some(streamed);
                let body = input.get(index).cloned().unwrap_or_else(|| render(step));
                let made = MadeStep {
                    index,
                    body,
                    lengths: streamed,
                    traces: std::mem::take(&mut traces),
                };
                if recording {
                    recording =
                        hookbox_runtime::in_place(|| record_step(store.as_ref(), &live, id, made))
                            .is_ok();
                }
                index += 1;
            }
        };
        let outcome = agent
            .run_with(&history, input_steps, Some(id), stream_text, &mut on_event)
            .await;
        let status = match outcome.status {
            RunStatus::Completed => Status::Completed,
            RunStatus::RequiresAction => Status::RequiresAction,
            RunStatus::Incomplete => Status::Incomplete,
            RunStatus::Failed => Status::Failed,
        };
        // The traces were stored with their steps.
        let append = Append {
            steps: Vec::new(),
            traces: Vec::new(),
            update: Some(Update {
                status: Some(status),
                usage: Some(json!({
                    "total_input_tokens": outcome.usage.input_tokens,
                    "total_output_tokens": outcome.usage.output_tokens,
                    "total_tokens": outcome.usage.total(),
                })),
                error: outcome
                    .error
                    .map(|error| json!({"code": error.code.as_str(), "message": error.message})),
                ..Update::default()
            }),
        };
        let store = Arc::clone(self.runtime.store());
        let owned = id.to_owned();
        let _ = blocking(move || store.append(&owned, append)).await;
        // Closes the run's channel: its streams read the end from the store.
        lock(&self.live).remove(id);
    }
}

/// Locks `mutex`, whether or not a holder panicked.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Adds streamed `piece` to step `index` of running interaction `id` and publishes it (after
/// the step's `step.start` when it is the first piece).
fn publish_text(live: &Mutex<HashMap<String, LiveRun>>, id: &str, index: usize, piece: String) {
    let mut live = lock(live);
    let Some(run) = live.get_mut(id) else {
        return;
    };
    if run.partial.is_none() {
        run.partial = Some(Partial {
            index,
            pieces: Vec::new(),
            first_event: run.next_event,
        });
        run.publish(streamed_start(index));
    }
    run.publish(streamed_delta(index, &piece));
    if let Some(partial) = &mut run.partial {
        partial.pieces.push(piece);
    }
}

/// Stores step `made` of `id` with its hook traces and the byte lengths of its streamed
/// pieces, retires the streamed text it completes and publishes its events (those of its
/// streamed text were published already), under the lock of `live` (so [`settle`] cannot
/// store it twice).
fn record_step(
    store: &dyn Store,
    live: &Mutex<HashMap<String, LiveRun>>,
    id: &str,
    made: MadeStep,
) -> Result<(), StoreFailure> {
    let MadeStep {
        index,
        body: step,
        lengths,
        traces,
    } = made;
    let mut live = lock(live);
    let mut append = Append {
        steps: vec![NewStep { body: step, traces }],
        ..Append::default()
    };
    let lengths = lengths.map(|lengths| json!(lengths));
    if let Some(lengths) = &lengths {
        let current = store.get_interaction(id)?;
        let mut outputs = current.outputs.unwrap_or_else(|| json!({}));
        outputs["deltas"][index.to_string()] = lengths.clone();
        append.update = Some(Update {
            outputs: Some(outputs),
            ..Update::default()
        });
    }
    let body = append.steps[0].body.clone();
    store.append(id, append)?;
    if let Some(run) = live.get_mut(id) {
        let streamed = run
            .partial
            .take_if(|partial| partial.index <= index)
            .map(|partial| partial.first_event);
        let first = streamed.unwrap_or(run.next_event);
        for (offset, event) in (0u64..).zip(step_events(index, &body, lengths.as_ref())) {
            if first + offset >= run.next_event {
                run.publish(event);
            }
        }
    }
    Ok(())
}

/// Applies `update` to `id`, which ends its run. Text the run was still streaming becomes its
/// last `model_output` step first, so what a stream showed stays a prefix of what a replay
/// shows. The run's channel closes once the store has the end (its streams then read it there),
/// and nothing the run still reports is published.
pub(super) fn settle(
    store: &dyn Store,
    live: &Mutex<HashMap<String, LiveRun>>,
    id: &str,
    mut update: Update,
) -> Result<hookbox_store::Interaction, StoreFailure> {
    let mut live = lock(live);
    let mut append = Append::default();
    // Dropped, closing the channel, when this returns.
    let ended = live.remove(id);
    if let Some(partial) = ended.as_ref().and_then(|run| run.partial.as_ref()) {
        let current = store.get_interaction_with_steps(id)?;
        if current.steps.len() == partial.index && current.interaction.status.is_running() {
            let text = partial.pieces.concat();
            append
                .steps
                .push(NewStep::new(render(&Step::ModelOutput(text))));
            let mut outputs = current.interaction.outputs.unwrap_or_else(|| json!({}));
            outputs["deltas"][partial.index.to_string()] =
                json!(partial.pieces.iter().map(String::len).collect::<Vec<_>>());
            update.outputs = Some(outputs);
        }
    }
    append.update = Some(update);
    Ok(store.append(id, append)?.interaction)
}

/// Held from the moment an interaction is stored as running until its run ends, and cleans
/// up however that happens (the run finished, was aborted or panicked, or never started), off
/// the async threads: an interaction still marked running is marked failed, its channel is
/// closed, the run is unregistered and waiters are woken.
pub(super) struct RunGuard {
    service: Arc<InteractionService>,
    id: String,
    /// The environment the run uses, if any (its delete stops the run).
    environment: Option<String>,
    done: watch::Sender<bool>,
}

impl RunGuard {
    /// The guard of interaction `id` of `service` in `environment`, just stored as running.
    pub(super) fn new(
        service: &Arc<InteractionService>,
        id: &str,
        environment: Option<String>,
    ) -> Self {
        Self {
            service: Arc::clone(service),
            id: id.to_owned(),
            environment,
            done: watch::channel(false).0,
        }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if std::thread::panicking() {
            tracing::error!(interaction = %self.id, "the run panicked; the interaction is marked failed");
        }
        let service = Arc::clone(&self.service);
        let id = std::mem::take(&mut self.id);
        let (replacement, _) = watch::channel(true);
        let done = std::mem::replace(&mut self.done, replacement);
        let clean_up = move || {
            let store = service.runtime.store();
            if let Ok(current) = store.get_interaction(&id)
                && current.status.is_running()
            {
                let update = Update {
                    status: Some(Status::Failed),
                    error: Some(
                        json!({"code": "internal", "message": "the run stopped unexpectedly"}),
                    ),
                    ..Update::default()
                };
                let _ = settle(store.as_ref(), &service.live, &id, update);
            }
            lock(&service.live).remove(&id);
            service.runs_lock().remove(&id);
            let _ = done.send(true);
        };
        // Outside a runtime (it is shutting down) there is no async thread to keep free.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(clean_up)),
            Err(_) => clean_up(),
        }
    }
}

/// Waits until `done` is `true` (or its sender is gone).
pub(super) async fn wait(mut done: watch::Receiver<bool>) {
    let _ = done.wait_for(|finished| *finished).await;
}

#[cfg(test)]
mod tests {
    use hookbox_agent::interaction::Step;
    use hookbox_store::{NewInteraction, SqliteStore};

    use super::super::events::events_live;
    use super::*;

    /// Step `index` of a run: `step` rendered, streamed in pieces of `lengths`, without traces.
    fn made(index: usize, step: &Step, lengths: Option<Vec<usize>>) -> MadeStep {
        MadeStep {
            index,
            body: render(step),
            lengths,
            traces: Vec::new(),
        }
    }

    #[test]
    fn what_a_run_publishes_is_what_the_store_replays_and_a_late_joiner_sees_a_prefix() {
        let store = SqliteStore::open_in_memory().unwrap();
        let id = store
            .create_interaction(NewInteraction::new("a", json!({"agent": "a"})))
            .unwrap()
            .interaction
            .id;
        let live = Mutex::new(HashMap::new());
        let (events, mut published) = broadcast::channel(64);
        lock(&live).insert(
            id.clone(),
            LiveRun {
                partial: None,
                next_event: 1,
                events,
            },
        );
        record_step(&store, &live, &id, made(0, &Step::user_text("hi"), None)).unwrap();
        publish_text(&live, &id, 1, "Hé".to_owned());
        publish_text(&live, &id, 1, "llo".to_owned());
        // A stream joining now catches up from the store and the live text.
        let stored = store.get_interaction_with_steps(&id).unwrap();
        let partial = lock(&live).get(&id).and_then(|run| run.partial.clone());
        let (caught_up, finished) = events_live(&stored, partial.as_ref(), None);
        assert!(!finished);
        let step = Step::ModelOutput("Héllo world".into());
        record_step(&store, &live, &id, made(1, &step, Some(vec![3, 3, 6]))).unwrap();
        let published: Vec<Event> = std::iter::from_fn(|| published.try_recv().ok()).collect();
        let (replay, _) = events_live(&store.get_interaction_with_steps(&id).unwrap(), None, None);
        // Everything but `interaction.created` is published, with the replay's ids; the
        // text's last piece, not streamed, comes with the stored step.
        assert_eq!(published[..], replay[1..]);
        assert_eq!(caught_up[..], replay[..caught_up.len()]);
        assert_eq!(
            replay
                .iter()
                .map(|event| event.event_type)
                .collect::<Vec<_>>(),
            [
                "interaction.created",
                "step.start",
                "step.delta",
                "step.stop",
                "step.start",
                "step.delta",
                "step.delta",
                "step.delta",
                "step.stop"
            ]
        );
    }

    #[test]
    fn a_step_stored_while_a_stream_catches_up_is_not_lost() {
        let store = SqliteStore::open_in_memory().unwrap();
        let id = store
            .create_interaction(NewInteraction::new("a", json!({"agent": "a"})))
            .unwrap()
            .interaction
            .id;
        let live = Mutex::new(HashMap::new());
        let (events, _) = broadcast::channel(64);
        lock(&live).insert(
            id.clone(),
            LiveRun {
                partial: None,
                next_event: 1,
                events,
            },
        );
        record_step(&store, &live, &id, made(0, &Step::user_text("hi"), None)).unwrap();
        publish_text(&live, &id, 1, "Hé".to_owned());
        // A stream joins: it subscribes, reads the live text, then (as `events` does) the store;
        // the step is stored between the two reads.
        let mut joined = lock(&live).get(&id).unwrap().events.subscribe();
        let partial = lock(&live).get(&id).and_then(|run| run.partial.clone());
        let step = Step::ModelOutput("Héllo".into());
        record_step(&store, &live, &id, made(1, &step, Some(vec![3, 3]))).unwrap();
        let stored = store.get_interaction_with_steps(&id).unwrap();
        let (mut seen, _) = events_live(&stored, partial.as_ref(), None);
        let last = seen.last().unwrap().id;
        seen.extend(std::iter::from_fn(|| joined.try_recv().ok()).filter(|event| event.id > last));
        let (replay, _) = events_live(&stored, None, None);
        assert_eq!(seen, replay);
    }
}
