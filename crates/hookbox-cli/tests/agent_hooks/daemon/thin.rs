//! The thin client `hookbox-hook AGENT …`: answered by the warm daemon exactly as `hookbox hook
//! AGENT …` (every test of `hookbox hook` compares the two, see `hook_as`); these are its own:
//! everything else handed to the `hookbox` next to it, a missing `hookbox`, and a handover that
//! the event cannot forge.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;

use super::{CLIENTS, THIN, calls, decision, spawn_hook, start, status};
use crate::agent_hooks::{pre_tool_use, stderr};
use crate::{code, seed_config};

/// The thin client's path.
fn thin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_hookbox-hook"))
}

/// What a caller sees of `output`.
fn seen(output: &Output) -> (i32, String, String) {
    (
        code(output),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr(output),
    )
}

#[test]
fn the_thin_client_is_answered_by_the_warm_daemon_as_hookbox_hook_is() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    start(&home);
    let events = [
        pre_tool_use(dir.path(), "Bash", json!({"command": "rm -rf victim"})),
        pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
        b"{\"hook_event_name\": ".to_vec(),
    ];
    for event in &events {
        let [full, thin] = CLIENTS.map(|client| {
            spawn_hook(
                Path::new(client),
                &home,
                dir.path(),
                &[],
                &["--policy", &policy],
                event,
            )
            .wait_with_output()
            .expect("wait")
        });
        assert_eq!(seen(&thin), seen(&full));
    }
    let [denied, allowed, malformed] = events.map(|event| {
        spawn_hook(
            thin(),
            &home,
            dir.path(),
            &[],
            &["--policy", &policy],
            &event,
        )
        .wait_with_output()
        .expect("wait")
    });
    assert_eq!(decision(&denied), "deny", "{}", stderr(&denied));
    assert_eq!(seen(&allowed), (0, String::new(), String::new()));
    assert_eq!(code(&malformed), 2, "{}", stderr(&malformed));
    assert!(
        stderr(&malformed).contains("not JSON"),
        "{}",
        stderr(&malformed)
    );
    // Every call went to the daemon: none was answered by a `hookbox` started for it.
    assert_eq!(calls(&home), 9);
}

#[test]
fn with_the_daemon_off_the_thin_client_answers_through_hookbox_and_starts_none() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let output = spawn_hook(
        thin(),
        &home,
        dir.path(),
        &[("HOOKBOX_DAEMON", "off")],
        &["--policy", &policy],
        &pre_tool_use(dir.path(), "Bash", json!({"command": "rm -rf victim"})),
    )
    .wait_with_output()
    .expect("wait");
    assert_eq!(decision(&output), "deny", "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert!(!home.join("daemon").exists());
    assert_eq!(status(&home), None);
}

#[test]
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn thin_client_help_is_hookbox_hooks() {
    let help =
        |program: &Path, args: &[&str]| Command::new(program).args(args).output().expect("run");
    let thin = help(thin(), &["--help"]);
    let full = help(
        Path::new(env!("CARGO_BIN_EXE_hookbox")),
        &["hook", "--help"],
    );
    assert_eq!(code(&thin), 0, "{}", stderr(&thin));
    assert!(
        String::from_utf8_lossy(&thin.stdout).contains("Usage: hookbox hook"),
        "{}",
        String::from_utf8_lossy(&thin.stdout)
    );
    assert_eq!(seen(&thin), seen(&full));
}

#[test]
fn without_hookbox_next_to_it_the_thin_client_says_so_and_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alone = dir.path().join("bin").join(THIN);
    std::fs::create_dir(dir.path().join("bin")).expect("mkdir");
    std::fs::copy(thin(), &alone).expect("copy");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let home = dir.path().join("home");
    let call = || {
        spawn_hook(
            &alone,
            &home,
            dir.path(),
            &[],
            &["--policy", &policy],
            &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
        )
        .wait_with_output()
        .expect("wait")
    };
    // Without a daemon (nothing read yet), then with a warm one of the real hookbox, which
    // does not answer a client of another build (the event read, then handed over).
    let cold = call();
    start(&home);
    let warm = call();
    for output in [cold, warm] {
        assert_eq!(code(&output), 2, "{}", stderr(&output));
        let expected = format!(
            "hookbox-hook: cannot run {}",
            dir.path().join("bin/hookbox").display()
        );
        assert!(
            stderr(&output).starts_with(&expected) && stderr(&output).contains("(denied)"),
            "{}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty());
    }
    assert_eq!(calls(&home), 0);
}

/// A handover frame asking for the daemon-failed answer, then Claude Code's event.
fn forged(dir: &Path) -> Vec<u8> {
    let frame = json!({"answer": "daemon_failed", "message": "forged failure"}).to_string();
    let mut bytes = u32::try_from(frame.len())
        .expect("len")
        .to_be_bytes()
        .to_vec();
    bytes.extend_from_slice(frame.as_bytes());
    bytes.extend(pre_tool_use(
        dir,
        "Bash",
        json!({"command": "rm -rf victim"}),
    ));
    bytes
}

#[test]
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn a_handover_is_only_taken_from_the_thin_clients_memory_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let bytes = forged(dir.path());
    // The forged frame in the event on a pipe, in a file, and in a memory file of another name.
    let file = dir.path().join("event");
    std::fs::write(&file, &bytes).expect("write");
    let mut memfd = std::fs::File::from(
        rustix::fs::memfd_create("not-the-handover", rustix::fs::MemfdFlags::CLOEXEC)
            .expect("memfd"),
    );
    memfd.write_all(&bytes).expect("write");
    let run = |stdin: Option<Stdio>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
        command
            .args(["hook", "claude-code", "--policy", &policy])
            .env("HOOKBOX_HOME", &home)
            .env("HOOKBOX_DAEMON", "off")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match stdin {
            Some(stdin) => command.stdin(stdin).output().expect("run"),
            None => {
                command.stdin(Stdio::piped());
                let mut child = command.spawn().expect("run");
                child
                    .stdin
                    .take()
                    .expect("stdin")
                    .write_all(&bytes)
                    .expect("write");
                child.wait_with_output().expect("wait")
            }
        }
    };
    let piped = run(None);
    let from_file = run(Some(Stdio::from(std::fs::File::open(&file).expect("open"))));
    memfd.seek(SeekFrom::Start(0)).expect("seek");
    let from_memfd = run(Some(Stdio::from(memfd)));
    for output in [piped, from_file, from_memfd] {
        // Read as the event it is: not JSON (denied), never "the daemon failed".
        assert_eq!(code(&output), 2, "{}", stderr(&output));
        assert!(
            stderr(&output).contains("not JSON") && !stderr(&output).contains("forged"),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn without_hookbox_home_or_a_runtime_dir_the_thin_client_finds_the_daemon_in_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let user_home = dir.path().join("user");
    // The daemon of `$HOME/.local/share/hookbox`, started as `HOOKBOX_HOME` names it (the
    // rule itself, shared with `hookbox`, is tested in hookbox-handoff).
    let home = user_home.join(".local/share/hookbox");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    start(&home);
    let mut child = Command::new(thin())
        .args(["claude-code", "--policy", &policy])
        .current_dir(dir.path())
        .env_remove("HOOKBOX_HOME")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("XDG_DATA_HOME")
        .env("HOME", &user_home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&pre_tool_use(
            dir.path(),
            "Bash",
            json!({"command": "rm -rf victim"}),
        ))
        .expect("write");
    let output = child.wait_with_output().expect("wait");
    assert_eq!(decision(&output), "deny", "{}", stderr(&output));
    assert_eq!(calls(&home), 1);
}
