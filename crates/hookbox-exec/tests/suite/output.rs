//! Output caps: floods are read to the end, a bounded prefix is kept.

use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, run};

use super::support::shared;

const FLOOD: u64 = 200 * 1024 * 1024;
const LIMIT: usize = 1024 * 1024;

async fn flood(command: &str) -> hookbox_exec::ProcessOutput {
    let spec = ProcessSpec {
        output_limit: LIMIT,
        ..ProcessSpec::shell(command, Duration::from_secs(120))
    };
    run(&spec).await.unwrap()
}

#[tokio::test]
async fn a_200_mb_stdout_flood_keeps_the_limit() {
    let _guard = shared().await;
    let out = flood(&format!("head -c {FLOOD} /dev/zero")).await;
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.bytes.len(), LIMIT);
    assert!(out.stdout.bytes.iter().all(|&b| b == 0));
    assert_eq!(out.stdout.dropped, FLOOD - LIMIT as u64);
    assert!(out.stdout.truncated());
    assert_eq!(out.stderr, hookbox_exec::CapturedOutput::default());
}

#[tokio::test]
async fn a_200_mb_stderr_flood_keeps_the_limit() {
    let _guard = shared().await;
    let out = flood(&format!("head -c {FLOOD} /dev/zero >&2; echo fine")).await;
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stderr.bytes.len(), LIMIT);
    assert_eq!(out.stderr.dropped, FLOOD - LIMIT as u64);
    assert_eq!(out.stdout.bytes, b"fine\n");
}

#[tokio::test]
async fn a_zero_limit_keeps_nothing_but_counts() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        output_limit: 0,
        ..ProcessSpec::shell("printf 12345", Duration::from_secs(30))
    };
    let out = run(&spec).await.unwrap();
    assert!(out.stdout.bytes.is_empty());
    assert_eq!(out.stdout.dropped, 5);
}
