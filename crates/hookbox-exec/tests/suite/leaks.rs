//! Many misbehaving runs leave no descriptor and no child behind.

use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, run};
use tokio::task::JoinSet;
use tokio::time::{Instant, sleep};

use super::support::{children, exclusive, open_fds};

const RUNS: usize = 1000;
const CONCURRENCY: usize = 25;
const SHORT: Duration = Duration::from_millis(50);
const LONG: Duration = Duration::from_secs(30);

/// Run number `i` of the mix; checks what it can about the result.
async fn misbehave(i: usize) {
    let spec = |command: &str, timeout| ProcessSpec {
        output_limit: 1000,
        ..ProcessSpec::shell(command, timeout)
    };
    match i % 6 {
        0 => {
            let out = run(&spec("sleep 5", SHORT)).await.unwrap();
            assert_eq!(out.exit, ExitKind::TimedOut);
        }
        1 => {
            let out = run(&spec("head -c 4000000 /dev/zero", LONG)).await.unwrap();
            assert_eq!(
                (out.exit, out.stdout.dropped),
                (ExitKind::Exited(0), 4_000_000 - 1000)
            );
        }
        2 => {
            let out = run(&spec("echo bye >&2; exit 3", LONG)).await.unwrap();
            assert_eq!(out.exit, ExitKind::Exited(3));
        }
        3 => {
            let out = run(&spec("sleep 5 & echo started", LONG)).await.unwrap();
            assert_eq!(out.exit, ExitKind::Exited(0));
        }
        4 => {
            let out = run(&spec("sleep 5 & sleep 5", SHORT)).await.unwrap();
            assert_eq!(out.exit, ExitKind::TimedOut);
        }
        _ => {
            let spec = spec("sleep 5 & sleep 5", LONG);
            let cancelled = tokio::time::timeout(Duration::from_millis(20), run(&spec)).await;
            assert!(cancelled.is_err());
        }
    }
}

/// Polls (up to 10 s) until `now()` is back to `baseline`.
async fn settles(what: &str, baseline: usize, now: fn() -> usize) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while now() != baseline {
        assert!(
            Instant::now() < give_up,
            "{what}: {} now, {baseline} before",
            now()
        );
        sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_misbehaving_runs_leak_nothing() {
    let _guard = exclusive().await;
    // Warm up: the runtime opens its signal pipe and the orphan queue its SIGCHLD listener lazily.
    for i in 0..6 {
        misbehave(i).await;
    }
    settles("children after warm-up", 0, children).await;
    let fds = open_fds();

    let mut tasks = JoinSet::new();
    for i in 0..RUNS {
        if tasks.len() == CONCURRENCY {
            tasks.join_next().await.unwrap().unwrap();
        }
        tasks.spawn(misbehave(i));
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }

    settles("children", 0, children).await;
    settles("open descriptors", fds, open_fds).await;
}
