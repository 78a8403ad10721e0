//! Seed 002, "Audit logging": a PostToolUse callback with no matcher appends one JSON line per
//! tool call (timestamp, tool, input, session id) to `audit.log`, without affecting the run.
//! The model is scripted.
//!
//! `cargo run -p hookbox-sdk --example audit_log`

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "an example prints what the session does"
)]

use std::io::Write;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use hookbox_sdk::{CallbackError, HookEvent, HookMatcher, ScriptedModel, Session};
use serde_json::{Value, json};

const SCRIPT: &str = r#"{"turns": [
  {"tool_calls": [{"name": "Write", "args": {"file_path": "hello.txt", "content": "hello\n"}}]},
  {"tool_calls": [{"name": "Bash", "args": {"command": "cat hello.txt"}}]},
  {"text": "I wrote hello.txt and printed it."}
]}"#;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cwd = tempfile::tempdir()?;
    let log_path = cwd.path().join("audit.log");
    let log = log_path.clone();
    let audit_log = move |input: Value, _tool_use_id: Option<String>| {
        let log = log.clone();
        async move {
            let timestamp = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_millis());
            let entry = json!({
                "timestamp": timestamp,
                "tool": input["tool_name"],
                "input": input["tool_input"],
                "session_id": input["session_id"],
            });
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|err| CallbackError(err.to_string()))?;
            writeln!(file, "{entry}").map_err(|err| CallbackError(err.to_string()))?;
            Ok(json!({}))
        }
    };
    let session = Session::builder(cwd.path())
        .model(Arc::new(ScriptedModel::from_json(
            "audit_log".as_ref(),
            SCRIPT,
        )?))
        // acceptEdits lets Write run without asking; Bash runs in the sandbox.
        .permission_mode(hookbox_sdk::PermissionMode::AcceptEdits)
        .hook(
            HookEvent::PostToolUse,
            HookMatcher::new(None).hook(audit_log),
        )
        .build()?;
    let mut messages = session.query("Write hello.txt and show it");
    while let Some(message) = messages.next_message().await {
        println!("{message}");
    }
    println!(
        "\n{}:\n{}",
        log_path.display(),
        std::fs::read_to_string(&log_path)?
    );
    Ok(())
}
