//! A rewritten tool input runs only once every gate has seen it.
//!
//! A hook may answer with an `updatedInput` that replaces the call's input. Hooks of one event
//! run side by side (and a host agent's sandbox-dialect gates before its Claude-style hooks),
//! so a gate may have judged only the input as the model wrote it while another hook, of any
//! trust, turned `ls` into `rm -rf`. So when a round of hooks rewrites the input, every hook
//! runs again on the rewritten input, until a round leaves the input it was given as it was:
//! the input that runs is then one every hook saw, and any of them could deny it. A call whose
//! hooks keep rewriting it for [`MAX_REWRITE_ROUNDS`] rounds is blocked.

use std::future::Future;

use serde_json::Value;

use crate::decode::blocking_decision;
use crate::event::HookEvent;
use crate::outcome::HookOutcome;

/// How many rounds of hooks one call's input may take (the model's input and up to three
/// rewrites) before the call is blocked as unsettled.
pub const MAX_REWRITE_ROUNDS: usize = 4;

/// Runs `round` on the event's own input (`None`), then on each input a round rewrote it to,
/// until a round rewrites nothing new or blocks; `original` is the event's tool input (`None`:
/// the event has none, and one round is all). The outcome is the last round's, with every
/// round's trace in order, the strongest decision of any round with the reason of the first
/// round that reached it (a hook that asked about an earlier form still asks), and as
/// `updated_input` the settled rewrite.
pub(crate) async fn settle<F, Fut>(
    event: HookEvent,
    original: Option<&Value>,
    mut round: F,
) -> HookOutcome
where
    F: FnMut(Option<Value>) -> Fut,
    Fut: Future<Output = HookOutcome>,
{
    let mut outcome = round(None).await;
    let Some(original) = original else {
        return outcome;
    };
    let mut seen = original.clone();
    let mut earlier = HookOutcome::default();
    for _ in 1..MAX_REWRITE_ROUNDS {
        let Some(rewrite) = rewritten(&outcome, &seen) else {
            return settled(outcome, earlier, &seen, original);
        };
        absorb_round(&mut earlier, outcome);
        outcome = round(Some(rewrite.clone())).await;
        seen = rewrite;
    }
    if rewritten(&outcome, &seen).is_none() {
        return settled(outcome, earlier, &seen, original);
    }
    absorb_round(&mut earlier, outcome);
    HookOutcome {
        decision: blocking_decision(event),
        explicit: true,
        reason: Some(format!(
            "the {event} hooks rewrote the tool input {MAX_REWRITE_ROUNDS} times without \
             settling on one; a rewritten input runs only once every hook has seen it"
        )),
        trace: earlier.trace,
        ..HookOutcome::default()
    }
}

/// The input `outcome` rewrites `seen` to, when it rewrites it to something else and lets the
/// call go on.
fn rewritten(outcome: &HookOutcome, seen: &Value) -> Option<Value> {
    let updated = outcome.updated_input.as_ref()?;
    (outcome.continue_ && !outcome.decision.is_blocking() && updated != seen)
        .then(|| updated.clone())
}

/// Keeps an earlier round's trace, and its decision when it is the strongest so far.
fn absorb_round(earlier: &mut HookOutcome, mut round: HookOutcome) {
    if round.decision.rank() > earlier.decision.rank() {
        earlier.decision = round.decision;
        earlier.reason = round.reason.take();
    }
    earlier.trace.append(&mut round.trace);
}

/// The last round's `outcome` with the earlier rounds folded in and `seen` as the input to
/// run when it is not the `original` one.
fn settled(
    mut outcome: HookOutcome,
    mut earlier: HookOutcome,
    seen: &Value,
    original: &Value,
) -> HookOutcome {
    // As within a round, the first round to reach the winning rank gives the reason.
    let (first, last) = (earlier.decision.rank(), outcome.decision.rank());
    if first > last || (first == last && first > 0) {
        outcome.decision = earlier.decision;
        outcome.reason = earlier.reason;
        outcome.explicit = true;
    }
    earlier.trace.append(&mut outcome.trace);
    outcome.trace = earlier.trace;
    outcome.updated_input =
        (seen != original && !outcome.decision.is_blocking()).then(|| seen.clone());
    outcome
}
