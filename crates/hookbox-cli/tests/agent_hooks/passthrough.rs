//! The agents' events that have no hookbox counterpart (Claude Code's `TaskCreated`, Gemini
//! CLI's `BeforeModel`, Cursor's `beforeTabFileRead`…) are passed through under their own
//! names: a policy of either dialect that names one gets the agent's input, and its decision
//! is answered in the agent's format. A name no agent publishes is still a policy error.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::super::{code, seed_config, stdout_json, write};
use super::{cursor, gemini_cli, hook_as, stderr, with_fields};

/// A policy whose one hook on `event` keeps what it was sent in `DIR/seen.json` and answers
/// `reply`: in the sandbox dialect (a group's `event` rules) when `sandbox`, else Claude-style.
fn recording(dir: &Path, event: &str, reply: &Value, sandbox: bool) -> String {
    let seen = dir.join("seen.json");
    let command = format!("cat > '{}'; printf '%s' '{reply}'", seen.display());
    let rules = json!([{"hooks": [{"type": "command", "command": command}]}]);
    let policy = if sandbox {
        json!({"pass-through": {event: rules}})
    } else {
        json!({"hooks": {event: rules}})
    };
    write(dir, "recording.json", &policy)
}

/// What the last hook of [`recording`] was sent.
fn seen(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("seen.json")).expect("the hook ran");
    serde_json::from_str(&text).expect("JSON")
}

/// `hookbox hook AGENT --policy POLICY EXTRA…` with `input` on stdin.
fn hook(agent: &str, dir: &Path, policy: &str, extra: &[&str], input: &Value) -> Output {
    let mut args = vec!["--policy", policy];
    args.extend(extra);
    hook_as(agent, dir, dir, &args, input.to_string().as_bytes())
}

/// Claude Code's (and Codex's) input for `event`.
fn claude_event(dir: &Path, event: &str, fields: Value) -> Value {
    let common = json!({"session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": dir,
        "hook_event_name": event});
    with_fields(common, fields)
}

#[test]
fn claude_codes_own_events_reach_a_policy_that_names_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let task = claude_event(
        dir.path(),
        "TaskCreated",
        json!({"task_id": "t1", "task_subject": "rm -rf victim"}),
    );
    // Claude-style: a block is exit 2 with the reason on stderr, the one way Claude Code
    // reads a block on all of these events; the hook saw the input exactly as sent.
    let policy = recording(
        dir.path(),
        "TaskCreated",
        &json!({"decision": "block", "reason": "no such tasks"}),
        false,
    );
    let output = hook("claude-code", dir.path(), &policy, &[], &task);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(stderr(&output), "no such tasks\n");
    assert_eq!(seen(dir.path()), task);
    // The sandbox dialect binds it too, and its deny blocks.
    let policy = recording(
        dir.path(),
        "TaskCreated",
        &json!({"decision": "deny", "reason": "not today"}),
        true,
    );
    let output = hook("claude-code", dir.path(), &policy, &[], &task);
    assert_eq!((code(&output), stderr(&output)), (2, "not today\n".into()));
    assert_eq!(seen(dir.path()), task);
    // Additional context where Claude Code reads it (Setup).
    let reply =
        json!({"hookSpecificOutput": {"hookEventName": "Setup", "additionalContext": "use make"}});
    let policy = recording(dir.path(), "Setup", &reply, false);
    let setup = claude_event(dir.path(), "Setup", json!({"trigger": "init"}));
    let output = hook("claude-code", dir.path(), &policy, &[], &setup);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout_json(&output), reply);
    // An event Claude Code does not let a hook block: the block is no answer.
    let policy = recording(
        dir.path(),
        "CwdChanged",
        &json!({"decision": "block", "reason": "stay"}),
        false,
    );
    let moved = claude_event(
        dir.path(),
        "CwdChanged",
        json!({"old_cwd": "/a", "new_cwd": "/b"}),
    );
    let output = hook("claude-code", dir.path(), &policy, &[], &moved);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(seen(dir.path()), moved);
    // A policy that does not name the event has no opinion on it.
    let gate = seed_config(dir.path(), "security-gate.hooks.json");
    let output = hook("claude-code", dir.path(), &gate, &[], &task);
    assert_eq!(code(&output), 0);
    assert!(output.stdout.is_empty());
}

#[test]
fn codexs_own_events_are_matched_by_their_matcher_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let command = |message: &str| {
        format!(
            "cat > /dev/null; printf '%s' '{}'",
            json!({"systemMessage": message})
        )
    };
    let policy = write(
        dir.path(),
        "compact.json",
        &json!({"hooks": {"PostCompact": [
            {"matcher": "auto", "hooks": [{"type": "command", "command": command("auto")}]},
            {"matcher": "manual", "hooks": [{"type": "command", "command": command("manual")}]},
        ]}}),
    );
    let compacted = claude_event(
        dir.path(),
        "PostCompact",
        json!({"trigger": "auto", "compact_summary": "s"}),
    );
    let output = hook("codex", dir.path(), &policy, &[], &compacted);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout_json(&output), json!({"systemMessage": "auto"}));
}

#[test]
fn gemini_clis_model_events_reach_a_policy_that_names_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = gemini_cli::event(
        dir.path(),
        "BeforeModel",
        json!({"llm_request": {"model": "m", "messages": []}}),
    );
    let policy = recording(
        dir.path(),
        "BeforeModel",
        &json!({"decision": "block", "reason": "model calls are off"}),
        false,
    );
    let output = hook("gemini-cli", dir.path(), &policy, &[], &request);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        stdout_json(&output),
        json!({"decision": "deny", "reason": "model calls are off"})
    );
    assert_eq!(seen(dir.path()), request);
    // A sandbox-dialect deny of a response.
    let response = gemini_cli::event(
        dir.path(),
        "AfterModel",
        json!({"llm_request": {}, "llm_response": {"text": "sk-123"}}),
    );
    let policy = recording(
        dir.path(),
        "AfterModel",
        &json!({"decision": "deny", "reason": "a key in the answer"}),
        true,
    );
    let output = hook("gemini-cli", dir.path(), &policy, &[], &response);
    assert_eq!(
        stdout_json(&output),
        json!({"decision": "deny", "reason": "a key in the answer"})
    );
    // BeforeToolSelection cannot be blocked: no answer.
    let policy = recording(
        dir.path(),
        "BeforeToolSelection",
        &json!({"decision": "block", "reason": "x"}),
        false,
    );
    let selection = gemini_cli::event(
        dir.path(),
        "BeforeToolSelection",
        json!({"llm_request": {}}),
    );
    let output = hook("gemini-cli", dir.path(), &policy, &[], &selection);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(seen(dir.path()), selection);
}

#[test]
fn cursors_tab_read_is_a_permission_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let read = cursor::event(
        dir.path(),
        "beforeTabFileRead",
        json!({"file_path": "/srv/.env", "content": "KEY=1"}),
    );
    let policy = recording(
        dir.path(),
        "beforeTabFileRead",
        &json!({"decision": "deny", "reason": "no secrets in Tab"}),
        true,
    );
    let output = hook("cursor", dir.path(), &policy, &[], &read);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let reason = "no secrets in Tab";
    assert_eq!(
        stdout_json(&output),
        json!({"permission": "deny", "user_message": reason, "agent_message": reason})
    );
    // Cursor's input has no `cwd`: the hook is told the workspace root.
    let at_root = |input: &Value| with_fields(input.clone(), json!({"cwd": dir.path()}));
    assert_eq!(seen(dir.path()), at_root(&read));
    // An observation event reaches the policy and gets no answer.
    let response = cursor::event(dir.path(), "afterAgentResponse", json!({"text": "done"}));
    let policy = recording(dir.path(), "afterAgentResponse", &json!({}), false);
    let output = hook("cursor", dir.path(), &policy, &[], &response);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(seen(dir.path()), at_root(&response));
}

#[test]
fn copilots_error_event_reaches_a_policy_under_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let error =
        json!({"timestamp": 1, "cwd": dir.path(), "error": {"message": "boom", "name": "Error"}});
    let policy = recording(dir.path(), "errorOccurred", &json!({}), false);
    let output = hook(
        "copilot",
        dir.path(),
        &policy,
        &["--event", "errorOccurred"],
        &error,
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert!(output.stderr.is_empty(), "{}", stderr(&output));
    // Copilot's input does not name its event: the hook is told it.
    let expected = with_fields(error, json!({"hook_event_name": "errorOccurred"}));
    assert_eq!(seen(dir.path()), expected);
}

#[test]
fn a_policy_naming_an_event_no_agent_has_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let request = gemini_cli::event(dir.path(), "BeforeModel", json!({"llm_request": {}}));
    for (sandbox, name, expected) in [
        (false, "BeforeModle", "did you mean `BeforeModel`?"),
        (true, "BeforeModle", "did you mean `BeforeModel`?"),
        (false, "WorktreeCreate", "cannot pass through"),
    ] {
        let policy = recording(dir.path(), name, &json!({}), sandbox);
        let output = hook("gemini-cli", dir.path(), &policy, &[], &request);
        assert_eq!(code(&output), 2, "{name}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
        assert!(!dir.path().join("seen.json").exists());
    }
}
