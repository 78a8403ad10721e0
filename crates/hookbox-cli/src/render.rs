//! Printing results for people and for machines.

use std::io::Write;

use hookbox_hooks::{Binding, Handler, HandlerResult, HookOutcome, TraceEntry};
use serde_json::{Value, json};

/// Writes `text` to stdout as is.
pub(crate) fn print_text(text: &str) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()
}

/// Writes `text` to stderr, ignoring failures (there is nowhere left to report them).
pub(crate) fn print_error(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// A failed command's message for stderr: `error: ` and the error with each of its causes once
/// ([`hookbox_stream_json::error_message`], which SDK mode's error results use too). A message
/// that already starts with `error: ` (a hook config diagnostic) gets no second one.
pub(crate) fn error_text(err: &anyhow::Error) -> String {
    let mut text = hookbox_stream_json::error_message(err);
    if !text.starts_with("error: ") {
        text.insert_str(0, "error: ");
    }
    text.push('\n');
    text
}

/// Writes `value` to stdout as pretty JSON and a newline.
pub(crate) fn print_json(value: &Value) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    Ok(print_text(&text)?)
}

/// One line describing a binding: event, matcher, handler, timeout, origin.
pub(crate) fn binding_line(binding: &Binding) -> String {
    let matcher = match &binding.matcher {
        Some(matcher) => format!("matcher {matcher:?}"),
        None => "all".to_owned(),
    };
    let group = binding
        .origin
        .group
        .as_deref()
        .map(|group| format!(" [{group}]"))
        .unwrap_or_default();
    format!(
        "{}{group} {matcher}: {} `{}` (timeout {}s{}{})",
        binding.event,
        binding.handler.kind(),
        binding.handler.label(),
        binding.handler.timeout().as_secs_f64(),
        if fails_closed(&binding.handler) {
            ", on_error deny"
        } else {
            ""
        },
        if durable(&binding.handler) {
            ", delivered at least once"
        } else {
            ""
        },
    )
}

/// A binding as JSON for `check --json`.
pub(crate) fn binding_json(binding: &Binding) -> Value {
    json!({
        "event": binding.event,
        "matcher": binding.matcher,
        "handler": binding.handler.kind(),
        "label": binding.handler.label(),
        "timeout_s": binding.handler.timeout().as_secs_f64(),
        "on_error": if fails_closed(&binding.handler) { "deny" } else { "allow" },
        "at_least_once": durable(&binding.handler),
        "origin": binding.origin,
    })
}

fn fails_closed(handler: &Handler) -> bool {
    match handler {
        Handler::Command(command) => command.on_error == hookbox_hooks::OnError::Deny,
        Handler::Http(http) => http.on_error == hookbox_hooks::OnError::Deny,
        Handler::Callback(_) => false,
    }
}

/// Whether `handler` is an http handler with `"delivery": "at_least_once"`.
fn durable(handler: &Handler) -> bool {
    matches!(handler, Handler::Http(http) if http.delivery == hookbox_hooks::Delivery::AtLeastOnce)
}

/// A dispatch outcome for people: the decision, its reason, what changed, then the trace.
pub(crate) fn outcome_text(outcome: &HookOutcome) -> String {
    let mut text = format!(
        "decision: {}\n",
        json!(outcome.decision).as_str().unwrap_or_default()
    );
    if let Some(reason) = &outcome.reason {
        text.push_str(&format!("reason: {reason}\n"));
    }
    if !outcome.continue_ {
        text.push_str(&format!(
            "continue: false ({})\n",
            outcome.stop_reason.as_deref().unwrap_or("no reason given")
        ));
    }
    if let Some(input) = &outcome.updated_input {
        text.push_str(&format!("updated input: {input}\n"));
    }
    if let Some(context) = &outcome.additional_context {
        text.push_str(&format!("additional context: {context}\n"));
    }
    if let Some(message) = &outcome.system_message {
        text.push_str(&format!("system message: {message}\n"));
    }
    if outcome.trace.is_empty() {
        text.push_str("no hook matched\n");
    } else {
        text.push_str("trace:\n");
        for entry in &outcome.trace {
            text.push_str(&format!("  {}\n", trace_line(entry)));
        }
    }
    text
}

/// One line describing a handler run: what it was, what it decided, how long it took, why it
/// failed.
pub(crate) fn trace_line(entry: &TraceEntry) -> String {
    let result = match entry.result {
        HandlerResult::NoDecision => "no decision".to_owned(),
        HandlerResult::Decided(decision) => json!(decision).as_str().unwrap_or_default().to_owned(),
        HandlerResult::Skipped => "skipped (an earlier hook denied)".to_owned(),
    };
    let mut line = format!(
        "{} {} `{}` → {result} in {:.1} ms",
        entry.event,
        entry.handler,
        entry.label,
        entry.duration.as_secs_f64() * 1000.0
    );
    if let Some(failure) = &entry.failure {
        let policy = if entry.failed_closed {
            "failed closed"
        } else {
            "failed open"
        };
        line.push_str(&format!(" ({policy}: {failure})"));
    }
    if let Some(reason) = &entry.reason {
        line.push_str(&format!("; reason: {reason}"));
    }
    if !entry.ignored_fields.is_empty() {
        line.push_str(&format!("; ignored: {}", entry.ignored_fields.join(", ")));
    }
    if let Some(id) = &entry.webhook_id {
        line.push_str(&format!("; queued for delivery as webhook-id {id}"));
    }
    line
}

#[cfg(test)]
mod tests {
    use std::io;

    use super::error_text;

    /// An error that, like many, writes its source into its message and returns it too.
    #[derive(Debug, thiserror::Error)]
    #[error("cannot read `{path}`: {source}")]
    struct ReadError {
        path: &'static str,
        #[source]
        source: io::Error,
    }

    fn read_error() -> ReadError {
        ReadError {
            path: "x.json",
            source: io::Error::new(io::ErrorKind::NotFound, "no such file"),
        }
    }

    #[test]
    fn a_cause_already_in_the_message_is_printed_once() {
        let err = anyhow::Error::new(read_error()).context("cannot load the hooks");
        assert_eq!(
            error_text(&err),
            "error: cannot load the hooks: cannot read `x.json`: no such file\n"
        );
    }

    #[test]
    fn causes_not_in_the_message_are_all_printed() {
        let err = anyhow::anyhow!("inner").context("middle").context("outer");
        assert_eq!(error_text(&err), "error: outer: middle: inner\n");
    }

    #[test]
    fn a_message_that_says_error_gets_no_second_prefix() {
        let err = anyhow::anyhow!("error: x.json: $: not valid JSON");
        assert_eq!(error_text(&err), "error: x.json: $: not valid JSON\n");
    }
}
