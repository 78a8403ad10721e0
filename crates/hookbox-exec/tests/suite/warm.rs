//! Warm sandboxes: many calls in one sandbox, each killed whole at its end, none able to reach
//! the supervisor; a supervisor killed from outside is noticed and replaced.

use std::sync::Arc;
use std::time::Duration;

use hookbox_exec::{ExecError, ExitKind, ProcessOutput, ProcessSpec, Sandbox, WarmSandbox};

use super::support::{SUPERVISOR, assert_dead, shared};

/// A sandbox root with a `workspace`, and a warm sandbox over it.
struct Warm {
    dir: tempfile::TempDir,
    warm: WarmSandbox,
}

impl Warm {
    async fn start() -> Self {
        Self::start_with(false).await
    }

    /// A warm sandbox whose supervisor reports each call's end (`report_ends`), as on
    /// kernels before 6.15, or lets the kernel reap the calls where it can.
    async fn start_with(report_ends: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("workspace")).unwrap();
        let sandbox = Sandbox::new(dir.path());
        let warm = if report_ends {
            WarmSandbox::start_reporting_ends(sandbox, SUPERVISOR).await
        } else {
            WarmSandbox::start(sandbox, SUPERVISOR).await
        };
        Self {
            dir,
            warm: warm.unwrap(),
        }
    }

    fn workspace(&self) -> std::path::PathBuf {
        self.dir.path().join("workspace")
    }

    async fn sh(&self, command: &str, timeout: Duration) -> ProcessOutput {
        self.warm
            .run(&ProcessSpec::shell(command, timeout))
            .await
            .unwrap()
    }

    async fn ok(&self, command: &str) -> String {
        let out = self.sh(command, Duration::from_secs(30)).await;
        assert_eq!(
            out.exit,
            ExitKind::Exited(0),
            "`{command}` failed: {}{}",
            out.stdout.to_text(),
            out.stderr.to_text()
        );
        out.stdout.to_text()
    }

    /// The error of a call whose program is nowhere on the sandbox's `PATH`.
    async fn run_missing_program(&self) -> ExecError {
        self.warm
            .run(&ProcessSpec {
                program: "no-such-program".into(),
                args: Vec::new(),
                ..ProcessSpec::shell("", Duration::from_secs(30))
            })
            .await
            .unwrap_err()
    }
}

/// Whether a process whose command line contains `marker` exists on the host.
fn process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(marker)
        })
    })
}

/// Waits (up to 5 s) until no process whose command line contains `marker` is left.
pub(super) async fn none_left(marker: &str) {
    let give_up = tokio::time::Instant::now() + Duration::from_secs(5);
    while process_with(marker) {
        assert!(
            tokio::time::Instant::now() < give_up,
            "a process with `{marker}` survived"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn many_calls_run_with_their_own_output_and_exit_codes() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let supervisor = warm.warm.supervisor_pid().unwrap();
    for n in 0..30 {
        let out = warm
            .sh(
                &format!("echo out {n}; echo err {n} >&2; exit {}", n % 7),
                Duration::from_secs(30),
            )
            .await;
        assert_eq!(out.exit, ExitKind::Exited(n % 7));
        assert_eq!(out.stdout.to_text(), format!("out {n}\n"));
        assert_eq!(out.stderr.to_text(), format!("err {n}\n"));
    }
    let out = warm
        .warm
        .run(&ProcessSpec {
            program: "cat".into(),
            args: Vec::new(),
            stdin: b"through stdin".to_vec(),
            env: vec![("ONE".into(), "1".into())],
            cwd: Some("sub".into()),
            ..ProcessSpec::shell("", Duration::from_secs(30))
        })
        .await;
    // The working directory must exist.
    assert!(matches!(out, Err(ExecError::Isolation { .. })), "{out:?}");
    std::fs::create_dir(warm.workspace().join("sub")).unwrap();
    let out = warm
        .warm
        .run(&ProcessSpec {
            stdin: b"through stdin".to_vec(),
            env: vec![("ONE".into(), "1".into())],
            cwd: Some("sub".into()),
            ..ProcessSpec::shell("cat; echo \" $ONE $PWD $HOME\"", Duration::from_secs(30))
        })
        .await
        .unwrap();
    assert_eq!(
        out.stdout.to_text(),
        "through stdin 1 /workspace/sub /workspace\n"
    );
    // One supervisor did it all.
    assert_eq!(warm.warm.supervisor_pid(), Some(supervisor));
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let error = warm.run_missing_program().await;
    assert!(
        matches!(&error, ExecError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound),
        "{error:?}"
    );
    assert_eq!(warm.ok("echo still here").await, "still here\n");
}

#[tokio::test]
async fn concurrent_calls_each_get_their_own_output() {
    let _guard = shared().await;
    let warm = Arc::new(Warm::start().await);
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..24 {
        let warm = Arc::clone(&warm);
        calls.spawn(async move {
            let out = warm
                .sh(
                    &format!("sleep 0.2; cat /proc/self/stat >/dev/null; echo {n}"),
                    Duration::from_secs(30),
                )
                .await;
            (n, out)
        });
    }
    let mut seen = 0;
    while let Some(joined) = calls.join_next().await {
        let (n, out) = joined.unwrap();
        assert_eq!(out.exit, ExitKind::Exited(0), "{}", out.stderr.to_text());
        assert_eq!(out.stdout.to_text(), format!("{n}\n"));
        seen += 1;
    }
    assert_eq!(seen, 24);
}

#[tokio::test]
async fn a_timeout_kills_the_whole_call_including_a_setsid_grandchild() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let out = warm
        .sh(
            "setsid sh -c 'touch /workspace/started; exec sleep 7654301' & \
             while [ ! -e /workspace/started ]; do sleep 0.01; done; sleep 7654302",
            Duration::from_secs(2),
        )
        .await;
    assert_eq!(out.exit, ExitKind::TimedOut);
    assert!(warm.workspace().join("started").exists());
    none_left("sleep 765430").await;
    assert_eq!(warm.ok("echo next").await, "next\n");
}

#[tokio::test]
async fn nothing_a_call_started_survives_its_end() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let out = warm
        .ok("sleep 7654311 & setsid sleep 7654312 & (setsid nohup sh -c 'sleep 7654313' &); echo started")
        .await;
    assert_eq!(out, "started\n");
    // The call's end is reported only once its namespace is empty.
    assert!(!process_with("sleep 765431"));
}

#[tokio::test]
async fn a_dropped_call_is_killed() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let cancelled = tokio::time::timeout(
        Duration::from_millis(500),
        warm.sh(
            "setsid sleep 7654321 & sleep 7654322",
            Duration::from_secs(60),
        ),
    )
    .await;
    assert!(cancelled.is_err());
    none_left("sleep 765432").await;
    assert_eq!(warm.ok("echo next").await, "next\n");
}

#[tokio::test]
async fn output_is_capped() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let out = warm
        .warm
        .run(&ProcessSpec {
            output_limit: 1000,
            ..ProcessSpec::shell(
                "head -c 100000 /dev/zero; head -c 5000 /dev/zero >&2",
                Duration::from_secs(30),
            )
        })
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!((out.stdout.bytes.len(), out.stdout.dropped), (1000, 99_000));
    assert_eq!((out.stderr.bytes.len(), out.stderr.dropped), (1000, 4000));
}

#[tokio::test]
async fn a_call_cannot_kill_the_supervisor() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let supervisor = warm.warm.supervisor_pid().unwrap();
    // pid 1 in the call's namespace is the call itself (which, as a namespace's init, ignores
    // SIGKILL from inside); every pid the call can name is its own.
    let out = warm
        .ok(
            "kill -9 1; echo survived; for pid in $(ls /proc | grep -E '^[0-9]+$'); do \
             [ $pid = $$ ] || kill -9 $pid 2>/dev/null; done; ls /proc | grep -cE '^[0-9]+$'",
        )
        .await;
    assert!(out.starts_with("survived\n"), "{out}");
    // Signals by pid through python, over a whole range: nothing but ESRCH outside the call.
    let out = warm
        .ok("python3 -c '
import os, signal
hit = []
for pid in range(2, 4096):
    if pid == os.getpid():
        continue
    try:
        os.kill(pid, signal.SIGKILL)
        hit.append(pid)
    except ProcessLookupError:
        pass
print(hit)'")
        .await;
    assert_eq!(out, "[]\n");
    assert_eq!(warm.warm.supervisor_pid(), Some(supervisor));
    assert_eq!(warm.ok("echo alive").await, "alive\n");
}

#[tokio::test]
async fn a_call_holds_no_descriptor_of_the_supervisor() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    // Writing to every descriptor from 3 up fails: the control socket, the ruleset and the
    // other calls' pipes are all closed at exec.
    let out = warm
        .ok("for fd in $(seq 3 64); do if (echo x >&$fd) 2>/dev/null; then echo open $fd; fi; done; echo checked")
        .await;
    assert_eq!(out, "checked\n");
    // Nothing named to connect to: no abstract or path socket exists in the sandbox's network
    // namespace, and the supervisor is not in the call's /proc.
    let out = warm
        .ok("python3 -c '
import os, socket
named = [line.split()[-1] for line in open(\"/proc/net/unix\").read().splitlines()[1:] if len(line.split()) > 7]
print(\"named\", named)
for name in [\"\\0hookbox\", \"\\0\", \"\\0supervisor\"]:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        s.connect(name)
        print(\"connected\", repr(name))
    except OSError as error:
        pass
print(sorted(int(p) for p in os.listdir(\"/proc\") if p.isdigit()))
'")
        .await;
    // Only the call's own processes: the shell (pid 1) and python.
    assert_eq!(out, "named []\n[1, 2]\n");
    assert_eq!(warm.ok("echo alive").await, "alive\n");
}

/// SIGKILLs `pid` from the host.
fn kill(pid: u32) {
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::KILL,
    )
    .unwrap();
}

/// Kills `warm`'s supervisor while a call (`sleep MARKER`) runs: the call is lost, and
/// nothing of it is left. The supervisor's pid.
async fn kill_the_supervisor_during_a_call(warm: &Warm, marker: &str) -> u32 {
    let first = warm.warm.supervisor_pid().unwrap();
    let spec = ProcessSpec::shell(
        &format!("touch /workspace/running; sleep {marker}"),
        Duration::from_secs(60),
    );
    let (out, ()) = tokio::join!(warm.warm.run(&spec), async {
        while !warm.workspace().join("running").exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        kill(first);
    });
    assert!(matches!(out, Err(ExecError::SandboxLost { .. })), "{out:?}");
    none_left(&format!("sleep {marker}")).await;
    first
}

#[tokio::test]
async fn a_killed_supervisor_fails_the_call_in_progress_and_is_replaced() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let first = kill_the_supervisor_during_a_call(&warm, "7654331").await;
    assert_dead(first as i32).await;
    // The next call builds a new sandbox, over the same files.
    assert_eq!(warm.ok("ls /workspace").await, "running\n");
    let second = warm.warm.supervisor_pid().unwrap();
    assert_ne!(second, first);
    // Killed while idle: noticed by the next call too.
    kill(second);
    assert_dead(second as i32).await;
    assert_eq!(warm.ok("echo rebuilt").await, "rebuilt\n");
    assert_ne!(warm.warm.supervisor_pid(), Some(second));
}

#[tokio::test]
async fn a_calls_program_starts_with_sigchld_and_sigpipe_at_their_defaults() {
    let _guard = shared().await;
    // The supervisor may ignore SIGCHLD (so that the kernel reaps its calls) and ignores
    // SIGPIPE; a program inheriting an ignored SIGCHLD would have its children reaped before
    // it could wait for them (a shell catches SIGCHLD and hides that: read it unshelled).
    for report_ends in [false, true] {
        let warm = Warm::start_with(report_ends).await;
        let out = warm
            .warm
            .run(&ProcessSpec {
                program: "grep".into(),
                args: vec!["^SigIgn:".into(), "/proc/self/status".into()],
                ..ProcessSpec::shell("", Duration::from_secs(30))
            })
            .await
            .unwrap();
        let text = out.stdout.to_text();
        let ignored = u64::from_str_radix(text.trim().trim_start_matches("SigIgn:").trim(), 16)
            .unwrap_or_else(|_| panic!("{text}"));
        for signal in [libc::SIGCHLD, libc::SIGPIPE] {
            assert_eq!(
                ignored & (1 << (signal - 1)),
                0,
                "signal {signal} ignored: {text}"
            );
        }
    }
}

#[tokio::test]
async fn an_idle_spare_killed_from_outside_is_replaced() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    assert_eq!(warm.ok("echo first").await, "first\n");
    // After a call, the supervisor keeps the next call started ahead: kill it.
    let supervisor = warm.warm.supervisor_pid().unwrap();
    let give_up = tokio::time::Instant::now() + Duration::from_secs(5);
    let spares = loop {
        let children =
            std::fs::read_to_string(format!("/proc/{supervisor}/task/{supervisor}/children"))
                .unwrap();
        let spares: Vec<u32> = children
            .split_whitespace()
            .map(|pid| pid.parse().unwrap())
            .collect();
        if !spares.is_empty() {
            break spares;
        }
        assert!(
            tokio::time::Instant::now() < give_up,
            "no spare was started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    for spare in &spares {
        kill(*spare);
        assert_dead(*spare as i32).await;
    }
    assert_eq!(warm.ok("echo second").await, "second\n");
    assert_eq!(warm.warm.supervisor_pid(), Some(supervisor));
}

#[tokio::test]
async fn where_the_kernel_cannot_reap_calls_the_supervisor_reports_their_ends() {
    let _guard = shared().await;
    // The path of kernels before 6.15 (no exit status for pidfds), taken on any kernel.
    let warm = Arc::new(Warm::start_with(true).await);
    assert_eq!(
        warm.sh("exit 3", Duration::from_secs(30)).await.exit,
        ExitKind::Exited(3)
    );
    assert_eq!(
        warm.ok("sh -c 'exit 7' & wait $!; echo status $?").await,
        "status 7\n"
    );
    let missing = warm.run_missing_program().await;
    assert!(matches!(missing, ExecError::Spawn { .. }), "{missing:?}");
    let out = warm
        .sh(
            "setsid sleep 7654341 & sleep 7654342",
            Duration::from_secs(1),
        )
        .await;
    assert_eq!(out.exit, ExitKind::TimedOut);
    none_left("sleep 765434").await;
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..8 {
        let warm = Arc::clone(&warm);
        calls.spawn(async move { (n, warm.ok(&format!("sleep 0.1; echo {n}")).await) });
    }
    while let Some(joined) = calls.join_next().await {
        let (n, out) = joined.unwrap();
        assert_eq!(out, format!("{n}\n"));
    }
    // A supervisor killed during a call: that call is lost, the next one rebuilds.
    kill_the_supervisor_during_a_call(&warm, "7654343").await;
    assert_eq!(warm.ok("echo rebuilt").await, "rebuilt\n");
}

#[tokio::test]
async fn dropping_the_warm_sandbox_stops_it() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    let supervisor = warm.warm.supervisor_pid().unwrap();
    assert_eq!(warm.ok("echo up").await, "up\n");
    drop(warm);
    assert_dead(supervisor as i32).await;
}

#[tokio::test]
async fn a_program_that_is_not_a_supervisor_is_refused_at_start() {
    let _guard = shared().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let error = WarmSandbox::start(Sandbox::new(dir.path()), "/bin/true")
        .await
        .unwrap_err();
    assert!(error.to_string().contains("supervise_if_asked"), "{error}");
}

#[tokio::test]
async fn a_call_that_cannot_start_fails_cleanly() {
    let _guard = shared().await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    // As root the process limit is a cgroup over the whole sandbox, where the intermediate
    // process and the supervisor already count: no call can start.
    if !hookbox_test_support::require_root("a_call_that_cannot_start_fails_cleanly") {
        return;
    }
    let sandbox = Sandbox {
        limits: hookbox_exec::Limits {
            max_processes: 1,
            ..hookbox_exec::Limits::default()
        },
        ..Sandbox::new(dir.path())
    };
    let warm = WarmSandbox::start(sandbox, SUPERVISOR).await.unwrap();
    let error = warm
        .run(&ProcessSpec::shell("echo never", Duration::from_secs(30)))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, ExecError::Isolation { .. })
            && error.to_string().contains("starting the call"),
        "{error:?}"
    );
}

#[tokio::test]
async fn each_call_has_a_process_limit_of_its_own() {
    let _guard = shared().await;
    if !hookbox_test_support::require_root("each_call_has_a_process_limit_of_its_own") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let sandbox = Sandbox {
        limits: hookbox_exec::Limits {
            max_processes: 8,
            ..hookbox_exec::Limits::default()
        },
        ..Sandbox::new(dir.path())
    };
    let warm = Arc::new(WarmSandbox::start(sandbox, SUPERVISOR).await.unwrap());
    let go = dir.path().join("workspace/go");
    // A call that starts processes until its limit refuses one, and holds what it got (in
    // Python: a shell exits when it cannot fork). It waits on a FIFO the test writes to.
    let hog = {
        let warm = Arc::clone(&warm);
        tokio::spawn(async move {
            let fill = "import os, subprocess\n\
                        os.mkfifo('/workspace/go')\n\
                        kids = []\n\
                        try:\n    \
                            for _ in range(20): kids.append(subprocess.Popen(['sleep', '60.0125']))\n\
                        except OSError as refused: print('refused:', refused.errno)\n\
                        open('/workspace/full', 'w').close()\n\
                        open('/workspace/go').read()\n\
                        print(len(kids))\n";
            let spec = ProcessSpec {
                program: "python3".into(),
                args: vec!["-c".into(), fill.into()],
                ..ProcessSpec::shell("", Duration::from_secs(30))
            };
            warm.run(&spec).await.unwrap()
        })
    };
    let full = dir.path().join("workspace/full");
    let give_up = tokio::time::Instant::now() + Duration::from_secs(20);
    while !full.exists() {
        assert!(!hog.is_finished(), "the hog ended early: {:?}", hog.await);
        assert!(
            tokio::time::Instant::now() < give_up,
            "the hog never filled its limit"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // While it holds all it may, a call beside it still has its own room.
    let beside = warm
        .run(&ProcessSpec::shell(
            "sleep 0.1 & sleep 0.1 & sleep 0.1 & wait; echo room",
            Duration::from_secs(30),
        ))
        .await
        .unwrap();
    assert_eq!(
        (beside.exit, beside.stdout.to_text().as_str()),
        (ExitKind::Exited(0), "room\n"),
        "{}",
        beside.stderr.to_text()
    );
    // The hog was held to its own limit: 8 processes, itself and 7 sleeps.
    let sleeps: Vec<_> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|cmdline| cmdline == b"sleep\x0060.0125\0")
        })
        .map(|entry| entry.path())
        .collect();
    assert_eq!(sleeps.len(), 7);
    // In a memory cgroup of the call's own (not the supervisor's), with the sandbox's limit
    // (cgroup v1 `memory`, else the unified hierarchy).
    let memory_limit_file = |proc: &std::path::Path| {
        let text = std::fs::read_to_string(proc.join("cgroup")).unwrap();
        let v1 = text.lines().find_map(|line| line.split_once(":memory:"));
        match v1 {
            Some((_, path)) => format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"),
            None => {
                let path = text
                    .lines()
                    .find_map(|line| line.strip_prefix("0::"))
                    .unwrap();
                format!("/sys/fs/cgroup{path}/memory.max")
            }
        }
    };
    let call = memory_limit_file(&sleeps[0]);
    let supervisor = format!("/proc/{}", warm.supervisor_pid().unwrap());
    assert_ne!(call, memory_limit_file(std::path::Path::new(&supervisor)));
    assert_eq!(
        std::fs::read_to_string(&call).unwrap().trim(),
        hookbox_exec::Limits::default().memory_bytes.to_string()
    );
    std::fs::write(&go, "go\n").unwrap();
    let hog = hog.await.unwrap();
    assert_eq!(hog.exit, ExitKind::Exited(0), "{}", hog.stderr.to_text());
    assert_eq!(
        hog.stdout.to_text(),
        "refused: 11\n7\n",
        "EAGAIN at the 8th process"
    );
}

#[tokio::test]
async fn binds_below_tmp_are_there_in_every_call_over_its_fresh_tmp() {
    let _guard = shared().await;
    // A directory under the host's /tmp, bound at its own path (as SDK sessions' `Bash` binds
    // its working directory), with a read-only file inside and a read-only bind of another
    // directory below /tmp.
    let dir = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("kept")).unwrap();
    std::fs::write(work.join("notes.txt"), "notes").unwrap();
    std::fs::write(work.join("locked.txt"), "locked").unwrap();
    let other = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    std::fs::write(other.path().join("data"), "data").unwrap();
    let mut sandbox = Sandbox::over_directory(&work).unwrap();
    let work = sandbox.home();
    let other = other.path().canonicalize().unwrap();
    sandbox.binds.extend([
        hookbox_exec::Bind {
            host: work.join("locked.txt"),
            target: work.join("locked.txt"),
            writable: false,
        },
        hookbox_exec::Bind {
            host: other.clone(),
            target: other.clone(),
            writable: false,
        },
    ]);
    let warm = WarmSandbox::start(sandbox, SUPERVISOR).await.unwrap();
    let script = format!(
        "cat notes.txt; echo; cat {other}/data; echo; echo new > made.txt && echo made; \
         echo x > locked.txt || echo locked-refused; echo x > {other}/data || echo other-refused; \
         echo scratch > /tmp/scratch; ls /tmp | grep -c scratch",
        other = other.display()
    );
    for round in 0..2 {
        let out = warm
            .run(&ProcessSpec::shell(&script, Duration::from_secs(30)))
            .await
            .unwrap();
        assert_eq!(
            out.stdout.to_text(),
            "notes\ndata\nmade\nlocked-refused\nother-refused\n1\n",
            "round {round}: {}",
            out.stderr.to_text()
        );
    }
    assert_eq!(
        std::fs::read_to_string(work.join("made.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(work.join("locked.txt")).unwrap(),
        "locked"
    );
    assert_eq!(std::fs::read_to_string(other.join("data")).unwrap(), "data");
}

#[tokio::test]
async fn a_request_larger_than_a_socket_message_arrives_whole() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    // Five arguments of 100 KB (each under the kernel's 128 KiB per string): 500 KB in all,
    // more than one socket message may carry.
    let big = "x".repeat(100_000);
    let mut args: Vec<std::ffi::OsString> = vec![
        "-c".into(),
        "echo $# ${#1} ${#5} $BIG_LEN".into(),
        "sh".into(),
    ];
    args.extend((0..5).map(|_| big.clone().into()));
    let out = warm
        .warm
        .run(&ProcessSpec {
            args,
            env: vec![("BIG_LEN".into(), "100000".into())],
            ..ProcessSpec::shell("", Duration::from_secs(30))
        })
        .await
        .unwrap();
    assert_eq!(out.stdout.to_text(), "5 100000 100000 100000\n");
}

#[tokio::test]
async fn a_request_larger_than_execve_takes_fails_as_a_spawn_error_and_the_next_call_runs() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    // 200 arguments of 100 KB: 20 MB, three times what execve takes (6 MiB at most): the
    // call fails the way execve fails (E2BIG) instead of being laid out in the call's memory.
    let args: Vec<std::ffi::OsString> = (0..200).map(|_| "x".repeat(100_000).into()).collect();
    let error = warm
        .warm
        .run(&ProcessSpec {
            program: "true".into(),
            args,
            ..ProcessSpec::shell("", Duration::from_secs(30))
        })
        .await
        .unwrap_err();
    match &error {
        ExecError::Spawn { source, .. } => {
            assert_eq!(source.raw_os_error(), Some(libc::E2BIG), "{error}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(warm.ok("echo next").await, "next\n");
}

/// The supervisor's virtual memory (`VmSize`, kB).
fn virtual_memory(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmSize:"))
        .and_then(|size| size.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[tokio::test]
async fn the_supervisors_memory_does_not_grow_with_calls() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    // Each call runs in memory the supervisor maps for it (its stack and arena, 16 MiB
    // reserved) until it executes; the supervisor unmaps it once the call has ended.
    for _ in 0..5 {
        warm.ok("true").await;
    }
    let supervisor = warm.warm.supervisor_pid().unwrap();
    let before = virtual_memory(supervisor);
    for _ in 0..40 {
        warm.ok("true").await;
    }
    // Ended calls' memory is unmapped as their ends are seen: allow a few still in flight.
    let give_up = tokio::time::Instant::now() + Duration::from_secs(5);
    while virtual_memory(supervisor) > before + 3 * 17 * 1024 {
        assert!(
            tokio::time::Instant::now() < give_up,
            "the supervisor grew from {before} kB to {} kB over 40 calls",
            virtual_memory(supervisor)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn each_call_gets_fresh_scratch_space() {
    let _guard = shared().await;
    let warm = Warm::start().await;
    // What one call (the model's code, say) leaves in /tmp or /dev/shm is not there for the
    // next (an owner's hook, say); the workspace persists as always.
    let out = warm
        .ok(
            "echo planted > /tmp/tool-cache; echo planted > /dev/shm/seg; \
             echo kept > /workspace/kept; ls /tmp /dev/shm",
        )
        .await;
    assert_eq!(out, "/dev/shm:\nseg\n\n/tmp:\ntool-cache\n");
    let out = warm
        .ok("ls -A /tmp /dev/shm; cat /workspace/kept; echo x > /tmp/writable && echo writable")
        .await;
    assert_eq!(out, "/dev/shm:\n\n/tmp:\nkept\nwritable\n");
}

#[tokio::test]
async fn a_calls_scratch_pages_are_not_charged_to_the_next_call_in_its_cgroups() {
    let _guard = shared().await;
    if !hookbox_test_support::require_root(
        "a_calls_scratch_pages_are_not_charged_to_the_next_call_in_its_cgroups",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let sandbox = Sandbox {
        limits: hookbox_exec::Limits {
            memory_bytes: 96 << 20,
            ..hookbox_exec::Limits::default()
        },
        ..Sandbox::new(dir.path())
    };
    let warm = WarmSandbox::start(sandbox, SUPERVISOR).await.unwrap();
    // Each call fills its own /tmp with 64 MiB of its 96 MiB and ends; the next takes its
    // cgroups back from the pool. Were the previous call's /tmp still charged there when it
    // joined (its mount namespace not yet released), its own 64 MiB would not fit and the
    // kernel would kill it.
    let spec = ProcessSpec {
        die_with_parent: false,
        ..ProcessSpec::shell(
            "dd if=/dev/zero of=/tmp/fill bs=1M count=64 2>/dev/null && echo filled",
            Duration::from_secs(30),
        )
    };
    for round in 0..12 {
        let out = warm.run(&spec).await.unwrap();
        assert_eq!(
            (out.exit, out.stdout.to_text().as_str()),
            (ExitKind::Exited(0), "filled\n"),
            "round {round}: {}",
            out.stderr.to_text()
        );
    }
}

/// The kernel's landlock ABI (0 without landlock).
fn landlock_abi() -> i64 {
    // SAFETY: with a null attribute, size 0 and the VERSION flag, the call only returns a
    // number.
    #[expect(unsafe_code, reason = "the landlock version query has no safe wrapper")]
    unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0_usize,
            1_u32,
        )
    }
}

#[tokio::test]
async fn concurrent_calls_are_confined_from_each_other() {
    let _guard = shared().await;
    if landlock_abi() < 6 {
        hookbox_test_support::skip(
            "concurrent_calls_are_confined_from_each_other",
            "landlock scopes (ABI 6) are not available",
        );
        return;
    }
    let warm = Warm::start().await;
    // One call listens on an abstract Unix socket; another, running at the same time in the
    // same sandbox, may not connect to it: each call is a landlock domain of its own.
    let listen = warm.sh(
        "python3 -c '
import socket, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(\"\\0hookbox-warm-test\")
s.listen()
open(\"/workspace/listening\", \"w\").close()
s.settimeout(3)
try:
    s.accept()
    print(\"accepted\")
except socket.timeout:
    print(\"nobody\")
'",
        Duration::from_secs(30),
    );
    let connect = async {
        while !warm.workspace().join("listening").exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        warm.ok("python3 -c '
import socket
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(\"\\0hookbox-warm-test\")
    print(\"connected\")
except OSError as error:
    print(\"refused\", error.errno)
'")
            .await
    };
    let (listened, connected) = tokio::join!(listen, connect);
    assert_eq!(connected, "refused 1\n");
    assert_eq!(listened.stdout.to_text(), "nobody\n");
}
