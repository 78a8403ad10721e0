//! The agents' events that have no hookbox counterpart (Claude Code's `TaskCreated`, Gemini
//! CLI's `BeforeModel`, Cursor's `beforeTabFileRead`…) are passed through under their own
//! names: a policy of either dialect that names one gets the agent's input, and its decision
//! is answered in the agent's format. A name no agent publishes is still a policy error.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::super::{code, hookbox, seed_config, stdout_json, write};
use super::{cursor, gemini_cli, hook_as, stderr, with_fields};

/// The policy dialect a test's hook is written in.
#[derive(Clone, Copy)]
enum Dialect {
    /// Claude-style settings: `{"hooks": {EVENT: [rules]}}`.
    Claude,
    /// The sandbox dialect: a group's `EVENT: [rules]`.
    Sandbox,
}

/// A policy in `dialect` whose one hook on `event` keeps what it was sent in `DIR/seen.json`
/// and answers `reply`.
fn recording(dir: &Path, event: &str, reply: &Value, dialect: Dialect) -> String {
    let seen = dir.join("seen.json");
    let command = format!("cat > '{}'; printf '%s' '{reply}'", seen.display());
    let rules = json!([{"hooks": [{"type": "command", "command": command}]}]);
    let policy = match dialect {
        Dialect::Claude => json!({"hooks": {event: rules}}),
        Dialect::Sandbox => json!({"pass-through": {event: rules}}),
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

/// `input` (an event that names itself) answered by `agent` under a [`recording`] policy in
/// `dialect` that answers `reply`.
fn answered(agent: &str, dir: &Path, dialect: Dialect, reply: &Value, input: &Value) -> Output {
    let event = input["hook_event_name"].as_str().expect("event name");
    let policy = recording(dir, event, reply, dialect);
    hook(agent, dir, &policy, &[], input)
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
    let dir = dir.path();
    let task = claude_event(
        dir,
        "TaskCreated",
        json!({"task_id": "t1", "task_subject": "rm -rf victim"}),
    );
    // Claude-style: a block is exit 2 with the reason on stderr, the one way Claude Code
    // reads a block on all of these events; the hook saw the input exactly as sent.
    let block = json!({"decision": "block", "reason": "no such tasks"});
    let output = answered("claude-code", dir, Dialect::Claude, &block, &task);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(stderr(&output), "no such tasks\n");
    assert_eq!(seen(dir), task);
    // The sandbox dialect binds it too, and its deny blocks.
    let deny = json!({"decision": "deny", "reason": "not today"});
    let output = answered("claude-code", dir, Dialect::Sandbox, &deny, &task);
    assert_eq!((code(&output), stderr(&output)), (2, "not today\n".into()));
    assert_eq!(seen(dir), task);
    // Additional context where Claude Code reads it (Setup).
    let context =
        json!({"hookSpecificOutput": {"hookEventName": "Setup", "additionalContext": "use make"}});
    let setup = claude_event(dir, "Setup", json!({"trigger": "init"}));
    let output = answered("claude-code", dir, Dialect::Claude, &context, &setup);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(stdout_json(&output), context);
    // An event Claude Code does not let a hook block: the block is no answer.
    let moved = claude_event(dir, "CwdChanged", json!({"old_cwd": "/a", "new_cwd": "/b"}));
    let output = answered("claude-code", dir, Dialect::Claude, &block, &moved);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(seen(dir), moved);
    // A policy that does not name the event has no opinion on it.
    let gate = seed_config(dir, "security-gate.hooks.json");
    let output = hook("claude-code", dir, &gate, &[], &task);
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
    let dir = dir.path();
    let request = gemini_cli::event(
        dir,
        "BeforeModel",
        json!({"llm_request": {"model": "m", "messages": []}}),
    );
    let block = json!({"decision": "block", "reason": "model calls are off"});
    let output = answered("gemini-cli", dir, Dialect::Claude, &block, &request);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        stdout_json(&output),
        json!({"decision": "deny", "reason": "model calls are off"})
    );
    assert_eq!(seen(dir), request);
    // A sandbox-dialect deny of a response.
    let response = gemini_cli::event(
        dir,
        "AfterModel",
        json!({"llm_request": {}, "llm_response": {"text": "sk-123"}}),
    );
    let deny = json!({"decision": "deny", "reason": "a key in the answer"});
    let output = answered("gemini-cli", dir, Dialect::Sandbox, &deny, &response);
    assert_eq!(stdout_json(&output), deny);
    // BeforeToolSelection cannot be blocked: no answer.
    let selection = gemini_cli::event(dir, "BeforeToolSelection", json!({"llm_request": {}}));
    let output = answered("gemini-cli", dir, Dialect::Claude, &block, &selection);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(seen(dir), selection);
}

#[test]
fn cursors_tab_read_is_a_permission_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let read = cursor::event(
        dir,
        "beforeTabFileRead",
        json!({"file_path": "/srv/.env", "content": "KEY=1"}),
    );
    let deny = json!({"decision": "deny", "reason": "no secrets in Tab"});
    let output = answered("cursor", dir, Dialect::Sandbox, &deny, &read);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let reason = "no secrets in Tab";
    assert_eq!(
        stdout_json(&output),
        json!({"permission": "deny", "user_message": reason, "agent_message": reason})
    );
    // Cursor's input has no `cwd`: the hook is told the workspace root.
    let at_root = |input: &Value| with_fields(input.clone(), json!({"cwd": dir}));
    assert_eq!(seen(dir), at_root(&read));
    // An observation event reaches the policy and gets no answer.
    let response = cursor::event(dir, "afterAgentResponse", json!({"text": "done"}));
    let output = answered("cursor", dir, Dialect::Claude, &json!({}), &response);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(output.stdout.is_empty());
    assert_eq!(seen(dir), at_root(&response));
}

#[test]
fn copilots_error_event_reaches_a_policy_under_its_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let error =
        json!({"timestamp": 1, "cwd": dir.path(), "error": {"message": "boom", "name": "Error"}});
    let policy = recording(dir.path(), "errorOccurred", &json!({}), Dialect::Claude);
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
    for (dialect, name, expected) in [
        (
            Dialect::Claude,
            "BeforeModle",
            "did you mean `BeforeModel`?",
        ),
        (
            Dialect::Sandbox,
            "BeforeModle",
            "did you mean `BeforeModel`?",
        ),
        (Dialect::Claude, "WorktreeCreate", "cannot pass through"),
    ] {
        let policy = recording(dir.path(), name, &json!({}), dialect);
        let output = hook("gemini-cli", dir.path(), &policy, &[], &request);
        assert_eq!(code(&output), 2, "{name}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{}", stderr(&output));
        assert!(!dir.path().join("seen.json").exists());
    }
}

/// `hookbox hooks run --config POLICY --cwd DIR --event EVENT ARGS… --json`.
fn hooks_run(dir: &Path, policy: &str, event: &str, args: &[&str]) -> Output {
    let cwd = dir.to_str().expect("utf-8");
    let base = [
        "hooks", "run", "--config", policy, "--cwd", cwd, "--event", event,
    ];
    hookbox(&[&base[..], args, &["--json"]].concat())
}

#[test]
fn hooks_run_answers_an_agents_own_event_as_hookbox_hook_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    // Gemini CLI's BeforeModel, bound Claude-style: the hook sees Gemini CLI's input and its
    // block is answered in Gemini CLI's format.
    let block = json!({"decision": "block", "reason": "model calls are off"});
    let policy = recording(dir, "BeforeModel", &block, Dialect::Claude);
    // --input cannot make it another event.
    let request = json!({"llm_request": {"model": "m", "messages": []},
        "hook_event_name": "BeforeTool"});
    let output = hooks_run(
        dir,
        &policy,
        "BeforeModel",
        &["--agent", "gemini-cli", "--input", &request.to_string()],
    );
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let result = stdout_json(&output);
    assert_eq!(result["decision"], "block");
    assert_eq!(
        (&result["event"], &result["agent"]),
        (&json!("BeforeModel"), &json!("gemini-cli"))
    );
    let answer = &result["answer"];
    assert_eq!(answer["exit_code"], 0);
    let stdout: Value =
        serde_json::from_str(answer["stdout"].as_str().expect("stdout")).expect("JSON");
    assert_eq!(
        stdout,
        json!({"decision": "deny", "reason": "model calls are off"})
    );
    let expected = json!({"hook_event_name": "BeforeModel", "session_id": "hookbox-cli",
        "cwd": dir, "llm_request": {"model": "m", "messages": []}});
    assert_eq!(seen(dir), expected);

    // Claude Code's TaskCreated, bound in the sandbox dialect: a deny is exit 2 and the reason.
    let deny = json!({"decision": "deny", "reason": "not today"});
    let policy = recording(dir, "TaskCreated", &deny, Dialect::Sandbox);
    let output = hooks_run(dir, &policy, "TaskCreated", &["--agent", "claude-code"]);
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    let answer = &stdout_json(&output)["answer"];
    assert_eq!(
        (&answer["exit_code"], &answer["stdout"], &answer["stderr"]),
        (&json!(2), &json!(""), &json!("not today\n"))
    );

    // Copilot's errorOccurred: its name is given as `--event` gives it, and told to the hook;
    // a hook with nothing to say is no decision, which Copilot gets as no answer.
    let policy = recording(dir, "errorOccurred", &json!({}), Dialect::Claude);
    let output = hooks_run(dir, &policy, "errorOccurred", &["--agent", "copilot"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let result = stdout_json(&output);
    assert_eq!(result["decision"], "allow");
    assert_eq!(
        result["answer"],
        json!({"exit_code": 0, "stdout": "", "stderr": ""})
    );
    assert_eq!(seen(dir)["hook_event_name"], "errorOccurred");

    // The agent's matcher field: Claude Code matches PermissionDenied on the tool.
    let policy = write(
        dir,
        "denied.json",
        &json!({"hooks": {"PermissionDenied": [{"matcher": "Read",
            "hooks": [{"type": "command", "command": "echo ran >&2; exit 2"}]}]}}),
    );
    for (tool, ran) in [("Bash", false), ("Read", true)] {
        let output = hooks_run(
            dir,
            &policy,
            "PermissionDenied",
            &["--agent", "claude-code", "--tool", tool],
        );
        let trace = stdout_json(&output)["trace"]
            .as_array()
            .expect("trace")
            .len();
        assert_eq!(
            trace == 1,
            ran,
            "{tool}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
    }
}

#[test]
fn hooks_run_says_whose_event_it_is_and_what_a_misspelt_one_means() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    let policy = recording(dir, "BeforeModel", &json!({}), Dialect::Claude);
    for (event, args, expected) in [
        (
            "BeforeModle",
            &["--agent", "gemini-cli"][..],
            "did you mean `BeforeModel`?",
        ),
        (
            "beforemodel",
            &["--agent", "gemini-cli"][..],
            "did you mean `BeforeModel`?",
        ),
        (
            "pre_tool_use",
            &["--tool", "x"][..],
            "did you mean `PreToolUse`?",
        ),
        ("BeforeModel", &[][..], "say whose with --agent gemini-cli"),
        (
            "PostCompact",
            &[][..],
            "--agent claude-code or --agent codex",
        ),
        (
            "BeforeModel",
            &["--agent", "codex"][..],
            "codex does not send `BeforeModel`",
        ),
        (
            "Stop",
            &["--agent", "codex"][..],
            "`Stop` is one of hookbox's own events",
        ),
        (
            "WorktreeCreate",
            &["--agent", "claude-code"][..],
            "unknown event `WorktreeCreate`",
        ),
    ] {
        let output = hooks_run(dir, &policy, event, args);
        assert_eq!(code(&output), 1, "{event} {args:?}");
        assert!(
            stderr(&output).contains(expected),
            "{event} {args:?}: {}",
            stderr(&output)
        );
        assert!(
            !dir.join("seen.json").exists(),
            "{event} {args:?}: a hook ran"
        );
    }
}
