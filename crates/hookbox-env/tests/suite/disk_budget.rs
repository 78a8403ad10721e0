//! The disk and inode budget: every environment lives on its own loop-mounted file system
//! (root only; elsewhere the budget cannot be enforced and these tests say so and stop).

use std::path::{Path, PathBuf};

use hookbox_env::{
    BuiltinTools, Environment, EnvironmentSpec, Environments, Isolation, ToolOutcome,
};
use serde_json::{Value, json};

use super::support::Home;

/// 16 MiB and 1000 inodes.
fn small_limits() -> Value {
    json!({"disk_bytes": 16 << 20, "disk_inodes": 1000})
}

/// A home whose environments (and their mounts and loop devices) are deleted when the test
/// ends, whether it passed or not.
struct BudgetHome(Home);

impl BudgetHome {
    /// `None` (after saying why) when this process cannot mount file systems.
    fn new() -> Option<Self> {
        if !hookbox_exec::disk::can_mount() {
            hookbox_test_support::skip(
                module_path!(),
                "disk budgets need root and /dev/loop-control",
            );
            return None;
        }
        Some(Self(Home::new()))
    }

    async fn create(&self, limits: Value) -> Environment {
        self.0
            .create(json!({
                "sources": [{"type": "inline", "target": "workspace/hello.txt", "content": "hi"}],
                "limits": limits,
            }))
            .await
    }
}

impl Drop for BudgetHome {
    fn drop(&mut self) {
        for env in self.0.envs.list().unwrap_or_default() {
            // Only when delete failed: after it, the mount point's name (the image's inode
            // number) may already belong to another test's new image.
            if self.0.envs.delete(env.id()).is_err() {
                let _ = hookbox_exec::disk::unmount(&mount_point(&env));
            }
        }
    }
}

/// The file system an environment's root lives on (its root's parent).
fn mount_point(env: &Environment) -> PathBuf {
    env.root().parent().unwrap().to_path_buf()
}

/// Calls a built-in tool as the agent does: its arguments resolved first.
async fn call(tools: &BuiltinTools, name: &str, args: Value) -> ToolOutcome {
    let resolved = tools.resolve(name, &args).expect("arguments resolve");
    tools.call_resolved(name, &resolved).await
}

async fn run(env: &Environment, code: &str) -> (i64, String, String) {
    let tools = BuiltinTools::new(env.clone(), Isolation::Sandboxed).unwrap();
    let outcome = call(
        &tools,
        "code_execution",
        json!({"code": code, "language": "bash"}),
    )
    .await;
    let result = outcome
        .result
        .unwrap_or_else(|| panic!("{:?}", outcome.error));
    (
        result["exit_code"].as_i64().unwrap(),
        result["stdout"].as_str().unwrap().to_owned(),
        result["stderr"].as_str().unwrap().to_owned(),
    )
}

/// Bytes the host file system really holds for `path` (its allocated blocks).
fn allocated(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// The image file of environment `env` in `home`.
fn image(home: &Home, env: &Environment) -> PathBuf {
    home.dir
        .path()
        .join("environments")
        .join(env.id())
        .join("disk.img")
}

#[tokio::test]
async fn code_execution_writing_past_the_byte_budget_gets_enospc_and_the_host_holds_no_more() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let env = home.create(small_limits()).await;
    let (code, _, stderr) = run(
        &env,
        "dd if=/dev/zero of=/workspace/big bs=1M count=64 status=none",
    )
    .await;
    assert_ne!(code, 0);
    assert!(stderr.contains("No space left on device"), "{stderr}");
    // The whole budget is reserved on the host from the start, and no more grows there (beyond
    // a few blocks of the host's own extent tree for the image file).
    let held = allocated(&image(&home.0, &env));
    assert!(
        (16 << 20..=(16 << 20) + (64 << 10)).contains(&held),
        "the host holds {held} bytes for a 16 MiB budget"
    );
    // The budget is the environment's, not the call's: the next call is refused too.
    let (code, _, stderr) = run(&env, "head -c 1048576 /dev/zero > /workspace/more").await;
    assert_ne!(code, 0, "{stderr}");
    // Freeing space makes room again.
    let (code, _, stderr) = run(&env, "rm /workspace/big && echo ok > /workspace/small").await;
    assert_eq!(code, 0, "{stderr}");
}

#[tokio::test]
async fn code_execution_creating_more_files_than_the_inode_budget_gets_enospc() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let env = home.create(small_limits()).await;
    let (code, stdout, stderr) = run(
        &env,
        "for i in $(seq 1 5000); do : > /workspace/f$i || { echo made $i; exit 1; }; done",
    )
    .await;
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let made: u64 = stdout.trim().trim_start_matches("made ").parse().unwrap();
    assert!(made <= 1100, "{made} files fit in a 1000-inode budget");
}

#[tokio::test]
async fn write_file_past_the_budget_fails_with_a_clear_error() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let env = home.create(small_limits()).await;
    let tools = BuiltinTools::new(env.clone(), Isolation::Sandboxed).unwrap();
    let content = "x".repeat(20 << 20);
    let outcome = call(
        &tools,
        "write_file",
        json!({"path": "/workspace/big.txt", "content": content}),
    )
    .await;
    let error = outcome.error.expect("the write must fail");
    assert!(error.contains("write_file"), "{error}");
    assert!(error.contains("disk budget"), "{error}");
    assert!(error.contains("/workspace/big.txt"), "{error}");
    // Nothing half-written is left behind.
    let listed = call(&tools, "list_files", json!({"path": "/workspace"})).await;
    assert!(!listed.result.unwrap().to_string().contains("big.txt"));
}

#[tokio::test]
async fn files_persist_across_calls_and_a_remount_by_a_new_store() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let env = home.create(small_limits()).await;
    let id = env.id().to_owned();
    let (code, _, stderr) = run(&env, "echo kept > /workspace/kept.txt").await;
    assert_eq!(code, 0, "{stderr}");
    let (_, stdout, _) = run(&env, "cat /workspace/kept.txt /workspace/hello.txt").await;
    assert_eq!(stdout, "kept\nhi");
    // As after a reboot: nothing is mounted, a new store mounts it again on first use. The
    // unmount is lazy and the loop device detaches asynchronously: wait until the old file
    // system is wholly gone (its device released), as it is after a reboot, so that it never
    // coexists with the new mount of the same image.
    let mount = mount_point(&env);
    let loop_file = loop_backing_file(&mount);
    drop(env);
    hookbox_exec::disk::unmount(&mount).unwrap();
    assert!(!hookbox_exec::disk::is_mounted(&mount).unwrap_or(false));
    wait_for_detach(&loop_file).await;
    let reopened = Environments::open(home.0.dir.path()).unwrap();
    let again = reopened.get(&id).unwrap();
    assert!(hookbox_exec::disk::is_mounted(&mount_point(&again)).unwrap());
    let (_, stdout, _) = run(&again, "cat /workspace/kept.txt").await;
    assert_eq!(stdout, "kept\n");
    // A second store on the same home uses the same mount rather than mounting twice.
    let other = Environments::open(home.0.dir.path()).unwrap();
    assert_eq!(other.get(&id).unwrap().root(), again.root());
    assert_eq!(mounts_of(&mount_point(&again)), 1);
}

/// How many mounts sit at `path` in this process's mount table.
fn mounts_of(path: &Path) -> usize {
    let table = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let wanted = path.to_str().unwrap();
    table
        .lines()
        .filter(|line| line.split(' ').nth(4) == Some(wanted))
        .count()
}

#[tokio::test]
async fn deleting_an_environment_leaves_no_mount_and_no_loop_device() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let env = home.create(small_limits()).await;
    let mount = mount_point(&env);
    let loop_file = loop_backing_file(&mount);
    assert!(std::fs::read_to_string(&loop_file).is_ok());
    home.0.envs.delete(env.id()).unwrap();
    assert_eq!(mounts_of(&mount), 0);
    assert!(!mount.exists());
    wait_for_detach(&loop_file).await;
    assert!(
        !home
            .0
            .dir
            .path()
            .join("environments")
            .join(env.id())
            .exists()
    );
}

/// Waits until the loop device whose `/sys/…/backing_file` is `loop_file` has detached itself
/// (autoclear is asynchronous, so up to 10 s): then nothing of its file system is left.
async fn wait_for_detach(loop_file: &Path) {
    let give_up = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(loop_file).is_ok() {
        assert!(
            tokio::time::Instant::now() < give_up,
            "the loop device stays attached"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `/sys/…/loop/backing_file` of the loop device mounted at `mount`.
fn loop_backing_file(mount: &Path) -> PathBuf {
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata(mount).unwrap().dev();
    let (major, minor) = (libc_major(dev), libc_minor(dev));
    PathBuf::from(format!("/sys/dev/block/{major}:{minor}/loop/backing_file"))
}

fn libc_major(dev: u64) -> u64 {
    ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff)
}

fn libc_minor(dev: u64) -> u64 {
    ((dev >> 12) & 0xffff_ff00) | (dev & 0xff)
}

#[tokio::test]
async fn an_update_past_the_budget_changes_nothing_and_says_why() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let env = home.create(small_limits()).await;
    let big = "y".repeat(20 << 20);
    let spec = EnvironmentSpec::from_json(&json!({
        "sources": [{"type": "inline", "target": "workspace/big.txt", "content": big}],
    }))
    .unwrap();
    let err = home.0.envs.update(env.id(), &spec).await.unwrap_err();
    assert!(err.to_string().contains("disk budget"), "{err}");
    assert!(!env.root().join("workspace/big.txt").exists());
    assert!(env.root().join("workspace/hello.txt").exists());
}

#[tokio::test]
async fn limits_may_lower_but_never_raise_the_servers_budget() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let spec = EnvironmentSpec::from_json(&json!({
        "limits": {"disk_bytes": 3_u64 << 30},
    }))
    .unwrap();
    let err = home.0.envs.create(&spec).await.unwrap_err().to_string();
    assert!(err.contains("$.limits.disk_bytes"), "{err}");
    assert!(err.contains("disk_bytes"), "{err}");
    let err = home
        .0
        .envs
        .create(
            &EnvironmentSpec::from_json(
                &json!({"limits": {"disk_bytes": 8 << 20, "disk_inodes": 9000}}),
            )
            .unwrap(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("$.limits.disk_inodes"), "{err}");
    // A smaller size alone lowers the server's inode count to what it can hold.
    let small = home.create(json!({"disk_bytes": 8 << 20})).await;
    assert_eq!(
        small.to_json()["limits"],
        json!({"disk_bytes": 8 << 20, "disk_inodes": 8192})
    );
    home.0.envs.delete(small.id()).unwrap();
    let env = home.create(json!({"disk_inodes": 500})).await;
    assert_eq!(
        env.to_json()["limits"],
        json!({"disk_bytes": 2_u64 << 30, "disk_inodes": 500})
    );
    assert!(home.0.envs.list().unwrap().len() == 1);
}

#[test]
fn limits_are_checked_with_json_paths() {
    for (limits, path) in [
        (json!({"disk_bytes": -1}), "$.limits.disk_bytes"),
        (json!({"disk_bytes": 1024}), "$.limits.disk_bytes"),
        (json!({"disk_inodes": "many"}), "$.limits.disk_inodes"),
        (json!({"disk_quota": 1}), "$.limits.disk_quota"),
        (json!(5), "$.limits"),
    ] {
        let err = EnvironmentSpec::from_json(&json!({"limits": limits}))
            .unwrap_err()
            .to_string();
        assert!(err.contains(path), "{limits}: {err}");
    }
}

/// Set for the copy of this binary that [`an_unprivileged_hookbox_falls_back_loudly`] runs as
/// another user.
const INNER: &str = "HOOKBOX_DISK_BUDGET_INNER";

/// Runs [`unprivileged_store_has_no_budget`] as the unprivileged `hookbox-sbx` user (created
/// if needed, as in hookbox-exec's tests).
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "runs this test binary as another user"
)]
fn an_unprivileged_hookbox_falls_back_loudly() {
    if !hookbox_test_support::require_root("an_unprivileged_hookbox_falls_back_loudly") {
        return;
    }
    let user = "hookbox-sbx";
    let exists = std::process::Command::new("id")
        .arg(user)
        .output()
        .is_ok_and(|out| out.status.success());
    if !exists {
        let created = std::process::Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                user,
            ])
            .status();
        if !created.is_ok_and(|status| status.success()) {
            hookbox_test_support::skip(
                "an_unprivileged_hookbox_falls_back_loudly",
                format_args!("cannot create user {user}"),
            );
            return;
        }
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("runuser")
        .args(["-u", user, "--", "env", &format!("{INNER}=1")])
        .arg(&exe)
        .args([
            "--exact",
            "suite::disk_budget::unprivileged_store_has_no_budget",
            "--nocapture",
        ])
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("unprivileged checks ran"), "{text}");
}

/// As a user that cannot mount: no budget, plain directories, `limits` refused.
#[tokio::test]
async fn unprivileged_store_has_no_budget() {
    if std::env::var_os(INNER).is_none() {
        return;
    }
    assert!(!hookbox_exec::disk::can_mount());
    let home = Home::new();
    assert_eq!(home.envs.disk_budget(), None);
    let refused = EnvironmentSpec::from_json(&json!({"limits": {"disk_bytes": 16 << 20}})).unwrap();
    let err = home.envs.create(&refused).await.unwrap_err().to_string();
    assert!(
        err.contains("$.limits") && err.contains("cannot enforce"),
        "{err}"
    );
    let env = home.create(json!({})).await;
    assert_eq!(env.disk_budget(), None);
    assert_eq!(
        env.root(),
        home.dir
            .path()
            .join("environments")
            .join(env.id())
            .join("root")
    );
    assert!(env.to_json().get("limits").is_none());
    println!("unprivileged checks ran");
}

/// A home removed with `rm -rf` (as a test's temporary directory is) leaves a mount whose image
/// is deleted; the next store opened anywhere unmounts it.
#[tokio::test]
async fn a_home_removed_without_hookbox_leaves_no_mount_behind() {
    let Some(home) = BudgetHome::new() else {
        return;
    };
    let gone = Home::new();
    let env = gone
        .create(json!({"limits": {"disk_bytes": 8 << 20}}))
        .await;
    let mount = mount_point(&env);
    let image = image(&gone, &env);
    assert_eq!(mounts_of(&mount), 1);
    let path = gone.dir.path().to_path_buf();
    drop(gone);
    assert!(
        !path.exists(),
        "the home must be removable while mounted elsewhere"
    );
    let orphan = format!("{} (deleted)", image.display());
    assert_eq!(
        hookbox_exec::disk::backing_file(&mount).unwrap(),
        Some(orphan.clone())
    );
    Environments::open(home.0.dir.path()).unwrap();
    // Gone (or, once its inode number was freed, the mount point of another test's image).
    let now = hookbox_exec::disk::is_mounted(&mount)
        .unwrap_or(false)
        .then(|| hookbox_exec::disk::backing_file(&mount).ok().flatten())
        .flatten();
    assert_ne!(now, Some(orphan));
}
