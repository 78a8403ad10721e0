//! The direct child dies with the thread that spawned it (`PR_SET_PDEATHSIG`), even when the
//! `run` future is neither polled nor dropped any more.

use std::time::Duration;

use hookbox_exec::{ExecError, ProcessOutput, ProcessSpec, run};

use super::support::{assert_dead, assert_exited, read_pids, shared, temp_file};

/// A `run` future that has not finished.
type Pending =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<ProcessOutput, ExecError>> + Send>>;

/// Starts `sleep`s under `run` on a thread with its own runtime, which then ends, handing the
/// still-pending future back. Returns it with the pids of (grandchild, child).
fn start_on_a_thread_that_ends(
    die_with_parent: bool,
    pidfile: std::path::PathBuf,
) -> (Pending, Vec<i32>) {
    let command = format!(
        "sleep 60 & echo $! > {0}; echo $$ >> {0}; exec sleep 60",
        pidfile.display()
    );
    let spec = ProcessSpec {
        die_with_parent,
        ..ProcessSpec::shell(&command, Duration::from_secs(60))
    };
    let path = pidfile;

    // A thread with its own runtime starts the run, then ends, handing the future back alive.
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut running: Pending = Box::pin(async move { run(&spec).await });
        let pids = runtime.block_on(async {
            tokio::select! {
                out = &mut running => panic!("finished early: {out:?}"),
                pids = read_pids(&path, 2) => pids,
            }
        });
        (running, pids)
    })
    .join()
    .unwrap()
}

#[tokio::test]
async fn the_child_dies_with_the_thread_that_spawned_it() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let (running, pids) = start_on_a_thread_that_ends(true, pidfile);
    let (grandchild, child) = (pids[0], pids[1]);

    // The kernel killed the child; nobody has reaped it yet.
    assert_exited(child).await;
    // The grandchild has no death signal: the group kill on drop gets it, and the child is reaped.
    drop(running);
    assert_dead(grandchild).await;
    assert_dead(child).await;
}

#[tokio::test]
async fn without_die_with_parent_the_child_outlives_that_thread_until_dropped() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let (running, pids) = start_on_a_thread_that_ends(false, pidfile);
    let (grandchild, child) = (pids[0], pids[1]);

    tokio::time::sleep(Duration::from_millis(300)).await;
    let state = std::fs::read_to_string(format!("/proc/{child}/stat")).expect("child exists");
    let state = state
        .rsplit_once(')')
        .map(|(_, rest)| rest.trim_start().chars().next());
    assert!(
        matches!(state, Some(Some('S' | 'R'))),
        "child state {state:?}"
    );
    // The group kill on drop still gets everything.
    drop(running);
    assert_dead(grandchild).await;
    assert_dead(child).await;
}
