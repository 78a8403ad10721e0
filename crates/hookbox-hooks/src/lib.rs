//! hookbox's hook engine.
//!
//! One engine serves both hook systems hookbox implements:
//!
//! * the **sandbox dialect** (`.agents/hooks.json`): named groups of `pre_tool_execution` /
//!   `post_tool_execution` rules whose `command` or `http` handlers run one after another; only
//!   a reply whose `decision` is exactly `"deny"` blocks, every failure fails open (unless the
//!   handler sets the `"on_error": "deny"` extension);
//! * the **SDK dialect**: the lifecycle events of the agent SDKs (`PreToolUse`, `Stop`, …) with
//!   Claude-style `command`/`http` hooks or in-process callbacks, run concurrently and merged
//!   deterministically in registration order.
//!
//! Both compile into one [`HookSet`]; a [`Dispatcher`] selects the bindings of an
//! [`EventInput`], runs them through its [`Runners`] (the engine itself never spawns a process
//! or opens a socket), decodes each reply by its dialect and merges them into a
//! [`HookOutcome`] with one [`TraceEntry`] per handler.
//!
//! ```
//! use std::sync::Arc;
//! use hookbox_hooks::{Decision, Dispatcher, EventInput, HookSet, Runners};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let config = r#"{
//!   "security-gate": {
//!     "pre_tool_execution": [{
//!       "matcher": "code_execution",
//!       "hooks": [{"type": "command", "timeout": 10,
//!                  "command": "grep -q 'rm -rf' && echo '{\"decision\":\"deny\",\"reason\":\"no\"}' || true"}]
//!     }]
//!   }
//! }"#;
//! let mut builder = HookSet::builder();
//! builder.load_str("hooks.json", config, None)?;
//! let dispatcher = Dispatcher::new(Arc::new(builder.build()), Runners::host(None)?);
//!
//! let call = EventInput::pre_tool_execution(
//!     "code_execution",
//!     json!({"code": "rm -rf /tmp/forbidden", "language": "bash"}),
//!     "env_example",
//!     None,
//! );
//! let outcome = dispatcher.dispatch(&call).await;
//! assert_eq!(outcome.decision, Decision::Deny);
//! assert_eq!(outcome.reason.as_deref(), Some("no"));
//! assert_eq!(outcome.trace.len(), 1);
//! # Ok(())
//! # }
//! ```

pub mod adapter;
mod agent_event;
mod aggregate;
mod binding;
pub mod config;
mod decode;
mod diagnostic;
mod dispatch;
mod event;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod hookset;
mod input;
mod lenient_json;
mod matcher;
mod outbox;
mod outcome;
mod policy_file;
mod rewrite;
mod runner;
mod sdk_event;
pub mod startable;
mod trace;

pub use agent_event::AgentEvent;
pub use binding::{Binding, Origin, Trust};
pub use diagnostic::{Diagnostic, Severity};
pub use dispatch::Dispatcher;
pub use event::{Dialect, HookEvent};
pub use handler::{
    CallbackError, CallbackFuture, CallbackHandler, CommandHandler, Delivery, Handler,
    HookCallback, HttpHandler, OnError,
};
pub use hookset::{
    HookSet, HookSetBuilder, HookSourceSummary, LoadError, MODEL_FILE_MAX_BYTES,
    MODEL_FILE_MAX_HANDLERS,
};
pub use input::{EventInput, SessionContext};
pub use matcher::{MatcherKind, MatcherSet};
pub use outbox::{OutboxError, OutboxEvent, OutboxQueue, OutboxSink};
pub use outcome::{Decision, HookOutcome};
pub use policy_file::{Links, POLICY_FILE_MAX_BYTES, read_policy_file, read_policy_text};
pub use runner::{
    CommandRequest, CommandRunner, HANDLER_OUTPUT_LIMIT, HookClients, HostCommandRunner,
    HttpRequest, HttpRunner, PolicyHttpRunner, ProjectCommandRunner, ProjectView, Runners,
    narrowed,
};
pub use sdk_event::{SdkEvent, SubagentRef, ToolUse};
pub use trace::{Failure, HandlerResult, TraceEntry};
