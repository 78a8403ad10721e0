use std::time::{Duration, Instant};

use hookbox_hooks::{Decision, Failure};
use serde_json::json;

use super::support::{bash_call, command, dispatcher, pre, pre_rule};

/// Processes whose command line contains `marker` (a unique sleep length, say).
fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to two seconds for no process with `marker` to remain (reaping is asynchronous).
fn assert_no_survivors(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    while !processes_with(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        processes_with(marker),
        Vec::<u32>::new(),
        "processes with {marker} survived"
    );
}

/// Children of this process (any state, zombies included).
fn child_count() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter(|entry| {
            std::fs::read_to_string(entry.path().join("stat")).is_ok_and(|stat| {
                // Fields after the parenthesised command: state, ppid, …
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1).map(|ppid| ppid == me))
                    .unwrap_or(false)
            })
        })
        .count()
}

fn fd_count() -> usize {
    std::fs::read_dir("/proc/self/fd").expect("fd dir").count()
}

#[tokio::test]
async fn a_200_mb_flood_is_capped_and_returns() {
    let hooks = dispatcher(
        &[pre_rule(
            ".*",
            json!([command(
                "head -c 209715200 /dev/zero; echo '{\"decision\":\"deny\"}'",
                10
            )]),
        )],
        None,
    );
    let started = Instant::now();
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(11),
        "took {:?}",
        started.elapsed()
    );
    // A cut answer denies (issue 10).
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.trace[0].failure, Some(Failure::OutputTruncated));
}

#[tokio::test]
async fn a_hook_sleeping_past_its_timeout_is_killed() {
    let hooks = dispatcher(&[pre_rule(".*", json!([command("sleep 4242", 1)]))], None);
    let started = Instant::now();
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome.trace[0].failure,
        Some(Failure::Timeout { after_ms: 1000 })
    );
    assert_no_survivors("sleep 4242");
}

#[tokio::test]
async fn a_grandchild_holding_stdout_does_not_stall_dispatch() {
    // The shell prints its decision and exits; the background sleep keeps stdout open.
    let script = r#"sleep 4343 & echo '{"decision":"deny","reason":"gc"}'"#;
    let hooks = dispatcher(&[pre_rule(".*", json!([command(script, 5)]))], None);
    let started = Instant::now();
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.reason.as_deref(), Some("gc"));
    assert_no_survivors("sleep 4343");
}

#[tokio::test]
async fn a_grandchild_outliving_a_timeout_is_killed() {
    let hooks = dispatcher(
        &[pre_rule(
            ".*",
            json!([command("sleep 4444 & sleep 4445", 1)]),
        )],
        None,
    );
    let started = Instant::now();
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome.trace[0].failure,
        Some(Failure::Timeout { after_ms: 1000 })
    );
    assert_no_survivors("sleep 444");
}

/// Re-runs the named test alone in a fresh copy of this test binary, so that descriptor and
/// child counts are not disturbed by tests running in parallel. Returns false in that copy.
#[expect(
    clippy::disallowed_methods,
    reason = "the test re-executes its own binary"
)]
fn isolate(test: &str) -> bool {
    const CHILD: &str = "HOOKBOX_ISOLATED_TEST";
    if std::env::var_os(CHILD).is_some() {
        return false;
    }
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .expect("re-run the test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "isolated run failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    true
}

#[test]
fn a_thousand_misbehaving_dispatches_leak_nothing() {
    if isolate("suite::robustness::a_thousand_misbehaving_dispatches_leak_nothing") {
        return;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(thousand_dispatches());
}

async fn thousand_dispatches() {
    // SDK dialect: handlers run concurrently; fractional timeouts keep this fast.
    let misbehaving = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "head -c 3000000 /dev/zero"},
        {"type": "command", "command": "sleep 4646 & echo '{}'"},
        {"type": "command", "command": "echo garbage; exit 1"},
        {"type": "command", "command": "cat > /dev/null; echo '{\"decision\":\"block\"}'"}
    ]}]}});
    let hanging = json!({"hooks": {"PreToolUse": [{"hooks": [
        {"type": "command", "command": "sleep 4647", "timeout": 0.05},
        {"type": "http", "url": "http://127.0.0.1:9/unreachable", "timeout": 1}
    ]}]}});
    let misbehaving = dispatcher(&[misbehaving], None);
    let hanging = dispatcher(&[hanging], None);
    let input = bash_call();
    // Warm up: lazily created runtime threads, pools and caches are not leaks.
    misbehaving.dispatch(&input).await;
    hanging.dispatch(&input).await;
    let (fds, children) = (fd_count(), child_count());

    for round in 0..1000 {
        let hooks = if round % 20 == 0 {
            &hanging
        } else {
            &misbehaving
        };
        let outcome = hooks.dispatch(&input).await;
        if round % 20 != 0 {
            assert_eq!(outcome.decision, Decision::Deny, "round {round}");
        }
    }

    assert_no_survivors("sleep 464");
    assert_eq!(fd_count(), fds, "file descriptors leaked");
    let deadline = Instant::now() + Duration::from_secs(2);
    while child_count() > children && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(child_count(), children, "child processes leaked");
}

#[tokio::test]
async fn a_setsid_grandchild_holding_stdout_neither_stalls_dispatch_nor_survives_it() {
    // The grandchild leaves the hook's process group (and session) and keeps stdout open.
    let script = r#"setsid sleep 4848 & echo '{"decision":"deny","reason":"gc"}'"#;
    let hooks = dispatcher(&[pre_rule(".*", json!([command(script, 300)]))], None);
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.reason.as_deref(), Some("gc"));
    // Killed and reaped before the hook's run returned (had it held stdout open, the run
    // would have waited for the 300 s timeout and found it still running).
    assert_eq!(processes_with("sleep 4848"), Vec::<u32>::new());
}

/// Set in the process [`a_killed_hookbox_leaves_no_hook_process`] starts and kills.
const KILLED_PARENT: &str = "HOOKBOX_HOOKS_KILLED_PARENT";

/// Not a test on its own: dispatches a host hook that leaves a `setsid` grandchild and then
/// sleeps, in a process of its own, which [`a_killed_hookbox_leaves_no_hook_process`] kills.
#[tokio::test]
#[ignore = "started by a_killed_hookbox_leaves_no_hook_process"]
async fn dispatches_until_killed() {
    if std::env::var_os(KILLED_PARENT).is_none() {
        return;
    }
    let script = "setsid sleep 4949 & sleep 4950";
    let hooks = dispatcher(&[pre_rule(".*", json!([command(script, 300)]))], None);
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    panic!("the hook ended before this process was killed: {outcome:?}");
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "runs this test binary as the hookbox process to kill"
)]
fn a_killed_hookbox_leaves_no_hook_process() {
    let mut parent = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "suite::robustness::dispatches_until_killed",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env(KILLED_PARENT, "1")
        .spawn()
        .expect("start the hookbox stand-in");
    let deadline = Instant::now() + Duration::from_secs(30);
    while processes_with("sleep 49").len() < 2 {
        assert!(Instant::now() < deadline, "the hook never started");
        std::thread::sleep(Duration::from_millis(10));
    }
    parent.kill().expect("SIGKILL the hookbox stand-in");
    parent.wait().expect("reap it");
    assert_no_survivors("sleep 49");
}
