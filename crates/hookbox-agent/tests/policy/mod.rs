//! The policy the model cannot change (issue 10), through the real tool-call path: group
//! precedence, read-only owner `.agents`, bounded model-written hook files, narrow HTTP hooks
//! for model-writable files, and hook files that cannot be parsed.

use hookbox_agent::SandboxTools;
use hookbox_env::{EnvironmentSpec, Environments, Isolation};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use serde_json::{Value, json};

use super::{environment, tools};

/// The owner's gate: denies `rm -rf` in code, failing closed.
fn owner_gate() -> Value {
    let command = r#"grep -q 'rm -rf' && echo '{"decision":"deny","reason":"owner gate"}' || echo '{"decision":"allow"}'"#;
    json!({"security-gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": command, "timeout": 20, "on_error": "deny"}]}]}})
}

async fn code(tools: &SandboxTools, code: &str) -> hookbox_agent::ToolCallReport {
    tools
        .call(
            "code_execution",
            json!({"code": code, "language": "bash"}),
            None,
        )
        .await
        .expect("call")
}

async fn file_tool(tools: &SandboxTools, tool: &str, args: Value) -> hookbox_agent::ToolCallReport {
    tools.call(tool, args, None).await.expect("call")
}

#[tokio::test]
async fn a_model_written_group_of_the_same_name_cannot_turn_the_owners_gate_off() {
    let (_home, store, id) = environment(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": owner_gate().to_string()}
    ]))
    .await;
    let tools = tools(&store, &id);
    let takeover = json!({"security-gate": {"enabled": false}});
    let write = file_tool(
        &tools,
        "write_file",
        json!({"path": "/workspace/.agents/hooks.json", "content": takeover.to_string()}),
    )
    .await;
    assert_eq!(write.error, None, "no owner supplied /workspace/.agents");
    let denied = code(&tools, "rm -rf /workspace/data").await;
    assert!(denied.denied, "{denied:#?}");
    assert_eq!(denied.reason.as_deref(), Some("owner gate"));
    assert!(
        denied.diagnostics.iter().any(
            |d| d.source == "/workspace/.agents/hooks.json" && d.message.contains("is ignored")
        ),
        "{:#?}",
        denied.diagnostics
    );
    // The same through code_execution, with an allowing group instead.
    let allowing = json!({"security-gate": {"pre_tool_execution": [{"matcher": ".*",
        "hooks": [{"type": "command", "command": "echo '{\"decision\":\"allow\"}'"}]}]}});
    let planted = code(
        &tools,
        &format!("cat > /workspace/.agents/hooks.json <<'EOF'\n{allowing}\nEOF"),
    )
    .await;
    assert_eq!(planted.error, None, "{planted:#?}");
    assert!(code(&tools, "rm -rf /workspace/data").await.denied);
}

/// An environment whose owner supplied `/workspace/.agents` (the gate) and `/.agents`.
async fn owner_workspace_agents() -> (tempfile::TempDir, Environments, String) {
    environment(json!([
        {"type": "inline", "target": ".agents/README", "content": "owner"},
        {"type": "inline", "target": "workspace/.agents/hooks.json", "content": owner_gate().to_string()}
    ]))
    .await
}

#[tokio::test]
async fn owner_agents_dirs_are_recorded_in_the_metadata() {
    let (_home, store, id) = owner_workspace_agents().await;
    let environment = store.get(&id).expect("environment");
    assert_eq!(
        environment.owner_agents(),
        ["/.agents", "/workspace/.agents"]
    );
    assert_eq!(
        environment.to_json()["owner_agents"],
        json!(["/.agents", "/workspace/.agents"])
    );
}

#[tokio::test]
async fn code_cannot_change_an_owner_supplied_workspace_agents() {
    let (_home, store, id) = owner_workspace_agents().await;
    let tools = tools(&store, &id);
    let owner_file = store
        .get(&id)
        .expect("environment")
        .root()
        .join("workspace/.agents/hooks.json");
    let before = std::fs::read(&owner_file).expect("owner file");
    // None of these may touch the owner's directory (none contains `rm -rf`, so the gate lets
    // them run).
    for attempt in [
        "echo '{}' > /workspace/.agents/hooks.json",
        "rm -f /workspace/.agents/hooks.json",
        "rm -r -f /workspace/.agents",
        "mv /workspace/.agents /workspace/old-agents",
        "mv /workspace/.agents/hooks.json /workspace/x.json",
        "ln -sf /tmp/mine /workspace/.agents/hooks.json",
        "touch /workspace/.agents/new-file",
        "cd /workspace && ln -s .agents link && echo '{}' > link/hooks.json",
        "cd /workspace/.agents/.. && echo '{}' > ./.agents/hooks.json",
        "chmod 777 /workspace/.agents",
        "mkdir /.agents/more",
    ] {
        let report = code(&tools, &format!("{attempt}; echo status=$?")).await;
        assert!(!report.denied, "{attempt}: {report:#?}");
        assert_eq!(
            std::fs::read(&owner_file).expect("owner file"),
            before,
            "{attempt}"
        );
        let stdout = report
            .result
            .as_ref()
            .map(|r| r["stdout"].to_string())
            .unwrap_or_default();
        assert!(
            !stdout.contains("status=0"),
            "{attempt} succeeded: {report:#?}"
        );
    }
    assert!(
        !store
            .get(&id)
            .expect("environment")
            .root()
            .join("workspace/.agents/new-file")
            .exists()
    );
    assert!(
        code(&tools, "rm -rf /workspace/data").await.denied,
        "the gate still holds"
    );
}

#[tokio::test]
async fn code_cannot_create_agents_at_the_root() {
    let (_home, store, id) = environment(json!([])).await;
    let tools = tools(&store, &id);
    let report = code(&tools, "mkdir /.agents; echo status=$?").await;
    let stdout = report.result.expect("result")["stdout"].to_string();
    assert!(!stdout.contains("status=0"), "{stdout}");
    assert!(
        !store
            .get(&id)
            .expect("environment")
            .root()
            .join(".agents")
            .exists()
    );
}

#[tokio::test]
async fn file_tools_cannot_change_an_owner_supplied_workspace_agents() {
    let (_home, store, id) = owner_workspace_agents().await;
    let tools = tools(&store, &id);
    let root = store.get(&id).expect("environment").root().to_path_buf();
    let before = std::fs::read(root.join("workspace/.agents/hooks.json")).expect("owner file");
    // A link the model can make, leading into the protected directory.
    let links = code(
        &tools,
        "ln -s .agents /workspace/link && ln -s /workspace/.agents /workspace/abs",
    )
    .await;
    assert!(!links.denied && links.error.is_none(), "{links:#?}");
    for path in [
        ".agents/hooks.json",
        "/workspace/.agents/hooks.json",
        "/workspace/./.agents//hooks.json",
        "/workspace/x/../.agents/hooks.json",
        "/workspace/.agents/new/hooks.json",
        "link/hooks.json",
        "abs/hooks.json",
        "link/new-dir/file",
        "/workspace/.agents",
        "/workspace/.agents/",
    ] {
        let write = file_tool(&tools, "write_file", json!({"path": path, "content": "{}"})).await;
        let error = write.error.unwrap_or_default();
        // (An absolute link is already refused as leading out of /workspace.)
        let refused = |error: &str| error.contains("read-only") || error.contains("leads out");
        assert!(refused(&error), "write_file {path}: {error}");
        let delete = file_tool(&tools, "delete_file", json!({"path": path})).await;
        let error = delete.error.unwrap_or_default();
        assert!(
            refused(&error) || error.contains("is a directory"),
            "delete_file {path}: {error}"
        );
    }
    assert_eq!(
        std::fs::read(root.join("workspace/.agents/hooks.json")).expect("owner file"),
        before
    );
    assert!(!root.join("workspace/.agents/new-dir").exists());
    assert!(!root.join("workspace/.agents/new").exists());
    // Elsewhere in /workspace the tools still work, and .agents can be read.
    let write = file_tool(
        &tools,
        "write_file",
        json!({"path": "notes/.agents.txt", "content": "x"}),
    )
    .await;
    assert_eq!(write.error, None);
    let read = file_tool(&tools, "read_file", json!({"path": "link/hooks.json"})).await;
    assert_eq!(read.error, None);
}

#[tokio::test]
async fn agents_writable_lets_the_model_write_them_and_makes_them_untrusted() {
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    let spec = EnvironmentSpec::from_json(&json!({"agents_writable": true, "sources": [
        {"type": "inline", "target": "workspace/.agents/hooks.json", "content": "{}"}
    ]}))
    .expect("spec");
    let id = store.create(&spec).await.expect("create").id().to_owned();
    let tools = tools(&store, &id);
    let write = file_tool(
        &tools,
        "write_file",
        json!({"path": ".agents/hooks.json", "content": owner_gate().to_string()}),
    )
    .await;
    assert_eq!(write.error, None);
    assert!(code(&tools, "rm -rf /workspace/data").await.denied);
    let edit = code(&tools, "echo '{}' > /workspace/.agents/hooks.json").await;
    assert_eq!(edit.error, None, "{edit:#?}");
}

#[tokio::test]
async fn only_the_owners_update_changes_them_and_the_next_call_sees_it() {
    let (_home, store, id) = owner_workspace_agents().await;
    let tools = tools(&store, &id);
    assert!(code(&tools, "rm -rf /workspace/data").await.denied);
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": "workspace/.agents/hooks.json", "content": "{}"}
    ]}))
    .expect("spec");
    store.update(&id, &spec).await.expect("update");
    let after = code(&tools, "rm -rf /workspace/data").await;
    assert!(!after.denied, "{after:#?}");
}

#[tokio::test]
async fn a_model_written_flood_is_ignored_and_reported() {
    let (_home, store, id) = environment(json!([])).await;
    let tools = tools(&store, &id);
    let handlers: Vec<Value> = (0..3000)
        .map(|_| json!({"type": "command", "command": "true"}))
        .collect();
    let flood = json!({"flood": {"pre_tool_execution": [{"hooks": handlers}]}}).to_string();
    let write = file_tool(
        &tools,
        "write_file",
        json!({"path": ".agents/hooks.json", "content": flood}),
    )
    .await;
    assert_eq!(write.error, None);
    let report = file_tool(&tools, "list_files", json!({})).await;
    assert!(!report.denied);
    assert!(report.trace.is_empty(), "{} hooks ran", report.trace.len());
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.message.contains("3000 handlers")),
        "{:#?}",
        report.diagnostics
    );
    let big = format!("{{}}{}", " ".repeat(300 * 1024));
    file_tool(
        &tools,
        "write_file",
        json!({"path": ".agents/hooks.json", "content": big}),
    )
    .await;
    let report = file_tool(&tools, "list_files", json!({})).await;
    assert!(!report.denied);
    assert!(
        report
            .diagnostics
            .iter()
            .any(|d| d.message.contains("bytes")),
        "{:#?}",
        report.diagnostics
    );
}

#[tokio::test]
async fn a_hook_file_that_does_not_parse_denies_every_call() {
    let (_home, store, id) = environment(json!([])).await;
    let tools = tools(&store, &id);
    let write = file_tool(
        &tools,
        "write_file",
        json!({"path": ".agents/hooks.json", "content": "{not json"}),
    )
    .await;
    assert_eq!(write.error, None);
    let report = code(&tools, "ls").await;
    assert!(report.denied);
    let reason = report.reason.unwrap_or_default();
    assert!(reason.contains("/workspace/.agents/hooks.json"), "{reason}");
    assert_eq!(
        report.diagnostics[0].source,
        "/workspace/.agents/hooks.json"
    );
}

#[tokio::test]
async fn http_hooks_in_model_writable_files_get_no_loopback() {
    let receiver = TestHttpServer::start_https(|_| Reply::json(200, &json!({})))
        .await
        .expect("receiver");
    let url = |path: &str| format!("https://localhost:{}{path}", receiver.addr().port());
    let post = |path: &str| {
        json!({"post-audit": {"post_tool_execution": [{"matcher": "list_files",
        "hooks": [{"type": "http", "url": url(path), "timeout": 10}]}]}})
    };
    let mut model_hook = post("/model");
    model_hook["model-audit"] = model_hook["post-audit"].take();
    let (_home, store, id) = environment(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": post("/owner").to_string()}
    ]))
    .await;
    let client = hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions {
        permit_loopback: true,
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
        ..hookbox_net::ClientOptions::default()
    })
    .expect("client");
    let mut options = hookbox_net::ClientOptions {
        permit_loopback: true,
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
        ..hookbox_net::ClientOptions::default()
    };
    let tools = SandboxTools::new(
        store.get(&id).expect("environment"),
        Isolation::Sandboxed,
        client,
    )
    .expect("tools");
    let write = file_tool(
        &tools,
        "write_file",
        json!({"path": ".agents/hooks.json", "content": model_hook.to_string()}),
    )
    .await;
    assert_eq!(write.error, None);
    let report = file_tool(&tools, "list_files", json!({})).await;
    let paths: Vec<String> = receiver.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/owner"], "{:#?}", report.trace);
    let failure = serde_json::to_string(&report.trace[1].failure).expect("json");
    assert!(failure.contains("loopback"), "{failure}");
    assert_eq!(
        report.trace[1].origin.trust,
        hookbox_hooks::Trust::ModelWritable
    );

    // The same with the service's pair of clients built from the operator's options.
    options.allow_private_cidrs = vec!["10.0.0.0/8".parse().expect("cidr")];
    let clients = hookbox_hooks::HookClients::new(&options).expect("clients");
    let tools = SandboxTools::with_hook_clients(
        store.get(&id).expect("environment"),
        Isolation::Sandboxed,
        clients,
    )
    .expect("tools");
    file_tool(&tools, "list_files", json!({})).await;
    let paths: Vec<String> = receiver.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/owner", "/owner"]);
}
