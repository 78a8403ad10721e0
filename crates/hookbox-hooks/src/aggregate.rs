//! Merging handler verdicts into one outcome, deterministically in registration order.

use std::time::Duration;

use crate::binding::Binding;
use crate::decode::Verdict;
use crate::outcome::HookOutcome;
use crate::trace::{HandlerResult, TraceEntry};

/// Folds one handler's verdict into `outcome` and records its trace entry. A shadow-mode
/// handler's verdict is only recorded (`would_deny`), never folded in.
///
/// Rules (`docs/hook-engine.md`, "Decisions"; the sandbox dialect satisfies them trivially): `continue: false` wins
/// over everything and keeps the first stop reason; deny/block > ask > allow, the first handler
/// with the winning rank gives the reason; `additionalContext` and `systemMessage` concatenate;
/// `updatedInput` and `updatedToolOutput` replace the whole input / output, the last one wins.
pub(crate) fn absorb(
    outcome: &mut HookOutcome,
    binding: &Binding,
    verdict: Verdict,
    duration: Duration,
) {
    let mut entry = TraceEntry::new(binding);
    entry.duration = duration;
    entry.failure = verdict.failure;
    entry.failed_closed = verdict.failed_closed;
    entry.ignored_fields = verdict.ignored_fields;
    entry.exit_code = verdict.exit_code;
    entry.webhook_id = verdict.webhook_id;
    entry.reason.clone_from(&verdict.reason);

    if binding.shadow {
        // Shadow mode: record what the handler would have done, change nothing.
        entry.would_deny = verdict
            .decision
            .is_some_and(crate::outcome::Decision::is_blocking)
            || verdict.stop.is_some();
        outcome.trace.push(entry);
        return;
    }
    if let Some(decision) = verdict.decision {
        entry.result = HandlerResult::Decided(decision);
        let reason = verdict.reason.or_else(|| {
            decision.is_blocking().then(|| {
                format!(
                    "blocked by {} hook `{}`",
                    binding.event,
                    binding.handler.label()
                )
            })
        });
        let stronger = decision.rank() > outcome.decision.rank();
        let first_of_rank = decision.rank() == outcome.decision.rank() && outcome.reason.is_none();
        if stronger || first_of_rank {
            outcome.decision = decision;
            outcome.reason = reason;
        }
        outcome.explicit = true;
    }
    if let Some(input) = verdict.updated_input {
        outcome.updated_input = Some(input);
    }
    if let Some(output) = verdict.updated_tool_output {
        outcome.updated_tool_output = Some(output);
    }
    append(&mut outcome.additional_context, verdict.additional_context);
    append(&mut outcome.system_message, verdict.system_message);
    if let Some(stop_reason) = verdict.stop
        && outcome.continue_
    {
        outcome.continue_ = false;
        outcome.stop_reason = stop_reason;
    }
    outcome.trace.push(entry);
}

/// Records that `binding` did not run because an earlier handler already denied.
pub(crate) fn skipped(outcome: &mut HookOutcome, binding: &Binding) {
    let mut entry = TraceEntry::new(binding);
    entry.result = HandlerResult::Skipped;
    outcome.trace.push(entry);
}

/// Appends `more` to `text` on a new line.
fn append(text: &mut Option<String>, more: Option<String>) {
    match (text.as_mut(), more) {
        (Some(text), Some(more)) => {
            text.push('\n');
            text.push_str(&more);
        }
        (None, more) => *text = more,
        (Some(_), None) => {}
    }
}
