//! Helpers shared by the tests: process inspection through `/proc`, and test isolation.

use std::path::Path;
use std::time::Duration;

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};
use tokio::time::{Instant, sleep};

/// The warm sandbox supervisor built with this crate.
pub(crate) const SUPERVISOR: &str = env!("CARGO_BIN_EXE_hookbox-exec-supervisor");

/// Tests that spawn processes share this lock; the leak test, which counts this process's
/// descriptors and children, holds it exclusively.
static PROCESSES: RwLock<()> = RwLock::const_new(());

/// Taken by every test that spawns processes.
pub(crate) async fn shared() -> RwLockReadGuard<'static, ()> {
    PROCESSES.read().await
}

/// Taken by tests that need no other test's processes or pipes around.
pub(crate) async fn exclusive() -> RwLockWriteGuard<'static, ()> {
    PROCESSES.write().await
}

/// State letter and parent pid of `pid`, or `None` when it no longer exists.
fn state_and_parent(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid ...": comm may contain spaces and parentheses.
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// Waits (up to 10 s) until `pid` is dead: gone, or a zombie of some other process (orphaned
/// grandchildren are reparented to an init that may be slow to reap them). A zombie child of
/// this process means hookbox failed to reap it.
pub(crate) async fn assert_dead(pid: i32) {
    let me = std::process::id() as i32;
    wait_for(pid, |state| match state {
        None => true,
        Some((state, parent)) => matches!(state, 'Z' | 'X') && parent != me,
    })
    .await;
}

/// Waits (up to 10 s) until `pid` has stopped running: gone, or a zombie of any parent.
pub(crate) async fn assert_exited(pid: i32) {
    wait_for(pid, |state| {
        state.is_none_or(|(state, _)| matches!(state, 'Z' | 'X'))
    })
    .await;
}

async fn wait_for(pid: i32, done: impl Fn(Option<(char, i32)>) -> bool) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let state = state_and_parent(pid);
        if done(state) {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "process {pid} still there: {state:?}"
        );
        sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (up to 10 s) until `path` holds `count` pids, one a line, and returns them.
pub(crate) async fn read_pids(path: &Path, count: usize) -> Vec<i32> {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let pids: Vec<i32> = text
            .lines()
            .filter_map(|line| line.trim().parse().ok())
            .collect();
        if pids.len() >= count && text.ends_with('\n') {
            return pids;
        }
        assert!(
            Instant::now() < give_up,
            "{} never got {count} pids: {text:?}",
            path.display()
        );
        sleep(Duration::from_millis(10)).await;
    }
}

/// Number of entries in `/proc/self/fd`.
pub(crate) fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, Iterator::count)
}

/// Number of live or zombie processes whose parent is this process.
pub(crate) fn children() -> usize {
    let me = std::process::id() as i32;
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| state_and_parent(pid).is_some_and(|(_, parent)| parent == me))
        .count()
}

/// A temporary file's path, inside a directory removed with the returned guard.
pub(crate) fn temp_file(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}
