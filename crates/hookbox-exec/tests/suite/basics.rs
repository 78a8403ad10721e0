//! Exit codes, signals, stdin, working directory, environment, spawn failures.

use std::time::Duration;

use hookbox_exec::{ExecError, ExitKind, ProcessSpec, run};

use super::support::shared;

const LONG: Duration = Duration::from_secs(30);

#[tokio::test]
async fn exit_codes_are_reported() {
    let _guard = shared().await;
    for code in [0, 1, 3, 255] {
        let out = run(&ProcessSpec::shell(&format!("exit {code}"), LONG))
            .await
            .unwrap();
        assert_eq!(out.exit, ExitKind::Exited(code));
    }
}

#[tokio::test]
async fn a_direct_program_runs_without_a_shell() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        program: "echo".into(),
        args: vec!["a b".into(), "c".into()],
        ..ProcessSpec::shell("", LONG)
    };
    let out = run(&spec).await.unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.bytes, b"a b c\n");
    assert!(out.stderr.bytes.is_empty());
}

#[tokio::test]
async fn death_by_signal_is_signaled() {
    let _guard = shared().await;
    let out = run(&ProcessSpec::shell("kill -TERM $$", LONG))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Signaled(15));
    let out = run(&ProcessSpec::shell("kill -KILL $$", LONG))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Signaled(9));
}

#[tokio::test]
async fn stdout_and_stderr_are_kept_apart() {
    let _guard = shared().await;
    let out = run(&ProcessSpec::shell("echo out; echo err >&2; exit 4", LONG))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(4));
    assert_eq!(out.stdout.bytes, b"out\n");
    assert_eq!(out.stderr.bytes, b"err\n");
    assert!(!out.stdout.truncated() && !out.stderr.truncated());
}

#[tokio::test]
async fn stdin_round_trips_through_cat() {
    let _guard = shared().await;
    // Larger than the pipe buffers both ways: writing and reading must run concurrently.
    let payload: Vec<u8> = (0..4 * 1024 * 1024_u32).map(|i| (i % 251) as u8).collect();
    let spec = ProcessSpec {
        stdin: payload.clone(),
        output_limit: payload.len(),
        ..ProcessSpec::shell("cat", LONG)
    };
    let out = run(&spec).await.unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.bytes.len(), payload.len());
    assert!(out.stdout.bytes == payload, "cat echoed different bytes");
    assert_eq!(out.stdout.dropped, 0);
}

#[tokio::test]
async fn stdin_is_closed_after_the_payload() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        stdin: b"three\nlines\nhere".to_vec(),
        ..ProcessSpec::shell("wc -l", LONG)
    };
    let out = run(&spec).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout.bytes).trim(), "2");
}

#[tokio::test]
async fn large_stdin_to_a_child_that_ignores_it_does_not_deadlock() {
    let _guard = shared().await;
    for command in ["exit 0", "sleep 0.2; echo done", "exec 0<&-; echo closed"] {
        let spec = ProcessSpec {
            stdin: vec![b'x'; 16 * 1024 * 1024],
            ..ProcessSpec::shell(command, LONG)
        };
        let out = run(&spec).await.unwrap();
        assert_eq!(out.exit, ExitKind::Exited(0), "{command}");
    }
}

#[tokio::test]
async fn cwd_is_honoured() {
    let _guard = shared().await;
    let dir = tempfile::tempdir().unwrap();
    let spec = ProcessSpec {
        cwd: Some(dir.path().to_owned()),
        ..ProcessSpec::shell("pwd -P", LONG)
    };
    let out = run(&spec).await.unwrap();
    let expected = dir.path().canonicalize().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout.bytes).trim_end(),
        expected.to_string_lossy()
    );
}

#[tokio::test]
async fn env_is_added_to_the_inherited_environment() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        env: vec![("HOOKBOX_TEST_VAR".into(), "a value".into())],
        ..ProcessSpec::shell(
            "echo \"$HOOKBOX_TEST_VAR\"; echo \"${PATH:+inherited}\"",
            LONG,
        )
    };
    let out = run(&spec).await.unwrap();
    assert_eq!(out.stdout.bytes, b"a value\ninherited\n");
}

#[tokio::test]
async fn env_clear_starts_from_nothing() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        program: "/usr/bin/env".into(),
        args: Vec::new(),
        env_clear: true,
        env: vec![("ONLY".into(), "1".into())],
        ..ProcessSpec::shell("", LONG)
    };
    let out = run(&spec).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout.bytes), "ONLY=1\n");
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let _guard = shared().await;
    for program in [
        "/nonexistent/hookbox-program",
        "hookbox-no-such-program-on-path",
    ] {
        let spec = ProcessSpec {
            program: program.into(),
            args: Vec::new(),
            ..ProcessSpec::shell("", LONG)
        };
        match run(&spec).await {
            Err(ExecError::Spawn {
                program: reported,
                source,
            }) => {
                assert_eq!(reported, program);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected a spawn error, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_bad_cwd_is_a_spawn_error() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        cwd: Some("/nonexistent/hookbox-dir".into()),
        ..ProcessSpec::shell("true", LONG)
    };
    let err = run(&spec).await.unwrap_err();
    assert!(
        matches!(&err, ExecError::Spawn { program, .. } if program == "/bin/sh"),
        "{err:?}"
    );
    assert!(err.to_string().contains("/bin/sh"), "{err}");
}

#[tokio::test]
async fn duration_is_measured() {
    let _guard = shared().await;
    let out = run(&ProcessSpec::shell("sleep 0.1", LONG)).await.unwrap();
    assert!(
        out.duration >= Duration::from_millis(100),
        "{:?}",
        out.duration
    );
}

#[test]
fn the_run_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let spec = ProcessSpec::shell("true", LONG);
    assert_send(&run(&spec));
}
