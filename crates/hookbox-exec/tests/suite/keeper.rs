//! The keeper (`die_with_parent` on the host): nothing the program starts outlives its run, not
//! even a process that left the group with `setsid`.

use std::path::Path;
use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec, run};

use super::support::{assert_dead, read_pids, shared, temp_file};

/// A shell command that starts `sleep 100` in a new session (holding the command's stdout),
/// writes its pid to `pidfile` and waits for it to be written, then runs `rest`.
fn with_setsid_grandchild(pidfile: &Path, rest: &str) -> String {
    format!(
        "setsid sh -c 'echo $$ > {0}; exec sleep 100' & until [ -s {0} ]; do sleep 0.01; done; {rest}",
        pidfile.display()
    )
}

#[tokio::test]
async fn a_setsid_grandchild_holding_stdout_is_gone_when_the_run_returns() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let command = with_setsid_grandchild(&pidfile, "echo done");
    // Were the grandchild left alive, it would hold stdout open until this deadline, and the
    // run would end with the grandchild still running.
    let out = run(&ProcessSpec::shell(&command, Duration::from_secs(300)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0));
    assert_eq!(out.stdout.bytes, b"done\n");
    let grandchild = read_pids(&pidfile, 1).await[0];
    // Killed and reaped by the keeper before it exited: not even a zombie is left.
    assert!(
        !Path::new(&format!("/proc/{grandchild}")).exists(),
        "the setsid grandchild {grandchild} survived the run"
    );
}

#[tokio::test]
async fn the_exit_status_is_the_programs_own() {
    let _guard = shared().await;
    let spec = |command| ProcessSpec::shell(command, Duration::from_secs(30));
    assert_eq!(
        run(&spec("setsid sleep 100 & exit 7")).await.unwrap().exit,
        ExitKind::Exited(7)
    );
    assert_eq!(
        run(&spec("kill -USR1 $$")).await.unwrap().exit,
        ExitKind::Signaled(libc::SIGUSR1)
    );
}

#[tokio::test]
async fn a_timeout_kills_a_setsid_grandchild_too() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let command = with_setsid_grandchild(&pidfile, "sleep 100");
    let out = run(&ProcessSpec::shell(&command, Duration::from_secs(2)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    assert_dead(read_pids(&pidfile, 1).await[0]).await;
}

#[tokio::test]
async fn dropping_the_run_kills_a_setsid_grandchild_too() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let command = with_setsid_grandchild(&pidfile, "sleep 100");
    let spec = ProcessSpec::shell(&command, Duration::from_secs(300));
    let grandchild = tokio::select! {
        out = run(&spec) => panic!("finished early: {out:?}"),
        pids = read_pids(&pidfile, 1) => pids[0],
    };
    assert_dead(grandchild).await;
}

#[tokio::test]
async fn the_children_of_a_setsid_grandchild_are_killed_too() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    // The grandchild, in a new session, has a child of its own; once the command exits, the
    // keeper inherits the grandchild, and the grandchild's child only once that is killed.
    let command = format!(
        r#"setsid sh -c 'sleep 100 & printf "%s\n%s\n" $! $$ > {0}.tmp; mv {0}.tmp {0}; wait' & until [ -s {0} ]; do sleep 0.01; done"#,
        pidfile.display()
    );
    let out = run(&ProcessSpec::shell(&command, Duration::from_secs(300)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::Exited(0));
    for pid in read_pids(&pidfile, 2).await {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "descendant {pid} survived the run"
        );
    }
}

#[tokio::test]
async fn a_missing_program_is_a_spawn_error() {
    let _guard = shared().await;
    let spec = ProcessSpec {
        program: "hookbox-no-such-program".into(),
        args: Vec::new(),
        ..ProcessSpec::shell("", Duration::from_secs(30))
    };
    // The keeper lets the spawn succeed before it starts the program (see `keeper::run`): a
    // program it cannot start is reported on a pipe of its own, for `run` and for an
    // interactive child alike.
    let error = run(&spec).await.unwrap_err().to_string();
    assert!(
        error.contains("could not start `hookbox-no-such-program`")
            && error.contains("No such file or directory"),
        "{error}"
    );
    let error = hookbox_exec::spawn_interactive(&spec)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("could not start `hookbox-no-such-program`")
            && error.contains("No such file or directory"),
        "{error}"
    );
}

#[tokio::test]
async fn a_program_that_stops_its_keeper_still_loses_everything_at_the_timeout() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    let (_dir2, keeperfile) = temp_file("keeper");
    // The program freezes its keeper (its parent) with SIGSTOP, which no process can block,
    // then starts a setsid grandchild and waits past the timeout.
    let command = with_setsid_grandchild(
        &pidfile,
        &format!(
            "echo $PPID > {}; kill -STOP $PPID; sleep 100",
            keeperfile.display()
        ),
    );
    let out = run(&ProcessSpec::shell(&command, Duration::from_secs(2)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    assert_dead(read_pids(&pidfile, 1).await[0]).await;
    assert_dead(read_pids(&keeperfile, 1).await[0]).await;
}

#[tokio::test]
async fn a_program_that_keeps_stopping_its_keeper_loses_its_group_at_the_timeout() {
    let _guard = shared().await;
    let (_dir, pidfile) = temp_file("pids");
    // A loop in the program's group freezes the keeper again as soon as it resumes.
    let command = format!(
        "echo $PPID > {0}; (echo $(exec sh -c 'echo $PPID') >> {0}; \
         while :; do kill -STOP $PPID 2>/dev/null; done) & sleep 100",
        pidfile.display()
    );
    let out = run(&ProcessSpec::shell(&command, Duration::from_secs(2)))
        .await
        .unwrap();
    assert_eq!(out.exit, ExitKind::TimedOut);
    for pid in read_pids(&pidfile, 2).await {
        assert_dead(pid).await;
    }
}
