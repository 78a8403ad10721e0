//! A warm sandbox lives as long as its `WarmSandbox`, not as long as the thread that started
//! it: a runtime ends its threads when it likes (tokio ends a blocking thread idle for its
//! keep-alive), and calls longer than that must still complete in the same sandbox.

use std::sync::Arc;
use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, Sandbox, WarmSandbox};

use super::support::{SUPERVISOR, assert_dead, shared};
use super::warm::none_left;

/// A sandbox root with a `workspace`.
fn root() -> (tempfile::TempDir, Sandbox) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let sandbox = Sandbox::new(dir.path());
    (dir, sandbox)
}

/// Runs `sleep SECONDS; echo done` in `warm`: it must complete.
async fn sleep_and_finish(warm: &WarmSandbox, seconds: &str) {
    let out = warm
        .run(&ProcessSpec::shell(
            &format!("touch /workspace/running; sleep {seconds}; echo done"),
            Duration::from_secs(30),
        ))
        .await
        .unwrap_or_else(|error| panic!("the call failed: {error}"));
    assert_eq!(out.exit, ExitKind::Exited(0), "{out:?}");
    assert_eq!(out.stdout.to_text(), "done\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sandbox_outlives_the_thread_that_started_it_during_a_call() {
    let _guard = shared().await;
    let (dir, sandbox) = root();
    let runtime = tokio::runtime::Handle::current();
    let (started, warm) = std::sync::mpsc::channel();
    let (end, told) = std::sync::mpsc::channel::<()>();
    // A thread of its own starts the sandbox, then ends when told.
    let starter = std::thread::spawn(move || {
        let warm = runtime.block_on(WarmSandbox::start(sandbox, SUPERVISOR));
        started.send(warm.unwrap()).unwrap();
        let _told = told.recv();
    });
    let warm = warm.recv().unwrap();
    let first = warm.supervisor_pid().unwrap();
    let running = dir.path().join("workspace/running");
    let ((), ()) = tokio::join!(sleep_and_finish(&warm, "3"), async {
        while !running.exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        drop(end);
        starter.join().unwrap();
    });
    // The same sandbox, still warm.
    assert_eq!(warm.supervisor_pid(), Some(first));
}

/// A runtime whose blocking threads end after `keep_alive` idle, as tokio's do after 10 s.
fn runtime_with_keep_alive(keep_alive: Duration) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_keep_alive(keep_alive)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn calls_longer_than_the_runtimes_thread_keep_alive_complete_alone_and_in_a_burst() {
    let runtime = runtime_with_keep_alive(Duration::from_millis(300));
    let handle = runtime.handle().clone();
    runtime.block_on(async {
        let _guard = shared().await;
        let (_dir, sandbox) = root();
        // Started on a blocking thread, which ends 300 ms after it is done.
        let warm = tokio::task::spawn_blocking(move || {
            handle.block_on(WarmSandbox::start(sandbox, SUPERVISOR))
        })
        .await
        .unwrap()
        .unwrap();
        let warm = Arc::new(warm);
        let first = warm.supervisor_pid().unwrap();
        sleep_and_finish(&warm, "2").await;
        let mut burst = tokio::task::JoinSet::new();
        for _ in 0..6 {
            let warm = Arc::clone(&warm);
            burst.spawn(async move { sleep_and_finish(&warm, "2").await });
        }
        while let Some(call) = burst.join_next().await {
            call.unwrap();
        }
        assert_eq!(warm.supervisor_pid(), Some(first));
    });
}

/// Where [`keeps_a_warm_sandbox_until_killed`] writes, when it is run by
/// [`a_killed_parent_leaves_no_process_of_its_warm_sandbox`].
const WARM_DIR: &str = "HOOKBOX_EXEC_TEST_WARM_DIR";

/// Not a test on its own: run in a process of its own by
/// [`a_killed_parent_leaves_no_process_of_its_warm_sandbox`], which then kills it with SIGKILL.
/// Starts a warm sandbox over the directory named by `HOOKBOX_EXEC_TEST_WARM_DIR` from a
/// blocking thread, writes its supervisor's pid there, and runs a long call in it.
#[test]
#[ignore = "started by a_killed_parent_leaves_no_process_of_its_warm_sandbox"]
fn keeps_a_warm_sandbox_until_killed() {
    let Some(dir) = std::env::var_os(WARM_DIR).map(std::path::PathBuf::from) else {
        return;
    };
    let runtime = runtime_with_keep_alive(Duration::from_millis(300));
    let handle = runtime.handle().clone();
    runtime.block_on(async {
        let sandbox = Sandbox::new(&dir);
        let warm = tokio::task::spawn_blocking(move || {
            handle.block_on(WarmSandbox::start(sandbox, SUPERVISOR))
        })
        .await
        .unwrap()
        .unwrap();
        let pid = warm.supervisor_pid().unwrap();
        std::fs::write(dir.join("supervisor.tmp"), pid.to_string()).unwrap();
        std::fs::rename(dir.join("supervisor.tmp"), dir.join("supervisor")).unwrap();
        let out = warm
            .run(&ProcessSpec::shell(
                "touch /workspace/running; sleep 7654398",
                Duration::from_secs(100),
            ))
            .await;
        panic!("the call ended before this process was killed: {out:?}");
    });
}

#[tokio::test]
#[expect(
    clippy::disallowed_methods,
    reason = "runs this test binary as the process to kill"
)]
async fn a_killed_parent_leaves_no_process_of_its_warm_sandbox() {
    let _guard = shared().await;
    let (dir, _sandbox) = root();
    let mut parent = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::warm_lifetime::keeps_a_warm_sandbox_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(WARM_DIR, dir.path())
        .spawn()
        .unwrap();
    let running = dir.path().join("workspace/running");
    let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
    while !running.exists() {
        assert!(
            tokio::time::Instant::now() < give_up,
            "the warm call never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let supervisor: i32 = std::fs::read_to_string(dir.path().join("supervisor"))
        .unwrap()
        .parse()
        .unwrap();
    // Past the keep-alive of the thread that started the sandbox: the sandbox still runs.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        std::path::Path::new(&format!("/proc/{supervisor}")).exists(),
        "the supervisor died with the thread that started it"
    );
    parent.kill().unwrap();
    parent.wait().unwrap();
    assert_dead(supervisor).await;
    none_left("sleep 7654398").await;
}
