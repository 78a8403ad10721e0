use std::path::Path;

use hookbox_env::{Environments, SandboxEgress};
use hookbox_net::{EgressProxy, ProxyOptions};
use serde_json::json;

use super::support::Home;

/// The start time of process `pid` (`/proc/<pid>/stat`, field 22).
fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 1..];
    after_comm
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// This process's directory under `home`.
fn own_dir(home: &Path) -> std::path::PathBuf {
    let pid = std::process::id();
    home.join(format!("run/{pid}-{}", start_time(pid)))
}

#[test]
fn opening_a_home_removes_what_dead_processes_left_and_nothing_else() {
    let home = tempfile::tempdir().unwrap();
    let run = home.path().join("run");
    let me = std::process::id();
    // A process that is gone (no pid is that large), one whose pid was reused (this one,
    // with another start time), a live one (init), and a name hookbox did not make.
    let dead = run.join("999999999-5");
    let reused = run.join(format!("{me}-1"));
    let live = run.join(format!("1-{}", start_time(1)));
    let other = run.join("notes");
    for dir in [&dead, &reused, &live, &other] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("hookbox-ca-left.crt"), "bundle").unwrap();
    }

    Environments::open(home.path()).unwrap();

    assert!(!dead.exists(), "the dead process's files are still there");
    assert!(!reused.exists(), "the reused pid's files are still there");
    assert!(live.join("hookbox-ca-left.crt").exists());
    assert!(other.join("hookbox-ca-left.crt").exists());
    assert!(own_dir(home.path()).is_dir());
    // Opening again keeps this process's directory (and what is in it).
    std::fs::write(own_dir(home.path()).join("in-use"), "").unwrap();
    Environments::open(home.path()).unwrap();
    assert!(own_dir(home.path()).join("in-use").exists());
}

#[tokio::test]
async fn sandbox_ca_bundles_are_written_under_the_home_and_removed_with_their_egress() {
    let home = Home::new();
    let env = home
        .create(json!({
            "sources": [],
            "network": {"allowlist": [{"domain": "example.com"}]},
        }))
        .await;
    let proxy = EgressProxy::new(ProxyOptions::default()).unwrap();
    let egress = SandboxEgress::new(&env, proxy, None).unwrap().unwrap();
    let bundle = egress.bundle_path().unwrap().to_path_buf();
    assert_eq!(bundle.parent(), Some(own_dir(home.dir.path()).as_path()));
    assert!(
        bundle
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with("hookbox-ca-")),
        "{}",
        bundle.display()
    );
    assert!(bundle.is_file());
    drop(egress);
    assert!(!bundle.exists());
}
