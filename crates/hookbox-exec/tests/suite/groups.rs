//! Grandchildren: killed with the group when the child exits or times out.

use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, run};
use tokio::time::Instant;

use super::support::{assert_dead, read_pids, shared, temp_file};

#[tokio::test]
async fn a_background_grandchild_holding_stdout_does_not_stall_the_run() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let timeout = Duration::from_secs(30);
    let command = format!("sleep 60 & echo $! > {}; echo started", pidfile.display());
    let started = Instant::now();
    let out = run(&ProcessSpec::shell(&command, timeout)).await.unwrap();
    // Not waiting for the deadline: the group kill closed the grandchild's copy of stdout.
    assert!(
        started.elapsed() < timeout / 2,
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.bytes, b"started\n");
    for pid in read_pids(&pidfile, 1).await {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn the_exit_status_is_the_childs_own_after_the_group_kill() {
    let _guard = shared().await;
    let out = run(&ProcessSpec::shell(
        "sleep 60 & exit 7",
        Duration::from_secs(30),
    ))
    .await
    .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(7));
}

#[tokio::test]
async fn a_timeout_kills_child_and_grandchild() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let timeout = Duration::from_secs(1);
    let command = format!(
        "echo $$ > {0}; sleep 60 & echo $! >> {0}; sleep 60",
        pidfile.display()
    );
    let started = Instant::now();
    let out = run(&ProcessSpec::shell(&command, timeout)).await.unwrap();
    assert!(
        started.elapsed() < timeout + Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(out.exit, ExitKind::TimedOut);
    for pid in read_pids(&pidfile, 2).await {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn deep_descendants_are_killed_too() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    // The child starts a grandchild that starts a great-grandchild, waits for its pid to be
    // written, and exits.
    let command = format!(
        r#"sh -c 'sh -c "sleep 60 & echo \$! > {0}" & wait' & until [ -s {0} ]; do sleep 0.01; done"#,
        pidfile.display()
    );
    let out = run(&ProcessSpec::shell(&command, Duration::from_secs(30)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0));
    for pid in read_pids(&pidfile, 1).await {
        assert_dead(pid).await;
    }
}

/// Without the keeper (`die_with_parent` off), a process that leaves the group (here with
/// `setsid`) escapes the group kill; it can hold the pipes open only until the deadline.
#[tokio::test]
async fn an_escaped_grandchild_holds_the_pipes_only_until_the_deadline() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let timeout = Duration::from_secs(1);
    let command = format!("setsid sleep 60 & echo $! > {}; echo hi", pidfile.display());
    let spec = ProcessSpec {
        die_with_parent: false,
        ..ProcessSpec::shell(&command, timeout)
    };
    let started = Instant::now();
    let out = run(&spec).await.unwrap();
    let elapsed = started.elapsed();
    let pids = read_pids(&pidfile, 1).await;
    for &pid in &pids {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    assert!(
        elapsed < timeout + Duration::from_secs(1),
        "took {elapsed:?}"
    );
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.bytes, b"hi\n");
    for pid in pids {
        assert_dead(pid).await;
    }
}
