//! A rewritten tool input runs only once every gate has seen it.
//!
//! A hook may answer with an `updatedInput` that replaces the call's input. Hooks of one event
//! run side by side (and a host agent's sandbox-dialect gates before its Claude-style hooks),
//! so a gate may have judged only the input as the model wrote it while another hook, of any
//! trust, turned `ls` into `rm -rf`. So when the hooks rewrite the input, every hook runs once
//! more, on the rewritten input, and judges it: the input that runs is then one every hook
//! saw, and any of them could deny it. What the hooks of that second round would rewrite it to
//! is not applied (a rewrite such as `timeout 30 {command}` would otherwise grow forever): as
//! with hooks run side by side, one rewrite applies, and the last word on it is the gates'.

use std::future::Future;

use serde_json::Value;

use crate::outcome::HookOutcome;

/// Runs `round` on the event's own input (`None`); when that rewrites `original` (the event's
/// tool input; `None`: it has none, and one round is all), runs it again on the rewrite, whose
/// own rewrites are dropped. The outcome is the second round's, with both rounds' traces in
/// order, the stronger decision of the two with the reason of the first round that reached it
/// (a hook that asked about the model's input still asks), and the rewrite as
/// `updated_input`.
pub(crate) async fn settle<F, Fut>(original: Option<&Value>, mut round: F) -> HookOutcome
where
    F: FnMut(Option<Value>) -> Fut,
    Fut: Future<Output = HookOutcome>,
{
    let mut first = round(None).await;
    let Some(rewrite) = original.and_then(|original| rewritten(&first, original)) else {
        return first;
    };
    let mut outcome = round(Some(rewrite.clone())).await;
    let (earlier, later) = (first.decision.rank(), outcome.decision.rank());
    if earlier > later || (earlier == later && earlier > 0) {
        outcome.decision = first.decision;
        outcome.reason = first.reason.take();
        outcome.explicit = true;
    }
    first.trace.append(&mut outcome.trace);
    outcome.trace = first.trace;
    outcome.updated_input = (!outcome.decision.is_blocking()).then_some(rewrite);
    outcome
}

/// The input `outcome` rewrites `original` to, when it rewrites it to something else and lets
/// the call go on.
fn rewritten(outcome: &HookOutcome, original: &Value) -> Option<Value> {
    let updated = outcome.updated_input.as_ref()?;
    (outcome.continue_ && !outcome.decision.is_blocking() && updated != original)
        .then(|| updated.clone())
}
