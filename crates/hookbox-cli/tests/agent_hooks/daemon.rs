//! `hookbox daemon`: the per-user daemon that answers `hookbox hook` calls. Every test of
//! `hookbox hook` runs both ways (see `hook_as`); these are the daemon's own: its socket's
//! safety, a policy changed between calls, a hung hook, a daemon killed mid-call, another
//! build, the caller's working directory and environment, and the idle exit.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::{Value, json};

use super::{pre_tool_use, script_hook, stderr};
use crate::{code, hookbox_in, seed_config, spawn_copied, stdout_json, write};

mod thin;

/// The thin client's name.
const THIN: &str = "hookbox-hook";

/// Both clients: `hookbox` (`hookbox hook …`) and the thin client `hookbox-hook`.
const CLIENTS: [&str; 2] = [
    env!("CARGO_BIN_EXE_hookbox"),
    env!("CARGO_BIN_EXE_hookbox-hook"),
];

/// Starts the daemon of `home` unless it runs, and waits until it answers.
pub(super) fn start(home: &Path) {
    let output = hookbox_in(home, &["daemon", "start"], b"");
    assert_eq!(code(&output), 0, "daemon start: {}", stderr(&output));
}

/// The daemon's status line, `None` when it does not run.
fn status(home: &Path) -> Option<String> {
    let output = hookbox_in(home, &["daemon", "status"], b"");
    match code(&output) {
        0 => Some(String::from_utf8_lossy(&output.stdout).into_owned()),
        3 => None,
        _ => panic!("daemon status: {}", stderr(&output)),
    }
}

/// The running daemon's pid.
fn pid(home: &Path) -> i32 {
    let line = status(home).expect("the daemon runs");
    line.split("pid ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in {line}"))
}

/// The number of calls the running daemon answered.
fn calls(home: &Path) -> u64 {
    let line = status(home).expect("the daemon runs");
    line.split(", ")
        .find_map(|part| part.strip_suffix(" calls answered"))
        .and_then(|calls| calls.parse().ok())
        .unwrap_or_else(|| panic!("no calls in {line}"))
}

/// `hookbox hook claude-code EXTRA…` from `program` (`hookbox-hook claude-code EXTRA…` when it
/// is the thin client) in `cwd` with `vars`, `event` on stdin, not waited for.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn spawn_hook(
    program: &Path,
    home: &Path,
    cwd: &Path,
    vars: &[(&str, &str)],
    extra: &[&str],
    event: &[u8],
) -> Child {
    let mut command = Command::new(program);
    if program.file_name() != Some(THIN.as_ref()) {
        command.arg("hook");
    }
    command
        .arg("claude-code")
        .args(extra)
        .current_dir(cwd)
        .env("HOOKBOX_HOME", home)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .envs(vars.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_copied(&mut command).expect("run hookbox");
    // A client that cannot answer (no `hookbox` next to it) exits before reading stdin.
    match child.stdin.take().expect("stdin").write_all(event) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        written => written.expect("write stdin"),
    }
    child
}

/// `hookbox hook claude-code --policy POLICY` on Claude Code's `Bash` `command`, answered by
/// the daemon of `home` (started first).
fn bash_by_daemon(home: &Path, dir: &Path, policy: &str, command: &str) -> Output {
    start(home);
    spawn_hook(
        Path::new(env!("CARGO_BIN_EXE_hookbox")),
        home,
        dir,
        &[],
        &["--policy", policy],
        &pre_tool_use(dir, "Bash", json!({"command": command})),
    )
    .wait_with_output()
    .expect("wait for hookbox")
}

/// Waits until `done` holds; a generous bound (not a timing assertion) turns a hang into a
/// failure naming `what`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !done() {
        assert!(
            std::time::Instant::now() < deadline,
            "still waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Waits until `path` exists.
fn wait_for(path: &Path) {
    wait_until(&path.display().to_string(), || path.exists());
}

fn decision(output: &Output) -> Value {
    stdout_json(output)["hookSpecificOutput"]["permissionDecision"].clone()
}

#[test]
fn the_daemon_answers_in_a_private_directory_and_stops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    assert_eq!(status(&home), None);
    let denied = bash_by_daemon(&home, dir.path(), &policy, "rm -rf victim");
    assert_eq!(decision(&denied), "deny", "{}", stderr(&denied));
    assert_eq!(calls(&home), 1);
    let mode = |path: PathBuf| std::fs::metadata(path).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode(home.join("daemon")), 0o700);
    assert_eq!(mode(home.join("daemon/hook.sock")), 0o600);
    let stopped = hookbox_in(&home, &["daemon", "stop"], b"");
    assert_eq!(code(&stopped), 0, "{}", stderr(&stopped));
    assert_eq!(status(&home), None);
}

#[test]
fn the_first_call_starts_the_daemon_and_answers_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    for (n, client) in CLIENTS.iter().enumerate() {
        let home = dir.path().join(format!("home-{n}"));
        // The thin client hands this call, its stdin untouched, to hookbox, which answers it.
        let first = spawn_hook(
            Path::new(client),
            &home,
            dir.path(),
            &[],
            &["--policy", &policy],
            &pre_tool_use(dir.path(), "Bash", json!({"command": "rm -rf victim"})),
        )
        .wait_with_output()
        .expect("wait");
        assert_eq!(decision(&first), "deny", "{client}: {}", stderr(&first));
        // Nothing was wrong: no note on stderr.
        assert_eq!(stderr(&first), "", "{client}");
        wait_for(&home.join("daemon/hook.sock"));
        start(&home);
        hookbox_in(&home, &["daemon", "stop"], b"");
    }
}

#[test]
fn a_policy_changed_between_two_calls_is_honoured_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    // Two policies of the same size, written over each other in place.
    let policy_with = |decision: &str, reason: &str| {
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": format!("cat > /dev/null; echo '{{\"hookSpecificOutput\": {{\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"{decision}\", \"permissionDecisionReason\": \"{reason}\"}}}}'")}]}]}})
        .to_string()
    };
    let (allowing, denying) = (
        policy_with("allow", "allowed"),
        policy_with("deny", "denied!!"),
    );
    assert_eq!(allowing.len(), denying.len());
    let policy = dir.path().join("policy.json").display().to_string();
    std::fs::write(&policy, &allowing).expect("write");
    let first = bash_by_daemon(&home, dir.path(), &policy, "ls");
    assert_eq!(decision(&first), "allow", "{}", stderr(&first));
    std::fs::write(&policy, &denying).expect("rewrite");
    let second = bash_by_daemon(&home, dir.path(), &policy, "ls");
    assert_eq!(decision(&second), "deny", "{}", stderr(&second));
    // A policy that now has an error blocks at once too.
    std::fs::write(&policy, "{\"hooks\": {\"PreToolUse\": 1}}").expect("break");
    let broken = bash_by_daemon(&home, dir.path(), &policy, "ls");
    assert_eq!(code(&broken), 2, "{}", stderr(&broken));
    assert_eq!(calls(&home), 3);
}

#[test]
fn a_policy_changed_long_after_it_was_written_is_honoured_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let policy = dir.path().join("policy.json").display().to_string();
    let gate = |reason: &str| {
        json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
            {"type": "command", "command": format!("cat > /dev/null; echo '{{\"decision\": \"deny\", \"reason\": \"{reason}\"}}'")}]}]}})
        .to_string()
    };
    let reason = |output: &Output| {
        stdout_json(output)["hookSpecificOutput"]["permissionDecisionReason"].clone()
    };
    std::fs::write(&policy, gate("old")).expect("write");
    // Old enough for the daemon to check the file by its stamp (not its bytes) next time.
    std::thread::sleep(std::time::Duration::from_secs(3));
    for _ in 0..2 {
        let output = bash_by_daemon(&home, dir.path(), &policy, "ls");
        assert_eq!(reason(&output), "old", "{}", stderr(&output));
    }
    // Same size, same inode, written in place.
    std::fs::write(&policy, gate("new")).expect("rewrite");
    let output = bash_by_daemon(&home, dir.path(), &policy, "ls");
    assert_eq!(reason(&output), "new", "{}", stderr(&output));
    assert_eq!(calls(&home), 3);
}

#[test]
fn command_hooks_get_the_callers_working_directory_and_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    // Denies with the hook's working directory and the caller's HOOKBOX_TEST_VALUE as reason.
    let hook = script_hook(
        dir.path(),
        "where.sh",
        "cat > /dev/null\nprintf '{\"decision\":\"deny\",\"reason\":\"%s %s\"}' \"$(pwd)\" \"$HOOKBOX_TEST_VALUE\"\n",
    );
    let policy = write(
        dir.path(),
        "where.json",
        &json!({"where": {"pre_tool_execution": [{"matcher": "*", "hooks": [hook]}]}}),
    );
    start(&home);
    for (name, value) in [("one", "first caller"), ("two", "second caller")] {
        let cwd = dir.path().join(name);
        std::fs::create_dir_all(&cwd).expect("cwd");
        let cwd = cwd.canonicalize().expect("canonical");
        // The event names no cwd: the caller's is the hooks'.
        let mut event =
            serde_json::from_slice::<Value>(&pre_tool_use(&cwd, "Bash", json!({"command": "ls"})))
                .expect("event");
        event.as_object_mut().expect("object").remove("cwd");
        let output = spawn_hook(
            Path::new(env!("CARGO_BIN_EXE_hookbox")),
            &home,
            &cwd,
            &[("HOOKBOX_TEST_VALUE", value)],
            &["--policy", &policy],
            event.to_string().as_bytes(),
        )
        .wait_with_output()
        .expect("wait");
        assert_eq!(
            stdout_json(&output)["hookSpecificOutput"]["permissionDecisionReason"],
            format!("{} {value}", cwd.display()),
            "{}",
            stderr(&output)
        );
    }
    assert_eq!(calls(&home), 2);
}

#[test]
fn a_hung_hook_does_not_hold_up_other_calls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let started = dir.path().join("started");
    let hung = write(
        dir.path(),
        "hung.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
            "command": format!("touch {}; sleep 120", started.display()), "timeout": 300}]}]}}),
    );
    let gate = seed_config(dir.path(), "security-gate.hooks.json");
    start(&home);
    let mut hanging = spawn_hook(
        Path::new(env!("CARGO_BIN_EXE_hookbox")),
        &home,
        dir.path(),
        &[],
        &["--policy", &hung],
        &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
    );
    wait_for(&started);
    let denied = bash_by_daemon(&home, dir.path(), &gate, "rm -rf victim");
    assert_eq!(decision(&denied), "deny", "{}", stderr(&denied));
    assert!(
        hanging.try_wait().expect("try_wait").is_none(),
        "the hung call ended"
    );
    assert!(status(&home).expect("runs").contains("1 in progress"));
    hanging.kill().expect("kill");
    hanging.wait().expect("wait");
}

#[test]
fn a_daemon_killed_mid_call_gets_the_policys_failure_answer_never_an_allow() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The thin client hands the call it read over to hookbox, which gives the failure answer.
    let cases = CLIENTS.iter().flat_map(|client| {
        [("deny", 2, "(denied)"), ("allow", 1, "(not gated)")]
            .map(|(on_error, exit, outcome)| (client, on_error, exit, outcome))
    });
    for (n, (client, on_error, exit, outcome)) in cases.enumerate() {
        let home = dir.path().join(format!("home-{n}"));
        let started = dir.path().join(format!("started-{n}"));
        let policy = write(
            dir.path(),
            &format!("{on_error}.json"),
            &json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
                {"type": "command", "command": format!("touch {}; sleep 120", started.display()),
                 "timeout": 300, "on_error": on_error}]}]}}),
        );
        start(&home);
        let daemon = pid(&home);
        let call = spawn_hook(
            Path::new(client),
            &home,
            dir.path(),
            &[],
            &["--policy", &policy],
            &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
        );
        wait_for(&started);
        rustix::process::kill_process(
            rustix::process::Pid::from_raw(daemon).expect("pid"),
            rustix::process::Signal::KILL,
        )
        .expect("kill the daemon");
        let output = call.wait_with_output().expect("wait");
        assert_eq!(
            code(&output),
            exit,
            "{client} {on_error}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("the hookbox daemon failed during this call")
                && stderr(&output).contains(outcome),
            "{client} {on_error}: {}",
            stderr(&output)
        );
        assert!(output.stdout.is_empty(), "{client}: {:?}", output.stdout);
    }
}

/// Calls in `home` whose daemon directory or socket `plant` spoiled are answered in-process,
/// with one stderr line naming the problem (`expected`), and no daemon serves there.
fn refused(home: &Path, dir: &Path, expected: &str) {
    let policy = seed_config(dir, "security-gate.hooks.json");
    for client in CLIENTS {
        let output = spawn_hook(
            Path::new(client),
            home,
            dir,
            &[],
            &["--policy", &policy],
            &pre_tool_use(dir, "Bash", json!({"command": "rm -rf victim"})),
        )
        .wait_with_output()
        .expect("wait");
        assert_eq!(decision(&output), "deny", "{client}: {}", stderr(&output));
        let lines: Vec<&str> = std::str::from_utf8(&output.stderr)
            .expect("utf-8")
            .lines()
            .collect();
        assert_eq!(lines.len(), 1, "{client}: {lines:?}");
        assert!(
            lines[0].contains(expected) && lines[0].contains("refusing"),
            "{client}: {lines:?}"
        );
    }
    let run = hookbox_in(home, &["daemon", "run"], b"");
    assert_eq!(code(&run), 1, "{}", stderr(&run));
    assert!(stderr(&run).contains(expected), "{}", stderr(&run));
}

#[test]
fn a_socket_planted_by_someone_else_is_refused() {
    if !hookbox_test_support::require_root("a_socket_planted_by_someone_else_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let private = |path: &Path| {
        std::fs::create_dir_all(path).expect("dir");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    };
    // A link to another daemon's socket.
    let other = dir.path().join("other");
    start(&other);
    let linked = dir.path().join("linked");
    private(&linked.join("daemon"));
    std::os::unix::fs::symlink(
        other.join("daemon/hook.sock"),
        linked.join("daemon/hook.sock"),
    )
    .expect("symlink");
    refused(&linked, dir.path(), "is not a socket");
    // A socket of another user.
    let foreign = dir.path().join("foreign");
    private(&foreign.join("daemon"));
    let socket = foreign.join("daemon/hook.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    std::os::unix::fs::chown(&socket, Some(65534), Some(65534)).expect("chown");
    refused(&foreign, dir.path(), "is owned by uid 65534");
    // A directory others can enter, and one that is a link.
    let open = dir.path().join("open");
    private(&open.join("daemon"));
    std::fs::set_permissions(open.join("daemon"), std::fs::Permissions::from_mode(0o755))
        .expect("chmod");
    refused(&open, dir.path(), "has mode 755");
    let link = dir.path().join("link");
    std::fs::create_dir_all(&link).expect("dir");
    std::os::unix::fs::symlink(other.join("daemon"), link.join("daemon")).expect("symlink");
    refused(&link, dir.path(), "is not a directory");
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the other user's client is python3"
)]
fn a_client_of_another_user_is_refused() {
    if !hookbox_test_support::require_root("a_client_of_another_user_is_refused") {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    start(&home);
    // Opened up by mistake: the peer check is what is left.
    for path in [dir.path(), &home, &home.join("daemon")] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o711)).expect("chmod");
    }
    let socket = home.join("daemon/hook.sock");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    // The daemon answers before reading anything: a refusal, then it hangs up.
    let client = "import socket, struct, sys\n\
        s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n\
        n = struct.unpack('>I', s.recv(4))[0]\n\
        sys.stdout.write(s.recv(n).decode())\n";
    let output = std::os::unix::process::CommandExt::uid(
        Command::new("python3").args(["-c", client]).arg(&socket),
        65534,
    )
    .output()
    .expect("python3");
    let answer: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&output.stderr)));
    assert_eq!(answer["kind"], "refused", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .expect("reason")
            .contains("not uid 65534")
    );
    std::fs::set_permissions(home.join("daemon"), std::fs::Permissions::from_mode(0o700))
        .expect("chmod");
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert_eq!(calls(&home), 0);
}

#[test]
fn a_daemon_of_another_build_is_replaced() {
    for client in ["hookbox", THIN] {
        another_build_replaces_the_daemon_for(client);
    }
}

/// A call by `client` (installed with hookbox) after hookbox was reinstalled is answered, the
/// old daemon stops and one of the new build starts.
fn another_build_replaces_the_daemon_for(client: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let binary = dir.path().join(client);
    let install = || {
        for (name, built) in ["hookbox", THIN].into_iter().zip(CLIENTS) {
            let staged = dir.path().join(format!("{name}.new"));
            std::fs::copy(built, &staged).expect("copy");
            std::fs::rename(&staged, dir.path().join(name)).expect("install");
        }
    };
    install();
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let event = pre_tool_use(dir.path(), "Bash", json!({"command": "rm -rf victim"}));
    let call = || {
        spawn_hook(
            &binary,
            &home,
            dir.path(),
            &[],
            &["--policy", &policy],
            &event,
        )
        .wait_with_output()
        .expect("wait")
    };
    // The first call starts a daemon from `binary`.
    call();
    wait_for(&home.join("daemon/hook.sock"));
    wait_until("the first daemon", || status(&home).is_some());
    let old = status(&home).expect("runs");
    install();
    // The new binary's call: answered, the old daemon stops and a new one starts.
    let output = call();
    assert_eq!(decision(&output), "deny", "{client}: {}", stderr(&output));
    assert_eq!(stderr(&output), "", "{client}");
    wait_until("a daemon of the new build", || {
        status(&home).is_some_and(|new| new_build(&old, &new))
    });
    // The new daemon holds nothing of the call that started it (such as the handed-over event).
    for fd in std::fs::read_dir(format!("/proc/{}/fd", pid(&home))).expect("fds") {
        let target = std::fs::read_link(fd.expect("fd").path()).unwrap_or_default();
        assert!(
            !target.display().to_string().contains("memfd"),
            "{client}: {}",
            target.display()
        );
    }
}

/// Whether status line `new` is of another build than `old`.
fn new_build(old: &str, new: &str) -> bool {
    let build = |line: &str| {
        line.split("build ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .map(str::to_owned)
    };
    build(old) != build(new)
}

#[test]
fn the_daemon_exits_when_idle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let started = {
        #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
        command
            .args(["daemon", "start"])
            .env("HOOKBOX_HOME", &home)
            .env("HOOKBOX_DAEMON_IDLE", "1")
            .output()
            .expect("start")
    };
    assert_eq!(code(&started), 0, "{}", stderr(&started));
    wait_until("the idle daemon to exit", || status(&home).is_none());
    assert!(!home.join("daemon/hook.sock").exists());
}

#[test]
fn plain_python_hooks_run_warm_in_the_daemon_unless_switched_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    // Denies, saying whether it was forked from a warm interpreter (which ran it with runpy;
    // `python3 SCRIPT` does not import runpy).
    let script = dir.path().join("which.py");
    std::fs::write(
        &script,
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'decision': 'deny', \
         'reason': 'warm' if 'runpy' in sys.modules else 'cold'}))\n",
    )
    .expect("script");
    let policy = write(
        dir.path(),
        "which.json",
        &json!({"which": {"pre_tool_execution": [{"matcher": "*", "hooks": [
            {"type": "command", "command": format!("python3 {}", script.display())}]}]}}),
    );
    start(&home);
    let reason = |vars: &[(&str, &str)]| {
        let output = spawn_hook(
            Path::new(env!("CARGO_BIN_EXE_hookbox")),
            &home,
            dir.path(),
            vars,
            &["--policy", &policy],
            &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
        )
        .wait_with_output()
        .expect("wait");
        stdout_json(&output)["hookSpecificOutput"]["permissionDecisionReason"].clone()
    };
    // The first call starts the interpreter's zygote in the background and runs cold.
    assert_eq!(reason(&[]), "cold");
    wait_until("a warm interpreter", || reason(&[]) == "warm");
    assert_eq!(reason(&[("HOOKBOX_WARM_INTERPRETERS", "off")]), "cold");
    assert_eq!(reason(&[("HOOKBOX_DAEMON", "off")]), "cold");
}

/// A call that outlives the daemon's deadline (a hook hung on a FIFO, with a timeout far
/// longer) is answered at its deadline with the policy's failure answer, its thread is free
/// again (another call is answered), and the daemon still idles out while the hook hangs.
#[test]
fn a_call_past_the_daemons_deadline_gets_the_failure_answer_and_the_daemon_idles_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let fifo = dir.path().join("hang");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    let started = dir.path().join("started");
    // Each row: the handler's `on_error`, and the answer due at the deadline: a policy that
    // fails closed blocks (exit 2), one that fails open lets the call through with a message;
    // and how the decision log keeps it.
    for (on_error, exit, logged) in [("deny", 2, "deny"), ("allow", 1, "fail-open")] {
        let hung = write(
            dir.path(),
            &format!("hung-{on_error}.json"),
            &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
                "command": format!("touch {}; cat {} > /dev/null", started.display(), fifo.display()),
                "timeout": 3000, "on_error": on_error}]}]}}),
        );
        {
            #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
            let output = Command::new(env!("CARGO_BIN_EXE_hookbox"))
                .args(["daemon", "start"])
                .env("HOOKBOX_HOME", &home)
                .env("HOOKBOX_DAEMON_IDLE", "1")
                .env("HOOKBOX_DAEMON_DEADLINE", "1")
                .output()
                .expect("start");
            assert_eq!(code(&output), 0, "{}", stderr(&output));
        }
        let answered = spawn_hook(
            Path::new(env!("CARGO_BIN_EXE_hookbox")),
            &home,
            dir.path(),
            &[],
            &["--policy", &hung],
            &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
        )
        .wait_with_output()
        .expect("wait");
        assert!(
            started.exists(),
            "the hook did not start: {}",
            stderr(&answered)
        );
        assert_eq!(code(&answered), exit, "{on_error}: {}", stderr(&answered));
        assert!(
            stderr(&answered).contains("deadline"),
            "{on_error}: {}",
            stderr(&answered)
        );
        // The daemon answered it (it was not handed back) and exits once idle, the hook hung.
        wait_until("the idle daemon to exit", || status(&home).is_none());
        let log = hookbox_in(&home, &["log", "--json", "--limit", "1"], b"");
        let last = &stdout_json(&log)[0];
        assert_eq!(last["decision"], logged, "{last:#}");
        assert!(
            last["reason"]
                .as_str()
                .is_some_and(|reason| reason.contains("deadline")),
            "{last:#}"
        );
        std::fs::remove_file(&started).expect("rm");
    }
    // Release the hung hooks.
    for _ in 0..2 {
        let writer = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&fifo);
        drop(writer);
    }
}
