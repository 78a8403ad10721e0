//! Dispatch: select the bindings of an event, run their handlers, decode and merge the replies.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::join_all;
use hookbox_net::NetError;
use serde_json::Value;

use crate::aggregate::{absorb, skipped};
use crate::binding::{Binding, Trust};
use crate::decode::{RawReply, Verdict, decode, timeout};
use crate::event::{Dialect, HookEvent};
use crate::handler::{CallbackHandler, Delivery, Handler, HttpHandler};
use crate::hookset::HookSet;
use crate::input::EventInput;
use crate::outbox::{OutboxEvent, OutboxQueue, OutboxSink};
use crate::outcome::HookOutcome;
use crate::rewrite::settle;
use crate::runner::{CommandRequest, HttpRequest, Runners};
use crate::trace::Failure;

/// Runs the hooks of a [`HookSet`] for events, with the given runners.
#[derive(Clone)]
pub struct Dispatcher {
    hooks: Arc<HookSet>,
    runners: Runners,
}

impl Dispatcher {
    /// A dispatcher for `hooks` whose command and HTTP handlers go through `runners`.
    pub fn new(hooks: Arc<HookSet>, runners: Runners) -> Self {
        Self { hooks, runners }
    }

    /// The hooks this dispatcher runs.
    pub fn hooks(&self) -> &HookSet {
        &self.hooks
    }

    /// Runs every matching handler for `input` and merges their replies.
    ///
    /// Sandbox events run their handlers one after another in declared order, and a deny on
    /// `pre_tool_execution` skips the rest. SDK events run theirs concurrently and merge in
    /// registration order. When they rewrite the tool input, they all run once more on the
    /// rewritten input and judge it, so every hook saw the input that will run (see
    /// `rewrite.rs`). Never fails: handler failures are traced and fail open unless the
    /// handler fails closed.
    pub async fn dispatch(&self, input: &EventInput) -> HookOutcome {
        settle(input.tool_input(), |rewrite| async move {
            match rewrite {
                None => self.dispatch_once(input).await,
                Some(rewrite) => self.dispatch_once(&input.with_tool_input(rewrite)).await,
            }
        })
        .await
    }

    /// Runs every matching handler for `input` once, as it is, and merges their decisions:
    /// for an input that runs as it is (one an earlier stage already rewrote), so what the
    /// handlers would rewrite it to is dropped.
    pub async fn judge(&self, input: &EventInput) -> HookOutcome {
        let mut outcome = self.dispatch_once(input).await;
        outcome.updated_input = None;
        outcome
    }

    /// Runs every matching handler for `input` once and merges their replies.
    pub(crate) async fn dispatch_once(&self, input: &EventInput) -> HookOutcome {
        let bindings = self.hooks.select(input.event(), input.match_value());
        let mut outcome = HookOutcome::default();
        if bindings.is_empty() {
            return outcome;
        }
        let payload = match serde_json::to_vec(input.payload()) {
            Ok(payload) => payload,
            // A `Map<String, Value>` always serializes; keep the engine panic-free regardless.
            Err(_) => return outcome,
        };
        match input.event().dialect() {
            Dialect::Sandbox => {
                for binding in bindings {
                    if stops_chain(input.event(), &outcome) {
                        skipped(&mut outcome, binding);
                        continue;
                    }
                    let (verdict, duration) = self.verdict(binding, input, &payload).await;
                    absorb(&mut outcome, binding, verdict, duration);
                }
            }
            Dialect::Sdk => {
                let runs = bindings
                    .iter()
                    .map(|binding| self.verdict(binding, input, &payload));
                for (binding, (verdict, duration)) in bindings.iter().zip(join_all(runs).await) {
                    absorb(&mut outcome, binding, verdict, duration);
                }
            }
        }
        outcome
    }

    /// Runs one handler (or stores its event in the outbox: only an owner's handler, so a hook
    /// file the model writes cannot fill the owner's durable queue or get its events shed; its
    /// `at_least_once` handlers are posted once) and returns its verdict and how long it took.
    async fn verdict(
        &self,
        binding: &Binding,
        input: &EventInput,
        payload: &[u8],
    ) -> (Verdict, Duration) {
        let started = Instant::now();
        let verdict = match (&binding.handler, &self.runners.outbox) {
            (Handler::Http(http), Some(outbox))
                if http.delivery == Delivery::AtLeastOnce
                    && binding.origin.trust == Trust::Owner =>
            {
                queue(outbox.as_ref(), binding, http, input, payload).await
            }
            _ => decode(
                input.event(),
                binding,
                self.run(binding, input, payload).await,
            ),
        };
        (verdict, started.elapsed())
    }

    /// Runs one handler and returns its raw reply.
    async fn run(&self, binding: &Binding, input: &EventInput, payload: &[u8]) -> RawReply {
        match &binding.handler {
            Handler::Command(command) => {
                let request = CommandRequest {
                    command: command.command.clone(),
                    stdin: payload.to_vec(),
                    timeout: command.timeout,
                    trust: binding.origin.trust,
                };
                match self.runners.command.run(request).await {
                    Ok(output) => RawReply::Process(output),
                    Err(err) => RawReply::Failed(Failure::SpawnFailed {
                        message: err.to_string(),
                    }),
                }
            }
            Handler::Http(http) => {
                let request = HttpRequest {
                    url: http.url.clone(),
                    headers: http.headers.clone(),
                    body: payload.to_vec(),
                    timeout: http.timeout,
                    trust: binding.origin.trust,
                };
                match self.runners.http.post(request).await {
                    Ok(reply) => RawReply::Http(reply),
                    Err(NetError::Timeout { .. }) => RawReply::Failed(timeout(binding)),
                    Err(err) => RawReply::Failed(Failure::Network {
                        message: err.to_string(),
                    }),
                }
            }
            Handler::Callback(callback) => call(binding, callback, input).await,
        }
    }
}

/// Stores an `at_least_once` event in `outbox`; its verdict carries the `webhook-id`, or the
/// reason it could not be stored.
async fn queue(
    outbox: &dyn OutboxSink,
    binding: &Binding,
    http: &HttpHandler,
    input: &EventInput,
    payload: &[u8],
) -> Verdict {
    let id = match hookbox_store::new_id("msg_") {
        Ok(id) => id,
        Err(err) => {
            return Verdict::failed(Failure::Outbox {
                message: format!("no id for the event: {err}"),
            });
        }
    };
    let event = OutboxEvent {
        id: id.clone(),
        queue: queue_of(input),
        url: http.url.clone(),
        headers: http.headers.clone(),
        body: payload.to_vec(),
        timeout: http.timeout,
        trust: binding.origin.trust,
        handler: format!("{} {}", binding.origin.source, binding.origin.json_path),
        signing_credential: http.signing_credential.clone(),
    };
    match outbox.enqueue(event).await {
        Ok(()) => Verdict {
            webhook_id: Some(id),
            ..Verdict::default()
        },
        Err(err) => Verdict::failed(Failure::Outbox { message: err.0 }),
    }
}

/// The queue of `input`'s outbox event: its environment's, else its SDK session's.
fn queue_of(input: &EventInput) -> OutboxQueue {
    let field = |key: &str| {
        input
            .payload()
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    match field("environment_id") {
        Some(id) => OutboxQueue::Environment(id),
        None => OutboxQueue::Session(field("session_id").unwrap_or_default()),
    }
}

/// Whether an earlier sandbox handler's deny means the remaining ones must not run: on every
/// event it can block (`pre_tool_execution`, a blockable agent event).
fn stops_chain(event: HookEvent, outcome: &HookOutcome) -> bool {
    event.can_block() && outcome.decision.is_blocking()
}

/// Calls an in-process callback under its timeout, turning panics into failures.
async fn call(binding: &Binding, callback: &CallbackHandler, input: &EventInput) -> RawReply {
    let payload = Value::Object(input.payload().clone());
    let tool_use_id = input.tool_use_id().map(str::to_owned);
    let Ok(future) = std::panic::catch_unwind(AssertUnwindSafe(|| {
        callback.callback.call(payload, tool_use_id)
    })) else {
        return RawReply::Failed(Failure::CallbackPanicked);
    };
    match tokio::time::timeout(callback.timeout, AssertUnwindSafe(future).catch_unwind()).await {
        Err(_elapsed) => RawReply::Failed(timeout(binding)),
        Ok(Err(_panic)) => RawReply::Failed(Failure::CallbackPanicked),
        Ok(Ok(Err(err))) => RawReply::Failed(Failure::CallbackError { message: err.0 }),
        Ok(Ok(Ok(value))) => RawReply::Callback(value),
    }
}
