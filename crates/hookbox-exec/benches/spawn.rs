//! Cost of `hookbox_exec::run` against a bare `std::process::Command` in the same run.
//!
//! `run` adds a process group, three pipes read through tokio, a pidfd and the group kill, and,
//! with `die_with_parent`, the keeper (set up between fork and exec, which makes std fork the
//! whole process instead of using `posix_spawn`; the cost grows with the process's memory).
//! The sandboxed groups compare a cold sandbox, a warm one and a bare spawn in the same run.

#![expect(clippy::unwrap_used, reason = "a failing benchmark should stop")]

use std::hint::black_box;
use std::process::ExitStatus;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hookbox_exec::{ExitKind, ProcessSpec, Sandbox, WarmSandbox, run};

/// The baseline: spawn and wait with the standard library, stdio inherited.
#[expect(
    clippy::disallowed_methods,
    reason = "the baseline hookbox-exec is measured against"
)]
fn bare(program: &str, args: &[&str]) -> ExitStatus {
    std::process::Command::new(program)
        .args(args)
        .status()
        .unwrap()
}

/// The time `iters` runs of `call` took, each after an untimed pause of 2 ms.
fn paused(iters: u64, mut call: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        std::thread::sleep(Duration::from_millis(2));
        let started = std::time::Instant::now();
        call();
        total += started.elapsed();
    }
    total
}

fn spawn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let timeout = Duration::from_secs(10);
    let direct = ProcessSpec {
        program: "/bin/true".into(),
        args: Vec::new(),
        ..ProcessSpec::shell("", timeout)
    };
    let shell = ProcessSpec::shell("true", timeout);
    let shell_fast = ProcessSpec {
        die_with_parent: false,
        ..shell.clone()
    };
    // One run of `spec` on the runtime, which must exit 0.
    let runs_to_zero = |spec: &ProcessSpec| {
        assert_eq!(
            runtime.block_on(run(black_box(spec))).unwrap().exit,
            ExitKind::Exited(0)
        );
    };

    let mut group = c.benchmark_group("/bin/true");
    group.bench_function("std Command::status", |b| {
        b.iter(|| assert!(bare("/bin/true", &[]).success()))
    });
    group.bench_function("hookbox_exec::run", |b| {
        b.iter(|| runs_to_zero(&direct));
    });
    group.finish();

    // A whole sandbox (namespaces, mounts, pivot_root, landlock, seccomp, cgroups as root)
    // around the same /bin/true.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("workspace")).unwrap();
    let sandboxed = ProcessSpec {
        sandbox: Some(Sandbox::new(root.path())),
        ..direct.clone()
    };
    let mut group = c.benchmark_group("/bin/true sandboxed");
    group.bench_function("hookbox_exec::run bare", |b| {
        b.iter(|| runs_to_zero(&direct));
    });
    group.bench_function("hookbox_exec::run in a sandbox", |b| {
        b.iter(|| runs_to_zero(&sandboxed));
    });
    group.finish();

    // A warm sandbox (built once; each call a clone3 into fresh pid and mount namespaces plus
    // the confinement) against a bare `sh -c true` and a whole cold sandbox, in one run.
    let warm = runtime
        .block_on(WarmSandbox::start(
            Sandbox::new(root.path()),
            env!("CARGO_BIN_EXE_hookbox-exec-supervisor"),
        ))
        .unwrap();
    let shell_true = ProcessSpec {
        die_with_parent: false,
        ..ProcessSpec::shell("true", timeout)
    };
    let cold_shell = ProcessSpec {
        sandbox: Some(Sandbox::new(root.path())),
        ..shell_true.clone()
    };
    let mut group = c.benchmark_group("warm sandbox");
    group.bench_function("bare sh -c true", |b| {
        b.iter(|| assert!(bare("/bin/sh", &["-c", "true"]).success()));
    });
    group.bench_function("warm sandbox /bin/true", |b| {
        b.iter(|| {
            let out = runtime.block_on(warm.run(black_box(&direct))).unwrap();
            assert_eq!(out.exit, ExitKind::Exited(0));
        });
    });
    group.bench_function("warm sandbox sh -c true", |b| {
        b.iter(|| {
            let out = runtime.block_on(warm.run(black_box(&shell_true))).unwrap();
            assert_eq!(out.exit, ExitKind::Exited(0));
        });
    });
    // The same two, 2 ms apart (untimed), as calls come in an agent's loop: the sandbox's
    // next call is then ready, and both pay for waking an idle processor.
    group.bench_function("paused bare sh -c true", |b| {
        b.iter_custom(|iters| {
            paused(iters, || {
                assert!(bare("/bin/sh", &["-c", "true"]).success())
            })
        });
    });
    group.bench_function("paused warm sandbox sh -c true", |b| {
        b.iter_custom(|iters| {
            paused(iters, || {
                let out = runtime.block_on(warm.run(black_box(&shell_true))).unwrap();
                assert_eq!(out.exit, ExitKind::Exited(0));
            })
        });
    });
    group.bench_function("cold sandbox sh -c true", |b| {
        b.iter(|| runs_to_zero(&cold_shell));
    });
    // The trivial command hook of issue 13, fed a JSON payload: on the host (as the hook runner
    // runs unsandboxed hooks, without the keeper) and in the warm sandbox.
    let hook = ProcessSpec {
        stdin: br#"{"hook_event_name":"PreToolUse","tool_name":"code_execution"}"#.to_vec(),
        die_with_parent: false,
        ..ProcessSpec::shell("cat > /dev/null; echo '{}'", timeout)
    };
    group.bench_function("hook on the host", |b| {
        b.iter(|| runs_to_zero(&hook));
    });
    group.bench_function("hook in the warm sandbox", |b| {
        b.iter(|| {
            let out = runtime.block_on(warm.run(black_box(&hook))).unwrap();
            assert_eq!(out.stdout.bytes, b"{}\n");
        });
    });
    group.bench_function("warm sandbox start and first /bin/true", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let fresh = WarmSandbox::start(
                    Sandbox::new(root.path()),
                    env!("CARGO_BIN_EXE_hookbox-exec-supervisor"),
                )
                .await
                .unwrap();
                let out = fresh.run(&direct).await.unwrap();
                assert_eq!(out.exit, ExitKind::Exited(0));
            });
        });
    });
    group.finish();
    drop(warm);

    let mut group = c.benchmark_group("sh -c true");
    group.bench_function("std Command::status", |b| {
        b.iter(|| assert!(bare("/bin/sh", &["-c", "true"]).success()));
    });
    group.bench_function("hookbox_exec::run", |b| {
        b.iter(|| runs_to_zero(&shell));
    });
    group.bench_function("hookbox_exec::run without die_with_parent", |b| {
        b.iter(|| runs_to_zero(&shell_fast));
    });
    group.finish();

    // The same in a larger process (64 MiB written, like a server's heap): forking copies its
    // page tables, posix_spawn does not. Last, so the groups above run in the small process.
    let ballast = vec![1_u8; 64 << 20];
    let mut group = c.benchmark_group("sh -c true, 64 MiB process");
    group.bench_function("hookbox_exec::run", |b| {
        b.iter(|| runs_to_zero(&shell));
    });
    group.bench_function("hookbox_exec::run without die_with_parent", |b| {
        b.iter(|| runs_to_zero(&shell_fast));
    });
    group.finish();
    black_box(ballast);
}

criterion_group!(benches, spawn);
criterion_main!(benches);
