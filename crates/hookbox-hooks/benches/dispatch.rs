//! Hot paths of the hook engine, each next to a baseline measured in the same run.
//!
//! Run: `cargo bench -p hookbox-hooks --bench dispatch`. Results go to BENCHMARKS.md as ratios.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hookbox_hooks::{
    CallbackHandler, Dispatcher, EventInput, HookEvent, HookSet, Runners, SdkEvent, SessionContext,
    ToolUse,
};
use hookbox_net::{ClientOptions, EgressPolicy};
use hookbox_test_support::{Reply, TestHttpServer};
use serde_json::{Value, json};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// A dispatcher over `config` whose HTTP client may post to the plain-HTTP loopback server the
/// HTTP benchmark uses.
fn dispatcher(config: &Value) -> Dispatcher {
    let mut builder = HookSet::builder();
    builder
        .load_str("bench.json", &config.to_string(), None)
        .expect("config");
    Dispatcher::new(
        Arc::new(builder.build()),
        Runners::host_with_http_options(None, &local_receiver()).expect("runners"),
    )
}

fn local_receiver() -> ClientOptions {
    ClientOptions {
        permit_loopback: true,
        https_only: false,
        ..ClientOptions::default()
    }
}

/// Selecting the matching bindings among 1,000 rules, vs one anchored regex test.
fn matcher_selection(c: &mut Criterion) {
    let rules: Vec<Value> = (0..1000)
        .map(|i| json!({"matcher": format!("tool_{i}|other_{i}_.*"), "hooks": [{"type": "command", "command": "true"}]}))
        .collect();
    let mut builder = HookSet::builder();
    builder
        .load_str(
            "rules.json",
            &json!({"g": {"pre_tool_execution": rules}}).to_string(),
            None,
        )
        .expect("config");
    let hooks = builder.build();
    let single = regex::Regex::new("^(?:tool_500|other_500_.*)$").expect("regex");
    let mut group = c.benchmark_group("matcher_selection");
    group.bench_function("hookset_1000_rules", |b| {
        b.iter(|| hooks.select(HookEvent::PreToolExecution, black_box("tool_500")))
    });
    group.bench_function("baseline_one_regex", |b| {
        b.iter(|| single.is_match(black_box("tool_500")))
    });
    group.finish();
}

/// Dispatch with one in-process callback, vs awaiting the same callback directly.
fn callback_dispatch(c: &mut Criterion) {
    let rt = runtime();
    let callback = CallbackHandler {
        name: "noop".into(),
        timeout: Duration::from_secs(60),
        callback: Arc::new(|_: Value, _: Option<String>| async { Ok(json!({})) }),
    };
    let mut builder = HookSet::builder();
    builder
        .add_callback(HookEvent::PreToolUse, Some("Bash"), callback.clone())
        .expect("callback");
    let dispatcher = Dispatcher::new(
        Arc::new(builder.build()),
        Runners::host(None).expect("runners"),
    );
    let ls = json!({"command": "ls"});
    let tool = ToolUse {
        tool_name: "Bash",
        tool_input: &ls,
        tool_use_id: "t",
    };
    let input = EventInput::sdk(
        &SessionContext::default(),
        SdkEvent::PreToolUse { agent: None, tool },
    );
    let mut group = c.benchmark_group("callback_dispatch");
    group.bench_function("dispatch_one_callback", |b| {
        b.iter(|| rt.block_on(dispatcher.dispatch(black_box(&input))))
    });
    group.bench_function("baseline_direct_callback", |b| {
        b.iter(|| {
            rt.block_on(callback.callback.call(
                Value::Object(black_box(&input).payload().clone()),
                input.tool_use_id().map(str::to_owned),
            ))
        })
    });
    group.finish();
}

/// Runs `sh -c COMMAND` with `stdin`, the way a program without hookbox would.
#[expect(clippy::disallowed_methods, reason = "the bare fork+exec baseline")]
fn bare_shell(command: &str, stdin: &[u8]) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new("/bin/sh")
        .args(["-c", command])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Like hookbox, ignore a hook that exits without reading its stdin (EPIPE).
    let _ = child.stdin.take().expect("stdin").write_all(stdin);
    child.wait_with_output().expect("wait")
}

/// A command hook round trip vs a bare fork+exec of the same command with the same stdin.
fn command_round_trip(c: &mut Criterion) {
    let rt = runtime();
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seeds");
    let gate = format!("python3 {}", seeds.join("gate.py").display());
    let input = EventInput::pre_tool_execution(
        "code_execution",
        json!({"code": "ls", "language": "bash"}),
        "env_bench",
        None,
    );
    let stdin = serde_json::to_vec(input.payload()).expect("payload");
    let mut group = c.benchmark_group("command_round_trip");
    group.sample_size(30);
    for (name, command) in [
        ("trivial_native", "echo '{\"decision\":\"allow\"}'"),
        ("seed_gate_py", gate.as_str()),
    ] {
        let hooks = dispatcher(
            &json!({"g": {"pre_tool_execution": [{"hooks": [{"type": "command", "command": command}]}]}}),
        );
        group.bench_function(format!("{name}/hookbox"), |b| {
            b.iter(|| rt.block_on(hooks.dispatch(&input)))
        });
        group.bench_function(format!("{name}/bare_fork_exec"), |b| {
            b.iter(|| bare_shell(command, &stdin))
        });
    }
    group.finish();
}

/// An HTTP hook round trip to a local keep-alive server vs a direct post with the same client.
fn http_round_trip(c: &mut Criterion) {
    let rt = runtime();
    let server = rt
        .block_on(TestHttpServer::start(|_| {
            Reply::json(200, &json!({"decision": "allow"}))
        }))
        .expect("server");
    let url = server.url("/hook");
    let hooks = dispatcher(
        &json!({"g": {"pre_tool_execution": [{"hooks": [{"type": "http", "url": url}]}]}}),
    );
    let client = hookbox_net::GuardedClient::new(&local_receiver()).expect("client");
    let input =
        EventInput::pre_tool_execution("read_file", json!({"path": "a"}), "env_bench", None);
    let body = serde_json::to_vec(input.payload()).expect("payload");
    let mut group = c.benchmark_group("http_round_trip");
    group.bench_function("hookbox", |b| {
        b.iter(|| rt.block_on(hooks.dispatch(&input)))
    });
    group.bench_function("baseline_direct_post", |b| {
        b.iter(|| {
            rt.block_on(client.post_json(hookbox_net::PostRequest {
                url: &url,
                policy: &EgressPolicy::PUBLIC,
                headers: &[],
                body: body.clone(),
                timeout: Duration::from_secs(30),
                body_limit: 1 << 20,
            }))
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    matcher_selection,
    callback_dispatch,
    command_round_trip,
    http_round_trip
);
criterion_main!(benches);
