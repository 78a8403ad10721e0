//! An agent's own events without a hookbox counterpart, installed by `hookbox install` like the
//! mapped ones: through the real agent, each reaches the policy that binds it, with the input
//! as the agent sent it, and its "no decision" answer changes nothing the agent does.

use std::path::Path;

use serde_json::{Value, json};

use super::{
    Agent, CLAUDE_CODE, FINAL, FakeModel, GEMINI_CLI, PROMPT, Scene, agent_bins, code, run,
    write_file,
};

/// Installs hookbox into `agent`'s project with a policy whose one hook, on each of `events`,
/// keeps every input it gets and says nothing; runs the agent (the model makes one `ls` call)
/// after `prepare` filled the project; checks the run went as without the hook and that each
/// call was logged with no decision; uninstalls. Returns the inputs the hook got, in order
/// (`None`: skipped).
fn recorded_run(
    test: &str,
    agent: &Agent,
    events: &[&str],
    prepare: impl FnOnce(&Path),
) -> Option<Vec<Value>> {
    let bins = agent_bins(test)?;
    let scene = Scene::new();
    prepare(&scene.project);
    let seen = scene.policies.join("seen.jsonl");
    let command = format!("cat >> '{0}'; echo >> '{0}'", seen.display());
    let rules = json!([{"hooks": [{"type": "command", "command": command}]}]);
    let hooks: serde_json::Map<String, Value> = events
        .iter()
        .map(|event| ((*event).to_owned(), rules.clone()))
        .collect();
    let policy = scene.policies.join("watch.json");
    write_file(&policy, &json!({ "hooks": hooks }).to_string());
    let install = ["install", agent.name, "--project", scene.project_arg()];
    let policy = policy.to_str().expect("utf-8");
    let output = scene.hookbox(&[&install[..], &["--policy", policy]].concat());
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let call = json!({"name": agent.shell.model, "args": {agent.shell.argument: "ls"}});
    let model = FakeModel::start(&scene, agent.wire, &[call]);
    let output = run(agent.command(&bins, &scene, &model, agent.unattended));
    let transcript = format!(
        "{} exited {:?}\nstdout: {}\nstderr: {}",
        agent.bin,
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    // No decision: the run goes on as without the hook (the call ran, the final answer came).
    assert!(output.status.success(), "{transcript}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(FINAL),
        "{transcript}"
    );
    assert_eq!(model.results(agent).len(), 1, "{transcript}");

    let text = std::fs::read_to_string(&seen).unwrap_or_default();
    let inputs: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a recorded input"))
        .collect();
    for event in events {
        assert!(
            inputs
                .iter()
                .any(|input| input["hook_event_name"] == *event),
            "{event} never reached the policy: {inputs:#?}\n{transcript}"
        );
    }

    // Each one is logged as the event it was, with no decision.
    let output = scene.hookbox(&["log", "--agent", agent.name, "--json"]);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decisions: Value = serde_json::from_slice(&output.stdout).expect("log JSON");
    let logged = decisions
        .as_array()
        .expect("decisions")
        .iter()
        .filter(|decision| events.contains(&decision["event"].as_str().unwrap_or_default()))
        .inspect(|decision| assert_eq!(decision["decision"], "none", "{decision:#}"))
        .count();
    assert!(logged >= inputs.len(), "{decisions:#}");

    let output = scene.hookbox(&[&install[..], &["--uninstall"]].concat());
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Some(inputs)
}

#[test]
fn gemini_clis_before_model_reaches_the_installed_policy_that_binds_it() {
    let Some(inputs) = recorded_run(
        "gemini_clis_before_model_reaches_the_installed_policy_that_binds_it",
        &GEMINI_CLI,
        &["BeforeModel"],
        |_| {},
    ) else {
        return;
    };
    for input in &inputs {
        assert!(input["llm_request"].is_object(), "{input:#}");
    }
    assert!(
        inputs
            .iter()
            .any(|input| input["llm_request"].to_string().contains(PROMPT)),
        "no BeforeModel input carried the prompt: {inputs:#?}"
    );
}

#[test]
fn claude_codes_own_events_reach_the_installed_policy_that_binds_them() {
    let Some(inputs) = recorded_run(
        "claude_codes_own_events_reach_the_installed_policy_that_binds_them",
        &CLAUDE_CODE,
        &["InstructionsLoaded", "PostToolBatch"],
        |project| std::fs::write(project.join("CLAUDE.md"), "Be brief.\n").expect("CLAUDE.md"),
    ) else {
        return;
    };
    let loaded = inputs
        .iter()
        .find(|input| input["hook_event_name"] == "InstructionsLoaded")
        .expect("checked by recorded_run");
    assert!(
        loaded["file_path"]
            .as_str()
            .is_some_and(|path| path.ends_with("/CLAUDE.md")),
        "{loaded:#}"
    );
    let batch = inputs
        .iter()
        .find(|input| input["hook_event_name"] == "PostToolBatch")
        .expect("checked by recorded_run");
    assert_eq!(
        (
            &batch["tool_calls"][0]["tool_name"],
            &batch["tool_calls"][0]["tool_input"]
        ),
        (&json!("Bash"), &json!({"command": "ls"})),
        "{batch:#}"
    );
}
