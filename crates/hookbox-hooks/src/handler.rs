//! What runs when a binding matches: a shell command, an HTTP POST, or an in-process callback.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

/// What a failing handler (crash, timeout, bad output, unreachable endpoint) means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Fail open: the failure is traced and does not block (the seeds' rule).
    #[default]
    Allow,
    /// Fail closed (hookbox extension, `"on_error": "deny"`): the failure blocks.
    Deny,
}

/// A command hook: `/bin/sh -c COMMAND` with the event JSON on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandHandler {
    /// The shell command line.
    pub command: String,
    /// Wall-clock limit for the whole process group.
    pub timeout: Duration,
    /// What a failure means.
    pub on_error: OnError,
}

/// How an HTTP handler's event reaches its receiver.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Delivery {
    /// Posted once while the call waits; a failure is traced and the event is gone (the
    /// default, and the right one for a gate).
    #[default]
    FireAndForget,
    /// Written to the store's outbox before the model sees the result and sent by `hookbox
    /// serve`'s deliverer until the receiver takes it (hookbox extension,
    /// `"delivery": "at_least_once"`, for audit trails). The receiver's reply is never read.
    AtLeastOnce,
}

/// An HTTP hook: a POST of the event JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpHandler {
    /// Where to POST.
    pub url: String,
    /// Extra, non-secret request headers, in file order.
    pub headers: Vec<(String, String)>,
    /// Limit for the whole request and response.
    pub timeout: Duration,
    /// What a failure means.
    pub on_error: OnError,
    /// Sent now, or queued in the outbox.
    pub delivery: Delivery,
    /// The credential whose value (a Standard Webhooks `whsec_` secret) signs this handler's
    /// durable deliveries instead of `[audit] signing_secret` (hookbox extension,
    /// `"signing_credential"`; only with [`Delivery::AtLeastOnce`]).
    pub signing_credential: Option<String>,
}

/// Why an in-process callback produced no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CallbackError(pub String);

/// The future an in-process callback returns: the reply object, as the SDKs define it.
pub type CallbackFuture = Pin<Box<dyn Future<Output = Result<Value, CallbackError>> + Send>>;

/// An in-process hook callback: `(input, tool_use_id) -> reply`, like the SDKs' hook callbacks.
pub trait HookCallback: Send + Sync {
    /// Handles one event; `input` is the full event JSON.
    fn call(&self, input: Value, tool_use_id: Option<String>) -> CallbackFuture;
}

impl<F, Fut> HookCallback for F
where
    F: Fn(Value, Option<String>) -> Fut + Send + Sync,
    Fut: Future<Output = Result<Value, CallbackError>> + Send + 'static,
{
    fn call(&self, input: Value, tool_use_id: Option<String>) -> CallbackFuture {
        Box::pin(self(input, tool_use_id))
    }
}

/// A registered in-process callback, with a name for traces.
#[derive(Clone)]
pub struct CallbackHandler {
    /// Shown in traces (e.g. the SDK's callback id).
    pub name: String,
    /// Limit for the callback; a callback that overruns it blocks.
    pub timeout: Duration,
    /// The callback itself.
    pub callback: Arc<dyn HookCallback>,
}

impl fmt::Debug for CallbackHandler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackHandler")
            .field("name", &self.name)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// One handler of a binding.
#[derive(Debug, Clone)]
pub enum Handler {
    /// Runs a shell command.
    Command(CommandHandler),
    /// POSTs to a URL.
    Http(HttpHandler),
    /// Calls Rust code in this process.
    Callback(CallbackHandler),
}

impl Handler {
    /// A short human label: the command line, the URL, or the callback name.
    pub fn label(&self) -> &str {
        match self {
            Self::Command(command) => &command.command,
            Self::Http(http) => &http.url,
            Self::Callback(callback) => &callback.name,
        }
    }

    /// The kind as written in config files: `command`, `http` or `callback`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Command(_) => "command",
            Self::Http(_) => "http",
            Self::Callback(_) => "callback",
        }
    }

    /// The handler's time limit.
    pub fn timeout(&self) -> Duration {
        match self {
            Self::Command(command) => command.timeout,
            Self::Http(http) => http.timeout,
            Self::Callback(callback) => callback.timeout,
        }
    }
}
