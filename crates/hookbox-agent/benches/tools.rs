//! Sandboxed tool calls and hooks, each next to a baseline measured in the same run.
//!
//! Run: `cargo bench -p hookbox-agent --bench tools`. Results go to BENCHMARKS.md as ratios.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hookbox_agent::{EnvironmentCommandRunner, SandboxTools};
use hookbox_env::{EnvironmentSpec, Environments, FileTools, Isolation};
use hookbox_hooks::{Dispatcher, EventInput, HookSet, HostCommandRunner, Runners};
use serde_json::json;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// `sh -c COMMAND`, the bare baseline.
#[expect(clippy::disallowed_methods, reason = "the bare fork+exec baseline")]
fn bare_shell(command: &str) -> std::process::ExitStatus {
    std::process::Command::new("/bin/sh")
        .args(["-c", command])
        .status()
        .expect("spawn")
}

fn sandbox_tools(c: &mut Criterion) {
    let rt = runtime();
    let home = tempfile::tempdir().expect("home");
    let store = Environments::open(home.path()).expect("store");
    // A hook that matches only code_execution: file tools pay discovery and selection only.
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
        {"type": "command", "command": "echo '{\"decision\":\"allow\"}'"}
    ]}]}});
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}
    ]}))
    .expect("spec");
    let environment = rt.block_on(store.create(&spec)).expect("environment");
    let http =
        hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default()).expect("client");
    let tools =
        SandboxTools::new(environment.clone(), Isolation::Sandboxed, http.clone()).expect("tools");
    let files = FileTools::for_environment(&environment).expect("files");
    let content = "x".repeat(4096);
    let write_args = json!({"path": "bench.txt", "content": content});
    let read_args = json!({"path": "bench.txt"});

    let mut group = c.benchmark_group("file_tools_4k_no_matching_hook");
    group.bench_function("write_file/through_hooks", |b| {
        b.iter(|| {
            rt.block_on(tools.call("write_file", write_args.clone(), None))
                .expect("call")
        })
    });
    group.bench_function("write_file/direct", |b| {
        b.iter(|| files.call("write_file", &write_args).expect("write"))
    });
    group.bench_function("read_file/through_hooks", |b| {
        b.iter(|| {
            rt.block_on(tools.call("read_file", read_args.clone(), None))
                .expect("call")
        })
    });
    group.bench_function("read_file/direct", |b| {
        b.iter(|| files.call("read_file", &read_args).expect("read"))
    });
    group.finish();

    let no_hooks = SandboxTools::new(
        rt.block_on(store.create(&EnvironmentSpec::from_json(&json!({})).expect("spec")))
            .expect("environment"),
        Isolation::Sandboxed,
        http,
    )
    .expect("tools");
    let mut group = c.benchmark_group("code_execution_true");
    group.sample_size(30);
    group.bench_function("sandboxed", |b| {
        b.iter(|| {
            rt.block_on(no_hooks.call(
                "code_execution",
                json!({"code": "true", "language": "bash"}),
                None,
            ))
            .expect("call")
        })
    });
    group.bench_function("bare_sh_c_true", |b| b.iter(|| bare_shell("true")));
    group.finish();

    let config = json!({"g": {"pre_tool_execution": [{"hooks": [
        {"type": "command", "command": "echo '{\"decision\":\"allow\"}'"}
    ]}]}});
    let mut builder = HookSet::builder();
    builder
        .load_str("bench.json", &config.to_string(), None)
        .expect("config");
    let hookset = Arc::new(builder.build());
    let sandboxed = Dispatcher::new(
        Arc::clone(&hookset),
        Runners {
            command: Arc::new(EnvironmentCommandRunner::new(
                Arc::new(environment),
                Isolation::Sandboxed,
            )),
            http: Arc::new(
                hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default())
                    .expect("client"),
            ),
            outbox: None,
        },
    );
    let host = Dispatcher::new(
        hookset,
        Runners {
            command: Arc::new(HostCommandRunner::default()),
            http: Arc::new(
                hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default())
                    .expect("client"),
            ),
            outbox: None,
        },
    );
    let input =
        EventInput::pre_tool_execution("read_file", json!({"path": "a"}), "env_bench", None);
    let mut group = c.benchmark_group("command_hook_round_trip");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("sandboxed", |b| {
        b.iter(|| rt.block_on(sandboxed.dispatch(&input)))
    });
    group.bench_function("host", |b| b.iter(|| rt.block_on(host.dispatch(&input))));
    group.finish();
}

criterion_group!(benches, sandbox_tools);
criterion_main!(benches);
