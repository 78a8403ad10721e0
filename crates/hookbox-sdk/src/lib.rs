//! The Rust SDK for hookbox agent sessions (seed 002's "SDK hooks", natively).
//!
//! A [`Session`] works in a directory (`cwd`) with the coding tools `Bash` (inside hookbox's
//! sandbox, with `cwd` bound writable), `Read`, `Write`, `Edit`, `Glob` and `Grep` (confined to
//! `cwd`), plus `Task` when it has sub-agents. Register Rust callbacks on the lifecycle events
//! ([`HookEvent::PreToolUse`], `PostToolUse`, `PostToolUseFailure`, `PermissionRequest`,
//! `UserPromptSubmit`, `Stop`, `SubagentStart`, `SubagentStop`, `PreCompact`, `Notification`)
//! with a [`HookMatcher`]: an optional RE2 regex fully matching the tool name (or notification
//! type, compaction trigger, agent type), the callbacks, and a timeout (60 s by default; a
//! callback that overruns it or fails **blocks**). A callback gets the event's JSON input and
//! the tool-use id, and returns the SDKs' output object: `{}` to do nothing, `{"decision":
//! "block", "reason": …}`, `{"hookSpecificOutput": {"permissionDecision": "deny", …}}`,
//! `updatedInput`, `additionalContext`, `{"continue": false, "stopReason": …}`.
//!
//! ```
//! use std::sync::Arc;
//!
//! use hookbox_sdk::{CallbackError, HookEvent, HookMatcher, ScriptedModel, Session};
//! use serde_json::{Value, json};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // A scripted model replays turns (and says so in its label); a real one comes from
//! // `ModelConfig` and `build_model`.
//! let script = r#"{"turns": [
//!   {"tool_calls": [{"name": "Bash", "args": {"command": "rm -rf build"}}]},
//!   {"text": "I was not allowed to delete build/."}
//! ]}"#;
//! let model = Arc::new(ScriptedModel::from_json("inline.json".as_ref(), script)?);
//! let cwd = tempfile::tempdir()?;
//!
//! let block_dangerous = HookMatcher::new(Some("Bash")).hook(
//!     |input: Value, _tool_use_id: Option<String>| async move {
//!         let command = input["tool_input"]["command"].as_str().unwrap_or_default();
//!         if command.contains("rm -rf") || command.contains("DROP TABLE") {
//!             return Ok::<_, CallbackError>(json!({
//!                 "decision": "block",
//!                 "reason": "Destructive commands are not allowed",
//!             }));
//!         }
//!         Ok(json!({}))
//!     },
//! );
//! let session = Session::builder(cwd.path())
//!     .model(model)
//!     .hook(HookEvent::PreToolUse, block_dangerous)
//!     .build()?;
//!
//! let messages = session.query("Clean the build directory").collect_all().await;
//! let transcript: Vec<String> = messages.iter().map(ToString::to_string).collect();
//! assert!(transcript.iter().any(|line| line.contains("Destructive commands are not allowed")));
//! # Ok(())
//! # }
//! ```
//!
//! Permissions: in the `default` [`PermissionMode`], `Bash` runs (the sandbox confines it) and
//! the host-side tools ask; [`SessionBuilder::allowed_tools`], the other modes,
//! `PermissionRequest` hooks and a [`SessionBuilder::can_use_tool`] callback settle what asks. A
//! call nobody can settle is denied, and the model is told why. The runnable examples in
//! `crates/hookbox-sdk/examples/` are the seed's four: `block_dangerous`, `auto_approve_reads`,
//! `bash_timeout` and `audit_log` (`cargo run -p hookbox-sdk --example audit_log`).

pub use hookbox_agent::session::{
    CompactTrigger, ContentBlock, HookFailure, HookMatcher, MessageStream, PermissionAnswer,
    PermissionDenial, PermissionMode, PermissionPrompt, PermissionQuery, QueryResult,
    ResultSubtype, Session, SessionBuilder, SessionControl, SessionError, SessionMessage,
    SubagentDefinition, TranscriptFormat, UnknownPermissionMode,
};
pub use hookbox_hooks::{CallbackError, HookCallback, HookEvent};
pub use hookbox_llm::{
    Model, ModelConfig, ModelError, ProviderKind, ScriptedModel, build as build_model,
    client_options,
};
pub use hookbox_net::GuardedClient;
