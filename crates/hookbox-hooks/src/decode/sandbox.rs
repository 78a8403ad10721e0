//! Sandbox-dialect replies: only an exit-0 / 2xx JSON object whose `decision` is exactly
//! `"deny"` blocks; everything else allows, with the reason recorded as a failure.

use serde_json::{Map, Value};

use super::{Body, RawReply, Verdict, excerpt, reply_body};
use crate::binding::Binding;
use crate::event::HookEvent;
use crate::outcome::Decision;
use crate::trace::Failure;

/// Interprets one sandbox-dialect reply.
pub(super) fn decode(event: HookEvent, binding: &Binding, raw: RawReply) -> Verdict {
    let (body, exit_code) = reply_body(binding, raw, &[]);
    let mut verdict = match body {
        Err(failure) => Verdict::failed(failure),
        // Post hooks (and hooks of other events nothing can block) run for their side
        // effects; whatever they print is ignored.
        Ok(_) if !event.can_block() => Verdict::default(),
        Ok(Body::Json(value)) => decision_of(value),
        Ok(Body::Text { bytes, .. }) => match parse_object(&bytes) {
            Ok(object) => decision_of(Value::Object(object)),
            Err(failure) => Verdict::failed(failure),
        },
    };
    verdict.exit_code = exit_code;
    verdict
}

/// Parses a reply that must be exactly one JSON object (surrounding whitespace allowed).
fn parse_object(bytes: &[u8]) -> Result<Map<String, Value>, Failure> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim();
    if text.is_empty() {
        return Err(Failure::EmptyOutput);
    }
    match crate::lenient_json::from_slice::<Value>(text.as_bytes()) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(Failure::NotAnObject),
        Err(error) if crate::lenient_json::too_deep(&error) => Err(Failure::TooDeep),
        Err(_) => Err(Failure::NotJson {
            excerpt: excerpt(text),
        }),
    }
}

/// The verdict of a reply object: `deny` blocks, `allow` allows explicitly, `{}` says nothing
/// (no decision, not a failure: the usual "nothing to add" answer), anything else allows as a
/// fail-open.
fn decision_of(value: Value) -> Verdict {
    let Value::Object(mut object) = value else {
        return Verdict::failed(Failure::NotAnObject);
    };
    if object.is_empty() {
        return Verdict::default();
    }
    let decision = object.shift_remove("decision");
    let reason = object.shift_remove("reason");
    let mut verdict = match decision.as_ref().and_then(Value::as_str) {
        Some("deny") => Verdict {
            decision: Some(Decision::Deny),
            ..Verdict::default()
        },
        Some("allow") => Verdict {
            decision: Some(Decision::Allow),
            ..Verdict::default()
        },
        _ => Verdict::failed(Failure::UnrecognizedDecision { found: decision }),
    };
    match reason {
        Some(Value::String(reason)) => verdict.reason = Some(reason),
        Some(_) => verdict
            .ignored_fields
            .push("reason (not a string)".to_owned()),
        None => {}
    }
    verdict.ignored_fields.extend(object.keys().cloned());
    verdict
}
