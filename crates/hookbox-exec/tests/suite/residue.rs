//! Every warm call starts clean: whatever one call leaves behind (the model's code, say), the
//! next (an owner's hook, say) starts in the state a fresh sandbox's first call starts in,
//! except for the environment's files; and with its whole memory limit.
//!
//! A table of polluters, one line each, runs in a warm sandbox; then a probe records everything
//! a call can observe of the state it starts in (another table, one line each) and must see
//! exactly what the same probe sees in a freshly started sandbox. A new resource is one line
//! in each table. What is charged to a call's cgroups is not observable from inside (the cgroup
//! file system is not mounted there): the second test checks it by its effect, a call (or a
//! cold run) that can still allocate its whole limit after one that left a segment nearly as
//! large.

use std::time::Duration;

use hookbox_exec::{ExitKind, Limits, ProcessOutput, ProcessSpec, Sandbox, WarmSandbox};

use super::support::{SUPERVISOR, shared};

/// Python that double-forks a `setsid` daemon holding an abstract Unix socket, an inotify
/// watch, a timer (timerfd and POSIX timer), an eventfd and descriptors in flight on a socket
/// pair, and returns once the daemon has them all.
const DAEMON: &str = r#"
import ctypes, os, signal, socket, time
libc = ctypes.CDLL(None, use_errno=True)
r, w = os.pipe()
if os.fork():
    os.close(w); os.read(r, 1); os._exit(0)
os.setsid()
if os.fork(): os._exit(0)
held = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
held.bind(b"\0hookbox-residue")
watch = libc.inotify_init1(0)
libc.inotify_add_watch(watch, b"/workspace", 0xfff)
timer = libc.timerfd_create(1, 0)
libc.timerfd_settime(timer, 0, (ctypes.c_long * 4)(1, 0, 1, 0), None)
event = libc.eventfd(0, 0)
posix_timer = ctypes.c_void_p()
libc.timer_create(1, None, ctypes.byref(posix_timer))
a, b = socket.socketpair()
socket.send_fds(a, [b"x"], [watch, timer, event])
signal.signal(signal.SIGHUP, signal.SIG_IGN)
os.write(w, b"r")
time.sleep(600)
"#;

/// Python that leaves a new SysV shared memory segment of `$BYTES`, every page touched (so
/// charged to the call's memory cgroup), and never removes it.
const SHM_HOG: &str = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
size = int(os.environ["BYTES"])
id = libc.shmget(0, ctypes.c_size_t(size), 0o1600)
assert id >= 0, os.strerror(ctypes.get_errno())
address = libc.shmat(id, None, 0)
assert address not in (None, ctypes.c_void_p(-1).value), os.strerror(ctypes.get_errno())
ctypes.memset(address, 1, size)
print("left", size)
"#;

/// What a call may try to leave for the next, one line each: what, and the shell command
/// that tries (its exit status does not matter: some are refused, which is fine).
const POLLUTERS: &[(&str, &str)] = &[
    ("SysV shared memory", "ipcmk -M 65536"),
    (
        "SysV shared memory, touched",
        "BYTES=16777216 python3 -c \"$SHM_HOG\"",
    ),
    ("SysV semaphores", "ipcmk -S 4"),
    ("SysV message queue", "ipcmk -Q"),
    (
        "POSIX message queue",
        "python3 -c 'import ctypes, os; print(ctypes.CDLL(None).mq_open(b\"/hookbox-residue\", \
         os.O_CREAT | os.O_RDWR, 0o600, None))'",
    ),
    ("/dev/shm file", "echo left > /dev/shm/residue"),
    ("/tmp file", "echo left > /tmp/residue"),
    (
        "daemon: abstract socket, inotify, timers, descriptors in flight",
        "python3 -c \"$DAEMON\" </dev/null >/dev/null 2>&1",
    ),
    (
        "processes: setsid, nohup, background",
        "setsid sleep 600 </dev/null >/dev/null 2>&1 & \
         nohup sleep 600 </dev/null >/dev/null 2>&1 & \
         (sleep 600 &) </dev/null >/dev/null 2>&1",
    ),
    ("rlimits", "ulimit -n 64; ulimit -s 1024; ulimit -c 0"),
    ("umask", "umask 077"),
    (
        "personality",
        "python3 -c 'import ctypes; print(ctypes.CDLL(None).personality(0x0040000))'",
    ),
    (
        "IPC limits",
        "echo 1 > /proc/sys/kernel/shmmni; echo 1 > /proc/sys/kernel/msgmni",
    ),
    ("host name", "hostname residue"),
    ("environment", "export LEFT=1"),
];

/// What a call can observe of the state it starts in, one line each: what, and the shell
/// command that prints it (the same in any fresh sandbox).
const OBSERVATIONS: &[(&str, &str)] = &[
    ("SysV shared memory", "cat /proc/sysvipc/shm"),
    ("SysV semaphores", "cat /proc/sysvipc/sem"),
    ("SysV message queues", "cat /proc/sysvipc/msg"),
    (
        "POSIX message queue",
        "python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); \
         fd = libc.mq_open(b\"/hookbox-residue\", os.O_RDONLY); \
         print(fd >= 0 or os.strerror(ctypes.get_errno()))'",
    ),
    ("scratch files", "ls -A /tmp /dev/shm"),
    (
        "abstract Unix sockets",
        "grep -o '@.*' /proc/net/unix | sort",
    ),
    ("processes in the call namespace", "echo /proc/[0-9]*"),
    (
        "descriptors of pid 1, with their kinds",
        "for fd in /proc/1/fd/*; do echo \"${fd##*/} $(readlink $fd | sed 's/:.*//')\"; done",
    ),
    (
        "inotify watches, timers, eventfds",
        "cat /proc/1/fdinfo/* | grep -v -e ^pos: -e ^flags: -e ^mnt_id: -e ^ino:",
    ),
    ("rlimits", "ulimit -a"),
    ("umask", "umask"),
    ("personality", "cat /proc/self/personality"),
    (
        "IPC limits",
        "cat /proc/sys/kernel/shmmni /proc/sys/kernel/msgmni /proc/sys/kernel/shmmax \
         /proc/sys/fs/mqueue/queues_max",
    ),
    ("identity and host name", "id; uname -n"),
    ("environment", "env | sort"),
    (
        "confinement",
        "grep -e ^Cap -e NoNewPrivs -e Seccomp /proc/self/status",
    ),
    ("mount points", "cut -d' ' -f5 /proc/self/mountinfo"),
];

/// A warm sandbox over a fresh root with a `workspace`, with `limits`.
async fn start(limits: Limits) -> (tempfile::TempDir, WarmSandbox) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let sandbox = Sandbox {
        limits,
        ..Sandbox::new(dir.path())
    };
    let warm = WarmSandbox::start(sandbox, SUPERVISOR).await.unwrap();
    (dir, warm)
}

/// Runs `command` as one call of `warm` with the polluters' programs in its environment.
async fn call(warm: &WarmSandbox, command: &str) -> ProcessOutput {
    let spec = ProcessSpec {
        env: vec![
            ("DAEMON".into(), DAEMON.into()),
            ("SHM_HOG".into(), SHM_HOG.into()),
        ],
        ..ProcessSpec::shell(command, Duration::from_secs(60))
    };
    warm.run(&spec).await.unwrap()
}

/// What the probe observes in a call of `warm`: each observation's name, then what it
/// printed.
async fn probe(warm: &WarmSandbox) -> String {
    let script: String = OBSERVATIONS
        .iter()
        .map(|(what, command)| format!("echo '== {what}'; ( {command} ) 2>&1\n"))
        .collect();
    let out = call(warm, &script).await;
    assert_eq!(out.exit, ExitKind::Exited(0), "{}", out.stderr.to_text());
    out.stdout.to_text()
}

#[tokio::test]
async fn a_call_starts_in_the_state_of_a_fresh_sandbox_whatever_the_calls_before_it_left() {
    let _guard = shared().await;
    let (_fresh_dir, fresh) = start(Limits::default()).await;
    let expected = probe(&fresh).await;
    drop(fresh);

    let (_dir, warm) = start(Limits::default()).await;
    for (what, command) in POLLUTERS {
        let out = call(&warm, command).await;
        assert!(
            !matches!(out.exit, ExitKind::TimedOut),
            "polluter `{what}` timed out"
        );
    }
    let observed = probe(&warm).await;
    let sections = |probe: &str| -> Vec<String> { probe.split("== ").map(str::to_owned).collect() };
    let differences: Vec<String> = sections(&observed)
        .into_iter()
        .zip(sections(&expected))
        .filter(|(observed, expected)| observed != expected)
        .map(|(observed, expected)| format!("after the polluters: {observed}fresh: {expected}"))
        .collect();
    assert!(
        differences.is_empty() && observed == expected,
        "a call after the polluters sees what a fresh sandbox's does not:\n{}",
        differences.join("\n")
    );
}

#[tokio::test]
async fn every_run_gets_its_whole_memory_limit_after_runs_that_left_segments_of_it() {
    let _guard = shared().await;
    if !hookbox_test_support::require_root(
        "every_run_gets_its_whole_memory_limit_after_runs_that_left_segments_of_it",
    ) {
        return;
    }
    let (_dir, warm) = start(Limits {
        memory_bytes: 128 << 20,
        ..Limits::default()
    })
    .await;
    let bytes = 96 << 20;
    // Each run first takes most of its limit (a file in /dev/shm, charged like any memory,
    // as an owner's hook may need it), gives it back, then leaves a new segment as large (as
    // the model's code may). Were a segment left by an earlier run still charged to the
    // cgroup a later run starts in, the kernel would kill that run when it fills its file.
    // Warm calls of one sandbox, and cold runs in the same root (whose cgroups are pooled).
    let command = format!(
        "head -c {bytes} /dev/zero > /dev/shm/fill && rm /dev/shm/fill && echo allocated && \
         BYTES={bytes} python3 -c \"$SHM_HOG\""
    );
    let cold = ProcessSpec {
        env: vec![("SHM_HOG".into(), SHM_HOG.into())],
        sandbox: Some(warm.sandbox().clone()),
        ..ProcessSpec::shell(&command, Duration::from_secs(60))
    };
    for round in 0..8 {
        let warm_out = call(&warm, &command).await;
        let cold_out = hookbox_exec::run(&cold).await.unwrap();
        for (mode, out) in [("warm", warm_out), ("cold", cold_out)] {
            assert_eq!(
                (out.exit, out.stdout.to_text()),
                (ExitKind::Exited(0), format!("allocated\nleft {bytes}\n")),
                "{mode} round {round}: a run could not use its whole memory limit: {}",
                out.stderr.to_text()
            );
        }
    }
}
