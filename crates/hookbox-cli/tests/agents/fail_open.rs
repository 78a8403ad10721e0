//! A gate that cannot start (a typo in its script's path), through the real agent: `hookbox
//! install` refuses it unless `--allow-missing`; installed anyway, the call it should have
//! gated goes on (fail open) and the agent's user is told, in the agent's own output; with
//! `--fail-closed` the call is denied instead. (Codex 0.171 reads a hook's `systemMessage` but
//! `codex exec` does not print it, so Codex is not driven here.)

use serde_json::{Value, json};

use super::{
    Agent, CLAUDE_CODE, FINAL, FakeModel, GEMINI_CLI, Scene, agent_bins, code, run, write_file,
};

/// What the agent printed, and whether `victim` survived, after a run of `agent` whose model
/// asks to `rm -rf victim` under a policy whose gate's script does not exist, installed with
/// `flags` (`None`: skipped).
fn broken_gate_run(test: &str, agent: &Agent, flags: &[&str]) -> Option<(String, bool, Value)> {
    let bins = agent_bins(test)?;
    let scene = Scene::new();
    std::fs::write(scene.project.join("victim"), "keep me").expect("victim");
    let typo = scene.policies.join("gaet.py");
    let gate = json!({"type": "command", "command": format!("python3 {}", typo.display())});
    let policy = scene.policies.join("gate.json");
    write_file(
        &policy,
        &json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [gate]}]}}).to_string(),
    );
    let install = [
        "install",
        agent.name,
        "--project",
        scene.project_arg(),
        "--policy",
        policy.to_str().expect("utf-8"),
    ];
    let refused = scene.hookbox(&install);
    let refusal = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(code(&refused), 1, "{refusal}");
    assert!(refusal.contains("gaet.py does not exist"), "{refusal}");
    let output = scene.hookbox(&[&install[..], &["--allow-missing"], flags].concat());
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let shell = if agent.name == "codex" {
        "rm victim"
    } else {
        "rm -rf victim"
    };
    let call = json!({"name": agent.shell.model, "args": {agent.shell.argument: shell}});
    let model = FakeModel::start(&scene, agent.wire, &[call]);
    let mut command = agent.command(&bins, &scene, &model, agent.unattended);
    if agent.name == CLAUDE_CODE.name {
        command.args(["--output-format", "stream-json", "--verbose"]);
    }
    let output = run(command);
    let printed = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains(FINAL), "{printed}");
    let log = scene.hookbox(&["log", "--agent", agent.name, "--json"]);
    let decisions: Value = serde_json::from_slice(&log.stdout).expect("log JSON");
    let survived = scene.project.join("victim").exists();
    Some((printed, survived, decisions))
}

/// The logged decision about `agent`'s shell tool in `decisions` was the broken gate's fail-open.
fn assert_logged_fail_open(decisions: &Value, agent: &Agent) {
    let logged = decisions
        .as_array()
        .expect("decisions")
        .iter()
        .find(|d| d["tool"] == agent.shell.hooked)
        .unwrap_or_else(|| panic!("no {} decision: {decisions:#}", agent.shell.hooked));
    assert_eq!(logged["decision"], "fail-open", "{logged:#}");
    assert!(
        logged["handler"]
            .as_str()
            .is_some_and(|h| h.contains("gaet.py")),
        "{logged:#}"
    );
}

#[test]
fn claude_code_shows_its_user_a_gate_that_failed_open_and_a_fail_closed_one_denies() {
    let test = "claude_code_shows_its_user_a_gate_that_failed_open_and_a_fail_closed_one_denies";
    let Some((printed, survived, decisions)) = broken_gate_run(test, &CLAUDE_CODE, &[]) else {
        return;
    };
    // Failed open: the call ran, and Claude Code showed the `systemMessage` in its own output
    // (stream-json's `informational` system message, the transcript's notice).
    assert!(!survived, "{printed}");
    let shown = printed
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["type"] == "system" && line["subtype"] == "informational")
        .filter_map(|line| line["content"].as_str().map(str::to_owned))
        .find(|content| content.contains("hookbox: a policy hook could not decide"))
        .unwrap_or_else(|| panic!("no hookbox notice in Claude Code's output: {printed}"));
    assert!(
        shown.contains("gaet.py") && shown.contains("failed open"),
        "{shown}"
    );
    assert_logged_fail_open(&decisions, &CLAUDE_CODE);

    let Some((printed, survived, _)) = broken_gate_run(test, &CLAUDE_CODE, &["--fail-closed"])
    else {
        return;
    };
    assert!(survived, "{printed}");
    assert!(printed.contains("is set to fail closed"), "{printed}");
}

/// Gemini CLI prints a hook's `systemMessage` as "Hook system message: …" on stderr in a `-p`
/// run (and as an info line in its interactive UI).
#[test]
fn gemini_cli_shows_its_user_a_gate_that_failed_open_and_a_fail_closed_one_denies() {
    let test = "gemini_cli_shows_its_user_a_gate_that_failed_open_and_a_fail_closed_one_denies";
    let Some((printed, survived, decisions)) = broken_gate_run(test, &GEMINI_CLI, &[]) else {
        return;
    };
    assert!(!survived, "{printed}");
    let shown = printed
        .lines()
        .find(|line| line.starts_with("Hook system message: hookbox: a policy hook could not"))
        .unwrap_or_else(|| panic!("no hookbox notice in Gemini CLI's output: {printed}"));
    assert!(
        shown.contains("gaet.py") && shown.contains("failed open"),
        "{shown}"
    );
    assert_logged_fail_open(&decisions, &GEMINI_CLI);

    let Some((printed, survived, _)) = broken_gate_run(test, &GEMINI_CLI, &["--fail-closed"])
    else {
        return;
    };
    assert!(survived, "{printed}");
}
