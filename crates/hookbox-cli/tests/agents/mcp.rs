//! Claude Code with `--mcp-config` naming `hookbox mcp --env ID` (stdio): the model's
//! `mcp__hookbox__code_execution` runs in the environment's sandbox, and the environment's
//! seed security gate denies `rm -rf` with its reason, which the model sees.

use serde_json::json;

use super::{CLAUDE_CODE, FINAL, FakeModel, Scene, Wire, agent_bins, claude_code, run};
use crate::mcp::{SECURITY_REASON, gated_environment, sandbox_available};

#[test]
fn claude_code_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf() {
    let test = "claude_code_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf";
    if !sandbox_available(test) {
        return;
    }
    let Some(bins) = agent_bins(test) else {
        return;
    };
    let scene = Scene::new();
    let id = gated_environment(&scene.hookbox_home);
    let config = scene.policies.join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"hookbox": {
            "type": "stdio",
            "command": env!("CARGO_BIN_EXE_hookbox"),
            "args": ["mcp", "--env", id],
            "env": {"HOOKBOX_HOME": scene.hookbox_home},
        }}})
        .to_string(),
    )
    .expect("mcp config");
    // The sandbox sees the environment's files, and not the project Claude Code runs in.
    let look = format!(
        "cat /workspace/inside.txt; ls {} 2>&1 || true",
        scene.project_arg()
    );
    let calls = [
        (
            "mcp__hookbox__code_execution",
            json!({"code": look, "language": "bash"}),
        ),
        (
            "mcp__hookbox__code_execution",
            json!({"code": "rm -rf /workspace/victim", "language": "bash"}),
        ),
    ];
    let model = FakeModel::start(&scene, Wire::Anthropic, &calls);
    // `-p` never asks: the server's tools must be allowed (`mcp__hookbox` allows all of them).
    let mut command = claude_code(&bins, &scene, &model, &["--allowedTools", "mcp__hookbox"]);
    command
        .args(["--strict-mcp-config", "--mcp-config"])
        .arg(&config);
    // Otherwise MCP tools are deferred behind its `ToolSearch` tool, which the scripted model
    // does not call.
    command.env("ENABLE_TOOL_SEARCH", "false");
    let output = run(command);
    let transcript = format!(
        "claude exited {:?}\nstdout: {}\nstderr: {}\nmodel requests: {:#?}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        model.bodies(),
    );
    assert!(output.status.success(), "{transcript}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(FINAL),
        "{transcript}"
    );
    let results = model.results(&CLAUDE_CODE);
    let [looked, denied] = &results[..] else {
        panic!("two tool results expected: {transcript}")
    };
    assert!(looked.contains("only in the sandbox"), "{looked}");
    assert!(looked.contains("No such file or directory"), "{looked}");
    assert!(!looked.contains("is_error\":true"), "{looked}");
    assert!(
        denied.contains(&format!(
            "Blocked by a pre_tool_execution hook: {SECURITY_REASON}"
        )),
        "{denied}"
    );
    assert!(denied.contains("is_error\":true"), "{denied}");

    let victim = scene.hookbox(&["exec", &id, "read_file", "--args", r#"{"path": "victim"}"#]);
    assert!(
        String::from_utf8_lossy(&victim.stdout).contains("keep me"),
        "{victim:?}"
    );
}
