//! The real agents with `hookbox mcp --env ID` (stdio) as an MCP server, each configured the
//! way `docs/agent-adapters.md` documents: the model's call of the server's `code_execution`
//! (under the name each agent gives it) runs in the environment's sandbox, and the
//! environment's seed security gate denies `rm -rf` with its reason, which the model sees.

use std::process::Command;

use serde_json::{Value, json};

use super::{
    Agent, CLAUDE_CODE, CODEX, FINAL, FakeModel, GEMINI_CLI, Scene, agent_bins, run, write_file,
};
use crate::mcp::{SECURITY_REASON, gated_environment, sandbox_available};

/// The two tool results the model got from the sandbox: the look around, then the denied
/// `rm -rf`, each as JSON text.
struct Results {
    looked: String,
    denied: String,
}

/// Runs `agent` with `permissions` against an environment holding the seeds' security gate, a
/// sandbox-only file and a `victim`: `configure` names `hookbox mcp --env ID` (`ID` given) in
/// the agent's configuration; the model calls the server's `code_execution` (`call` makes the
/// agent's call of it from the arguments) to look around, then to `rm -rf` the victim. Checks
/// what every agent must show: the sandbox sees the environment and not the agent's project,
/// the gate's reason reaches the model, `victim` survives. `None` when skipped.
fn sandboxed_run(
    test: &str,
    agent: &Agent,
    permissions: &[&str],
    call: impl Fn(Value) -> Value,
    configure: impl FnOnce(&Scene, &str, &mut Command),
) -> Option<Results> {
    if !sandbox_available(test) {
        return None;
    }
    let bins = agent_bins(test)?;
    let scene = Scene::new();
    let id = gated_environment(&scene.hookbox_home);
    let look = format!(
        "cat /workspace/inside.txt; ls {} 2>&1 || true",
        scene.project_arg()
    );
    let calls = [
        call(json!({"code": look, "language": "bash"})),
        call(json!({"code": "rm -rf /workspace/victim", "language": "bash"})),
    ];
    let model = FakeModel::start(&scene, agent.wire, &calls);
    let mut command = agent.command(&bins, &scene, &model, permissions);
    configure(&scene, &id, &mut command);
    let output = run(command);
    let transcript = format!(
        "{} exited {:?}\nstdout: {}\nstderr: {}\nmodel requests: {:#?}",
        agent.bin,
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
    let [looked, denied] = <[String; 2]>::try_from(model.results(agent))
        .unwrap_or_else(|_| panic!("two tool results expected: {transcript}"));
    // The sandbox sees the environment's files, and not the project the agent runs in.
    assert!(looked.contains("only in the sandbox"), "{looked}");
    assert!(looked.contains("No such file or directory"), "{looked}");
    assert!(
        denied.contains(&format!(
            "Blocked by a pre_tool_execution hook: {SECURITY_REASON}"
        )),
        "{denied}"
    );
    let victim = scene.hookbox(&["exec", &id, "read_file", "--args", r#"{"path": "victim"}"#]);
    assert!(
        String::from_utf8_lossy(&victim.stdout).contains("keep me"),
        "{victim:?}"
    );
    Some(Results { looked, denied })
}

/// `hookbox mcp --env ID`'s entry in an `mcpServers` map (Claude Code's and Gemini CLI's
/// shape), plus `extra`.
fn mcp_servers(scene: &Scene, id: &str, extra: Value) -> Value {
    let mut server = json!({
        "command": env!("CARGO_BIN_EXE_hookbox"),
        "args": ["mcp", "--env", id],
        "env": {"HOOKBOX_HOME": scene.hookbox_home},
    });
    server
        .as_object_mut()
        .expect("an object")
        .extend(extra.as_object().expect("an object").clone());
    json!({"mcpServers": {"hookbox": server}})
}

#[test]
fn claude_code_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf() {
    // `-p` never asks: the server's tools must be allowed (`mcp__hookbox` allows all of them).
    let Some(results) = sandboxed_run(
        "claude_code_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf",
        &CLAUDE_CODE,
        &["--allowedTools", "mcp__hookbox"],
        |args| json!({"name": "mcp__hookbox__code_execution", "args": args}),
        |scene, id, command| {
            let config = scene.policies.join("mcp.json");
            let servers = mcp_servers(scene, id, json!({"type": "stdio"}));
            write_file(&config, &servers.to_string());
            command
                .args(["--strict-mcp-config", "--mcp-config"])
                .arg(&config);
            // Otherwise MCP tools are deferred behind its `ToolSearch` tool, which the
            // scripted model does not call.
            command.env("ENABLE_TOOL_SEARCH", "false");
        },
    ) else {
        return;
    };
    assert!(
        !results.looked.contains("is_error\":true"),
        "{}",
        results.looked
    );
    assert!(
        results.denied.contains("is_error\":true"),
        "{}",
        results.denied
    );
}

#[test]
fn gemini_cli_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf() {
    // No `--yolo`: `"trust": true` lets the server's tools run without asking (hookbox's hooks
    // decide), and Gemini CLI's own host tools keep asking (so are not offered to `-p`).
    let Some(results) = sandboxed_run(
        "gemini_cli_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf",
        &GEMINI_CLI,
        &[],
        |args| json!({"name": "mcp_hookbox_code_execution", "args": args}),
        |scene, id, _| {
            let servers = mcp_servers(scene, id, json!({"trust": true}));
            write_file(
                &scene.project.join(".gemini/settings.json"),
                &servers.to_string(),
            );
        },
    ) else {
        return;
    };
    // Gemini CLI reports an `isError` result to the model as an `error` naming it.
    assert!(!results.looked.contains("\"error\""), "{}", results.looked);
    assert!(
        results.denied.contains("reported tool error") && results.denied.contains("\"error\""),
        "{}",
        results.denied
    );
}

#[test]
fn codex_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf() {
    // Codex offers the server's tools in a `mcp__hookbox` namespace. No bypass flags: its own
    // sandbox and approval policy stay at `codex exec`'s defaults, and only this server's
    // tools are approved (`default_tools_approval_mode`), so hookbox's hooks decide. Codex
    // hands the model an MCP result's text alone, error or not: the common checks are all.
    sandboxed_run(
        "codex_runs_mcp_code_execution_in_the_sandbox_and_the_gate_denies_rm_rf",
        &CODEX,
        &[],
        |args| json!({"namespace": "mcp__hookbox", "name": "code_execution", "args": args}),
        |scene, id, _| {
            let config = format!(
                "[mcp_servers.hookbox]\ncommand = {:?}\nargs = [\"mcp\", \"--env\", {id:?}]\n\
                 env = {{ HOOKBOX_HOME = {:?} }}\ndefault_tools_approval_mode = \"approve\"\n",
                env!("CARGO_BIN_EXE_hookbox"),
                scene.hookbox_home.to_str().expect("utf-8"),
            );
            write_file(&scene.project.join(".codex/config.toml"), &config);
        },
    );
}
