//! Issue 15 item 7's benchmark: what MCP adds to one tool call. The same call (`read_file` of a
//! small file, then `code_execution` of `true` in the environment's warm sandbox) made directly
//! through `SandboxTools::call` (the baseline), through `McpTools` over an in-memory pipe (the
//! stdio wire: JSON-RPC lines, rmcp on both ends) and over streamable HTTP on loopback (rmcp's
//! client, with an API key), in the same run.
//!
//! This binary is its own warm sandboxes' supervisor (`main` calls
//! `hookbox_exec::supervise_if_asked` first, as hookbox's does).
//!
//! Run: `cargo bench -p hookbox-server --bench mcp`. Results go to BENCHMARKS.md.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::Criterion;
use hookbox_env::{EnvironmentSpec, Isolation};
use hookbox_runtime::{Config, Runtime};
use hookbox_server::mcp::{MCP_PATH, McpTools};
use hookbox_server::{ApiKeys, Auth, ServeOptions};
use hookbox_store::Resource;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

/// The two calls: one that spawns nothing, one that runs in the sandbox.
fn calls() -> [(&'static str, CallToolRequestParams); 2] {
    let params = |tool: &'static str, args: Value| {
        let Value::Object(args) = args else {
            unreachable!("object arguments")
        };
        CallToolRequestParams::new(tool).with_arguments(args)
    };
    [
        ("read_file", params("read_file", json!({"path": "a.txt"}))),
        (
            "code_execution",
            params(
                "code_execution",
                json!({"code": "true", "language": "bash"}),
            ),
        ),
    ]
}

fn mcp(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let _entered = rt.enter();
    let home = tempfile::tempdir().expect("home");
    let runtime = Arc::new(
        Runtime::from_config(&Config::new(home.path()))
            .expect("runtime")
            .for_serving()
            .expect("serving runtime"),
    );
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": "workspace/a.txt", "content": "hello\n"}]}))
    .expect("spec");
    let environment = rt
        .block_on(runtime.environments().create(&spec))
        .expect("environment");
    let sandbox_tools = || {
        runtime
            .sandbox_tools(&environment, Isolation::Sandboxed)
            .expect("tools")
    };
    let direct = sandbox_tools();

    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let server = McpTools::new(sandbox_tools(), environment.id());
    rt.spawn(async move {
        let running = server.serve(server_end).await.expect("serve the pipe");
        let _ = running.waiting().await;
    });
    let piped = rt.block_on(().serve(client_end)).expect("pipe handshake");

    let (record, key) = ApiKeys::new(Arc::clone(runtime.store()))
        .create("bench")
        .expect("key");
    // Only the key an environment belongs to may use it over HTTP.
    runtime
        .store()
        .claim(Resource::Environment, environment.id(), &record.id)
        .expect("give the environment to the key");
    let app = hookbox_server::mcp::router(
        &runtime,
        McpTools::new(sandbox_tools(), environment.id()),
        Auth::ApiKeys,
    );
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("listen");
    let url = format!(
        "http://{}{MCP_PATH}",
        listener.local_addr().expect("address")
    );
    rt.spawn(hookbox_server::serve(
        listener,
        app,
        ServeOptions::default(),
        std::future::pending(),
    ));
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let http = rt
        .block_on(().serve(StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(url).auth_header(key),
        )))
        .expect("HTTP handshake");

    let mut group = c.benchmark_group("mcp_call");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(8));
    for (name, params) in calls() {
        let args = Value::Object(params.arguments.clone().unwrap_or_default());
        group.bench_function(format!("{name}_direct"), |b| {
            b.iter(|| {
                let report = rt
                    .block_on(direct.call(name, args.clone(), None))
                    .expect("call");
                assert!(report.error.is_none(), "{report:?}");
            })
        });
        for (transport, client) in [("stdio_wire", &piped), ("http", &http)] {
            group.bench_function(format!("{name}_{transport}"), |b| {
                b.iter(|| {
                    let result = rt.block_on(client.call_tool(params.clone())).expect("call");
                    assert_ne!(result.is_error, Some(true), "{result:?}");
                })
            });
        }
    }
    group.finish();
}

fn main() {
    hookbox_exec::supervise_if_asked();
    let mut criterion = Criterion::default().configure_from_args();
    mcp(&mut criterion);
    criterion.final_summary();
}
