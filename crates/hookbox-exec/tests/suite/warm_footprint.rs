//! What a warm sandbox keeps alive, counted whole: every process of it is the small supervisor
//! program, none a copy of the process that started it, whatever that process's memory does.

use std::time::Duration;

use hookbox_exec::{
    ExitKind, PARENT_ARG, ProcessSpec, Sandbox, WarmSandbox, warm_sandbox_footprint,
};

use super::support::{SUPERVISOR, shared};

/// The parent pid of `pid`.
fn parent_of(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    after_name
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn every_process_a_warm_sandbox_keeps_is_the_supervisor_program_and_is_counted() {
    let _guard = shared().await;
    // 64 MiB of this process's memory, written before the sandbox starts and again after it:
    // a process forked from this one in between would keep a private copy of all of it.
    let mut ballast = vec![1_u8; 64 << 20];
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let warm = WarmSandbox::start(Sandbox::new(dir.path()), SUPERVISOR)
        .await
        .unwrap();
    // A call, so that a spare waits for the next one.
    let out = warm
        .run(&ProcessSpec::shell("true", Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0), "{out:?}");
    ballast.fill(2);
    std::hint::black_box(&ballast);

    let supervisor = warm.supervisor_pid().unwrap();
    let footprint = warm_sandbox_footprint(supervisor).unwrap();
    // The supervisor, the process it was started from, and the spare.
    let parent = parent_of(supervisor);
    assert!(
        footprint.pids.contains(&supervisor) && footprint.pids.contains(&parent),
        "{footprint:?} lacks the supervisor {supervisor} or its parent {parent}"
    );
    assert!(footprint.pids.len() >= 3, "no spare counted: {footprint:?}");
    let program = std::fs::canonicalize(SUPERVISOR).unwrap();
    for pid in &footprint.pids {
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert_eq!(exe, program, "process {pid} of the warm sandbox");
    }
    assert!(
        footprint.pss_bytes < 16 << 20,
        "the warm sandbox keeps {} KiB",
        footprint.pss_bytes >> 10
    );
}

#[tokio::test]
async fn a_supervisor_pid_that_is_not_one_is_refused() {
    let _guard = shared().await;
    for pid in [std::process::id(), 1, u32::MAX] {
        let error = warm_sandbox_footprint(pid).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("not a warm sandbox's supervisor"),
            "{pid}: {error}"
        );
    }
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "runs the supervisor program by hand"
)]
fn the_parents_argument_given_by_hand_is_refused() {
    let out = std::process::Command::new(SUPERVISOR)
        .arg(PARENT_ARG)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("for hookbox's own use"),
        "{out:?}"
    );
}
