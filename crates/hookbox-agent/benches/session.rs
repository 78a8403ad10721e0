//! SDK sessions: what a `PreToolUse` hook adds to each tool call, for a native Rust callback
//! and for a command hook running the same logic in Python, next to the same session without
//! hooks, measured in the same run; and what routing a call to an MCP server costs, with
//! `CALLS` calls to an in-process MCP tool that answers at once.
//!
//! Each iteration is one query of a scripted model making `CALLS` `Glob` calls (host-side, no
//! sandbox start-up in the way). Per-call overhead = (with hook − without) / `CALLS`.
//!
//! Run: `cargo bench -p hookbox-agent --bench session`. Results go to BENCHMARKS.md as ratios.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use futures_util::future::BoxFuture;
use hookbox_agent::session::{
    HookMatcher, McpServer, McpTool, McpToolResult, PermissionMode, Session, SessionBuilder,
};
use hookbox_hooks::{CallbackError, HookEvent};
use hookbox_llm::ScriptedModel;
use serde_json::{Value, json};

/// Tool calls per query.
const CALLS: usize = 20;

fn script(tool: &str) -> String {
    let mut turns: Vec<Value> = (0..CALLS)
        .map(|_| json!({"tool_calls": [{"name": tool, "args": {"pattern": "*.txt"}}]}))
        .collect();
    turns.push(json!({"text": "done"}));
    json!({ "turns": turns }).to_string()
}

fn builder(cwd: &Path, script: &str) -> SessionBuilder {
    Session::builder(cwd)
        .model(Arc::new(
            ScriptedModel::from_json(Path::new("bench.json"), script).expect("script"),
        ))
        .permission_mode(PermissionMode::BypassPermissions)
}

fn sessions(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let cwd = tempfile::tempdir().expect("cwd");
    std::fs::write(cwd.path().join("a.txt"), "a").expect("a.txt");
    let hook = cwd.path().join("hook.py");
    std::fs::write(
        &hook,
        "import json, sys\nevent = json.load(sys.stdin)\nprint(json.dumps({}))\n",
    )
    .expect("hook.py");
    let settings = cwd.path().join("settings.json");
    let command = format!("python3 {}", hook.display());
    std::fs::write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "Glob", "hooks": [{"type": "command", "command": command}]}]}})
            .to_string(),
    )
    .expect("settings");
    let mcp_script = script("mcp__bench__find");
    let script = script("Glob");
    let run = |session: Session| {
        rt.block_on(async move {
            let messages = session.query("find the text files").collect_all().await;
            assert!(
                messages.len() > CALLS * 2,
                "the query did not run its calls"
            );
        });
    };

    let mut group = c.benchmark_group(format!("session_query_{CALLS}_glob_calls"));
    group.bench_function("no_hooks", |b| {
        b.iter_batched(
            || builder(cwd.path(), &script).build().expect("session"),
            run,
            BatchSize::PerIteration,
        );
    });
    group.bench_function("rust_callback_pre_tool_use", |b| {
        b.iter_batched(
            || {
                builder(cwd.path(), &script)
                    .hook(
                        HookEvent::PreToolUse,
                        HookMatcher::new(Some("Glob")).hook(
                            |_input: Value, _id: Option<String>| async {
                                Ok::<_, CallbackError>(json!({}))
                            },
                        ),
                    )
                    .build()
                    .expect("session")
            },
            run,
            BatchSize::PerIteration,
        );
    });
    group.bench_function("in_process_mcp_tool_no_hooks", |b| {
        b.iter_batched(
            || {
                let find = McpTool {
                    name: "find".into(),
                    description: "Finds files".into(),
                    input_schema: json!({"type": "object"}),
                    read_only: true,
                };
                builder(cwd.path(), &mcp_script)
                    .mcp_server("bench", vec![find], Arc::new(Instant))
                    .build()
                    .expect("session")
            },
            run,
            BatchSize::PerIteration,
        );
    });
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function("python_command_hook_pre_tool_use", |b| {
        b.iter_batched(
            || {
                builder(cwd.path(), &script)
                    .settings_file(&settings)
                    .build()
                    .expect("session")
            },
            run,
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

/// An MCP server whose every call answers at once.
struct Instant;

impl McpServer for Instant {
    fn call_tool(
        &self,
        _tool: &str,
        _arguments: Value,
    ) -> BoxFuture<'static, Result<McpToolResult, String>> {
        Box::pin(async {
            Ok(McpToolResult {
                content: vec![json!({"type": "text", "text": "a.txt"})],
                is_error: false,
            })
        })
    }
}

criterion_group!(benches, sessions);
criterion_main!(benches);
