//! The run registry: each run on its own task, its steps recorded as they are made, the text
//! it streams held live ([`Partial`]) until its step is stored, and cleanup however it ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use hookbox_agent::interaction::{Agent, RunEvent, RunStatus};
use hookbox_store::{Append, Error as StoreFailure, NewStep, NewTrace, Status, Store, Update};
use serde_json::{Value, json};
use tokio::sync::watch;

use super::events::Partial;
use super::{InteractionService, blocking};

/// A run in progress: how to stop it and how to wait for it.
pub(super) struct RunHandle {
    pub(super) abort: tokio::task::AbortHandle,
    pub(super) done: watch::Receiver<bool>,
}

impl InteractionService {
    pub(super) fn runs_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, RunHandle>> {
        self.runs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Starts the run of `id` on a task; the receiver turns `true` when it is over.
    pub(super) fn spawn_run(
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
        let store = Arc::clone(self.runtime.store());
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
        let store = Arc::clone(self.runtime.store());
        let owned = id.to_owned();
        let _ = blocking(move || store.append(&owned, append)).await;
        lock(&self.live).remove(id);
        bump(&self.changes);
    }
}

/// Locks `mutex`, whether or not a holder panicked.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Tells [`InteractionService::changes`] receivers that something changed.
pub(super) fn bump(changes: &watch::Sender<u64>) {
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
pub(super) fn settle(
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
                .push(NewStep::new(hookbox_agent::interaction::model_output(
                    &text,
                )));
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
        if let Ok(current) = self.service.runtime.store().get_interaction(&self.id)
            && current.status.is_running()
        {
            let update = Update {
                status: Some(Status::Failed),
                error: Some(json!({"code": "internal", "message": "the run stopped unexpectedly"})),
                ..Update::default()
            };
            let _ = settle(
                self.service.runtime.store().as_ref(),
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
pub(super) async fn wait(mut done: watch::Receiver<bool>) {
    let _ = done.wait_for(|finished| *finished).await;
}
