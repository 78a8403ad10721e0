//! Seed 002, "Modify tool input": a PreToolUse callback on `Bash` prefixes every command with
//! `timeout 30` through `updatedInput`; the command that runs (in the sandbox) is the
//! rewritten one. The model is scripted.
//!
//! `cargo run -p hookbox-sdk --example bash_timeout`

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example prints what the session does"
)]

use std::sync::Arc;

use hookbox_sdk::{CallbackError, HookEvent, HookMatcher, ScriptedModel, Session};
use serde_json::{Value, json};

const SCRIPT: &str = r#"{"turns": [
  {"tool_calls": [{"name": "Bash", "args": {"command": "echo started; sleep 1; echo finished"}}]},
  {"text": "The command finished well within its 30 second limit."}
]}"#;

async fn add_timeout(input: Value, _tool_use_id: Option<String>) -> Result<Value, CallbackError> {
    let original = input["tool_input"]["command"].as_str().unwrap_or_default();
    Ok(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "updatedInput": {"command": format!("timeout 30 {original}")},
        },
    }))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = tempfile::tempdir()?;
    let session = Session::builder(cwd.path())
        .model(Arc::new(ScriptedModel::from_json(
            "bash_timeout".as_ref(),
            SCRIPT,
        )?))
        .hook(
            HookEvent::PreToolUse,
            HookMatcher::new(Some("Bash")).hook(add_timeout),
        )
        .hook(
            HookEvent::PostToolUse,
            HookMatcher::new(Some("Bash")).hook(|input: Value, _id: Option<String>| async move {
                println!("[ran] {}", input["tool_input"]["command"]);
                Ok::<_, CallbackError>(json!({}))
            }),
        )
        .build()?;
    let mut messages = session.query("Run the slow job");
    while let Some(message) = messages.next_message().await {
        println!("{message}");
    }
    Ok(())
}
