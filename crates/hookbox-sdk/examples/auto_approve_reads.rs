//! Seed 002, "Auto-approve read-only permission requests": in the `default` permission mode
//! `Read`, `Glob` and `Grep` need permission; a PermissionRequest callback on
//! `Read|Glob|Grep` allows them, so the session needs no one to ask. The model is scripted.
//!
//! `cargo run -p hookbox-sdk --example auto_approve_reads`

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example prints what the session does"
)]

use std::sync::Arc;

use hookbox_sdk::{CallbackError, HookEvent, HookMatcher, ScriptedModel, Session};
use serde_json::{Value, json};

const SCRIPT: &str = r#"{"turns": [
  {"tool_calls": [{"name": "Glob", "args": {"pattern": "*.md"}}]},
  {"tool_calls": [{"name": "Read", "args": {"file_path": "NOTES.md"}}]},
  {"tool_calls": [{"name": "Write", "args": {"file_path": "NOTES.md", "content": "overwritten"}}]},
  {"text": "NOTES.md says the release is on Friday. I was not allowed to change it."}
]}"#;

async fn auto_approve_reads(
    _input: Value,
    _tool_use_id: Option<String>,
) -> Result<Value, CallbackError> {
    Ok(json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        },
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = tempfile::tempdir()?;
    std::fs::write(cwd.path().join("NOTES.md"), "The release is on Friday.\n")?;
    let session = Session::builder(cwd.path())
        .model(Arc::new(ScriptedModel::from_json(
            "auto_approve_reads".as_ref(),
            SCRIPT,
        )?))
        .hook(
            HookEvent::PermissionRequest,
            HookMatcher::new(Some("Read|Glob|Grep")).hook(auto_approve_reads),
        )
        .build()?;
    let mut messages = session.query("What do my notes say?");
    while let Some(message) = messages.next_message().await {
        println!("{message}");
    }
    Ok(())
}
