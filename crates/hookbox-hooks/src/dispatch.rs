//! Dispatch: select the bindings of an event, run their handlers, decode and merge the replies.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use futures_util::future::join_all;
use hookbox_net::NetError;
use serde_json::Value;

use crate::aggregate::{absorb, skipped};
use crate::binding::Binding;
use crate::decode::{RawReply, decode, timeout};
use crate::event::{Dialect, HookEvent};
use crate::handler::{CallbackHandler, Handler};
use crate::hookset::HookSet;
use crate::input::EventInput;
use crate::outcome::{Decision, HookOutcome};
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
    /// registration order. Never fails: handler failures are traced and fail open unless the
    /// handler fails closed.
    pub async fn dispatch(&self, input: &EventInput) -> HookOutcome {
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
                    let (raw, duration) = self.run(binding, input, &payload).await;
                    absorb(
                        &mut outcome,
                        binding,
                        decode(input.event(), binding, raw),
                        duration,
                    );
                }
            }
            Dialect::Sdk => {
                let runs = bindings
                    .iter()
                    .map(|binding| self.run(binding, input, &payload));
                for (binding, (raw, duration)) in bindings.iter().zip(join_all(runs).await) {
                    absorb(
                        &mut outcome,
                        binding,
                        decode(input.event(), binding, raw),
                        duration,
                    );
                }
            }
        }
        outcome
    }

    /// Runs one handler and returns its raw reply and how long it took.
    async fn run(
        &self,
        binding: &Binding,
        input: &EventInput,
        payload: &[u8],
    ) -> (RawReply, Duration) {
        let started = Instant::now();
        let raw = match &binding.handler {
            Handler::Command(command) => {
                let request = CommandRequest {
                    command: command.command.clone(),
                    stdin: payload.to_vec(),
                    timeout: command.timeout,
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
        };
        (raw, started.elapsed())
    }
}

/// Whether an earlier sandbox handler's deny means the remaining ones must not run.
fn stops_chain(event: HookEvent, outcome: &HookOutcome) -> bool {
    event == HookEvent::PreToolExecution && outcome.decision == Decision::Deny
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
