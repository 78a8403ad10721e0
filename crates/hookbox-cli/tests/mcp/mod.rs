//! `hookbox mcp`: an environment's tools through a real MCP client (rmcp's), over stdio and
//! streamable HTTP, each call through the environment's hooks and sandbox.

/// Streamable HTTP: the same tools behind API keys, host and origin checks.
mod http;

use std::path::Path;

use hookbox_env::Vocabulary;
use rmcp::model::{CallToolRequestParams, CallToolResult, ErrorCode};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ServiceExt};
use serde_json::{Value, json};

use super::environments::{create, security_gate_sources};
use super::{code, hookbox_in};

/// The seed security gate's deny reason.
pub(crate) const SECURITY_REASON: &str = "Destructive command blocked by security gate.";

/// An environment with the seeds' security gate (`.agents/hooks.json` and `gate.py`, verbatim)
/// and `workspace/inside.txt`, created in `home`; its id.
pub(crate) fn gated_environment(home: &Path) -> String {
    let mut sources = security_gate_sources();
    let sources_list = sources.as_array_mut().expect("sources");
    sources_list.push(json!({"type": "inline", "target": "workspace/inside.txt",
        "content": "only in the sandbox\n"}));
    sources_list.push(json!({"type": "inline", "target": "workspace/victim",
        "content": "keep me\n"}));
    create(home, &json!({"type": "remote", "sources": sources}))
}

/// A client of `hookbox mcp ARGS` over its stdio, `HOOKBOX_HOME` set to `home`.
#[expect(
    clippy::disallowed_methods,
    reason = "the MCP client starts the built binary"
)]
async fn stdio_client(home: &Path, args: &[&str]) -> RunningService<RoleClient, ()> {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_hookbox"));
    command.arg("mcp").args(args).env("HOOKBOX_HOME", home);
    let transport = TokioChildProcess::new(command).expect("start hookbox mcp");
    ().serve(transport).await.expect("the MCP handshake")
}

/// Calls `tool` with `args` through `client`.
pub(crate) async fn call<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
    tool: &str,
    args: Value,
) -> Result<CallToolResult, ServiceError> {
    let Value::Object(arguments) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await
}

/// The text of a tool result, and whether it is an error.
pub(crate) fn text(result: &CallToolResult) -> (String, bool) {
    let text = result
        .content
        .iter()
        .filter_map(|block| block.as_text().map(|text| text.text.clone()))
        .collect::<String>();
    (text, result.is_error == Some(true))
}

/// The five tools, with the registry's schemas, and a call of each through the hooks and the
/// sandbox: what `code_execution` sees is the environment, not this host.
pub(crate) async fn exercise_every_tool<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
    home: &Path,
) {
    let tools = client.list_all_tools().await.expect("tools/list");
    let offered: Vec<(String, Value)> = tools
        .iter()
        .map(|tool| {
            (
                tool.name.to_string(),
                Value::Object((*tool.input_schema).clone()),
            )
        })
        .collect();
    let declared: Vec<(String, Value)> = hookbox_agent::builtin_declarations(Vocabulary::Sandbox)
        .into_iter()
        .map(|declaration| (declaration.name, declaration.parameters))
        .collect();
    assert_eq!(offered, declared);

    let ok = |result: Result<CallToolResult, ServiceError>| {
        let (text, is_error) = text(&result.expect("tools/call"));
        assert!(!is_error, "{text}");
        text
    };
    ok(call(
        client,
        "write_file",
        json!({"path": "hello.txt", "content": "hello from mcp\n"}),
    )
    .await);
    let read = ok(call(client, "read_file", json!({"path": "hello.txt"})).await);
    assert!(read.contains("hello from mcp"), "{read}");
    let listed = ok(call(client, "list_files", json!({})).await);
    assert!(
        listed.contains("hello.txt") && listed.contains("inside.txt"),
        "{listed}"
    );
    // In the sandbox: /workspace is the environment's, and this host's hookbox home is not there.
    let code = format!(
        "cat /workspace/hello.txt /workspace/inside.txt; ls {} 2>&1 || true",
        home.display()
    );
    let ran = ok(call(
        client,
        "code_execution",
        json!({"code": code, "language": "bash"}),
    )
    .await);
    assert!(
        ran.contains("hello from mcp") && ran.contains("only in the sandbox"),
        "{ran}"
    );
    assert!(ran.contains("No such file or directory"), "{ran}");
    ok(call(client, "delete_file", json!({"path": "hello.txt"})).await);
    let gone = call(client, "read_file", json!({"path": "hello.txt"}))
        .await
        .expect("tools/call");
    assert!(text(&gone).1, "{gone:?}");
}

/// `rm -rf` denied by the seeds' gate: an error result with the gate's reason, nothing deleted.
pub(crate) async fn rm_rf_is_denied<C: ClientHandler>(client: &RunningService<RoleClient, C>) {
    let denied = call(
        client,
        "code_execution",
        json!({"code": "rm -rf /workspace/victim", "language": "bash"}),
    )
    .await
    .expect("tools/call");
    let (reason, is_error) = text(&denied);
    assert!(is_error, "{reason}");
    assert_eq!(
        reason,
        format!("Blocked by a pre_tool_execution hook: {SECURITY_REASON}")
    );
    let kept = call(client, "read_file", json!({"path": "victim"}))
        .await
        .expect("tools/call");
    assert!(text(&kept).0.contains("keep me"), "{kept:?}");
}

/// Arguments the tool does not take are a tool error naming them; an unknown tool is a
/// JSON-RPC error (`-32602`) naming the tools there are.
pub(crate) async fn bad_calls_are_refused_clearly<C: ClientHandler>(
    client: &RunningService<RoleClient, C>,
) {
    for (tool, args, expected) in [
        ("read_file", json!({}), "path"),
        ("read_file", json!({"path": 7}), "path"),
        (
            "write_file",
            json!({"path": "a", "content": "x", "mode": 1}),
            "mode",
        ),
        (
            "code_execution",
            json!({"code": "true", "language": "cobol"}),
            "cobol",
        ),
    ] {
        let result = call(client, tool, args.clone()).await.expect("tools/call");
        let (message, is_error) = text(&result);
        assert!(is_error, "{tool} {args}: {message}");
        assert!(message.contains(expected), "{tool} {args}: {message}");
    }
    match call(client, "rm_rf", json!({})).await {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
            assert!(
                error.message.contains("rm_rf") && error.message.contains("code_execution"),
                "{error:?}"
            );
        }
        other => panic!("an unknown tool must be a JSON-RPC error: {other:?}"),
    }
}

/// Skips (printing why) when the sandbox cannot be made here.
pub(crate) fn sandbox_available(test: &str) -> bool {
    match hookbox_exec::check_isolation() {
        Ok(()) => true,
        Err(error) => {
            hookbox_test_support::skip(test, format_args!("the sandbox is unavailable: {error}"));
            false
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_serves_the_five_tools_through_hooks_and_sandbox() {
    if !sandbox_available("stdio_serves_the_five_tools_through_hooks_and_sandbox") {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let id = gated_environment(home.path());
    let client = stdio_client(home.path(), &["--env", &id]).await;
    exercise_every_tool(&client, home.path()).await;
    rm_rf_is_denied(&client).await;
    bad_calls_are_refused_clearly(&client).await;
    client.cancel().await.expect("close the connection");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_creates_a_new_environment_to_serve() {
    if !sandbox_available("spec_creates_a_new_environment_to_serve") {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let spec = home.path().join("spec.json");
    std::fs::write(
        &spec,
        json!({"type": "remote", "sources": security_gate_sources()}).to_string(),
    )
    .expect("spec");
    let client = stdio_client(home.path(), &["--spec", spec.to_str().expect("utf-8")]).await;
    rm_rf_is_denied_without_victim(&client).await;
    client.cancel().await.expect("close the connection");
    let listed = hookbox_in(home.path(), &["env", "list", "--json"], b"");
    let all: Value = serde_json::from_slice(&listed.stdout).expect("env list JSON");
    assert_eq!(all.as_array().map(Vec::len), Some(1), "{all}");
}

/// The gate of an environment made from `--spec` denies `rm -rf`.
async fn rm_rf_is_denied_without_victim<C: ClientHandler>(client: &RunningService<RoleClient, C>) {
    let denied = call(
        client,
        "code_execution",
        json!({"code": "rm -rf /", "language": "bash"}),
    )
    .await
    .expect("tools/call");
    let (reason, is_error) = text(&denied);
    assert!(is_error && reason.contains(SECURITY_REASON), "{reason}");
}

#[test]
fn bad_command_lines_exit_1_with_a_message() {
    let home = tempfile::tempdir().expect("home");
    for (args, expected) in [
        (vec!["mcp"], "--env"),
        (
            vec!["mcp", "--env", "env_a", "--spec", "x.json"],
            "cannot be used with",
        ),
        (vec!["mcp", "--env", "env_a", "--no-auth"], "--listen"),
        (vec!["mcp", "--env", "env_doesnotexist"], "env_doesnotexist"),
        (
            vec!["mcp", "--spec", "/nonexistent/spec.json"],
            "/nonexistent/spec.json",
        ),
        (
            vec!["mcp", "--spec", "-"],
            "standard input is the MCP connection",
        ),
    ] {
        let output = hookbox_in(home.path(), &args, b"");
        assert_eq!(code(&output), 1, "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(
            output.stdout.is_empty(),
            "{args:?}: stdout is the MCP channel"
        );
    }
}
