//! An audited tool call: `write_file` of 4 KiB with no audit hook, with the seeds' audit hook
//! posting fire-and-forget to a local HTTPS receiver, and with the same hook
//! `"delivery": "at_least_once"` (stored in the outbox while the deliverer sends to the same
//! receiver in the background), all in one run. Then the deliverer's throughput: how fast a
//! backlog of one environment drains to the local receiver.
//!
//! Run: `cargo bench -p hookbox-runtime --bench audit` (as root: environments are loop-mounted
//! images). Results go to BENCHMARKS.md as ratios.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use hookbox_agent::SandboxTools;
use hookbox_env::{EnvironmentSpec, Isolation};
use hookbox_runtime::{AuditDeliverer, Config, Runtime};
use hookbox_test_support::{Reply, TestHttpServer};
use serde_json::{Value, json};

/// Audited calls made before the throughput run's backlog is drained.
const BACKLOG: usize = 500;

/// The runtime of a fresh home whose HTTP hooks trust the test CA and may reach loopback.
fn runtime(home: &Path) -> Arc<Runtime> {
    let ca =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hookbox-test-support/fixtures/tls/ca.pem");
    let text = format!(
        "[network]\npermit_loopback_hooks = true\nextra_ca_certs = [\"{}\"]\n\
         [sandbox]\ndisk_bytes = 16777216\n",
        ca.display()
    );
    let config = Config::parse(&text, &home.join("hookbox.toml"), home).expect("config");
    Arc::new(Runtime::from_config(&config).expect("runtime"))
}

/// The seeds' audit hook posting to `url`, with `delivery` when given.
fn audit_hooks(url: &str, delivery: Option<&str>) -> Value {
    let mut handler = json!({"type": "http", "url": url, "timeout": 10});
    if let Some(delivery) = delivery {
        handler["delivery"] = json!(delivery);
    }
    json!({"audit-logging": {"post_tool_execution": [
        {"matcher": "read_file|write_file", "hooks": [handler]}
    ]}})
}

/// The sandboxed tools of a new environment with `hooks` as its `.agents/hooks.json`.
fn tools(rt: &tokio::runtime::Runtime, runtime: &Runtime, hooks: Option<Value>) -> SandboxTools {
    let sources: Vec<Value> = hooks
        .map(|hooks| json!({"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}))
        .into_iter()
        .collect();
    let spec = EnvironmentSpec::from_json(&json!({"sources": sources})).expect("spec");
    let environment = rt
        .block_on(runtime.environments().create(&spec))
        .expect("environment");
    runtime
        .sandbox_tools(&environment, Isolation::Sandboxed)
        .expect("tools")
}

fn audited_calls(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio");
    let receiver = rt
        .block_on(TestHttpServer::start_https(|_| {
            Reply::json(200, &json!({}))
        }))
        .expect("receiver");
    let url = receiver
        .url("/api/v1/agent-events")
        .replace("127.0.0.1", "localhost");
    let home = tempfile::tempdir().expect("home");
    let runtime = runtime(home.path());
    let deliverer = rt.spawn(AuditDeliverer::new(Arc::clone(&runtime)).run());
    let none = tools(&rt, &runtime, None);
    let fire = tools(&rt, &runtime, Some(audit_hooks(&url, None)));
    let durable = tools(
        &rt,
        &runtime,
        Some(audit_hooks(&url, Some("at_least_once"))),
    );
    let args = json!({"path": "bench.txt", "content": "x".repeat(4096)});
    let call = |tools: &SandboxTools| {
        let report = rt
            .block_on(tools.call("write_file", args.clone(), None))
            .expect("call");
        assert!(
            report.trace.iter().all(|entry| entry.failure.is_none()),
            "{:?}",
            report.trace
        );
    };

    let mut group = c.benchmark_group("write_file_4k_audited");
    group.bench_function("no_audit_hook", |b| b.iter(|| call(&none)));
    group.bench_function("fire_and_forget", |b| b.iter(|| call(&fire)));
    group.bench_function("at_least_once", |b| b.iter(|| call(&durable)));
    group.finish();

    // The store's part: one event of the size the at_least_once calls store, committed
    // (its environment does not exist: the deliverer marks these dead at once).
    let body = rt
        .block_on(durable.call("write_file", args.clone(), None))
        .map(|report| serde_json::to_vec(&json!({"args": args, "result": report.result})))
        .expect("call")
        .expect("json");
    let mut sequence = 0_u64;
    c.bench_function("outbox_enqueue_8k_event", |b| {
        b.iter(|| {
            sequence += 1;
            runtime
                .store()
                .enqueue_outbox(&hookbox_store::NewOutboxEvent {
                    id: format!("msg_bench{sequence}"),
                    queue: hookbox_store::OutboxQueue::Environment("env_bench".to_owned()),
                    url: url.clone(),
                    handler: "bench".to_owned(),
                    headers: Vec::new(),
                    body: body.clone(),
                    timeout_ms: 10_000,
                    model_writable: false,
                    signing_credential: None,
                })
                .expect("enqueue");
        })
    });

    // Throughput: a backlog of one environment (sent one at a time, in order) drained.
    let before = receiver.requests().len();
    deliverer.abort();
    // The same durable calls with no deliverer running: the tool call's own cost, without
    // the deliverer's reads and writes competing for the store and the cores.
    let stored = Instant::now();
    for _ in 0..BACKLOG {
        call(&durable);
    }
    let per_call = stored.elapsed() / u32::try_from(BACKLOG).expect("backlog");
    let started = Instant::now();
    let deliverer = rt.spawn(AuditDeliverer::new(Arc::clone(&runtime)).run());
    let deadline = started + Duration::from_secs(300);
    while receiver.requests().len() < before + BACKLOG && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let elapsed = started.elapsed();
    deliverer.abort();
    #[expect(
        clippy::print_stdout,
        reason = "the throughput is the benchmark's output"
    )]
    {
        println!(
            "at_least_once with no deliverer running: {:.1} µs per call (mean of {BACKLOG})",
            per_call.as_secs_f64() * 1e6
        );
        println!(
            "outbox drain: {} events of one environment in {:.2} s = {:.0} deliveries/s",
            receiver.requests().len() - before,
            elapsed.as_secs_f64(),
            (receiver.requests().len() - before) as f64 / elapsed.as_secs_f64()
        );
    }
}

criterion_group!(benches, audited_calls);
criterion_main!(benches);
