//! Interactive children ([`spawn_interactive`]): talked to over their pipes in the sandbox,
//! with stderr captured and capped, and killed with everything they started when dropped.

use std::time::Duration;

use hookbox_exec::{ProcessSpec, Sandbox, spawn_interactive};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::{Instant, sleep};

use super::support::{assert_dead, children, exclusive, read_pids};

/// `command` under bash in a sandbox over a fresh directory (returned, to keep it).
fn sandboxed(command: &str) -> (tempfile::TempDir, ProcessSpec) {
    let dir = tempfile::tempdir().unwrap();
    let spec = ProcessSpec {
        sandbox: Some(Sandbox::over_directory(dir.path()).unwrap()),
        cwd: Some(dir.path().to_path_buf()),
        // Not a deadline here: the child outlives it.
        timeout: Duration::from_millis(1),
        output_limit: 10,
        ..ProcessSpec::shell(command, Duration::from_millis(1))
    };
    (dir, spec)
}

/// A line-by-line conversation with a sandboxed child, past the spec's timeout; its stderr
/// is kept up to the limit.
#[tokio::test]
async fn a_sandboxed_child_answers_line_by_line_and_its_stderr_is_capped() {
    let _guard = exclusive().await;
    let (_dir, spec) = sandboxed(
        "echo 0123456789abcdef >&2; while read -r line; do echo \"$(hostname) $$ $line\"; done",
    );
    let mut child = spawn_interactive(&spec).await.unwrap();
    let mut stdin = child.take_stdin().unwrap();
    let mut stdout = BufReader::new(child.take_stdout().unwrap()).lines();
    for word in ["one", "two"] {
        sleep(Duration::from_millis(5)).await;
        stdin
            .write_all(format!("{word}\n").as_bytes())
            .await
            .unwrap();
        let line = stdout.next_line().await.unwrap().unwrap();
        // The sandbox's hostname, and the shell is pid 1 of its own pid namespace.
        assert_eq!(line, format!("sandbox 1 {word}"));
    }
    let stderr = child.stderr();
    assert_eq!(stderr.bytes, b"0123456789");
    assert_eq!(stderr.dropped, 7);
    // Closing stdin ends the loop, so the child exits; all it wrote to stderr is read.
    drop(stdin);
    child.exited().await;
    child.stderr_closed().await;
    // Again: returns at once.
    child.stderr_closed().await;
    assert_eq!(child.stderr().dropped, 7);
}

/// Dropping the handle kills the child and what it started in the background, reaps it, and
/// closes the run's pipes and sockets.
#[tokio::test]
async fn dropping_the_handle_kills_the_sandbox_and_leaks_nothing() {
    let _guard = exclusive().await;
    let kids = children();
    let before = pipes_and_sockets();
    let (dir, spec) = sandboxed("sleep 1000 & echo $! > pids; sleep 1000");
    let pids = dir.path().join("pids");
    let child = spawn_interactive(&spec).await.unwrap();
    read_pids(&pids, 1).await;
    // Both sleeps, once each has executed `sleep` (the foreground one may not have yet when
    // the pid of the background one is written).
    let give_up = Instant::now() + Duration::from_secs(10);
    let host_pids = loop {
        let sleepers = sandbox_sleepers();
        if sleepers.len() >= 2 {
            break sleepers;
        }
        assert!(Instant::now() < give_up, "{sleepers:?}");
        sleep(Duration::from_millis(10)).await;
    };
    // Pipe and socket names hold unique inode numbers: these are the run's.
    let opened: Vec<String> = pipes_and_sockets()
        .into_iter()
        .filter(|fd| !before.contains(fd))
        .collect();
    assert!(opened.len() >= 3, "stdin, stdout and stderr: {opened:?}");
    drop(child);
    for pid in host_pids {
        assert_dead(pid).await;
    }
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<String> = pipes_and_sockets()
            .into_iter()
            .filter(|fd| opened.contains(fd))
            .collect();
        if left.is_empty() && children() <= kids {
            break;
        }
        assert!(
            Instant::now() < give_up,
            "still open: {left:?}; children {} (were {kids})",
            children()
        );
        sleep(Duration::from_millis(10)).await;
    }
}

/// This process's descriptors that are pipes or sockets, as `FD -> pipe:[INODE]`, but for
/// Unix stream sockets: a run opens none, while the tokio runtime of a test starting
/// meanwhile opens one (its signal driver's) and keeps it until this test lets it run.
fn pipes_and_sockets() -> Vec<String> {
    let unix = std::fs::read_to_string("/proc/self/net/unix").unwrap_or_default();
    let streams: Vec<String> = unix
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let inode = fields.get(6)?;
            (fields.get(4) == Some(&"0001")).then(|| format!("socket:[{inode}]"))
        })
        .collect();
    std::fs::read_dir("/proc/self/fd")
        .into_iter()
        .flatten()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let target = std::fs::read_link(entry.path()).ok()?;
            let target = target.to_str()?;
            let fd = entry.file_name();
            ((target.starts_with("pipe:") || target.starts_with("socket:"))
                && !streams.iter().any(|stream| stream == target))
            .then(|| format!("{} -> {target}", fd.to_string_lossy()))
        })
        .collect()
}

/// Host pids of `sleep 1000` processes (only this test's, under the exclusive lock).
fn sandbox_sleepers() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline == b"sleep\x001000\x00")
        })
        .collect()
}

/// On the host (a session run `--unsandboxed`), the keeper kills what the child started, even
/// what left its process group, when the handle is dropped.
#[tokio::test]
async fn dropping_a_host_child_kills_what_it_started() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let spec = ProcessSpec {
        cwd: Some(dir.path().to_path_buf()),
        ..ProcessSpec::shell(
            "setsid sleep 1000 & echo $! > pids; sleep 1000 & echo $! >> pids; wait",
            Duration::from_millis(1),
        )
    };
    let child = spawn_interactive(&spec).await.unwrap();
    let started = read_pids(&pids, 2).await;
    drop(child);
    for pid in started {
        assert_dead(pid).await;
    }
}
