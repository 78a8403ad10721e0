//! Trace entries: one per handler run, saying what it decided, why, and how long it took.
//!
//! A gate that "did not fire" always has an answer here: the handler's failure cause (crash,
//! timeout, unparsable output, HTTP status…) is recorded even when the runtime fails open.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize, Serializer};

use crate::binding::{Binding, Origin};
use crate::event::HookEvent;
use crate::outcome::Decision;

/// Why a handler produced no usable reply. Under fail-open rules the call goes on anyway.
/// Deserializable so stored traces (`hookbox traces`) can say it in words again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    /// The command could not be started.
    SpawnFailed {
        /// The operating system's reason.
        message: String,
    },
    /// The handler did not finish within its timeout.
    Timeout {
        /// The limit, in milliseconds.
        after_ms: u64,
    },
    /// The command exited with a status other than the ones its dialect gives meaning to.
    NonZeroExit {
        /// The exit status.
        code: i32,
        /// The first line of its stderr.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        stderr: String,
    },
    /// The command was killed by a signal.
    Signaled {
        /// The signal number.
        signal: i32,
    },
    /// The reply exceeded the output limit and was cut, so it cannot be trusted: on an event
    /// that can block, it blocks (a cut answer is never an allow).
    OutputTruncated,
    /// The reply is JSON nested deeper than it can be read (128 levels), as a gate's echo
    /// of a deeply nested tool input is: on an event that can block, it blocks (the model
    /// shapes tool inputs, so it could otherwise make any gate's answer unreadable).
    TooDeep,
    /// Nothing was printed (or the HTTP body was empty).
    EmptyOutput,
    /// The reply is not a JSON object: plain text, a log line before the JSON, bad JSON.
    NotJson {
        /// The start of the reply.
        excerpt: String,
    },
    /// The reply is JSON but not an object.
    NotAnObject,
    /// The reply is a JSON object without a recognised `decision`.
    UnrecognizedDecision {
        /// The `decision` value found, if any (e.g. `"DENY"`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        found: Option<serde_json::Value>,
    },
    /// The HTTP endpoint answered with a non-2xx status.
    HttpStatus {
        /// The status code.
        status: u16,
    },
    /// The HTTP request failed (connection refused, DNS, TLS, invalid URL…).
    Network {
        /// The client's reason.
        message: String,
    },
    /// The callback returned an error.
    CallbackError {
        /// The callback's message.
        message: String,
    },
    /// The callback panicked.
    CallbackPanicked,
    /// An `at_least_once` event could not be stored in the outbox (it was not sent either).
    Outbox {
        /// The store's reason.
        message: String,
    },
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::SpawnFailed { message } => write!(f, "could not start: {message}"),
            Self::Timeout { after_ms } => write!(f, "timed out after {after_ms} ms"),
            Self::NonZeroExit { code, stderr } if stderr.is_empty() => {
                write!(f, "exited with status {code}")
            }
            Self::NonZeroExit { code, stderr } => write!(f, "exited with status {code}: {stderr}"),
            Self::Signaled { signal } => write!(f, "killed by signal {signal}"),
            Self::OutputTruncated => f.write_str("output exceeded the limit and was cut"),
            Self::TooDeep => f.write_str("output is JSON nested too deep to read"),
            Self::EmptyOutput => f.write_str("printed nothing"),
            Self::NotJson { excerpt } => write!(f, "output is not a JSON object: {excerpt:?}"),
            Self::NotAnObject => f.write_str("output is JSON but not an object"),
            Self::UnrecognizedDecision { found: Some(found) } => {
                write!(f, "decision {found} is not exactly \"allow\" or \"deny\"")
            }
            Self::UnrecognizedDecision { found: None } => {
                f.write_str("JSON object has no decision")
            }
            Self::HttpStatus { status } => write!(f, "HTTP status {status}"),
            Self::Network { message } => write!(f, "request failed: {message}"),
            Self::CallbackError { message } => write!(f, "callback failed: {message}"),
            Self::CallbackPanicked => f.write_str("callback panicked"),
            Self::Outbox { message } => write!(f, "could not queue the event: {message}"),
        }
    }
}

/// What one handler run amounted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HandlerResult {
    /// It ran and said nothing that changes the outcome (includes every fail-open).
    NoDecision,
    /// It gave this decision.
    Decided(Decision),
    /// It did not run because an earlier handler already denied (sandbox dialect).
    Skipped,
}

/// One handler's run.
#[derive(Debug, Clone, Serialize)]
pub struct TraceEntry {
    /// The event.
    pub event: HookEvent,
    /// The binding's matcher as written.
    pub matcher: Option<String>,
    /// `command`, `http` or `callback`.
    pub handler: &'static str,
    /// The command line, URL or callback name.
    pub label: String,
    /// Where it was declared.
    pub origin: Origin,
    /// What it amounted to.
    pub result: HandlerResult,
    /// The reason it gave, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it produced no usable reply, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
    /// Whether `on_error: "deny"` turned a failure into a deny.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub failed_closed: bool,
    /// Shadow mode: the handler denied (or blocked), which was recorded here (with `reason`)
    /// and not enforced.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub would_deny: bool,
    /// Reply fields the dialect does not define, or that this event does not use (ignored).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ignored_fields: Vec<String>,
    /// Exit status of a command handler that exited by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The outbox event's `webhook-id`, when an `at_least_once` handler's event was stored for
    /// delivery instead of being posted now.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook_id: Option<String>,
    /// Wall-clock time of the run.
    #[serde(rename = "duration_ms", serialize_with = "millis")]
    pub duration: Duration,
}

impl TraceEntry {
    /// An entry for `binding` with nothing recorded yet.
    pub(crate) fn new(binding: &Binding) -> Self {
        Self {
            event: binding.event,
            matcher: binding.matcher.clone(),
            handler: binding.handler.kind(),
            label: binding.handler.label().to_owned(),
            origin: binding.origin.clone(),
            result: HandlerResult::NoDecision,
            reason: None,
            failure: None,
            failed_closed: false,
            would_deny: false,
            ignored_fields: Vec::new(),
            exit_code: None,
            webhook_id: None,
            duration: Duration::ZERO,
        }
    }
}

/// Serializes a duration as fractional milliseconds.
fn millis<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_f64(duration.as_secs_f64() * 1000.0)
}
