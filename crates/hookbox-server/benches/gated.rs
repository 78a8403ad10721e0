//! Issue 13's REST benchmark: one interaction of 20 `code_execution` calls (`true`), each
//! gated by the trivial command hook `cat > /dev/null; echo '{}'`, and the same interaction
//! without the hook, against a server whose environments have warm sandboxes (as `hookbox
//! serve` builds it) and one that builds a sandbox per run; and a bare spawn of
//! `sh -c 'cat > /dev/null; echo {}'` in the same run. The hook's added cost per call is
//! (gated − ungated) / 20. An environment with network (an allowlist the code does not use)
//! shows what the egress proxy's listener adds.
//!
//! This binary is its own warm sandboxes' supervisor (`main` calls
//! `hookbox_exec::supervise_if_asked` first, as hookbox's does).
//!
//! Run: `cargo bench -p hookbox-server --bench gated`. Results go to BENCHMARKS.md.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use hookbox_env::EnvironmentSpec;
use hookbox_exec::ProcessSpec;
use hookbox_llm::{ModelConfig, ProviderKind, client_options};
use hookbox_net::{EgressPolicy, GuardedClient, PostRequest};
use hookbox_runtime::{Config, Runtime};
use serde_json::json;

/// Tool calls per interaction.
const CALLS: usize = 20;

/// The trivial hook of the issue.
const HOOK: &str = "cat > /dev/null; echo '{}'";

/// The baseline: `sh -c HOOK` spawned with the standard library, `payload` written to its
/// stdin, its output read.
#[expect(
    clippy::disallowed_methods,
    reason = "the baseline hookbox is measured against"
)]
fn bare_spawn(payload: &[u8]) {
    use std::io::Write;
    let mut child = std::process::Command::new("sh")
        .args(["-c", HOOK])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload)
        .expect("write");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(output.stdout, b"{}\n");
}

/// The trivial hook answering `allow`.
const ALLOW_HOOK: &str = r#"cat > /dev/null; echo '{"decision":"allow"}'"#;

/// A server of `runtime` on loopback; returns its interactions URL.
fn start_server(rt: &tokio::runtime::Runtime, runtime: Runtime) -> String {
    // Loopback only, and the environments were made outside the API (no owning key).
    let app =
        hookbox_server::router(Arc::new(runtime), hookbox_server::Auth::Disabled).expect("router");
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
    url
}

fn gated(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let home = tempfile::tempdir().expect("home");
    let script = home.path().join("calls.script.json");
    let call = json!({"name": "code_execution", "args": {"code": "true"}});
    let mut turns: Vec<_> = (0..CALLS)
        .map(|_| json!({"tool_calls": [call.clone()]}))
        .collect();
    turns.push(json!({"text": "done"}));
    std::fs::write(&script, json!({ "turns": turns }).to_string()).expect("script");
    let mut config = Config::new(home.path());
    let mut model = ModelConfig::new(ProviderKind::Scripted, "");
    model.script = Some(script);
    config.agents.insert("bench".to_owned(), model);

    let cold = Runtime::from_config(&config).expect("runtime");
    let warm = Runtime::from_config(&config)
        .expect("runtime")
        .for_serving()
        .expect("serving runtime");
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": HOOK}]}]}});
    let create_with = |network: serde_json::Value, sources: serde_json::Value| {
        let spec = EnvironmentSpec::from_json(&json!({"network": network, "sources": sources}))
            .expect("spec");
        rt.block_on(cold.environments().create(&spec))
            .expect("environment")
            .id()
            .to_owned()
    };
    let create = |sources| create_with(json!("disabled"), sources);
    let gated_env = create(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}
    ]));
    // The same hook answering a decision: `{}` has none, so the sandbox dialect records a
    // fail-open (a trace and a warning) at every call.
    let allow = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": ALLOW_HOOK}]}]}});
    let allow_env = create(json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": allow.to_string()}
    ]));
    let bare_env = create(json!([]));
    // With network: the sandbox gets the egress proxy's listener (the code does not use it).
    let net_env = create_with(json!({"allowlist": [{"domain": "example.com"}]}), json!([]));
    let servers = [
        ("cold", start_server(&rt, cold)),
        ("warm", start_server(&rt, warm)),
    ];

    let client = GuardedClient::new(&client_options()).expect("client");
    let counter = AtomicU64::new(0);
    let interaction = |url: &str, environment: &str| {
        // A distinct input each time: an identical body would count as a retry.
        let n = counter.fetch_add(1, Ordering::Relaxed);
        let body = json!({"agent": "bench", "input": format!("run ({n})"),
            "tools": [{"type": "code_execution"}], "environment": environment});
        let reply = rt
            .block_on(client.post_json(PostRequest {
                url,
                headers: &[],
                body: body.to_string().into_bytes(),
                timeout: Duration::from_secs(120),
                body_limit: 1 << 22,
                policy: &EgressPolicy::PUBLIC,
            }))
            .expect("create");
        assert_eq!(
            reply.status,
            200,
            "{}",
            String::from_utf8_lossy(&reply.body)
        );
        let text = String::from_utf8_lossy(&reply.body);
        assert_eq!(text.matches(r#""is_error":false"#).count(), CALLS, "{text}");
    };

    let mut group = c.benchmark_group("rest_20_code_execution");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    // A hook's input is a few hundred bytes of JSON.
    let payload = json!({"tool_call": {"name": "code_execution", "args": {"code": "true"}},
        "hook_event_name": "pre_tool_execution"})
    .to_string()
    .into_bytes();
    group.bench_function("bare_sh_spawn_x20", |b| {
        b.iter(|| {
            for _ in 0..CALLS {
                bare_spawn(&payload);
            }
        })
    });
    let mut spawn = ProcessSpec::shell(HOOK, Duration::from_secs(30));
    spawn.stdin = payload.clone();
    group.bench_function("host_run_x20", |b| {
        b.iter(|| {
            for _ in 0..CALLS {
                let output = rt.block_on(hookbox_exec::run(&spawn)).expect("spawn");
                assert_eq!(output.stdout.to_text(), "{}\n");
            }
        })
    });
    for (name, url) in &servers {
        group.bench_function(format!("{name}_no_hook"), |b| {
            b.iter(|| interaction(url, &bare_env))
        });
        group.bench_function(format!("{name}_net_no_hook"), |b| {
            b.iter(|| interaction(url, &net_env))
        });
        group.bench_function(format!("{name}_hook"), |b| {
            b.iter(|| interaction(url, &gated_env))
        });
        group.bench_function(format!("{name}_hook_allow"), |b| {
            b.iter(|| interaction(url, &allow_env))
        });
    }
    group.finish();
}

fn main() {
    hookbox_exec::supervise_if_asked();
    let mut criterion = Criterion::default().configure_from_args();
    gated(&mut criterion);
    criterion.final_summary();
}
