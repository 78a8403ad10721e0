//! Seed 002, "Block dangerous tools": a PreToolUse callback on `Bash` blocks `rm -rf` and
//! `DROP TABLE`; the model sees the reason and adapts. The model is scripted (offline).
//!
//! `cargo run -p hookbox-sdk --example block_dangerous`

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example prints what the session does"
)]

use std::sync::Arc;

use hookbox_sdk::{CallbackError, HookEvent, HookMatcher, ScriptedModel, Session};
use serde_json::{Value, json};

const SCRIPT: &str = r#"{"turns": [
  {"tool_calls": [{"name": "Bash", "args": {"command": "rm -rf build"}}]},
  {"tool_calls": [{"name": "Bash", "args": {"command": "ls"}}]},
  {"text": "I could not delete build/ (destructive commands are blocked), so I only listed the files."}
]}"#;

async fn block_dangerous(
    input: Value,
    _tool_use_id: Option<String>,
) -> Result<Value, CallbackError> {
    let command = input["tool_input"]["command"].as_str().unwrap_or_default();
    if command.contains("rm -rf") || command.contains("DROP TABLE") {
        return Ok(json!({
            "decision": "block",
            "reason": "Destructive commands are not allowed",
        }));
    }
    Ok(json!({}))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = tempfile::tempdir()?;
    let session = Session::builder(cwd.path())
        .model(Arc::new(ScriptedModel::from_json(
            "block_dangerous".as_ref(),
            SCRIPT,
        )?))
        .hook(
            HookEvent::PreToolUse,
            HookMatcher::new(Some("Bash")).hook(block_dangerous),
        )
        .build()?;
    let mut messages = session.query("Clean the build directory");
    while let Some(message) = messages.next_message().await {
        println!("{message}");
    }
    Ok(())
}
