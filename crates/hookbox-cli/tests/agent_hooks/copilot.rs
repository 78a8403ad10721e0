//! `hookbox hook copilot`: GitHub Copilot's hook events, in the shapes of GitHub's hooks
//! configuration reference (docs.github.com/en/copilot/reference/hooks-configuration; built
//! from the documentation, not recorded). Copilot's input does not name its event: `--event`.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::super::{code, seed_config, stdout_json, write};
use super::{hook_as, open_and_closed_gates, script_hook, stderr};

fn hook(dir: &Path, policy: &str, event: &str, input: &Value) -> Output {
    hook_as(
        "copilot",
        dir,
        dir,
        &["--policy", policy, "--event", event],
        input.to_string().as_bytes(),
    )
}

/// Copilot's `preToolUse` input: `toolArgs` is a JSON string.
fn pre_tool_use(cwd: &Path, tool: &str, args: &Value) -> Value {
    json!({"timestamp": 1_704_614_600_000_u64, "cwd": cwd, "toolName": tool, "toolArgs": args.to_string()})
}

#[test]
fn the_seeds_gates_deny_copilots_bash_and_view_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let security = seed_config(dir.path(), "security-gate.hooks.json");
    let privacy = seed_config(dir.path(), "privacy-gate.hooks.json");
    let bash = |command: &str| {
        pre_tool_use(
            dir.path(),
            "bash",
            &json!({"command": command, "description": "Clean"}),
        )
    };
    let denied = hook(dir.path(), &security, "preToolUse", &bash("rm -rf victim"));
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    assert_eq!(
        stdout_json(&denied),
        json!({"permissionDecision": "deny",
            "permissionDecisionReason": "Destructive command blocked by security gate."})
    );
    let allowed = hook(dir.path(), &security, "preToolUse", &bash("ls"));
    assert_eq!(code(&allowed), 0, "{}", stderr(&allowed));
    assert!(allowed.stdout.is_empty(), "{:?}", allowed.stdout);

    let view = |path: &str| pre_tool_use(dir.path(), "view", &json!({"path": path}));
    let denied = hook(
        dir.path(),
        &privacy,
        "preToolUse",
        &view("/srv/private/people.csv"),
    );
    assert_eq!(stdout_json(&denied)["permissionDecision"], "deny");
    let allowed = hook(
        dir.path(),
        &privacy,
        "preToolUse",
        &view("/srv/public/s.csv"),
    );
    assert!(allowed.stdout.is_empty());
}

#[test]
fn a_claude_style_policy_sees_copilots_calls_as_claude_codes_and_answers_in_copilots_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Asks about every call, rewriting it, with what it was sent as the reason.
    let echo = script_hook(
        dir.path(),
        "echo.py",
        "import sys, json\nd = json.load(sys.stdin)\nseen = {k: d.get(k) for k in ('hook_event_name', 'tool_name', 'tool_input', 'error')}\nprint(json.dumps({'hookSpecificOutput': {'hookEventName': d['hook_event_name'], 'permissionDecision': 'ask', 'permissionDecisionReason': json.dumps(seen, sort_keys=True), 'updatedInput': {'file_path': '/srv/b', 'content': 'x'}}}))\n",
    );
    let policy = write(
        dir.path(),
        "claude.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [echo]}]}}),
    );
    let output = hook(
        dir.path(),
        &policy,
        "preToolUse",
        &pre_tool_use(
            dir.path(),
            "create",
            &json!({"path": "/srv/a", "file_text": "hi"}),
        ),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let answer = stdout_json(&output);
    assert_eq!(answer["permissionDecision"], "ask");
    assert_eq!(
        answer["modifiedArgs"],
        json!({"path": "/srv/b", "file_text": "x"})
    );
    let seen: Value =
        serde_json::from_str(answer["permissionDecisionReason"].as_str().expect("reason"))
            .expect("JSON");
    assert_eq!(
        seen,
        json!({"hook_event_name": "PreToolUse", "tool_name": "Write",
            "tool_input": {"file_path": "/srv/a", "content": "hi"}, "error": null})
    );
}

#[test]
fn unknown_events_pass_and_blocks_copilot_cannot_enforce_are_said() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = write(
        dir.path(),
        "block.json",
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command",
            "command": "cat > /dev/null; echo no secrets >&2; exit 2"}]}]}}),
    );
    let prompt = json!({"timestamp": 1, "cwd": dir.path(), "prompt": "my key"});
    let output = hook(dir.path(), &policy, "userPromptSubmitted", &prompt);
    assert_eq!(code(&output), 0);
    assert!(output.stdout.is_empty());
    assert!(
        stderr(&output).contains("does not let a hook block; not enforced: no secrets"),
        "{}",
        stderr(&output)
    );
    let error =
        json!({"timestamp": 1, "cwd": dir.path(), "error": {"message": "boom", "name": "Error"}});
    let output = hook(dir.path(), &policy, "errorOccurred", &error);
    assert_eq!(code(&output), 0);
    assert!(output.stdout.is_empty());
    assert!(output.stderr.is_empty(), "{}", stderr(&output));
}

#[test]
fn unreadable_input_is_denied_with_the_reason_whatever_the_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (open, closed) = open_and_closed_gates(dir.path());
    // No event named anywhere.
    let input = pre_tool_use(dir.path(), "bash", &json!({"command": "rm -rf /"}));
    let output = hook_as(
        "copilot",
        dir.path(),
        dir.path(),
        &["--policy", &open],
        input.to_string().as_bytes(),
    );
    assert_eq!(code(&output), 0);
    assert_eq!(stdout_json(&output)["permissionDecision"], "deny");
    assert!(stderr(&output).contains("--event"), "{}", stderr(&output));
    // toolArgs that are not JSON: denied, whether a handler fails closed or open.
    let bad = json!({"timestamp": 1, "cwd": dir.path(), "toolName": "bash", "toolArgs": "{rm"});
    for policy in [&closed, &open] {
        let output = hook(dir.path(), policy, "preToolUse", &bad);
        assert_eq!(code(&output), 0);
        assert_eq!(stdout_json(&output)["permissionDecision"], "deny");
        assert!(
            stdout_json(&output)["permissionDecisionReason"]
                .as_str()
                .expect("reason")
                .contains("no `toolArgs` object"),
        );
    }
}
