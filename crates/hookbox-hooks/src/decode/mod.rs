//! Turning a handler's raw reply into a verdict, by the rules of its event's dialect.

mod sandbox;
mod sdk;

use hookbox_exec::{CapturedOutput, ExitKind, ProcessOutput};
use hookbox_net::HttpReply;
use serde_json::Value;

use crate::binding::Binding;
use crate::event::{Dialect, HookEvent};
use crate::handler::{Handler, OnError};
use crate::outcome::Decision;
use crate::trace::Failure;

/// What a handler run produced before any interpretation.
#[derive(Debug)]
pub(crate) enum RawReply {
    /// A command handler's finished process.
    Process(ProcessOutput),
    /// An HTTP handler's response.
    Http(HttpReply),
    /// A callback's returned object.
    Callback(Value),
    /// The handler could not produce a reply at all.
    Failed(Failure),
}

/// One handler's interpreted reply.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) decision: Option<Decision>,
    pub(crate) reason: Option<String>,
    pub(crate) failure: Option<Failure>,
    pub(crate) failed_closed: bool,
    pub(crate) updated_input: Option<Value>,
    /// A PostToolUse replacement of the tool's output (`updatedToolOutput`).
    pub(crate) updated_tool_output: Option<Value>,
    pub(crate) additional_context: Option<String>,
    pub(crate) system_message: Option<String>,
    /// `Some(reason)` when the handler asked to stop the session (`continue: false`).
    pub(crate) stop: Option<Option<String>>,
    pub(crate) ignored_fields: Vec<String>,
    pub(crate) exit_code: Option<i32>,
    /// The `webhook-id` of an event stored in the outbox.
    pub(crate) webhook_id: Option<String>,
}

impl Verdict {
    /// The verdict of a handler that produced no usable reply.
    pub(crate) fn failed(failure: Failure) -> Self {
        Self {
            failure: Some(failure),
            ..Self::default()
        }
    }
}

/// Interprets `raw` from `binding`'s handler for `event`, applying its failure policy.
pub(crate) fn decode(event: HookEvent, binding: &Binding, raw: RawReply) -> Verdict {
    let answered = answer_before_its_end(&raw);
    let mut verdict = decode_by_dialect(event, binding, raw);
    if let Some(stdout) = answered {
        keep_a_completed_block(event, binding, stdout, &mut verdict);
    }
    let unreadable = match verdict.failure {
        // The reply was cut at the capture cap: whatever it said past the cut is unknown, and
        // a gate that echoes its input would otherwise be defeated by a large input.
        Some(Failure::OutputTruncated) => Some(format!(
            "hook `{}` answered with more than {} bytes, so its answer was cut; a cut answer \
             is never an allow",
            binding.handler.label(),
            crate::runner::HANDLER_OUTPUT_LIMIT
        )),
        // Likewise for an echo of a deeply nested input.
        Some(Failure::TooDeep) => Some(format!(
            "hook `{}` answered with JSON nested too deep to read; an unreadable answer is \
             never an allow",
            binding.handler.label()
        )),
        _ => None,
    };
    if let Some(reason) = unreadable
        && verdict.decision.is_none()
        && event.can_block()
    {
        verdict.decision = Some(blocking_decision(event));
        verdict.failed_closed = true;
        verdict.reason = Some(reason);
        return verdict;
    }
    if verdict.failure.is_some() && verdict.decision.is_none() && fails_closed(event, binding) {
        let failure = verdict
            .failure
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        verdict.decision = Some(blocking_decision(event));
        verdict.failed_closed = true;
        verdict.reason = Some(format!(
            "hook `{}` failed ({failure}) and is set to fail closed",
            binding.handler.label()
        ));
    }
    verdict
}

/// Interprets `raw` by the rules of `event`'s dialect alone.
fn decode_by_dialect(event: HookEvent, binding: &Binding, raw: RawReply) -> Verdict {
    match event.dialect() {
        Dialect::Sandbox => sandbox::decode(event, binding, raw),
        Dialect::Sdk => sdk::decode(event, binding, raw),
    }
}

/// What a command hook printed in full before its timeout or a signal ended it (the signal
/// seen directly, or as the shell reports a child's death by one: exit status 128 + N): an
/// answer it completed is not taken back by how the process ended afterwards. An exit status
/// the hook chose itself keeps its meaning in the dialect, and a cut reply is handled apart.
fn answer_before_its_end(raw: &RawReply) -> Option<Vec<u8>> {
    match raw {
        RawReply::Process(output)
            if matches!(
                output.exit,
                ExitKind::TimedOut | ExitKind::Signaled(_) | ExitKind::Exited(129..=192)
            ) && !output.stdout.truncated() =>
        {
            Some(output.stdout.bytes.clone())
        }
        _ => None,
    }
}

/// Takes the blocking decision of `stdout`, read as the reply of a hook that exited 0, when the
/// hook failed without deciding: a completed deny stays a deny. Anything else it printed (an
/// allow, a rewritten input) is not taken from a hook that did not finish.
fn keep_a_completed_block(
    event: HookEvent,
    binding: &Binding,
    stdout: Vec<u8>,
    verdict: &mut Verdict,
) {
    if verdict.decision.is_some() || verdict.failure.is_none() || !event.can_block() {
        return;
    }
    let completed = RawReply::Process(ProcessOutput {
        exit: ExitKind::Exited(0),
        stdout: CapturedOutput {
            bytes: stdout,
            dropped: 0,
        },
        stderr: CapturedOutput::default(),
        duration: std::time::Duration::ZERO,
    });
    let answer = decode_by_dialect(event, binding, completed);
    if matches!(answer.decision, Some(Decision::Deny | Decision::Block)) {
        verdict.decision = answer.decision;
        verdict.reason = answer.reason;
    }
}

/// Whether a failure of this handler on this event blocks: `on_error: "deny"`, or any SDK
/// callback (callbacks are gates).
fn fails_closed(event: HookEvent, binding: &Binding) -> bool {
    if !event.can_block() {
        return false;
    }
    match &binding.handler {
        Handler::Command(command) => command.on_error == OnError::Deny,
        Handler::Http(http) => http.on_error == OnError::Deny,
        Handler::Callback(_) => event.dialect() == Dialect::Sdk,
    }
}

/// The decision that stops `event`: deny for tool gates, block for everything else.
pub(crate) fn blocking_decision(event: HookEvent) -> Decision {
    match event {
        HookEvent::PreToolExecution | HookEvent::PreToolUse | HookEvent::PermissionRequest => {
            Decision::Deny
        }
        _ => Decision::Block,
    }
}

/// The body to interpret from a reply, or the failure that prevents it.
///
/// Exit statuses in `meaningful_exits` are left for the dialect to interpret (their stdout is
/// returned as the body); any other non-zero status is a failure.
fn reply_body(
    binding: &Binding,
    raw: RawReply,
    meaningful_exits: &[i32],
) -> (Result<Body, Failure>, Option<i32>) {
    match raw {
        RawReply::Process(output) => {
            // A reply cut at the cap is never an allow, however the process ended: a gate that
            // floods past the cap and is then killed at its timeout must not fail open.
            if output.stdout.truncated() {
                let code = match output.exit {
                    ExitKind::Exited(code) => Some(code),
                    ExitKind::TimedOut | ExitKind::Signaled(_) => None,
                };
                return (Err(Failure::OutputTruncated), code);
            }
            let code = match output.exit {
                ExitKind::TimedOut => return (Err(timeout(binding)), None),
                ExitKind::Signaled(signal) => return (Err(Failure::Signaled { signal }), None),
                ExitKind::Exited(code) => code,
            };
            if code != 0 && !meaningful_exits.contains(&code) {
                let failure = Failure::NonZeroExit {
                    code,
                    stderr: first_line(&output.stderr.bytes),
                };
                return (Err(failure), Some(code));
            }
            let body = Body::Text {
                bytes: output.stdout.bytes,
                stderr: output.stderr.bytes,
                exit_code: code,
            };
            (Ok(body), Some(code))
        }
        RawReply::Http(reply) => {
            if !(200..300).contains(&reply.status) {
                return (
                    Err(Failure::HttpStatus {
                        status: reply.status,
                    }),
                    None,
                );
            }
            if reply.body_dropped > 0 {
                return (Err(Failure::OutputTruncated), None);
            }
            let body = Body::Text {
                bytes: reply.body,
                stderr: Vec::new(),
                exit_code: 0,
            };
            (Ok(body), None)
        }
        RawReply::Callback(value) => (Ok(Body::Json(value)), None),
        RawReply::Failed(failure) => (Err(failure), None),
    }
}

/// A reply ready for interpretation.
enum Body {
    /// Bytes printed or returned over HTTP, with the command's stderr and exit status.
    Text {
        bytes: Vec<u8>,
        stderr: Vec<u8>,
        exit_code: i32,
    },
    /// An object a callback returned.
    Json(Value),
}

/// The timeout failure for `binding`.
pub(crate) fn timeout(binding: &Binding) -> Failure {
    Failure::Timeout {
        after_ms: u64::try_from(binding.handler.timeout().as_millis()).unwrap_or(u64::MAX),
    }
}

/// The first non-empty line of some output, trimmed and capped, for messages.
fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    excerpt(line)
}

/// At most 200 characters of `text`, marked when cut.
fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookbox_exec::CapturedOutput;
    use proptest::prelude::*;

    use super::*;
    use crate::binding::Origin;
    use crate::handler::{CommandHandler, HttpHandler};

    fn binding(event: HookEvent, handler: Handler) -> Binding {
        let origin = Origin {
            source: "prop".into(),
            group: None,
            json_path: "$".into(),
            trust: crate::binding::Trust::Owner,
        };
        Binding::new(event, None, handler, origin)
    }

    fn command(on_error: OnError) -> Handler {
        Handler::Command(CommandHandler {
            command: "x".into(),
            timeout: Duration::from_secs(1),
            on_error,
        })
    }

    /// Replies shaped like what hooks print: JSON objects with the real keys, random values.
    fn reply_text() -> impl Strategy<Value = Vec<u8>> {
        let key = prop::sample::select(vec![
            "decision",
            "reason",
            "continue",
            "stopReason",
            "systemMessage",
            "hookSpecificOutput",
            "hookEventName",
            "permissionDecision",
            "updatedInput",
            "additionalContext",
            "behavior",
            "message",
            "other",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop::sample::select(vec!["deny", "allow", "ask", "block", "approve", "DENY", ""])
                .prop_map(Value::from),
            ".{0,20}".prop_map(Value::from),
        ];
        let value = leaf.prop_recursive(3, 32, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key.clone(), inner), 0..6).prop_map(|pairs| {
                    Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                }),
            ]
        });
        prop_oneof![
            value.prop_map(|value| value.to_string().into_bytes()),
            prop::collection::vec(any::<u8>(), 0..64),
        ]
    }

    #[test]
    fn a_reply_cut_at_the_cap_denies_however_the_hook_ended() {
        let bound = binding(HookEvent::PreToolExecution, command(OnError::Allow));
        for exit in [
            ExitKind::TimedOut,
            ExitKind::Signaled(9),
            ExitKind::Exited(1),
            ExitKind::Exited(0),
        ] {
            let output = ProcessOutput {
                exit,
                stdout: CapturedOutput {
                    bytes: b"aaaa".to_vec(),
                    dropped: 4_000_000,
                },
                stderr: CapturedOutput {
                    bytes: Vec::new(),
                    dropped: 0,
                },
                duration: Duration::ZERO,
            };
            let verdict = decode(
                HookEvent::PreToolExecution,
                &bound,
                RawReply::Process(output),
            );
            assert_eq!(verdict.decision, Some(Decision::Deny), "{exit:?}");
            assert!(verdict.failed_closed, "{exit:?}");
        }
    }

    proptest! {
        #[test]
        fn decoding_never_panics(
            event in prop::sample::select(HookEvent::ALL.to_vec()),
            code in prop::sample::select(vec![0, 1, 2, 127, -1]),
            stdout in reply_text(),
            stderr in prop::collection::vec(any::<u8>(), 0..32),
            dropped in prop::sample::select(vec![0u64, 1]),
            fail_closed in any::<bool>(),
        ) {
            let on_error = if fail_closed { OnError::Deny } else { OnError::Allow };
            let bound = binding(event, command(on_error));
            let output = ProcessOutput {
                exit: ExitKind::Exited(code),
                stdout: CapturedOutput { bytes: stdout.clone(), dropped },
                stderr: CapturedOutput { bytes: stderr, dropped: 0 },
                duration: Duration::ZERO,
            };
            let verdict = decode(event, &bound, RawReply::Process(output.clone()));
            prop_assert!(verdict.decision.is_none() || event.can_block() || verdict.failed_closed);
            // A block the hook completed holds however its process ends afterwards.
            if dropped == 0 && matches!(verdict.decision, Some(Decision::Deny | Decision::Block)) && code == 0 {
                for exit in [ExitKind::TimedOut, ExitKind::Signaled(9)] {
                    let ended = ProcessOutput { exit, ..output.clone() };
                    let late = decode(event, &bound, RawReply::Process(ended));
                    prop_assert!(matches!(late.decision, Some(Decision::Deny | Decision::Block)), "{:?}", late);
                }
            }

            let http = binding(event, Handler::Http(HttpHandler {
                url: "https://x".into(),
                headers: Vec::new(),
                timeout: Duration::from_secs(1),
                on_error,
                delivery: crate::handler::Delivery::FireAndForget,
                signing_credential: None,
            }));
            let reply = HttpReply {
                status: 200,
                body: stdout.clone(),
                body_dropped: dropped,
                retry_after: None,
            };
            decode(event, &http, RawReply::Http(reply));
            if let Ok(value) = serde_json::from_slice::<Value>(&stdout) {
                decode(event, &bound, RawReply::Callback(value));
            }
        }
    }
}
