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

/// Where [`runs_until_killed`] writes, when it is run by
/// [`a_killed_parent_leaves_no_process_of_its_runs`].
const RUNS_DIR: &str = "HOOKBOX_EXEC_TEST_RUNS_DIR";

/// Not a test on its own: run in a process of its own by
/// [`a_killed_parent_leaves_no_process_of_its_runs`], which then kills it with SIGKILL. Starts a
/// host run whose command leaves a `setsid` grandchild, and a sandboxed run (without
/// `die_with_parent`) with a background process, in the directory named by
/// `HOOKBOX_EXEC_TEST_RUNS_DIR`, then waits.
#[tokio::test]
#[ignore = "started by a_killed_parent_leaves_no_process_of_its_runs"]
async fn runs_until_killed() {
    let Some(dir) = std::env::var_os(RUNS_DIR).map(std::path::PathBuf::from) else {
        return;
    };
    let host = ProcessSpec::shell(
        &format!(
            "setsid sh -c 'echo $$ > {0}/host.tmp; mv {0}/host.tmp {0}/host; exec sleep 100' & sleep 100",
            dir.display()
        ),
        Duration::from_secs(100),
    );
    // A sandbox dies with its caller whatever `die_with_parent` says (hooks used to turn it off).
    let sandboxed = ProcessSpec {
        die_with_parent: false,
        sandbox: Some(hookbox_exec::Sandbox::over_directory(&dir).unwrap()),
        ..ProcessSpec::shell(
            &format!(
                "sleep 100 & touch {0}/sandbox.tmp; mv {0}/sandbox.tmp {0}/sandbox; sleep 100",
                dir.display()
            ),
            Duration::from_secs(100),
        )
    };
    let (host, sandboxed) = tokio::join!(run(&host), run(&sandboxed));
    panic!("the runs ended before this process was killed: {host:?} {sandboxed:?}");
}

#[tokio::test]
#[expect(
    clippy::disallowed_methods,
    reason = "runs this test binary as the process to kill"
)]
async fn a_killed_parent_leaves_no_process_of_its_runs() {
    let _guard = shared().await;
    hookbox_exec::check_isolation().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut parent = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "suite::parent_death::runs_until_killed",
            "--ignored",
            "--nocapture",
        ])
        .env(RUNS_DIR, dir.path())
        .spawn()
        .unwrap();
    let parent_pid = parent.id() as i32;
    for name in ["host", "sandbox"] {
        let path = dir.path().join(name);
        let give_up = tokio::time::Instant::now() + Duration::from_secs(30);
        while !path.exists() {
            assert!(
                tokio::time::Instant::now() < give_up,
                "the {name} run never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Everything the runs started: the keeper, the shell and its setsid grandchild; the
    // sandbox's intermediate, its init and what that started.
    let runs = descendants(parent_pid);
    assert!(runs.len() >= 7, "too few processes found: {runs:?}");

    rustix::process::kill_process(
        rustix::process::Pid::from_raw(parent_pid).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
    parent.wait().unwrap();
    for pid in runs {
        assert_dead(pid).await;
    }
}

/// Every process below `ancestor` (found through the parent pids in `/proc`).
fn descendants(ancestor: i32) -> Vec<i32> {
    let parents: Vec<(i32, i32)> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let parent = stat
                .get(stat.rfind(')')? + 1..)?
                .split_whitespace()
                .nth(1)?;
            Some((pid, parent.parse().ok()?))
        })
        .collect();
    let mut found = vec![ancestor];
    let mut next = 0;
    while let Some(&parent) = found.get(next) {
        found.extend(
            parents
                .iter()
                .filter(|&&(_, of)| of == parent)
                .map(|&(pid, _)| pid),
        );
        next += 1;
    }
    found.split_off(1)
}
