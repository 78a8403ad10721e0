//! SDK-dialect (Claude-style) replies: exit 2 blocks with stderr as the reason, exit 0 prints
//! an optional JSON object (`continue`, `decision`, `reason`, `systemMessage`,
//! `hookSpecificOutput`), any other status is a non-blocking error.

use serde_json::{Map, Value};

use super::{Body, RawReply, Verdict, blocking_decision, excerpt, reply_body};
use crate::binding::Binding;
use crate::event::HookEvent;
use crate::outcome::Decision;
use crate::trace::Failure;

/// Longest reason or context string taken from one reply, as in Claude Code.
const MAX_TEXT: usize = 10_000;

/// Interprets one SDK-dialect reply.
pub(super) fn decode(event: HookEvent, binding: &Binding, raw: RawReply) -> Verdict {
    let (body, exit_code) = reply_body(binding, raw, &[2]);
    let mut verdict = match body {
        Err(failure) => Verdict::failed(failure),
        Ok(Body::Json(Value::Null)) => Verdict::default(),
        Ok(Body::Json(Value::Object(object))) => from_object(event, object),
        Ok(Body::Json(_)) => Verdict::failed(Failure::NotAnObject),
        Ok(Body::Text {
            stderr,
            exit_code: 2,
            ..
        }) => exit_two(event, &stderr),
        Ok(Body::Text { bytes, .. }) => from_text(event, &bytes),
    };
    verdict.exit_code = exit_code;
    verdict
}

/// Exit status 2: block with stderr as the reason, where the event can be blocked.
fn exit_two(event: HookEvent, stderr: &[u8]) -> Verdict {
    if !event.can_block() || event == HookEvent::PermissionRequest {
        return Verdict {
            ignored_fields: vec![format!("exit status 2 (cannot block {event})")],
            ..Verdict::default()
        };
    }
    let reason = capped(String::from_utf8_lossy(stderr).trim());
    Verdict {
        decision: Some(blocking_decision(event)),
        reason: (!reason.is_empty()).then_some(reason),
        ..Verdict::default()
    }
}

/// Exit status 0: a JSON object when the output starts with `{`, otherwise plain text, which
/// becomes context for `UserPromptSubmit` and `SessionStart` and is ignored elsewhere.
fn from_text(event: HookEvent, bytes: &[u8]) -> Verdict {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return Verdict::default();
    }
    if text.starts_with('{') {
        return match crate::lenient_json::from_slice::<Map<String, Value>>(text.as_bytes()) {
            Ok(object) => from_object(event, object),
            Err(error) if crate::lenient_json::too_deep(&error) => {
                Verdict::failed(Failure::TooDeep)
            }
            Err(_) => Verdict::failed(Failure::NotJson {
                excerpt: excerpt(text),
            }),
        };
    }
    match event {
        HookEvent::UserPromptSubmit | HookEvent::SessionStart => Verdict {
            additional_context: Some(capped(text)),
            ..Verdict::default()
        },
        _ => Verdict::default(),
    }
}

/// Reads the documented reply fields; everything else is recorded as ignored. An async reply
/// (`"async": true`) decides nothing: Claude Code does not wait for such a hook, so nothing
/// else it says counts (and it does not block).
fn from_object(event: HookEvent, object: Map<String, Value>) -> Verdict {
    let mut verdict = Verdict::default();
    if object.get("async") == Some(&Value::Bool(true)) {
        verdict.ignored_fields = object
            .keys()
            .filter(|key| !matches!(key.as_str(), "async" | "asyncTimeout"))
            .map(|key| format!("{key} (in an async reply)"))
            .collect();
        return verdict;
    }
    let mut top_reason = None;
    let mut stop = false;
    let mut stop_reason = None;
    for (key, value) in object {
        match (key.as_str(), value) {
            ("continue", Value::Bool(proceed)) => stop = !proceed,
            ("suppressOutput", _) => {}
            ("stopReason", Value::String(reason)) => stop_reason = Some(capped(&reason)),
            ("decision", Value::String(decision)) => match (decision.as_str(), event) {
                ("block", _) if event.can_block() && event != HookEvent::PermissionRequest => {
                    raise(&mut verdict, blocking_decision(event));
                }
                ("approve", HookEvent::PreToolUse) => raise(&mut verdict, Decision::Allow),
                _ => verdict
                    .ignored_fields
                    .push(format!("decision ({decision:?} on {event})")),
            },
            ("reason", Value::String(reason)) => top_reason = Some(capped(&reason)),
            ("systemMessage", Value::String(message)) => {
                verdict.system_message = Some(capped(&message));
            }
            ("hookSpecificOutput", Value::Object(specific)) => {
                event_specific(event, specific, &mut verdict);
            }
            (key, _) => verdict.ignored_fields.push(key.to_owned()),
        }
    }
    if stop {
        verdict.stop = Some(stop_reason);
    }
    // `permissionDecisionReason` (or a permission `message`) wins over the top-level reason.
    if verdict.reason.is_none() {
        verdict.reason = top_reason;
    }
    verdict
}

/// Reads `hookSpecificOutput`, taking only the fields that mean something for `event`.
fn event_specific(event: HookEvent, specific: Map<String, Value>, verdict: &mut Verdict) {
    for (key, value) in specific {
        match (key.as_str(), value, event) {
            ("hookEventName", Value::String(name), _) if name == event.name() => {}
            ("permissionDecision", Value::String(decision), HookEvent::PreToolUse) => {
                match decision.as_str() {
                    "allow" => raise(verdict, Decision::Allow),
                    "ask" => raise(verdict, Decision::Ask),
                    "deny" => raise(verdict, Decision::Deny),
                    _ => verdict.ignored_fields.push(format!(
                        "hookSpecificOutput.permissionDecision ({decision:?})"
                    )),
                }
            }
            ("permissionDecisionReason", Value::String(reason), HookEvent::PreToolUse) => {
                verdict.reason = Some(capped(&reason));
            }
            ("updatedInput", Value::Object(input), HookEvent::PreToolUse) => {
                verdict.updated_input = Some(Value::Object(input));
            }
            ("updatedToolOutput", output, HookEvent::PostToolUse) => {
                verdict.updated_tool_output = Some(output);
            }
            ("additionalContext", Value::String(context), _) if event.takes_context() => {
                verdict.additional_context = Some(capped(&context));
            }
            ("decision", Value::Object(decision), HookEvent::PermissionRequest) => {
                permission_decision(decision, verdict);
            }
            (key, _, _) => verdict
                .ignored_fields
                .push(format!("hookSpecificOutput.{key}")),
        }
    }
}

/// A `PermissionRequest` reply's `decision: {behavior, message?, updatedInput?}`.
fn permission_decision(decision: Map<String, Value>, verdict: &mut Verdict) {
    for (key, value) in decision {
        match (key.as_str(), value) {
            ("behavior", Value::String(behavior)) if behavior == "allow" => {
                raise(verdict, Decision::Allow);
            }
            ("behavior", Value::String(behavior)) if behavior == "deny" => {
                raise(verdict, Decision::Deny);
            }
            ("message", Value::String(message)) => verdict.reason = Some(capped(&message)),
            ("updatedInput", Value::Object(input)) => {
                verdict.updated_input = Some(Value::Object(input))
            }
            (key, _) => verdict
                .ignored_fields
                .push(format!("hookSpecificOutput.decision.{key}")),
        }
    }
}

/// Keeps the stronger of the verdict's decision and `decision`.
fn raise(verdict: &mut Verdict, decision: Decision) {
    if verdict
        .decision
        .is_none_or(|current| decision.rank() > current.rank())
    {
        verdict.decision = Some(decision);
    }
}

/// `text` cut to [`MAX_TEXT`] characters.
fn capped(text: &str) -> String {
    match text.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => text[..cut].to_owned(),
        None => text.to_owned(),
    }
}
