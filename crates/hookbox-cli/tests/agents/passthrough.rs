//! An agent's own event without a hookbox counterpart, installed by `hookbox install` like the
//! mapped ones: the real Gemini CLI's `BeforeModel` reaches the policy that binds it, with the
//! model request as Gemini CLI sent it, and its "no decision" answer changes nothing the agent
//! does.

use serde_json::{Value, json};

use super::{FINAL, FakeModel, GEMINI_CLI, PROMPT, Scene, agent_bins, code, run, write_file};

#[test]
fn gemini_clis_before_model_reaches_the_installed_policy_that_binds_it() {
    let test = "gemini_clis_before_model_reaches_the_installed_policy_that_binds_it";
    let Some(bins) = agent_bins(test) else {
        return;
    };
    let scene = Scene::new();
    // The policy's one hook, on BeforeModel, keeps each input it gets on a line of its own and
    // says nothing.
    let seen = scene.policies.join("before-model.jsonl");
    let command = format!(
        "cat >> '{0}'; echo >> '{0}'",
        seen.display().to_string().replace('\'', "")
    );
    let policy = scene.policies.join("model-watch.json");
    let rules = json!([{"hooks": [{"type": "command", "command": command}]}]);
    write_file(
        &policy,
        &json!({"hooks": {"BeforeModel": rules}}).to_string(),
    );
    let install = ["install", GEMINI_CLI.name, "--project", scene.project_arg()];
    let policy = policy.to_str().expect("utf-8");
    let output = scene.hookbox(&[&install[..], &["--policy", policy]].concat());
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let shell = &GEMINI_CLI.shell;
    let call = json!({"name": shell.model, "args": {shell.argument: "ls"}});
    let model = FakeModel::start(&scene, GEMINI_CLI.wire, &[call]);
    let output = run(GEMINI_CLI.command(&bins, &scene, &model, GEMINI_CLI.unattended));
    let transcript = format!(
        "gemini exited {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    // No decision on BeforeModel: the run goes on as without the hook (the call ran, the
    // final answer came).
    assert!(output.status.success(), "{transcript}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(FINAL),
        "{transcript}"
    );
    assert_eq!(model.results(&GEMINI_CLI).len(), 1, "{transcript}");

    let text = std::fs::read_to_string(&seen).unwrap_or_default();
    let inputs: Vec<Value> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).expect("a BeforeModel input"))
        .collect();
    assert!(
        !inputs.is_empty(),
        "BeforeModel never reached the policy: {transcript}"
    );
    for input in &inputs {
        assert_eq!(input["hook_event_name"], "BeforeModel", "{input:#}");
        assert!(input["llm_request"].is_object(), "{input:#}");
    }
    assert!(
        inputs
            .iter()
            .any(|input| input["llm_request"].to_string().contains(PROMPT)),
        "no BeforeModel input carried the prompt: {inputs:#?}"
    );

    // Each one is logged as the event it was, with no decision.
    let output = scene.hookbox(&["log", "--agent", GEMINI_CLI.name, "--json"]);
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
        .filter(|decision| decision["event"] == "BeforeModel")
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
}
