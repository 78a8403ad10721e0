//! Warm Python interpreters (`PythonZygotes`): a run forked from a zygote gets what a cold
//! `python3 SCRIPT` run gets and answers the same, starts from the zygote's state (never a
//! previous run's), and leaves nothing behind (timeout, `setsid` grandchildren). The first run
//! of an interpreter starts its zygote in the background and is left to a cold run, so the
//! tests start it first. Each test holds the exclusive lock: its zygote is a child of this
//! process until the test ends.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hookbox_exec::{ExecError, ExitKind, ProcessOutput, ProcessSpec, PythonZygotes, run};

use super::support::{assert_dead, exclusive, read_pids};

/// The `python3` on this process's `PATH`.
fn python3() -> PathBuf {
    std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|dir| dir.join("python3"))
        .find(|path| path.is_file())
        .unwrap()
}

/// `python3 SCRIPT ARGS…` where SCRIPT holds `source`, in `dir`, with a small environment.
fn spec(dir: &Path, source: &str, args: &[&str], timeout: Duration) -> ProcessSpec {
    let script = dir.join("hook.py");
    std::fs::write(&script, source).unwrap();
    ProcessSpec {
        program: python3().into_os_string(),
        args: std::iter::once(script.into_os_string())
            .chain(args.iter().map(OsString::from))
            .collect(),
        cwd: Some(dir.to_path_buf()),
        env_clear: true,
        env: vec![
            ("PATH".into(), std::env::var_os("PATH").unwrap()),
            ("HOOKBOX_TEST_MARK".into(), "marked".into()),
        ],
        stdin: b"{\"tool\": \"Bash\"}".to_vec(),
        ..ProcessSpec::shell("", timeout)
    }
}

/// `spec` run warm, its zygote started first (a run never waits for one).
async fn warm(zygotes: &PythonZygotes, spec: &ProcessSpec) -> ProcessOutput {
    assert!(zygotes.prepare(spec).await);
    zygotes.run(spec).await.unwrap().unwrap()
}

#[tokio::test]
async fn a_warm_run_answers_as_a_cold_one() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let zygotes = PythonZygotes::new();
    let spec = spec(
        dir.path(),
        "import json, os, sys\n\
         data = sys.stdin.read()\n\
         print(json.dumps({'argv': sys.argv, 'stdin': data, 'cwd': os.getcwd(), \
         'mark': os.environ.get('HOOKBOX_TEST_MARK'), 'path0': sys.path[0], 'name': __name__}))\n\
         sys.stderr.write('to stderr\\n')\n\
         sys.exit(3)\n",
        &["--flag", "a=b"],
        Duration::from_secs(60),
    );
    let cold = run(&spec).await.unwrap();
    for _ in 0..2 {
        let warm = warm(&zygotes, &spec).await;
        assert_eq!(warm.exit, ExitKind::Exited(3));
        assert_eq!(
            (warm.stdout.to_text(), warm.stderr.to_text()),
            (cold.stdout.to_text(), cold.stderr.to_text())
        );
    }
    // An uncaught exception: exit code 1 and the same traceback.
    let raising = ProcessSpec {
        args: spec.args[..1].to_vec(),
        ..spec.clone()
    };
    std::fs::write(&raising.args[0], "x = 1\nraise ValueError('no')\n").unwrap();
    let (cold, raised) = (run(&raising).await.unwrap(), warm(&zygotes, &raising).await);
    assert_eq!(raised.exit, ExitKind::Exited(1));
    assert_eq!(raised.stderr.to_text(), cold.stderr.to_text());
    // A script that does not compile: no traceback, as a cold run prints it.
    std::fs::write(&raising.args[0], "x = 1\n  y = 2\n").unwrap();
    let (cold, broken) = (run(&raising).await.unwrap(), warm(&zygotes, &raising).await);
    assert_eq!(broken.exit, ExitKind::Exited(1));
    assert_eq!(broken.stderr.to_text(), cold.stderr.to_text());
    // The end of the interpreter: non-daemon threads joined, atexit handlers run, output and
    // files left open flushed, `sys.exit(MESSAGE)`.
    std::fs::write(
        &raising.args[0],
        "import atexit, sys, threading, time\n\
         atexit.register(lambda: print('at exit'))\n\
         sys.modules['atexit'].kept = open('left-open.txt', 'w')\n\
         sys.modules['atexit'].kept.write('unflushed')\n\
         threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n\
         print('main', end='')\n\
         sys.exit('bye')\n",
    )
    .unwrap();
    let left_open = dir.path().join("left-open.txt");
    let cold = run(&raising).await.unwrap();
    assert_eq!(std::fs::read_to_string(&left_open).unwrap(), "unflushed");
    std::fs::remove_file(&left_open).unwrap();
    let ended = warm(&zygotes, &raising).await;
    assert_eq!(std::fs::read_to_string(&left_open).unwrap(), "unflushed");
    assert_eq!(ended.exit, ExitKind::Exited(1));
    assert_eq!(
        (ended.stdout.to_text(), ended.stderr.to_text()),
        (cold.stdout.to_text(), cold.stderr.to_text())
    );
    assert_eq!(ended.stdout.to_text(), "mainthread\nat exit\n");
}

#[tokio::test]
async fn a_run_that_changes_global_state_leaves_the_next_one_untouched() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let zygotes = PythonZygotes::new();
    let poison = spec(
        dir.path(),
        "import builtins, json, os, sys\n\
         json.dumps = lambda *a, **k: 'poisoned'\n\
         sys.modules['os'] = None\n\
         sys.path.insert(0, '/poisoned')\n\
         builtins.open = None\n\
         os.environ['HOOKBOX_TEST_MARK'] = 'poisoned'\n\
         print(json.dumps({}))\n",
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(warm(&zygotes, &poison).await.stdout.to_text(), "poisoned\n");
    let check = spec(
        dir.path(),
        "import builtins, json, os, sys\n\
         print(json.dumps([sys.modules['os'] is not None, '/poisoned' in sys.path, \
         builtins.open is not None, os.environ['HOOKBOX_TEST_MARK']]))\n",
        &[],
        Duration::from_secs(60),
    );
    assert_eq!(
        warm(&zygotes, &check).await.stdout.to_text(),
        "[true, false, true, \"marked\"]\n"
    );
}

#[tokio::test]
async fn a_run_past_its_timeout_is_killed_with_what_it_started() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let zygotes = PythonZygotes::new();
    let spec = spec(
        dir.path(),
        "import os, subprocess, sys, time\n\
         child = subprocess.Popen(['sleep', '100'], start_new_session=True)\n\
         with open(sys.argv[1], 'w') as f: f.write('%d\\n%d\\n' % (os.getpid(), child.pid))\n\
         time.sleep(100)\n",
        &[pids.to_str().unwrap()],
        Duration::from_secs(2),
    );
    let out = warm(&zygotes, &spec).await;
    assert_eq!(out.exit, ExitKind::TimedOut);
    for pid in read_pids(&pids, 2).await {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn a_setsid_grandchild_holding_stdout_does_not_outlive_its_run() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let zygotes = PythonZygotes::new();
    // Were the grandchild left alive, it would hold stdout open until this deadline.
    let spec = spec(
        dir.path(),
        "import subprocess, sys\n\
         child = subprocess.Popen(['sleep', '100'], start_new_session=True)\n\
         with open(sys.argv[1], 'w') as f: f.write('%d\\n' % child.pid)\n\
         print('done')\n",
        &[pids.to_str().unwrap()],
        Duration::from_secs(300),
    );
    let out = warm(&zygotes, &spec).await;
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.to_text(), "done\n");
    let grandchild = read_pids(&pids, 1).await[0];
    // Killed and reaped by the keeper before it reported: not even a zombie is left.
    assert!(
        !Path::new(&format!("/proc/{grandchild}")).exists(),
        "the setsid grandchild {grandchild} survived the run"
    );
}

#[tokio::test]
async fn output_is_capped_and_failures_to_start_are_reported_as_cold() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let zygotes = PythonZygotes::new();
    let loud = ProcessSpec {
        output_limit: 1000,
        ..spec(
            dir.path(),
            "import sys\nsys.stdout.write('x' * 4000000)\n",
            &[],
            Duration::from_secs(60),
        )
    };
    let out = warm(&zygotes, &loud).await;
    assert_eq!(
        (out.stdout.bytes.len(), out.stdout.dropped),
        (1000, 3_999_000)
    );
    // A script that is not there: Python's own exit code.
    let missing = ProcessSpec {
        args: vec![dir.path().join("missing.py").into_os_string()],
        ..loud.clone()
    };
    let (cold, warm) = (run(&missing).await.unwrap(), warm(&zygotes, &missing).await);
    assert_eq!(
        (warm.exit, cold.exit),
        (ExitKind::Exited(2), ExitKind::Exited(2))
    );
    assert!(
        warm.stderr.to_text().contains("can't open file"),
        "{warm:?}"
    );
    // A working directory that is not there: a spawn error, as a cold run's.
    let nowhere = ProcessSpec {
        cwd: Some(dir.path().join("nowhere")),
        ..loud.clone()
    };
    let error = zygotes.run(&nowhere).await.expect("used");
    assert!(matches!(error, Err(ExecError::Spawn { .. })), "{error:?}");
    assert!(matches!(run(&nowhere).await, Err(ExecError::Spawn { .. })));
}

#[tokio::test]
async fn a_program_that_is_not_a_python_interpreter_is_left_to_a_cold_run() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let zygotes = PythonZygotes::new();
    let spec = ProcessSpec {
        program: "/bin/true".into(),
        ..spec(dir.path(), "print(1)\n", &[], Duration::from_secs(60))
    };
    assert!(!zygotes.prepare(&spec).await);
    assert!(zygotes.run(&spec).await.is_none());
}

#[tokio::test]
async fn dropping_a_run_kills_the_script_and_what_it_started() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let pids = dir.path().join("pids");
    let zygotes = PythonZygotes::new();
    let spec = spec(
        dir.path(),
        "import os, subprocess, sys, time\n\
         child = subprocess.Popen(['sleep', '100'], start_new_session=True)\n\
         with open(sys.argv[1], 'w') as f: f.write('%d\\n%d\\n' % (os.getpid(), child.pid))\n\
         time.sleep(100)\n",
        &[pids.to_str().unwrap()],
        Duration::from_secs(300),
    );
    assert!(zygotes.prepare(&spec).await);
    let started = tokio::select! {
        out = zygotes.run(&spec) => panic!("finished early: {out:?}"),
        pids = read_pids(&pids, 2) => pids,
    };
    for pid in started {
        assert_dead(pid).await;
    }
}

#[tokio::test]
async fn the_seeds_gates_decide_the_same_warm_and_cold() {
    let _guard = exclusive().await;
    let dir = tempfile::tempdir().unwrap();
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seeds");
    let zygotes = PythonZygotes::new();
    for (script, args) in [
        (
            "gate.py",
            [r#"{"code": "rm -rf victim"}"#, r#"{"code": "ls"}"#],
        ),
        (
            "check_privacy.py",
            [
                r#"{"path": "/data/private/x"}"#,
                r#"{"path": "/data/public/x"}"#,
            ],
        ),
    ] {
        for args in args {
            let event = format!(
                r#"{{"event": "pre_tool_execution", "tool_call": {{"name": "t", "args": {args}}}}}"#
            );
            let spec = ProcessSpec {
                args: vec![seeds.join(script).into_os_string()],
                cwd: Some(seeds.clone()),
                stdin: event.into_bytes(),
                ..spec(dir.path(), "", &[], Duration::from_secs(60))
            };
            let (cold, warm) = (run(&spec).await.unwrap(), warm(&zygotes, &spec).await);
            assert_eq!(warm.exit, ExitKind::Exited(0), "{warm:?}");
            assert_eq!(
                (warm.stdout.to_text(), warm.stderr.to_text()),
                (cold.stdout.to_text(), cold.stderr.to_text())
            );
            assert!(warm.stdout.to_text().contains("decision"), "{warm:?}");
        }
    }
}
