//! The direct child dies with the thread that spawned it (`PR_SET_PDEATHSIG`), even when the
//! `run` future is neither polled nor dropped any more.

use std::time::Duration;

use hookbox_exec::{ProcessSpec, run};

use super::support::{assert_dead, assert_exited, read_pids, shared, temp_file};

#[tokio::test]
async fn the_child_dies_with_the_thread_that_spawned_it() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let command = format!(
        "sleep 60 & echo $! > {0}; echo $$ >> {0}; exec sleep 60",
        pidfile.display()
    );
    let spec = ProcessSpec::shell(&command, Duration::from_secs(60));
    let path = pidfile.clone();

    // A thread with its own runtime starts the run, then ends, handing the future back alive.
    let (running, pids) = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut running = Box::pin(async move { run(&spec).await });
        let pids = runtime.block_on(async {
            tokio::select! {
                out = &mut running => panic!("finished early: {out:?}"),
                pids = read_pids(&path, 2) => pids,
            }
        });
        (running, pids)
    })
    .join()
    .unwrap();
    let (grandchild, child) = (pids[0], pids[1]);

    // The kernel killed the child; nobody has reaped it yet.
    assert_exited(child).await;
    // The grandchild has no death signal: the group kill on drop gets it, and the child is reaped.
    drop(running);
    assert_dead(grandchild).await;
    assert_dead(child).await;
}
