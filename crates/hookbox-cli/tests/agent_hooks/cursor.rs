//! `hookbox hook cursor`: Cursor's hook events, in the shapes of Cursor's hooks documentation
//! (cursor.com/docs/agent/hooks; built from the documentation, not recorded).

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::super::{code, seed_config, stdout_json};
use super::{hook_as, open_and_closed_gates, replying, stderr, with_fields};

fn hook(dir: &Path, policy: &str, event: &Value) -> Output {
    hook_as(
        "cursor",
        dir,
        dir,
        &["--policy", policy],
        event.to_string().as_bytes(),
    )
}

/// Cursor's input: the common fields, then the event's own.
pub(super) fn event(root: &Path, name: &str, fields: Value) -> Value {
    let input = json!({
        "conversation_id": "conv-123", "generation_id": "gen-456", "model": "gpt-5",
        "hook_event_name": name, "cursor_version": "2.0.77", "workspace_roots": [root],
        "user_email": null, "transcript_path": null,
    });
    with_fields(input, fields)
}

#[test]
fn the_seeds_gates_deny_cursors_shell_and_read_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let security = seed_config(dir.path(), "security-gate.hooks.json");
    let privacy = seed_config(dir.path(), "privacy-gate.hooks.json");
    let shell = |command: &str| {
        event(
            dir.path(),
            "beforeShellExecution",
            json!({"command": command, "cwd": dir.path(), "sandbox": false}),
        )
    };
    let denied = hook(dir.path(), &security, &shell("rm -rf victim"));
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    let reason = "Destructive command blocked by security gate.";
    assert_eq!(
        stdout_json(&denied),
        json!({"permission": "deny", "user_message": reason, "agent_message": reason})
    );
    let allowed = hook(dir.path(), &security, &shell("ls"));
    assert_eq!(code(&allowed), 0, "{}", stderr(&allowed));
    assert!(allowed.stdout.is_empty(), "{:?}", allowed.stdout);
    // The generic tool event gates the same call.
    let generic = event(
        dir.path(),
        "preToolUse",
        json!({"tool_name": "Shell", "tool_input": {"command": "rm -rf victim", "working_directory": dir.path()},
            "tool_use_id": "t1", "cwd": dir.path(), "agent_message": "cleaning"}),
    );
    assert_eq!(
        stdout_json(&hook(dir.path(), &security, &generic))["permission"],
        "deny"
    );

    let read = |path: &str| {
        event(
            dir.path(),
            "beforeReadFile",
            json!({"file_path": path, "content": "name,ssn", "attachments": []}),
        )
    };
    let denied = hook(dir.path(), &privacy, &read("/srv/private/people.csv"));
    assert_eq!(stdout_json(&denied)["permission"], "deny");
    assert!(
        stdout_json(&denied)["agent_message"]
            .as_str()
            .expect("reason")
            .contains("PII compliance policy")
    );
    assert!(
        hook(dir.path(), &privacy, &read("/srv/public/s.csv"))
            .stdout
            .is_empty()
    );
}

#[test]
fn answers_are_in_cursors_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ask = replying(
        dir.path(),
        "PreToolUse",
        &json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": "look first"}}),
    );
    // Cursor enforces `ask` on shell and MCP calls…
    let output = hook(
        dir.path(),
        &ask,
        &event(
            dir.path(),
            "beforeMCPExecution",
            json!({"tool_name": "create_issue", "tool_input": "{\"title\": \"t\"}", "command": "gh-mcp"}),
        ),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"permission": "ask", "user_message": "look first", "agent_message": "look first"})
    );
    // …and not on file reads: there an ask is a deny that says a person must approve.
    let output = hook(
        dir.path(),
        &ask,
        &event(dir.path(), "beforeReadFile", json!({"file_path": "/srv/a"})),
    );
    assert_eq!(stdout_json(&output)["permission"], "deny");
    assert_eq!(
        stdout_json(&output)["agent_message"],
        "needs a person's approval, which Cursor's beforeReadFile hook cannot ask for: look first"
    );
    // A blocked prompt does not continue.
    let block = replying(
        dir.path(),
        "UserPromptSubmit",
        &json!({"decision": "block", "reason": "no secrets"}),
    );
    let output = hook(
        dir.path(),
        &block,
        &event(
            dir.path(),
            "beforeSubmitPrompt",
            json!({"prompt": "my key is sk-1", "attachments": []}),
        ),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"continue": false, "user_message": "no secrets"})
    );
    // A blocked stop is a follow-up message.
    let stop = replying(
        dir.path(),
        "Stop",
        &json!({"decision": "block", "reason": "run the tests"}),
    );
    let output = hook(
        dir.path(),
        &stop,
        &event(
            dir.path(),
            "stop",
            json!({"status": "completed", "loop_count": 0}),
        ),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"followup_message": "run the tests"})
    );
    // Events without a counterpart pass through with no decision.
    let output = hook(
        dir.path(),
        &stop,
        &event(dir.path(), "afterAgentThought", json!({"text": "hmm"})),
    );
    assert_eq!(code(&output), 0);
    assert!(output.stdout.is_empty());
}

#[test]
fn unreadable_input_is_denied_whatever_the_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (open, closed) = open_and_closed_gates(dir.path());
    let input = br#"{"hook_event_name": "beforeShellExecution", "cwd": "/"}"#;
    let output = hook_as(
        "cursor",
        dir.path(),
        dir.path(),
        &["--policy", &open],
        input,
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert_eq!(stdout_json(&output)["permission"], "deny");
    assert!(
        stderr(&output).contains("the beforeShellExecution input has no `command` string"),
        "{}",
        stderr(&output)
    );
    let output = hook_as(
        "cursor",
        dir.path(),
        dir.path(),
        &["--policy", &closed],
        input,
    );
    assert_eq!(code(&output), 2);
    assert_eq!(stdout_json(&output)["permission"], "deny");
    let output = hook_as("cursor", dir.path(), dir.path(), &["--policy", &open], b"{");
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("not JSON"), "{}", stderr(&output));
}
