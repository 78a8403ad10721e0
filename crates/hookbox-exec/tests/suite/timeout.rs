//! Timeouts kill the whole group and return promptly.

use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, run};
use tokio::time::Instant;

use super::support::{assert_dead, read_pids, shared, temp_file};

const TIMEOUT: Duration = Duration::from_secs(1);
/// The bound: a timed-out run returns within a second of its deadline.
const PROMPTLY: Duration = Duration::from_secs(2);

#[tokio::test]
async fn a_sleeping_child_times_out() {
    let _guard = shared().await;
    let started = Instant::now();
    let out = run(&ProcessSpec::shell("sleep 30", TIMEOUT)).await.unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    assert!(started.elapsed() < PROMPTLY, "took {:?}", started.elapsed());
    assert!(out.duration >= TIMEOUT);
}

#[tokio::test]
async fn output_before_the_timeout_is_kept() {
    let _guard = shared().await;
    let out = run(&ProcessSpec::shell(
        "echo before; echo oops >&2; sleep 30",
        TIMEOUT,
    ))
    .await
    .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    assert_eq!(out.stdout.bytes, b"before\n");
    assert_eq!(out.stderr.bytes, b"oops\n");
}

#[tokio::test]
async fn a_direct_program_times_out_and_is_reaped() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let command = format!("echo $$ > {}; exec sleep 30", pidfile.display());
    let out = run(&ProcessSpec::shell(&command, TIMEOUT)).await.unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    for pid in read_pids(&pidfile, 1).await {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn a_child_ignoring_sigterm_is_still_killed() {
    let _guard = shared().await;
    let started = Instant::now();
    let out = run(&ProcessSpec::shell(
        "trap '' TERM INT HUP; sleep 30",
        TIMEOUT,
    ))
    .await
    .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    assert!(started.elapsed() < PROMPTLY, "took {:?}", started.elapsed());
}

#[tokio::test]
async fn a_zero_timeout_times_out_at_once() {
    let _guard = shared().await;
    let out = run(&ProcessSpec::shell("sleep 30", Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
}
