//! Dropping the `run` future kills the group and the child is still reaped.

use std::time::Duration;

use hookbox_exec::{ProcessSpec, run};

use super::support::{assert_dead, read_pids, shared, temp_file};

#[tokio::test]
async fn dropping_the_future_kills_and_reaps() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let command = format!(
        "sleep 60 & echo $! > {0}; echo $$ >> {0}; exec sleep 60",
        pidfile.display()
    );
    let spec = ProcessSpec::shell(&command, Duration::from_secs(60));
    let mut running = Box::pin(run(&spec));
    let pids = tokio::select! {
        out = &mut running => panic!("finished early: {out:?}"),
        pids = read_pids(&pidfile, 2) => pids,
    };
    // `timeout` owns the future and drops it when the time is up.
    let cancelled = tokio::time::timeout(Duration::from_millis(200), running).await;
    assert!(
        cancelled.is_err(),
        "run should still have been running: {cancelled:?}"
    );
    // The direct child (pids[1]) must be reaped by this process, the grandchild killed.
    for pid in pids {
        assert_dead(pid).await;
    }
}
