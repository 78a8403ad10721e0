//! The REST API's cost: an interaction create that runs one `read_file` through one matching
//! command hook (scripted model), against the same tool call made directly in the same run.
//!
//! Run: `cargo bench -p hookbox-server --bench interactions`. Results go to BENCHMARKS.md.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hookbox_agent::SandboxTools;
use hookbox_env::{EnvironmentSpec, Environments, Isolation};
use hookbox_llm::{ModelConfig, ProviderKind, client_options};
use hookbox_net::{EgressPolicy, GuardedClient, PostRequest};
use hookbox_runtime::{Config, Runtime};
use serde_json::json;

fn interactions(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let home = tempfile::tempdir().expect("home");
    let script = home.path().join("read.script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "read_file", "args": {"path": "/workspace/data.txt"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .expect("script");
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "read_file", "hooks": [
        {"type": "command", "command": "echo '{\"decision\":\"allow\"}'"}
    ]}]}});
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()},
        {"type": "inline", "target": "workspace/data.txt", "content": "x".repeat(4096)}
    ]}))
    .expect("spec");
    let environment = rt
        .block_on(
            Environments::open(home.path())
                .expect("store")
                .create(&spec),
        )
        .expect("environment");

    let mut config = Config::new(home.path());
    let mut model = ModelConfig::new(ProviderKind::Scripted, "");
    model.script = Some(script);
    config.agents.insert("bench".to_owned(), model);
    let runtime = std::sync::Arc::new(Runtime::from_config(&config).expect("runtime"));
    // Loopback only, and the environment was made outside the API (it has no owning key).
    let app = hookbox_server::router(runtime, hookbox_server::Auth::Disabled).expect("router");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("listen");
    let url = format!(
        "http://{}/v1/interactions",
        listener.local_addr().expect("address")
    );
    rt.spawn(hookbox_server::serve(
        listener,
        app,
        hookbox_server::ServeOptions::default(),
        std::future::pending(),
    ));

    let client = GuardedClient::new(&client_options()).expect("client");
    let counter = AtomicU64::new(0);
    let tools = SandboxTools::new(environment.clone(), Isolation::Sandboxed, client.clone())
        .expect("tools");

    let mut group = c.benchmark_group("interaction_one_read_file_one_hook");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));
    group.bench_function("rest_create", |b| {
        b.iter(|| {
            // A distinct input each time: an identical body would count as a retry.
            let n = counter.fetch_add(1, Ordering::Relaxed);
            let body = json!({"agent": "bench", "input": format!("read it ({n})"), "environment": environment.id()});
            let reply = rt
                .block_on(client.post_json(PostRequest {
                    url: &url,
                    headers: &[],
                    body: body.to_string().into_bytes(),
                    timeout: Duration::from_secs(60),
                    body_limit: 1 << 20,
                    policy: &EgressPolicy::PUBLIC,
                }))
                .expect("create");
            assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
        })
    });
    group.bench_function("direct_tool_call", |b| {
        b.iter(|| {
            rt.block_on(tools.call("read_file", json!({"path": "/workspace/data.txt"}), None))
                .expect("call")
        })
    });
    group.finish();
}

criterion_group!(benches, interactions);
criterion_main!(benches);
