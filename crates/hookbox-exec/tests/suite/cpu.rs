//! Hooks come first for the CPU: busy loops the model's code keeps running on every core cannot
//! starve a gate running beside them in the same warm sandbox past its timeout (where it would
//! fail open).

use std::sync::Arc;
use std::time::Duration;

use hookbox_exec::{CpuShare, ExitKind, ProcessSpec, Sandbox, WarmSandbox};

use super::support::{SUPERVISOR, exclusive};

/// A gate that needs a second of CPU time to decide, then denies: within its 3 s timeout only
/// if it gets most of a core while the busy loops run.
const GATE: &str = "python3 -c 'import time
while time.process_time() < 1.0:
    pass
print(\"deny\")'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_beside_busy_loops_on_every_core_answers_within_its_timeout() {
    // Alone: the busy loops would slow every other test.
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    let warm = Arc::new(
        WarmSandbox::start(Sandbox::new(dir.path()), SUPERVISOR)
            .await
            .unwrap(),
    );
    let cores = std::thread::available_parallelism().unwrap().get();
    let loops = cores * 4;
    // The model's calls: one running `loops` busy loops, and as many more running one each
    // (parallel tool calls: each call has cgroups of its own, so only the weights, not the
    // grouping, can put the gate first).
    let mut model = tokio::task::JoinSet::new();
    let mut marks = Vec::new();
    for call in 0..=loops {
        let count = if call == 0 { loops } else { 1 };
        let busy = ProcessSpec::shell(
            &format!(
                "for i in $(seq {count}); do (while :; do :; done) & done; \
                 touch /workspace/busy-{call}; wait"
            ),
            Duration::from_secs(120),
        );
        let warm = Arc::clone(&warm);
        model.spawn(async move { warm.run(&busy).await });
        marks.push(workspace.join(format!("busy-{call}")));
    }
    while !marks.iter().all(|mark| mark.exists()) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let gate = ProcessSpec {
        cpu: CpuShare::Hook,
        ..ProcessSpec::shell(GATE, Duration::from_secs(3))
    };
    let out = warm.run(&gate).await.unwrap();
    // The busy calls are killed before the next test runs.
    model.abort_all();
    while model.join_next().await.is_some() {}
    assert_eq!(
        out.exit,
        ExitKind::Exited(0),
        "the gate beside {} busy loops did not answer: {}",
        loops * 2,
        out.stderr.to_text()
    );
    assert_eq!(out.stdout.to_text(), "deny\n");
}
