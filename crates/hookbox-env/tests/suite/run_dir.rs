use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hookbox_env::{Environment, EnvironmentSpec, Environments, SandboxEgress, WarmSandboxes};
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

#[tokio::test]
async fn an_environments_warm_calls_share_one_egress_until_its_policy_changes_or_it_stops() {
    let home = Home::new();
    let env = home
        .create(json!({
            "sources": [],
            "network": {"allowlist": [{"domain": "example.com"}]},
        }))
        .await;
    let proxy = EgressProxy::new(ProxyOptions::default()).unwrap();
    let warm = WarmSandboxes::new("/nonexistent/supervisor", Duration::from_secs(300));
    let egress = |env: &Environment| {
        SandboxEgress::for_warm(env, proxy.clone(), None, &warm)
            .unwrap()
            .unwrap()
    };
    // Two interactions' tools of one environment: one egress, one CA bundle.
    let first = egress(&env);
    let second = egress(&env);
    assert!(Arc::ptr_eq(&first, &second));
    let bundle = first.bundle_path().unwrap().to_path_buf();
    // Its network changed: a new egress replaces it (the sandbox is rebuilt with it).
    let spec = json!({"environment_id": env.id(), "sources": [],
                      "network": {"allowlist": [{"domain": "example.org"}]}});
    let updated = home
        .envs
        .apply(&EnvironmentSpec::from_json(&spec).unwrap())
        .await
        .unwrap();
    let replaced = egress(&updated);
    assert!(!Arc::ptr_eq(&first, &replaced));
    assert!(Arc::ptr_eq(&replaced, &egress(&updated)));
    // Stopped (deleted, or the server stops): let go, its bundle removed with the last user.
    warm.stop(env.id());
    let after_stop = egress(&updated);
    assert!(!Arc::ptr_eq(&replaced, &after_stop));
    drop((first, second));
    assert!(!bundle.exists());
    // No network: no egress.
    let isolated = home
        .create(json!({"sources": [], "network": "disabled"}))
        .await;
    assert!(
        SandboxEgress::for_warm(&isolated, proxy.clone(), None, &warm)
            .unwrap()
            .is_none()
    );
}
