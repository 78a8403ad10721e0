//! The sandbox, attacked from inside: each test is an escape or a resource attack that must
//! fail. Real namespaces, mounts, landlock and seccomp; python3 (at /usr/bin/python3 inside)
//! makes raw system calls through ctypes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookbox_exec::{
    ExecError, ExitKind, IsolationError, Limits, ProcessOutput, ProcessSpec, Sandbox, WarmSandbox,
    check_isolation, run,
};

use super::support::{SUPERVISOR, exclusive, shared};

/// A sandbox root with `workspace` and a read-only `.agents`, removed on drop.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("workspace")).unwrap();
        std::fs::create_dir(dir.path().join(".agents")).unwrap();
        std::fs::write(dir.path().join(".agents/hooks.json"), "{}").unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn sandbox(&self) -> Sandbox {
        Sandbox::new(self.path())
    }
}

fn spec(sandbox: Sandbox, command: &str, timeout: Duration) -> ProcessSpec {
    ProcessSpec {
        sandbox: Some(sandbox),
        ..ProcessSpec::shell(command, timeout)
    }
}

/// Where a test's commands run: a cold sandbox built for each run, or one warm sandbox.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Cold,
    Warm,
}

/// Generates, for each `async fn name(mode: Mode)`, the tests `name::cold` and `name::warm`.
macro_rules! cold_and_warm {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test]
            async fn cold() {
                super::$name(super::Mode::Cold).await;
            }

            #[tokio::test]
            async fn warm() {
                super::$name(super::Mode::Warm).await;
            }
        }
    )*};
}

/// Runs specs in one sandbox, cold or warm.
struct Runner {
    sandbox: Sandbox,
    warm: Option<WarmSandbox>,
}

impl Runner {
    async fn new(mode: Mode, sandbox: Sandbox) -> Self {
        let warm = match mode {
            Mode::Cold => None,
            Mode::Warm => Some(
                WarmSandbox::start(sandbox.clone(), SUPERVISOR)
                    .await
                    .unwrap(),
            ),
        };
        Self { sandbox, warm }
    }

    async fn run(&self, spec: &ProcessSpec) -> Result<ProcessOutput, ExecError> {
        match &self.warm {
            None => run(spec).await,
            Some(warm) => warm.run(spec).await,
        }
    }

    /// Whether pid namespace `ns` holds only the warm sandbox's spare call: one process, a
    /// child of the supervisor that has executed nothing yet (still the supervisor's program),
    /// which no call started.
    fn is_spare(&self, ns: &str) -> bool {
        let Some(supervisor) = self.warm.as_ref().and_then(WarmSandbox::supervisor_pid) else {
            return false;
        };
        let supervisor = supervisor.to_string();
        match processes_in(ns).as_slice() {
            [only] => {
                status_field(only, "PPid").as_deref() == Some(supervisor.as_str())
                    && status_field(only, "Name") == status_field(&supervisor, "Name")
            }
            _ => false,
        }
    }

    /// Runs `command` with `sh -c` and returns what happened.
    async fn sh(&self, command: &str, timeout: Duration) -> ProcessOutput {
        self.run(&spec(self.sandbox.clone(), command, timeout))
            .await
            .unwrap()
    }
}

/// Runs `command` with `sh -c` through `runner` and returns what happened.
async fn sh(runner: &Runner, command: &str) -> ProcessOutput {
    runner.sh(command, Duration::from_secs(30)).await
}

/// Like [`sh`], asserting exit 0 and returning stdout.
async fn ok(runner: &Runner, command: &str) -> String {
    let out = sh(runner, command).await;
    assert_eq!(
        out.exit,
        ExitKind::Exited(0),
        "`{command}` failed: {}{}",
        out.stdout.to_text(),
        out.stderr.to_text()
    );
    out.stdout.to_text()
}

/// Inodes of the pid namespaces of every process on the host other than ours.
fn foreign_pid_namespaces() -> HashSet<String> {
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            name.to_str()?.parse::<u32>().ok()?;
            let ns = std::fs::read_link(Path::new("/proc").join(&name).join("ns/pid")).ok()?;
            (ns != ours).then(|| ns.to_string_lossy().into_owned())
        })
        .collect()
}

/// Waits (up to 5 s) until no pid namespace other than those in `before` has a process,
/// leaving out the spare call `runner`'s warm sandbox keeps started for its next call.
async fn no_namespace_left(runner: &Runner, before: &HashSet<String>) {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = foreign_pid_namespaces();
        let new: Vec<_> = now
            .difference(before)
            .filter(|ns| !runner.is_spare(ns))
            .collect();
        if new.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < give_up,
            "processes left in {new:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The processes (pids on the host) whose pid namespace is `ns`.
fn processes_in(ns: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.parse::<u32>().ok()?;
            let link = std::fs::read_link(Path::new("/proc").join(&name).join("ns/pid")).ok()?;
            (link.to_string_lossy() == ns).then_some(name)
        })
        .collect()
}

/// `field` of `/proc/PID/status` (`PPid`, `Name`…).
fn status_field(pid: &str, field: &str) -> Option<String> {
    let status = std::fs::read_to_string(Path::new("/proc").join(pid).join("status")).ok()?;
    status.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        (name == field).then(|| value.trim().to_owned())
    })
}

#[test]
fn isolation_is_available_here() {
    check_isolation().unwrap();
}

/// The core checks, also run as an unprivileged user by
/// [`an_unprivileged_user_gets_the_same_sandbox`].
async fn core_isolation_holds(mode: Mode) {
    let _guard = shared().await;
    check_isolation().unwrap();
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    let status = ok(&runner, "cat /proc/self/status").await;
    for line in ["NoNewPrivs:\t1", "CapEff:\t0000000000000000", "Seccomp:\t2"] {
        assert!(status.contains(line), "missing {line:?} in {status}");
    }
    let out = ok(
        &runner,
        "echo hi > /workspace/out; touch /usr/x /x /.agents/x 2>/dev/null; \
         cat /proc/1/cmdline | tr '\\0' ' '; echo; hostname; id -u",
    )
    .await;
    assert!(out.contains("/bin/sh -c echo hi"), "{out}");
    assert!(out.contains("sandbox\n0\n"), "{out}");
    assert_eq!(
        std::fs::read_to_string(root.path().join("workspace/out")).unwrap(),
        "hi\n"
    );
    assert!(!root.path().join(".agents/x").exists());
    // Namespaces may not be created again inside.
    let out = sh(&runner, "unshare -U true").await;
    assert_ne!(out.exit, ExitKind::Exited(0), "{}", out.stdout.to_text());
}

async fn host_secrets_are_not_there(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    // A marker in the host's /tmp, invisible inside.
    let marker = tempfile::Builder::new()
        .prefix("hookbox-host-marker")
        .tempfile_in("/tmp")
        .unwrap();
    let name = marker.path().file_name().unwrap().to_str().unwrap();
    let out = ok(
        &runner,
        &format!(
            "for p in /root /home /sys /etc/shadow /etc/gshadow /etc/sudoers /etc/ssh \
             /tmp/{name} /var /run /boot /old_root; do \
               if [ -e $p ]; then echo present $p; fi; done; ls -A /tmp; ls /; ls /etc"
        ),
    )
    .await;
    assert!(!out.contains("present"), "{out}");
    assert!(!out.contains("hookbox-host-marker"), "{out}");
    assert!(!out.contains("shadow"), "{out}");
    // The system is still usable.
    assert!(out.contains("ld.so.cache"), "{out}");
}

async fn host_processes_are_not_there(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    let me = std::process::id();
    let out = ok(&runner, "sleep 0.1 & ls /proc | grep -E '^[0-9]+$'; wait").await;
    let pids: Vec<u32> = out.lines().map(|l| l.parse().unwrap()).collect();
    assert!(pids.contains(&1), "{pids:?}");
    // The shell, sleep and ls (and grep): nothing from the host.
    assert!(pids.len() <= 5, "{pids:?}");
    assert!(pids.iter().all(|&pid| pid < 10), "{pids:?}");
    assert!(!pids.contains(&me) || me < 10);
    let out = sh(&runner, "cat /proc/1/environ | tr '\\0' '\\n'").await;
    assert!(
        !out.stdout.to_text().contains("CARGO"),
        "host environment leaked"
    );
}

async fn writes_outside_workspace_and_tmp_fail(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    for target in [
        "/usr/evil",
        "/evil",
        "/.agents/hooks.json",
        "/.agents/new",
        "/etc/passwd",
        "/etc/evil",
        "/dev/evil",
        "/proc/evil",
    ] {
        let out = sh(&runner, &format!("echo x > {target}")).await;
        assert_ne!(out.exit, ExitKind::Exited(0), "wrote {target}");
        let err = out.stderr.to_text();
        assert!(
            err.contains("Read-only file system")
                || err.contains("Permission denied")
                || err.contains("No such file")
                || err.contains("Directory nonexistent"),
            "{target}: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(root.path().join(".agents/hooks.json")).unwrap(),
        "{}"
    );
    // /tmp is writable but private: nothing reaches the host's /tmp.
    let out = ok(
        &runner,
        "echo x > /tmp/hookbox-private-tmp && cat /tmp/hookbox-private-tmp",
    )
    .await;
    assert_eq!(out, "x\n");
    assert!(!Path::new("/tmp/hookbox-private-tmp").exists());
}

/// `name number args…`, run through ctypes; prints `name errno` for each.
const PROBES_X86_64: &str = "
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
probes = [('mount', 165, (0, 0, 0, 0, 0)), ('umount2', 166, (0, 0)),
          ('pivot_root', 155, (0, 0)), ('unshare', 272, (0x10000000,)),
          ('setns', 308, (0, 0)), ('ptrace', 101, (0, 0, 0, 0)),
          ('bpf', 321, (0, 0, 0)), ('keyctl', 250, (0, 0, 0, 0, 0)),
          ('add_key', 248, (0, 0, 0, 0, 0)), ('io_uring_setup', 425, (1, 0)),
          ('perf_event_open', 298, (0, 0, 0, 0, 0)), ('userfaultfd', 323, (0,)),
          ('init_module', 175, (0, 0, 0)), ('kexec_load', 246, (0, 0, 0, 0)),
          ('personality', 135, (0x0040000,)), ('clone_newuser', 56, (0x10000000 | 17, 0, 0, 0, 0)),
          ('ioctl_tiocsti', 16, (0, 0x5412, 0))]
for name, nr, args in probes:
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    print(name, r, ctypes.get_errno())
";

#[cfg(target_arch = "x86_64")]
async fn privileged_system_calls_fail_with_eperm(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    let out = ok(&runner, &format!("python3 -c \"{PROBES_X86_64}\"")).await;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 17, "{out}");
    for line in lines {
        assert!(line.ends_with(" -1 1"), "not EPERM: {line}");
    }
}

async fn there_is_no_network(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    // The only connection attempt: refused by the empty namespace before any packet leaves.
    let out = sh(
        &runner,
        "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=2)'",
    )
    .await;
    assert_ne!(out.exit, ExitKind::Exited(0));
    assert!(
        out.stderr.to_text().contains("Network is unreachable"),
        "{}",
        out.stderr.to_text()
    );
    let out = ok(&runner, "ls /proc/sys/net/ipv4/conf").await;
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        ["all", "default", "lo"]
    );
}

async fn a_fork_bomb_is_contained_and_leaves_nothing(mode: Mode) {
    let _guard = exclusive().await;
    let root = Root::new();
    let sandbox = Sandbox {
        limits: Limits {
            max_processes: 64,
            ..Limits::default()
        },
        ..root.sandbox()
    };
    let runner = Runner::new(mode, sandbox.clone()).await;
    // After the warm sandbox's supervisor started: it stays; the bomb's namespaces must not.
    let before = foreign_pid_namespaces();
    let bomb = spec(
        sandbox,
        "bomb() { bomb | bomb & }; bomb",
        Duration::from_secs(5),
    );
    let out = runner
        .run(&ProcessSpec {
            program: "/bin/bash".into(),
            ..bomb
        })
        .await
        .unwrap();
    assert!(
        matches!(out.exit, ExitKind::TimedOut | ExitKind::Exited(_)),
        "{:?}",
        out.exit
    );
    no_namespace_left(&runner, &before).await;
    // The host (and a warm sandbox) is fine: the next run is quick.
    let out = ok(&runner, "echo alive").await;
    assert_eq!(out, "alive\n");
}

async fn the_process_limit_holds_run_after_run(mode: Mode) {
    // As root the limit is a per-run cgroup, and emptied cgroups are reused by later runs with
    // the same limits: every run must still be capped.
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(
        mode,
        Sandbox {
            limits: Limits {
                max_processes: 12,
                ..Limits::default()
            },
            ..root.sandbox()
        },
    )
    .await;
    for run_number in 0..3 {
        let out = runner
            .sh(
                "for i in $(seq 40); do sleep 2 & done 2>&1; wait; echo done",
                Duration::from_secs(20),
            )
            .await;
        let text = format!("{}{}", out.stdout.to_text(), out.stderr.to_text());
        assert!(
            text.contains("Cannot fork") || text.contains("Resource temporarily unavailable"),
            "run {run_number} was not capped: {text}"
        );
    }
}

async fn a_memory_bomb_fails_inside(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(
        mode,
        Sandbox {
            limits: Limits {
                memory_bytes: 1024 * 1024 * 1024,
                ..Limits::default()
            },
            ..root.sandbox()
        },
    )
    .await;
    let out = runner
        .sh(
            "python3 -c 'b = bytearray(8 << 30); b[::4096] = b\"x\" * len(b[::4096]); print(\"allocated\")'",
            Duration::from_secs(60),
        )
        .await;
    assert_ne!(out.exit, ExitKind::Exited(0));
    assert!(!out.stdout.to_text().contains("allocated"));
}

async fn background_processes_do_not_survive(mode: Mode) {
    let _guard = exclusive().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    // After the warm sandbox's supervisor started: it stays; the calls' namespaces must not.
    let before = foreign_pid_namespaces();
    let out = ok(
        &runner,
        "sleep 1000 & setsid sleep 1000 & (setsid nohup sh -c 'sleep 1000' &) ; echo started",
    )
    .await;
    assert_eq!(out, "started\n");
    no_namespace_left(&runner, &before).await;

    // Same on timeout.
    let out = runner
        .sh("setsid sleep 1000 & sleep 1000", Duration::from_millis(500))
        .await;
    assert_eq!(out.exit, ExitKind::TimedOut);
    no_namespace_left(&runner, &before).await;
}

async fn two_sandboxes_cannot_see_each_other(mode: Mode) {
    let _guard = shared().await;
    let (a, b) = (Root::new(), Root::new());
    // Both running at once when warm.
    let (_runner_a, runner_b) = (
        Runner::new(mode, a.sandbox()).await,
        Runner::new(mode, b.sandbox()).await,
    );
    std::fs::write(a.path().join("workspace/secret-of-a"), "a").unwrap();
    let a_path = a.path().display().to_string();
    let out = ok(
        &runner_b,
        &format!(
            "ls -A /workspace; ls {a_path} 2>&1; find / -name 'secret-of-a' -not -path '/proc/*' 2>/dev/null; true"
        ),
    )
    .await;
    assert!(!out.contains("secret-of-a"), "{out}");
    assert!(out.contains("No such file"), "{out}");
}

#[tokio::test]
async fn a_bad_root_is_refused_with_a_clear_error() {
    let _guard = shared().await;
    let dir = tempfile::tempdir().unwrap();
    let error = run(&spec(
        Sandbox::new(dir.path()),
        "true",
        Duration::from_secs(5),
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(
            &error,
            ExecError::Isolation {
                source: IsolationError::Root { .. },
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("no `workspace`"), "{error}");

    let root = Root::new();
    std::fs::create_dir(root.path().join("etc")).unwrap();
    let error = run(&spec(root.sandbox(), "true", Duration::from_secs(5)))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("`etc`"), "{error}");

    // A program missing inside is a spawn error, not an isolation one.
    let root = Root::new();
    let missing = ProcessSpec {
        program: "/no/such/program".into(),
        args: Vec::new(),
        ..spec(root.sandbox(), "", Duration::from_secs(5))
    };
    let error = run(&missing).await.unwrap_err();
    assert!(matches!(error, ExecError::Spawn { .. }), "{error:?}");
}

async fn hard_links_cannot_be_made(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    let runner = Runner::new(mode, root.sandbox()).await;
    // A second name for a file would pass a file tool's path gate under the name the gate
    // allows (`pub/x.json` for `private/employees.json`): `link` and `linkat` are refused.
    let out = ok(
        &runner,
        "cd /workspace && echo private > secret && \
         { ln secret public 2>/dev/null; echo \"ln $?\"; } && \
         python3 -c '
import os
for link in (lambda: os.link(\"secret\", \"p1\"), lambda: os.link(\"secret\", \"p2\", follow_symlinks=False)):
    try:
        link()
        print(\"linked\")
    except OSError as error:
        print(\"refused\", error.errno)
' && ls && stat -c %h secret",
    )
    .await;
    assert_eq!(out, "ln 1\nrefused 1\nrefused 1\nsecret\n1\n");
}

async fn symlinked_entries_are_not_followed(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    std::os::unix::fs::symlink("/root", root.path().join("escape")).unwrap();
    let runner = Runner::new(mode, root.sandbox()).await;
    let out = ok(&runner, "readlink /escape; ls /escape/ 2>&1 || true").await;
    assert!(out.starts_with("/root\n"), "{out}");
    assert!(out.contains("No such file"), "{out}");
}

async fn a_nested_read_only_directory_is_read_only_inside_a_writable_entry(mode: Mode) {
    let _guard = shared().await;
    let root = Root::new();
    std::fs::create_dir(root.path().join("workspace/.agents")).unwrap();
    std::fs::write(root.path().join("workspace/.agents/hooks.json"), "{}").unwrap();
    let mut sandbox = root.sandbox();
    sandbox.read_only.push("workspace/.agents".into());
    let script = "for try in 'echo x > /workspace/.agents/hooks.json' 'rm -rf /workspace/.agents' \
                  'mv /workspace/.agents /workspace/moved' 'touch /workspace/.agents/new' \
                  'ln -s /tmp /workspace/.agents/link'; do sh -c \"$try\" 2>/dev/null && echo \"ALLOWED $try\"; done; \
                  echo ok > /workspace/elsewhere";
    let out = Runner::new(mode, sandbox)
        .await
        .sh(script, Duration::from_secs(30))
        .await;
    assert_eq!(out.exit, ExitKind::Exited(0), "{}", out.stderr.to_text());
    assert!(
        !out.stdout.to_text().contains("ALLOWED"),
        "{}",
        out.stdout.to_text()
    );
    assert_eq!(
        std::fs::read_to_string(root.path().join("workspace/.agents/hooks.json")).unwrap(),
        "{}"
    );
    assert!(root.path().join("workspace/elsewhere").exists());

    for bad in ["workspace/../etc", "workspace//x", "nothere/.agents"] {
        let mut sandbox = root.sandbox();
        sandbox.read_only.push(bad.into());
        let error = run(&spec(sandbox, "true", Duration::from_secs(5)))
            .await
            .unwrap_err();
        assert!(
            matches!(
                &error,
                ExecError::Isolation {
                    source: IsolationError::Bind { .. },
                    ..
                }
            ),
            "{bad}: {error:?}"
        );
    }
}

/// A user to run the test binary as (we are root), created when `useradd` exists.
#[expect(clippy::disallowed_methods, reason = "test setup, not a sandboxed run")]
fn unprivileged_user() -> Result<String, String> {
    let name = "hookbox-sbx";
    let exists = std::process::Command::new("id")
        .arg(name)
        .output()
        .is_ok_and(|out| out.status.success());
    if !exists {
        let created = std::process::Command::new("useradd")
            .args([
                "--system",
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                name,
            ])
            .status()
            .map_err(|e| format!("useradd unavailable: {e}"))?;
        if !created.success() {
            return Err(format!("useradd failed: {created}"));
        }
    }
    Ok(name.into())
}

/// Every directory above `path` must be searchable by others for the user to run it.
fn reachable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .skip(1)
        .all(|dir| std::fs::metadata(dir).is_ok_and(|meta| meta.permissions().mode() & 0o001 != 0))
}

#[tokio::test]
#[expect(
    clippy::disallowed_methods,
    reason = "runs this test binary as another user"
)]
async fn an_unprivileged_user_gets_the_same_sandbox() {
    if std::env::var_os("HOOKBOX_SANDBOX_INNER").is_some() {
        return;
    }
    // The sandboxes of the inner run are processes of this test too: the tests that count
    // what is left on the host (holding the lock exclusively) must not run meanwhile.
    let _guard = shared().await;
    const TEST: &str = "an_unprivileged_user_gets_the_same_sandbox";
    if !hookbox_test_support::require_root(TEST) {
        return;
    }
    let exe: PathBuf = std::env::current_exe().unwrap();
    let user = match unprivileged_user() {
        Ok(user) => user,
        Err(reason) => {
            hookbox_test_support::skip(TEST, reason);
            return;
        }
    };
    if !reachable_by_others(&exe) {
        let reason = format!("{} is not reachable by other users", exe.display());
        hookbox_test_support::skip(TEST, reason);
        return;
    }
    let out = std::process::Command::new("runuser")
        .args(["-u", &user, "--"])
        .arg(&exe)
        .args([
            "--exact",
            "suite::sandbox::core_isolation_holds::cold",
            "suite::sandbox::core_isolation_holds::warm",
            "suite::sandbox::a_fork_bomb_is_contained_and_leaves_nothing::cold",
            "suite::sandbox::a_fork_bomb_is_contained_and_leaves_nothing::warm",
            "suite::sandbox::a_memory_bomb_fails_inside::cold",
            "suite::sandbox::a_memory_bomb_fails_inside::warm",
            "suite::sandbox::privileged_system_calls_fail_with_eperm::cold",
            "suite::sandbox::privileged_system_calls_fail_with_eperm::warm",
            "suite::directory::the_directory_is_at_its_own_path_and_writable",
            "suite::directory::nothing_else_of_the_host_is_visible",
            "suite::directory::dot_dot_and_links_do_not_escape",
            "suite::directory::bad_binds_are_refused_before_anything_runs",
            "suite::directory::read_only_binds_and_elsewhere_targets",
            "--test-threads=2",
        ])
        .env("HOOKBOX_SANDBOX_INNER", "1")
        .env("TMPDIR", "/tmp")
        .current_dir("/")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "as {user}: {text}");
    assert!(text.contains("13 passed"), "as {user}: {text}");
}

cold_and_warm!(
    core_isolation_holds,
    host_secrets_are_not_there,
    host_processes_are_not_there,
    writes_outside_workspace_and_tmp_fail,
    there_is_no_network,
    a_fork_bomb_is_contained_and_leaves_nothing,
    the_process_limit_holds_run_after_run,
    a_memory_bomb_fails_inside,
    background_processes_do_not_survive,
    two_sandboxes_cannot_see_each_other,
    symlinked_entries_are_not_followed,
    hard_links_cannot_be_made,
    a_nested_read_only_directory_is_read_only_inside_a_writable_entry,
);

#[cfg(target_arch = "x86_64")]
cold_and_warm!(privileged_system_calls_fail_with_eperm);
