//! The decision log: every event `hookbox hook` answers is recorded, and `hookbox log` shows it.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::{Answerer, hook_once, pre_tool_use, stderr};
use crate::{code, hookbox_in, seed_config, stdout_json, write};

/// Claude Code's `event` through `hookbox hook claude-code EXTRA…`, answered by the daemon of
/// `home` (each call is logged once: these tests count them).
fn hook(home: &Path, project: &Path, extra: &[&str], event: &[u8]) -> Output {
    hook_once(Answerer::Daemon, "claude-code", home, project, extra, event)
}

/// `hookbox hook AGENT EXTRA…` answered in-process (the path without a daemon logs the same).
fn hook_as(agent: &str, home: &Path, project: &Path, extra: &[&str], event: &[u8]) -> Output {
    hook_once(Answerer::InProcess, agent, home, project, extra, event)
}

/// `hookbox log ARGS… --json` in `home`.
fn log_json(home: &Path, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["log", "--json"];
    all.extend_from_slice(args);
    let output = hookbox_in(home, &all, b"");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    stdout_json(&output).as_array().expect("array").clone()
}

/// Claude Code's `Bash` `rm -rf victim` through `policy`, with `HOOKBOX_HOME` = `home`.
fn gate_rm_rf(home: &Path, dir: &Path, policy: &str) -> Output {
    hook(
        home,
        dir,
        &["--policy", policy],
        &pre_tool_use(dir, "Bash", json!({"command": "rm -rf victim"})),
    )
}

#[test]
fn every_decision_is_logged_with_its_handler_and_hookbox_log_filters_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let denied = gate_rm_rf(&home, dir.path(), &policy);
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    hook(
        &home,
        dir.path(),
        &["--policy", &policy],
        &pre_tool_use(dir.path(), "Read", json!({"file_path": "/etc/hosts"})),
    );
    let gemini = json!({
        "session_id": "8f2c", "cwd": dir.path(), "hook_event_name": "BeforeTool",
        "timestamp": "2026-01-01T00:00:00Z", "tool_name": "run_shell_command",
        "tool_input": {"command": "ls"},
    });
    hook_as(
        "gemini-cli",
        &home,
        dir.path(),
        &["--policy", &policy],
        gemini.to_string().as_bytes(),
    );
    let missing = dir.path().join("missing.json");
    let blocked = hook(
        &home,
        dir.path(),
        &["--policy", missing.to_str().expect("utf-8")],
        &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
    );
    assert_eq!(code(&blocked), 2);

    // Appended to the journal; `hookbox log` moves them into the store.
    assert!(home.join("decisions.journal").exists());
    let all = log_json(&home, &[]);
    assert_eq!(all.len(), 4, "{all:#?}");
    assert!(!home.join("decisions.journal").exists());
    let deny = &all[0];
    assert_eq!(deny["agent"], "claude-code");
    assert_eq!(deny["session"], "abc123");
    assert_eq!(
        (&deny["event"], &deny["tool"]),
        (&json!("PreToolUse"), &json!("Bash"))
    );
    assert_eq!(deny["decision"], "deny");
    assert_eq!(
        deny["reason"],
        "Destructive command blocked by security gate."
    );
    assert!(deny["latency_ms"].as_f64().expect("latency") > 0.0);
    assert!(
        deny["policy"]
            .as_str()
            .expect("policy")
            .ends_with("security-gate.hooks.json"),
        "{deny}"
    );
    assert!(
        deny["handler"]
            .as_str()
            .expect("handler")
            .contains("gate.py"),
        "{deny}"
    );
    // Read matches no handler of the gate: nothing decided.
    assert_eq!(all[1]["tool"], "Read");
    assert_eq!(all[1]["decision"], "none");
    assert_eq!(all[1]["handler"], Value::Null);
    // The gate's allow is recorded as what it said.
    assert_eq!(all[2]["agent"], "gemini-cli");
    assert_eq!(all[2]["tool"], "run_shell_command");
    assert_eq!(all[2]["decision"], "allow");
    // A policy that cannot be loaded denies, and says why.
    assert_eq!(all[3]["decision"], "deny");
    assert!(
        all[3]["reason"]
            .as_str()
            .expect("reason")
            .contains("missing.json"),
        "{}",
        all[3]
    );

    assert_eq!(log_json(&home, &["--agent", "gemini-cli"]).len(), 1);
    assert_eq!(log_json(&home, &["--since", "1h"]).len(), 4);
    assert!(log_json(&home, &["--since", "2999-01-01T00:00:00Z"]).is_empty());
    let newest = log_json(&home, &["--limit", "1"]);
    assert_eq!(newest[0]["reason"], all[3]["reason"]);

    let text = hookbox_in(&home, &["log", "--agent", "claude-code"], b"");
    let text = String::from_utf8(text.stdout).expect("utf-8");
    let first = text.lines().next().expect("a line");
    assert!(
        first.contains("claude-code abc123 PreToolUse Bash → deny")
            && first.contains("Destructive command blocked"),
        "{text}"
    );

    let bad = hookbox_in(&home, &["log", "--since", "yesterday"], b"");
    assert_eq!(code(&bad), 1);
    assert!(stderr(&bad).contains("--since"), "{}", stderr(&bad));
}

#[test]
fn keep_decisions_0_logs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).expect("home");
    std::fs::write(home.join("hookbox.toml"), "[policy]\nkeep_decisions = 0\n").expect("config");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let denied = gate_rm_rf(&home, dir.path(), &policy);
    assert_eq!(
        stdout_json(&denied)["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );
    assert!(log_json(&home, &[]).is_empty());
}

#[test]
fn cursor_and_copilot_decisions_are_logged_under_their_own_names_and_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let cursor = json!({
        "conversation_id": "conv-123", "generation_id": "gen-456", "hook_event_name": "beforeShellExecution",
        "workspace_roots": [dir.path()], "command": "rm -rf victim", "cwd": dir.path(),
    });
    let output = hook_as(
        "cursor",
        &home,
        dir.path(),
        &["--policy", &policy],
        cursor.to_string().as_bytes(),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let copilot = json!({"timestamp": 1, "cwd": dir.path(), "toolName": "bash",
        "toolArgs": json!({"command": "rm -rf victim"}).to_string()});
    let output = hook_as(
        "copilot",
        &home,
        dir.path(),
        &["--policy", &policy, "--event", "preToolUse"],
        copilot.to_string().as_bytes(),
    );
    assert_eq!(code(&output), 0, "{}", stderr(&output));

    let cursor = log_json(&home, &["--agent", "cursor"]);
    assert_eq!(cursor.len(), 1, "{cursor:#?}");
    assert_eq!(cursor[0]["session"], "conv-123");
    assert_eq!(cursor[0]["event"], "beforeShellExecution");
    assert_eq!(cursor[0]["tool"], "Shell");
    assert_eq!(cursor[0]["decision"], "deny");
    let copilot = log_json(&home, &["--agent", "copilot"]);
    assert_eq!(copilot.len(), 1, "{copilot:#?}");
    assert_eq!(copilot[0]["event"], "preToolUse");
    assert_eq!(copilot[0]["tool"], "bash");
    assert_eq!(copilot[0]["decision"], "deny");
}

/// A gate that cannot start (a typo in its script's path) fails open: the call goes on, and
/// neither the log nor the agent's user is left with a bare "no decision". Each row is a
/// policy dialect and the handler's command; a new broken gate is one line.
#[test]
fn a_gate_that_fails_open_is_logged_with_its_cause_and_handler_and_shown_to_the_user() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let typo = dir.path().join("gaet.py");
    let typo = typo.display();
    let sandbox = |command: String| {
        json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
            {"type": "command", "command": command}]}]}})
    };
    let claude = |command: String| {
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": command}]}]}})
    };
    let cases = [
        (sandbox(format!("python3 {typo}")), "exited with status 2"),
        (sandbox(format!("{typo}")), "exited with status 127"),
        (claude(format!("{typo}")), "exited with status 127"),
        (
            claude("no-such-gate-program --check".to_owned()),
            "exited with status 127",
        ),
    ];
    for (index, (policy, cause)) in cases.iter().enumerate() {
        let policy = write(dir.path(), &format!("policy{index}.json"), policy);
        let output = gate_rm_rf(&home, dir.path(), &policy);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let message = stdout_json(&output)["systemMessage"]
            .as_str()
            .unwrap_or_else(|| panic!("no systemMessage for {policy}: {output:?}"))
            .to_owned();
        assert!(
            message.contains("failed open") && message.contains(cause),
            "{message}"
        );
        let logged = log_json(&home, &[]);
        let last = logged.last().expect("logged");
        assert_eq!(last["decision"], "fail-open", "{last:#}");
        assert!(
            last["reason"].as_str().expect("reason").contains(cause),
            "{last:#}"
        );
        assert!(
            last["handler"]
                .as_str()
                .expect("handler")
                .contains("command"),
            "{last:#}"
        );
        assert_eq!(last["policy"], json!(policy), "{last:#}");
    }
    let text = hookbox_in(&home, &["log"], b"");
    let text = String::from_utf8(text.stdout).expect("utf-8");
    assert!(text.contains("→ fail-open"), "{text}");
}

/// A gate that fails open beside one that denies: the call is denied, and both the log's
/// reason and the agent's user still hear of the broken one.
#[test]
fn a_gate_that_fails_open_beside_a_deny_is_still_logged_and_shown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let broken = json!({"type": "command",
        "command": format!("python3 {}", dir.path().join("gaet.py").display())});
    let deny = json!({"type": "command",
        "command": "cat > /dev/null; echo '{\"decision\": \"deny\", \"reason\": \"no\"}'"});
    let policy = write(
        dir.path(),
        "policy.json",
        &json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [broken, deny]}]}}),
    );
    let output = gate_rm_rf(&home, dir.path(), &policy);
    let answer = stdout_json(&output);
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
    assert!(
        answer["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("gaet.py")),
        "{answer}"
    );
    let logged = log_json(&home, &[]);
    let last = logged.last().expect("logged");
    assert_eq!(last["decision"], "deny", "{last:#}");
    let reason = last["reason"].as_str().expect("reason");
    assert!(
        reason.starts_with("no (and command hook") && reason.contains("failed open"),
        "{reason}"
    );
}
