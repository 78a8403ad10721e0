//! `hookbox hook gemini-cli`: Gemini CLI's hook events, in the shapes of `@google/gemini-cli`
//! 0.61.0 (`docs/hooks/reference.md`, `createBaseInput`, `fireBeforeToolEvent`).

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::super::{code, seed_config, stdout_json, write};
use super::{hook_as, open_and_closed_gates, replying, script_hook, stderr, with_fields};

fn hook(dir: &Path, policy: &str, event: &Value) -> Output {
    hook_as(
        "gemini-cli",
        dir,
        dir,
        &["--policy", policy],
        event.to_string().as_bytes(),
    )
}

/// Gemini CLI's input: the base fields, then the event's own.
pub(super) fn event(cwd: &Path, name: &str, fields: Value) -> Value {
    let input = json!({
        "session_id": "8f2c", "transcript_path": "/home/u/.gemini/tmp/x/chats/session.json",
        "cwd": cwd, "hook_event_name": name, "timestamp": "2026-12-02T06:40:00.000Z",
    });
    with_fields(input, fields)
}

#[test]
fn the_seeds_gates_deny_gemini_clis_shell_and_read_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let security = seed_config(dir.path(), "security-gate.hooks.json");
    let privacy = seed_config(dir.path(), "privacy-gate.hooks.json");
    let shell = |command: &str| {
        event(
            dir.path(),
            "BeforeTool",
            json!({"tool_name": "run_shell_command", "tool_input": {"command": command, "description": "d"}}),
        )
    };
    let denied = hook(dir.path(), &security, &shell("rm -rf victim"));
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    assert_eq!(
        stdout_json(&denied),
        json!({"decision": "deny", "reason": "Destructive command blocked by security gate."})
    );
    let allowed = hook(dir.path(), &security, &shell("ls"));
    assert_eq!(code(&allowed), 0);
    assert!(allowed.stdout.is_empty());

    let read = |path: &str| {
        event(
            dir.path(),
            "BeforeTool",
            json!({"tool_name": "read_file", "tool_input": {"file_path": path, "start_line": 1}}),
        )
    };
    let denied = hook(dir.path(), &privacy, &read("/srv/private/people.csv"));
    assert_eq!(stdout_json(&denied)["decision"], "deny");
    assert!(
        stdout_json(&denied)["reason"]
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
fn a_claude_style_policy_sees_gemini_clis_calls_as_claude_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Denies every PreToolUse/PostToolUseFailure, with what it was sent as the reason.
    let echo = script_hook(
        dir.path(),
        "echo.py",
        "import sys, json\nd = json.load(sys.stdin)\nseen = {k: d.get(k) for k in ('hook_event_name', 'tool_name', 'tool_input', 'error')}\nprint(json.dumps({'decision': 'block', 'reason': json.dumps(seen, sort_keys=True), 'hookSpecificOutput': {'hookEventName': d['hook_event_name'], 'permissionDecision': 'deny', 'permissionDecisionReason': json.dumps(seen, sort_keys=True)}}))\n",
    );
    let handler = json!([{"matcher": "*", "hooks": [echo]}]);
    let policy = write(
        dir.path(),
        "claude.json",
        &json!({"hooks": {"PreToolUse": handler, "PostToolUseFailure": handler}}),
    );
    let seen = |input: Value| {
        let output = hook(dir.path(), &policy, &input);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let reason = stdout_json(&output)["reason"]
            .as_str()
            .expect("reason")
            .to_owned();
        serde_json::from_str::<Value>(&reason).expect("JSON")
    };
    assert_eq!(
        seen(event(
            dir.path(),
            "BeforeTool",
            json!({"tool_name": "list_directory", "tool_input": {"dir_path": "/srv"}})
        )),
        json!({"hook_event_name": "PreToolUse", "tool_name": "LS", "tool_input": {"path": "/srv"}, "error": null})
    );
    assert_eq!(
        seen(event(
            dir.path(),
            "BeforeTool",
            json!({"tool_name": "mcp_github_create_issue", "tool_input": {"title": "t"},
                "mcp_context": {"server_name": "github", "tool_name": "create_issue", "command": "gh-mcp"}})
        )),
        json!({"hook_event_name": "PreToolUse", "tool_name": "mcp__github__create_issue", "tool_input": {"title": "t"}, "error": null})
    );
    assert_eq!(
        seen(event(
            dir.path(),
            "AfterTool",
            json!({"tool_name": "run_shell_command", "tool_input": {"command": "false"},
                "tool_response": {"llmContent": "", "returnDisplay": "", "error": {"message": "exit 1", "type": "shell_failed"}}})
        )),
        json!({"hook_event_name": "PostToolUseFailure", "tool_name": "Bash", "tool_input": {"command": "false"}, "error": "exit 1"})
    );
}

#[test]
fn answers_are_in_gemini_clis_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A rewrite in Claude's names comes back in Gemini CLI's.
    let policy = replying(
        dir.path(),
        "PreToolUse",
        &json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": "look first", "updatedInput": {"path": "/srv/public"}}}),
    );
    let output = hook(
        dir.path(),
        &policy,
        &event(
            dir.path(),
            "BeforeTool",
            json!({"tool_name": "list_directory", "tool_input": {"dir_path": "/srv"}}),
        ),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"decision": "ask", "reason": "look first",
            "hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": {"dir_path": "/srv/public"}}})
    );
    // A Stop block makes Gemini CLI retry the turn with the reason.
    let policy = replying(
        dir.path(),
        "Stop",
        &json!({"decision": "block", "reason": "run the tests"}),
    );
    let output = hook(
        dir.path(),
        &policy,
        &event(
            dir.path(),
            "AfterAgent",
            json!({"prompt": "fix it", "prompt_response": "done", "stop_hook_active": false}),
        ),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"decision": "deny", "reason": "run the tests"})
    );
    // Context on a prompt, and stopping.
    let policy = replying(
        dir.path(),
        "UserPromptSubmit",
        &json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "be brief"},
            "continue": false, "stopReason": "quota"}),
    );
    let output = hook(
        dir.path(),
        &policy,
        &event(dir.path(), "BeforeAgent", json!({"prompt": "hi"})),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "BeforeAgent", "additionalContext": "be brief"},
            "continue": false, "stopReason": "quota"})
    );
    // A model event (passed through) that the policy does not name: no decision.
    let output = hook(
        dir.path(),
        &policy,
        &event(
            dir.path(),
            "BeforeModel",
            json!({"llm_request": {"model": "m", "messages": []}}),
        ),
    );
    assert_eq!(code(&output), 0);
    assert!(output.stdout.is_empty());
}

#[test]
fn unreadable_input_is_denied_whatever_the_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (open, closed) = open_and_closed_gates(dir.path());
    let input = br#"{"hook_event_name": "BeforeTool", "tool_name": "run_shell_command", "tool_input": "rm -rf /"}"#;
    let output = hook_as(
        "gemini-cli",
        dir.path(),
        dir.path(),
        &["--policy", &open],
        input,
    );
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("no `tool_input` object"),
        "{}",
        stderr(&output)
    );
    let output = hook_as(
        "gemini-cli",
        dir.path(),
        dir.path(),
        &["--policy", &closed],
        input,
    );
    assert_eq!(code(&output), 2);
}
