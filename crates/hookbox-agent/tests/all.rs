//! hookbox-agent integration tests: tool calls through hooks in real environments and sandboxes.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

/// The sandbox's network through the egress proxy (root only).
mod egress;
/// Command hooks start from nothing the model wrote.
mod hook_environment;
/// The agent loop against fake model servers and real sandboxes.
mod interaction;
/// The policy the model cannot change (issue 10).
mod policy;
/// Hooks see (and tools act on) resolved paths.
mod resolved_paths;
/// SDK sessions: lifecycle events, permissions, sub-agents and compaction.
mod session;

use std::time::Duration;

use hookbox_agent::{SandboxTools, ToolCallError};
use hookbox_env::{EnvironmentSpec, Environments, Isolation};
use serde_json::{Value, json};

/// A fresh store in a temporary home, with one environment made of `sources`.
async fn environment(sources: Value) -> (tempfile::TempDir, Environments, String) {
    let home = tempfile::tempdir().expect("home");
    let store = small_store(home.path());
    let spec = EnvironmentSpec::from_json(&json!({ "sources": sources })).expect("spec");
    let id = store.create(&spec).await.expect("create").id().to_owned();
    (home, store, id)
}

/// The environments of `home`, new ones with a 64 MiB disk budget: every budget is reserved
/// on the host in full, and these tests need far less than the default 2 GiB.
fn small_store(home: &std::path::Path) -> Environments {
    let bytes = 64 << 20;
    Environments::open(home)
        .expect("store")
        .with_disk_budget(hookbox_env::DiskBudget {
            bytes,
            inodes: hookbox_env::DiskBudget::inodes_for(bytes, None),
        })
}

fn tools(store: &Environments, id: &str) -> SandboxTools {
    let http =
        hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default()).expect("client");
    SandboxTools::new(
        store.get(id).expect("environment"),
        Isolation::Sandboxed,
        http,
    )
    .expect("tools")
}

/// A command hook denying with `reason` when the event JSON contains `word` (pick words that an
/// `env_` id, lowercase base32, cannot contain).
fn deny_when(word: &str, reason: &str) -> Value {
    let command = format!(
        "grep -q {word} && echo '{{\"decision\":\"deny\",\"reason\":\"{reason}\"}}' || echo '{{}}'"
    );
    json!({"type": "command", "command": command})
}

#[tokio::test]
async fn hook_files_are_re_read_when_they_change() {
    // A /workspace/.agents the model creates (no owner supplied it) stays writable to it.
    let (_home, store, id) = environment(json!([])).await;
    let tools = tools(&store, &id);
    for version in ["v1", "v2"] {
        let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "read_file", "hooks": [deny_when("secret", version)]}]}});
        let write = tools
            .call(
                "write_file",
                json!({"path": ".agents/hooks.json", "content": hooks.to_string()}),
                None,
            )
            .await
            .expect("call");
        assert_eq!(write.error, None);
        let read = tools
            .call("read_file", json!({"path": "secret"}), None)
            .await
            .expect("call");
        assert!(read.denied);
        assert_eq!(read.reason.as_deref(), Some(version));
    }
}

#[tokio::test]
async fn root_hooks_load_first_and_a_workspace_group_of_the_same_name_is_ignored() {
    // Issue 10: a later hook file only adds groups (this used to replace the root's group).
    let root = json!({
        "shared": {"pre_tool_execution": [{"hooks": [deny_when("x-8", "root")]}]},
        "root-only": {"pre_tool_execution": [{"hooks": [deny_when("y-9", "root-only")]}]}
    });
    let workspace = json!({
        "shared": {"pre_tool_execution": [{"hooks": [deny_when("x-8", "workspace")]}]},
        "workspace-only": {"pre_tool_execution": [{"hooks": [deny_when("z-7", "workspace-only")]}]}
    });
    let (_home, store, id) = environment(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": root.to_string()},
        {"type": "inline", "target": "workspace/.agents/hooks.json", "content": workspace.to_string()}
    ]))
    .await;
    let tools = tools(&store, &id);
    let x = tools
        .call("list_files", json!({"path": "/workspace/x-8"}), None)
        .await
        .expect("call");
    assert_eq!(x.reason.as_deref(), Some("root"));
    assert!(
        x.diagnostics
            .iter()
            .any(|d| d.message.contains("is ignored")),
        "{:?}",
        x.diagnostics
    );
    for (path, reason) in [
        ("/workspace/y-9", "root-only"),
        ("/workspace/z-7", "workspace-only"),
    ] {
        let report = tools
            .call("list_files", json!({"path": path}), None)
            .await
            .expect("call");
        assert_eq!(report.reason.as_deref(), Some(reason));
    }
}

#[tokio::test]
async fn an_unparsable_hook_file_denies_every_call() {
    // Refused at the owner's door now; one left by an older hookbox still gates nothing open.
    let (_home, store, id) = environment(json!([])).await;
    let root = store.get(&id).expect("environment").root().to_path_buf();
    std::fs::create_dir(root.join(".agents")).expect("mkdir");
    std::fs::write(root.join(".agents/hooks.json"), "{not json").expect("write");
    let report = tools(&store, &id)
        .call("list_files", json!({}), None)
        .await
        .expect("call");
    assert!(report.denied);
    assert!(
        report
            .reason
            .as_deref()
            .is_some_and(|reason| reason.contains("`/.agents/hooks.json`")),
        "{report:?}"
    );
    assert_eq!(report.diagnostics.len(), 1);
    assert_eq!(report.diagnostics[0].source, "/.agents/hooks.json");
}

#[tokio::test]
async fn a_denied_call_never_touches_the_sandbox() {
    let hooks = json!({"gate": {"pre_tool_execution": [{"hooks": [deny_when("touch", "no")]}]}});
    let (_home, store, id) = environment(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}
    ]))
    .await;
    let tools = tools(&store, &id);
    let report = tools
        .call(
            "code_execution",
            json!({"code": "touch /workspace/ran", "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    assert!(report.denied);
    assert_eq!(report.result, None);
    let check = tools
        .call("read_file", json!({"path": "ran"}), None)
        .await
        .expect("call");
    assert!(check.error.expect("missing").contains("does not exist"));
}

#[tokio::test]
async fn post_hooks_get_the_result_capped() {
    let hooks = json!({"audit": {"post_tool_execution": [{"hooks": [
        {"type": "command", "command": "wc -c > /workspace/post-size"}
    ]}]}});
    let (_home, store, id) = environment(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}
    ]))
    .await;
    let tools = tools(&store, &id);
    let big = tools
        .call(
            "code_execution",
            json!({"code": "head -c 500000 /dev/zero | tr '\\0' a", "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    assert_eq!(
        big.result.as_ref().expect("result")["stdout"]
            .as_str()
            .expect("stdout")
            .len(),
        500_000
    );
    let size = tools
        .call("read_file", json!({"path": "post-size"}), None)
        .await
        .expect("call");
    let size: usize = size.result.expect("result")["content"]
        .as_str()
        .expect("text")
        .trim()
        .parse()
        .expect("number");
    assert!(size < 70_000, "post payload was {size} bytes");
}

#[tokio::test]
async fn unknown_tools_are_refused() {
    let (_home, store, id) = environment(json!([])).await;
    let err = tools(&store, &id)
        .call("function_call", json!({}), None)
        .await
        .expect_err("refused");
    assert!(matches!(err, ToolCallError::UnknownTool(_)));
}

#[tokio::test]
async fn code_sees_no_inherited_fds_and_no_host_environment() {
    // F6: nothing of hookbox's own environment (where secrets such as API keys live) and no
    // descriptor of hookbox's reaches code in the sandbox.
    let (_home, store, id) = environment(json!([])).await;
    let tools = tools(&store, &id);
    let report = tools
        .call(
            "code_execution",
            json!({"code": "ls /proc/self/fd; echo ---; tr '\\0' '\\n' < /proc/1/environ; echo ---; env", "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    let stdout = report.result.expect("result")["stdout"]
        .as_str()
        .expect("stdout")
        .to_owned();
    let mut parts = stdout.split("---\n");
    let fds: Vec<&str> = parts.next().expect("fds").lines().collect();
    // 0, 1, 2 and the directory `ls` itself opened.
    assert!(fds.len() <= 4, "inherited descriptors: {fds:?}");
    let host_vars: Vec<String> = std::env::vars()
        .map(|(name, _)| format!("{name}="))
        .collect();
    for inside in parts {
        for line in inside.lines() {
            let leaked = host_vars
                .iter()
                .filter(|var| {
                    ![
                        "PATH=", "HOME=", "TMPDIR=", "PWD=", "SHLVL=", "_=", "OLDPWD=",
                    ]
                    .contains(&var.as_str())
                })
                .any(|var| line.starts_with(var.as_str()));
            assert!(!leaked, "host variable visible in the sandbox: {line}");
        }
    }
}

#[tokio::test]
async fn code_execution_timeout_may_lower_the_sandbox_limit_but_not_raise_it() {
    let (_home, store, id) = environment(json!([])).await;
    let tools = tools(&store, &id).with_code_timeout(Duration::from_secs(2));
    let code = |args: Value| {
        let tools = &tools;
        async move {
            let report = tools
                .call("code_execution", args, None)
                .await
                .expect("call");
            (report.result, report.error.unwrap_or_default())
        }
    };

    // The sandbox's limit holds without a `timeout`.
    let (_, error) = code(json!({"code": "sleep 10"})).await;
    assert_eq!(error, "timed out after 2 s");
    // A lower `timeout` applies.
    let (_, error) = code(json!({"code": "sleep 10", "timeout": 0.5})).await;
    assert_eq!(error, "timed out after 0.5 s");
    // A higher one is clamped to the limit, and the result says so.
    let (result, error) = code(json!({"code": "sleep 10", "timeout": 900})).await;
    assert_eq!(error, "timed out after 2 s");
    assert_eq!(
        result.expect("result")["note"],
        "timeout 900 s is above the sandbox's limit; the limit of 2 s applied"
    );
    let (result, error) = code(json!({"code": "echo fine", "timeout": 1})).await;
    assert_eq!(error, "");
    let result = result.expect("result");
    assert_eq!(result["stdout"], "fine\n");
    assert!(result.get("note").is_none());
    // A non-positive or non-numeric one is an argument error; nothing runs.
    for timeout in [json!(0), json!(-3), json!("10")] {
        let (result, error) =
            code(json!({"code": "touch /workspace/ran", "timeout": timeout})).await;
        assert!(result.is_none(), "{timeout}");
        assert!(error.contains("argument `timeout`"), "{timeout}: {error}");
    }
    let listing = tools
        .call("list_files", json!({}), None)
        .await
        .expect("call");
    assert!(!listing.result.expect("listing").to_string().contains("ran"));
}

#[tokio::test]
async fn an_output_flood_in_the_sandbox_is_capped() {
    let (_home, store, id) = environment(json!([])).await;
    let report = tools(&store, &id)
        .call(
            "code_execution",
            json!({"code": "head -c 209715200 /dev/zero; echo done >&2", "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    let result = report.result.expect("result");
    let stdout = result["stdout"].as_str().expect("stdout");
    assert!(stdout.len() < 1_100_000, "{} bytes kept", stdout.len());
    assert!(
        stdout.contains("[hookbox: output truncated"),
        "no truncation marker"
    );
    assert_eq!(result["stderr"], "done\n");
}

/// The seed's audit example, on loopback: post hooks deliver to an allowlisted HTTPS receiver
/// with the environment's `transform` header injected; other hosts are refused (fail-open, with
/// the cause traced) and receive nothing. The secret is only in the environment's network policy.
#[tokio::test]
async fn http_hooks_follow_the_environments_network_policy() {
    use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
    let receiver = TestHttpServer::start_https(|_| Reply::json(200, &json!({})))
        .await
        .expect("receiver");
    let port = receiver.addr().port();
    let hooks = json!({"audit-logging": {"post_tool_execution": [{"matcher": "read_file|write_file", "hooks": [
        {"type": "http", "url": format!("https://localhost:{port}/api/v1/agent-events"), "timeout": 10},
        {"type": "http", "url": format!("https://127.0.0.1:{port}/not-allowlisted"), "timeout": 10}
    ]}]}});
    let home = tempfile::tempdir().expect("home");
    let store = small_store(home.path());
    let spec = EnvironmentSpec::from_json(&json!({
        "sources": [{"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}],
        "network": {"allowlist": [
            {"domain": "localhost", "transform": {"Authorization": "Bearer telemetry_secret_token_123"}}
        ]}
    }))
    .expect("spec");
    let environment = store.create(&spec).await.expect("environment");
    // Hook delivery to a loopback receiver needs the operator's permission and its test CA.
    let client = hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions {
        permit_loopback: true,
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
        ..hookbox_net::ClientOptions::default()
    })
    .expect("client");
    let tools = SandboxTools::new(environment, Isolation::Sandboxed, client).expect("tools");

    let write = tools
        .call(
            "write_file",
            json!({"path": "/workspace/audit.log", "content": "event 1"}),
            None,
        )
        .await
        .expect("write");
    let read = tools
        .call("read_file", json!({"path": "/workspace/audit.log"}), None)
        .await
        .expect("read");
    assert_eq!(read.result.expect("result")["content"], "event 1");

    let requests = receiver.requests();
    assert_eq!(
        requests.len(),
        2,
        "one event per tool call, to the allowlisted host only"
    );
    for (request, tool) in requests.iter().zip(["write_file", "read_file"]) {
        assert_eq!(request.path, "/api/v1/agent-events");
        assert_eq!(
            request.header("authorization"),
            Some("Bearer telemetry_secret_token_123")
        );
        assert_eq!(request.json()["tool_call"]["name"], tool);
    }
    let refused = &write.trace[1];
    let failure = serde_json::to_string(&refused.failure).expect("json");
    assert!(failure.contains("network"), "{failure}");
    // The token is in none of the environment's files and not in the sandbox's environment.
    let leak = tools
        .call("code_execution", json!({"code": "grep -rl telemetry_secret /workspace /.agents /tmp /etc 2>/dev/null; env | grep -c telemetry_secret", "language": "bash"}), None)
        .await
        .expect("grep");
    assert_eq!(leak.result.expect("result")["stdout"], "0\n");
}
