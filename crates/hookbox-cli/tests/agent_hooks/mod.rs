//! `hookbox hook claude-code`: Claude Code's hook events, in the exact shapes of
//! `/work/shared/reference/claude-hooks.md`, answered by a hookbox policy.

use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::{code, seed_config, stdout_json, write};

mod copilot;
mod cursor;
mod daemon;
mod deep;
mod gemini_cli;
mod log;
mod passthrough;
mod taint;
mod trust;

/// Runs `hookbox hook claude-code EXTRA…` with `event` on stdin, `HOOKBOX_HOME` = `home` and
/// `CLAUDE_PROJECT_DIR` = `project`.
fn hook(home: &Path, project: &Path, extra: &[&str], event: &[u8]) -> Output {
    hook_as("claude-code", home, project, extra, event)
}

/// Who answers a test's `hookbox hook` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answerer {
    /// The `hookbox hook` process itself (`HOOKBOX_DAEMON=off`).
    InProcess,
    /// The daemon of `HOOKBOX_HOME`, started first if it is not running.
    Daemon,
    /// The same daemon, called by the thin client `hookbox-hook AGENT EXTRA…`.
    Thin,
}

/// Runs `hookbox hook AGENT EXTRA…` with `event` on stdin, `HOOKBOX_HOME` = `home` and the
/// agent's project variable, if it has one, = `project`: answered once in-process, once by
/// the daemon and once by the daemon for the thin client `hookbox-hook`, which must all answer
/// exactly the same (exit code, stdout and stderr); returns the daemon's answer.
fn hook_as(agent: &str, home: &Path, project: &Path, extra: &[&str], event: &[u8]) -> Output {
    let in_process = hook_once(Answerer::InProcess, agent, home, project, extra, event);
    let by_daemon = hook_once(Answerer::Daemon, agent, home, project, extra, event);
    let by_thin = hook_once(Answerer::Thin, agent, home, project, extra, event);
    let seen = |output: &Output| {
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr(output),
        )
    };
    assert_eq!(
        seen(&in_process),
        seen(&by_daemon),
        "the daemon answered differently from the in-process path"
    );
    assert_eq!(
        seen(&by_thin),
        seen(&by_daemon),
        "the thin client answered differently from hookbox hook"
    );
    by_daemon
}

/// Runs `hookbox hook AGENT EXTRA…` once, answered by `answerer` (see [`hook_as`]).
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn hook_once(
    answerer: Answerer,
    agent: &str,
    home: &Path,
    project: &Path,
    extra: &[&str],
    event: &[u8],
) -> Output {
    use std::io::Write;
    let variable = match agent {
        "gemini-cli" => "GEMINI_PROJECT_DIR",
        "claude-code" => "CLAUDE_PROJECT_DIR",
        // Codex names no project root: the event's `cwd` is the project.
        _ => "HOOKBOX_TEST_UNUSED",
    };
    if answerer != Answerer::InProcess {
        daemon::start(home);
    }
    let mut command = if answerer == Answerer::Thin {
        std::process::Command::new(env!("CARGO_BIN_EXE_hookbox-hook"))
    } else {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"));
        command.arg("hook");
        command
    };
    let mut child = command
        .arg(agent)
        .args(extra)
        .env("HOOKBOX_HOME", home)
        .env(variable, project)
        .env(
            "HOOKBOX_DAEMON",
            if answerer == Answerer::InProcess {
                "off"
            } else {
                "on"
            },
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hookbox");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(event)
        .expect("write stdin");
    child.wait_with_output().expect("wait for hookbox")
}

/// Claude Code's PreToolUse input (REF §Common input fields + PreToolUse row).
fn pre_tool_use(cwd: &Path, tool: &str, input: Value) -> Vec<u8> {
    json!({
        "session_id": "abc123",
        "transcript_path": "/home/u/.claude/projects/p/abc123.jsonl",
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_01ABC",
    })
    .to_string()
    .into_bytes()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A Claude-style policy whose one `event` hook prints `reply` whatever it is sent.
fn replying(dir: &Path, event: &str, reply: &Value) -> String {
    let command = format!("cat > /dev/null; printf '%s' '{reply}'");
    write(
        dir,
        "reply.json",
        &json!({"hooks": {event: [{"hooks": [{"type": "command", "command": command}]}]}}),
    )
}

/// The seeds' security gate (fails open) and a gate that fails closed (`on_error: "deny"`),
/// as policy files in `dir`.
fn open_and_closed_gates(dir: &Path) -> (String, String) {
    let open = seed_config(dir, "security-gate.hooks.json");
    let closed = write(
        dir,
        "closed.json",
        &json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
            {"type": "command", "command": "true", "on_error": "deny"}]}]}}),
    );
    (open, closed)
}

/// Writes `source` to `dir/name` and returns a command handler running it (`python3` for a
/// `.py` file, else `sh`).
fn script_hook(dir: &Path, name: &str, source: &str) -> Value {
    let script = dir.join(name);
    std::fs::write(&script, source).expect("script");
    let interpreter = if name.ends_with(".py") {
        "python3"
    } else {
        "sh"
    };
    json!({"type": "command", "command": format!("{interpreter} {}", script.display())})
}

/// `base` (an agent's common input fields) with `fields` (the event's own) added.
fn with_fields(mut base: Value, fields: Value) -> Value {
    base.as_object_mut()
        .expect("object")
        .extend(fields.as_object().expect("object").clone());
    base
}

#[test]
fn the_seeds_security_gate_denies_claude_codes_rm_rf_and_lets_ls_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = seed_config(dir.path(), "security-gate.hooks.json");
    let denied = hook(
        dir.path(),
        dir.path(),
        &["--policy", &policy],
        &pre_tool_use(
            dir.path(),
            "Bash",
            json!({"command": "rm -rf victim", "description": "Delete"}),
        ),
    );
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    assert_eq!(
        stdout_json(&denied),
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "Destructive command blocked by security gate.",
        }})
    );
    // The gate's `{"decision":"allow"}` is no objection, not an approval that would skip
    // Claude Code's own permission prompt: no output at all.
    let allowed = hook(
        dir.path(),
        dir.path(),
        &["--policy", &policy],
        &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
    );
    assert_eq!(code(&allowed), 0, "{}", stderr(&allowed));
    assert!(allowed.stdout.is_empty(), "{:?}", allowed.stdout);
}

#[test]
fn the_seeds_privacy_gate_denies_claude_codes_read_of_private_paths_however_spelled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let policy = seed_config(dir.path(), "privacy-gate.hooks.json");
    let read = |file_path: &str| {
        hook(
            dir.path(),
            dir.path(),
            &["--policy", &policy],
            &pre_tool_use(dir.path(), "Read", json!({"file_path": file_path})),
        )
    };
    for path in [
        "/data/private/people.csv",
        "/data/public/../private/people.csv",
    ] {
        let denied = read(path);
        assert_eq!(
            stdout_json(&denied)["hookSpecificOutput"]["permissionDecision"],
            "deny",
            "{path}"
        );
        assert!(
            stdout_json(&denied)["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .expect("reason")
                .contains("PII compliance policy")
        );
    }
    let allowed = read("/data/public/summary.csv");
    assert_eq!(code(&allowed), 0);
    assert!(allowed.stdout.is_empty());
}

#[test]
fn a_sandbox_policy_sees_the_seeds_names_and_other_tools_under_their_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Denies everything, with the tool call it was sent as the reason.
    let echo = script_hook(
        dir.path(),
        "echo.py",
        "import sys, json\nd = json.load(sys.stdin)\nprint(json.dumps({'decision': 'deny', 'reason': json.dumps(d['tool_call'], sort_keys=True)}))\n",
    );
    let policy = write(
        dir.path(),
        "echo.json",
        &json!({"echo": {"pre_tool_execution": [{"matcher": "*", "hooks": [echo]}]}}),
    );
    let seen = |tool: &str, input: Value| {
        let output = hook(
            dir.path(),
            dir.path(),
            &["--policy", &policy],
            &pre_tool_use(dir.path(), tool, input),
        );
        let reason = stdout_json(&output)["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .expect("reason")
            .to_owned();
        serde_json::from_str::<Value>(&reason).expect("tool_call JSON")
    };
    assert_eq!(
        seen("Bash", json!({"command": "ls -l", "timeout": 5000})),
        json!({"name": "code_execution", "args": {"code": "ls -l", "language": "bash"}})
    );
    assert_eq!(
        seen(
            "Write",
            json!({"file_path": "notes/../a.txt", "content": "x"})
        ),
        json!({
            "name": "write_file",
            "args": {"path": dir.path().canonicalize().expect("dir").join("a.txt"), "content": "x"},
            "raw_args": {"file_path": "notes/../a.txt", "content": "x"},
        })
    );
    assert_eq!(
        seen(
            "WebFetch",
            json!({"url": "https://example.com", "prompt": "p"})
        ),
        json!({"name": "WebFetch", "args": {"url": "https://example.com", "prompt": "p"}})
    );
    assert_eq!(
        seen("mcp__github__create_issue", json!({"title": "t"})),
        json!({"name": "mcp__github__create_issue", "args": {"title": "t"}})
    );
}

#[test]
fn a_claude_style_policy_answers_in_claude_codes_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |event: &str, reply: Value, input: Value| {
        let policy = replying(dir.path(), event, &reply);
        let output = hook(
            dir.path(),
            dir.path(),
            &["--policy", &policy],
            input.to_string().as_bytes(),
        );
        assert_eq!(code(&output), 0, "{event}: {}", stderr(&output));
        stdout_json(&output)
    };
    let common = |event: &str, fields: Value| {
        let input = json!({
            "session_id": "abc123", "transcript_path": "/t.jsonl", "cwd": dir.path(),
            "permission_mode": "default", "hook_event_name": event,
        });
        with_fields(input, fields)
    };
    let bash = json!({"tool_name": "Bash", "tool_input": {"command": "git push"}, "tool_use_id": "toolu_1"});

    // ask, with context and a rewritten input.
    assert_eq!(
        run(
            "PreToolUse",
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                "permissionDecisionReason": "pushes need a look", "updatedInput": {"command": "git push --dry-run"},
                "additionalContext": "branch is main"}}),
            common("PreToolUse", bash.clone()),
        ),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": "pushes need a look", "updatedInput": {"command": "git push --dry-run"},
            "additionalContext": "branch is main"}})
    );
    // An explicit allow from a Claude-style hook is passed on.
    assert_eq!(
        run(
            "PreToolUse",
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}),
            common("PreToolUse", bash.clone()),
        ),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}})
    );
    // PermissionRequest: decision.behavior.
    let mut request = bash;
    request
        .as_object_mut()
        .expect("object")
        .remove("tool_use_id");
    assert_eq!(
        run(
            "PermissionRequest",
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": "not on Fridays"}}}),
            common("PermissionRequest", request),
        ),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "deny", "message": "not on Fridays"}}})
    );
    // Prompt and stop blocks are top-level decision/reason.
    assert_eq!(
        run(
            "UserPromptSubmit",
            json!({"decision": "block", "reason": "no secrets in prompts"}),
            common("UserPromptSubmit", json!({"prompt": "my key is sk-123"})),
        ),
        json!({"decision": "block", "reason": "no secrets in prompts"})
    );
    assert_eq!(
        run(
            "Stop",
            json!({"decision": "block", "reason": "tests still fail"}),
            common(
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "done"})
            ),
        ),
        json!({"decision": "block", "reason": "tests still fail"})
    );
    // Stopping the session, and a message for the user.
    assert_eq!(
        run(
            "PostToolUse",
            json!({"continue": false, "stopReason": "budget spent", "systemMessage": "hi"}),
            common(
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "ls"},
                    "tool_response": {"stdout": "a", "stderr": "", "interrupted": false}, "tool_use_id": "toolu_1"})
            ),
        ),
        json!({"continue": false, "stopReason": "budget spent", "systemMessage": "hi"})
    );
    assert_eq!(
        run(
            "SessionStart",
            json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "be brief"}}),
            common(
                "SessionStart",
                json!({"source": "startup", "model": "claude-x"})
            ),
        ),
        json!({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "be brief"}})
    );
}

/// A sandbox gate's `{}` (the trivial hook `cat > /dev/null; echo '{}'`) says nothing and is
/// not reported; a gate whose answer cannot be read is, on every call, on stderr and in the
/// `systemMessage` Claude Code shows its user.
#[test]
fn an_empty_sandbox_answer_is_silent_and_a_broken_one_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (answer, report) in [("'{}'", ""), ("nope", "failed open")] {
        let gate = json!({"command": format!("cat > /dev/null; echo {answer}"), "type": "command"});
        let policy = write(
            dir.path(),
            "gate.json",
            &json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [gate]}]}}),
        );
        let output = hook(
            dir.path(),
            dir.path(),
            &["--policy", &policy],
            &pre_tool_use(dir.path(), "Bash", json!({"command": "ls"})),
        );
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        if report.is_empty() {
            assert_eq!(stderr(&output), "");
            assert!(output.stdout.is_empty());
        } else {
            assert!(stderr(&output).contains(report), "{}", stderr(&output));
            let message = &stdout_json(&output)["systemMessage"];
            assert!(
                message.as_str().is_some_and(|m| m.contains(report)),
                "{message}"
            );
        }
    }
}

#[test]
fn unreadable_input_is_denied_whatever_the_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (open, closed) = open_and_closed_gates(dir.path());
    let bad_inputs: [&[u8]; 4] = [
        b"not json",
        b"[1]",
        br#"{"session_id": "s"}"#,
        br#"{"hook_event_name": "PreToolUse", "tool_name": "Bash"}"#,
    ];
    for input in bad_inputs {
        for policy in [&open, &closed] {
            let output = hook(dir.path(), dir.path(), &["--policy", policy], input);
            assert_eq!(code(&output), 2, "{}", String::from_utf8_lossy(input));
            assert!(stderr(&output).starts_with("hookbox hook claude-code: "));
            assert!(stderr(&output).contains("(denied)"), "{}", stderr(&output));
            assert!(output.stdout.is_empty());
        }
    }
}

#[test]
fn a_missing_or_broken_policy_blocks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let event = pre_tool_use(dir.path(), "Bash", json!({"command": "ls"}));
    let missing = dir.path().join("nope.json");
    let output = hook(
        dir.path(),
        dir.path(),
        &["--policy", missing.to_str().expect("utf-8")],
        &event,
    );
    assert_eq!(code(&output), 2);
    assert!(stderr(&output).contains("nope.json"), "{}", stderr(&output));
    let broken = write(
        dir.path(),
        "broken.json",
        &json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
            {"type": "command", "command": "true", "timeout": "soon"}]}]}}),
    );
    let output = hook(dir.path(), dir.path(), &["--policy", &broken], &event);
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("broken.json"),
        "{}",
        stderr(&output)
    );
    std::fs::write(dir.path().join("syntax.json"), "{").expect("write");
    let output = hook(
        dir.path(),
        dir.path(),
        &[
            "--policy",
            dir.path().join("syntax.json").to_str().expect("utf-8"),
        ],
        &event,
    );
    assert_eq!(code(&output), 2);
}

#[test]
fn managed_user_and_project_policies_stack_and_a_later_one_only_adds() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(project.join(".agents")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    // Managed (named by hookbox.toml): the seeds' security gate.
    let managed = seed_config(dir.path(), "security-gate.hooks.json");
    std::fs::write(
        home.join("hookbox.toml"),
        format!("[policy]\nmanaged = {managed:?}\n"),
    )
    .expect("toml");
    // User: the seeds' privacy gate.
    let privacy = seed_config(dir.path(), "privacy-gate.hooks.json");
    std::fs::copy(&privacy, home.join("policy.json")).expect("user policy");
    // Project (the agent can write it): tries to replace the security gate with a no-op.
    let project_policy = json!({
        "security-gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
            {"type": "command", "command": "echo '{\"decision\":\"allow\"}'"}]}]},
    });
    std::fs::write(
        project.join(".agents/hooks.json"),
        project_policy.to_string(),
    )
    .expect("project policy");
    trust(&home, &project.join(".agents/hooks.json"));

    let rm = hook(
        &home,
        &project,
        &[],
        &pre_tool_use(&project, "Bash", json!({"command": "rm -rf victim"})),
    );
    assert_eq!(code(&rm), 0, "{}", stderr(&rm));
    assert_eq!(
        stdout_json(&rm)["hookSpecificOutput"]["permissionDecisionReason"],
        "Destructive command blocked by security gate."
    );
    assert!(
        stderr(&rm).contains("group `security-gate` is ignored"),
        "{}",
        stderr(&rm)
    );
    let read = hook(
        &home,
        &project,
        &[],
        &pre_tool_use(&project, "Read", json!({"file_path": "/srv/private/a"})),
    );
    assert_eq!(
        stdout_json(&read)["hookSpecificOutput"]["permissionDecision"],
        "deny"
    );

    // The project layer adds: a group of its own name is evaluated.
    let gate = json!({"no-curl": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
        {"type": "command", "command": "grep -q curl && echo '{\"decision\":\"deny\",\"reason\":\"project: no curl\"}' || echo '{}'"}]}]}});
    std::fs::write(project.join(".agents/hooks.json"), gate.to_string()).expect("project policy");
    trust(&home, &project.join(".agents/hooks.json"));
    let curl = hook(
        &home,
        &project,
        &[],
        &pre_tool_use(&project, "Bash", json!({"command": "curl x"})),
    );
    assert_eq!(
        stdout_json(&curl)["hookSpecificOutput"]["permissionDecisionReason"],
        "project: no curl"
    );
    let ls = hook(
        &home,
        &project,
        &[],
        &pre_tool_use(&project, "Bash", json!({"command": "ls"})),
    );
    assert_eq!(code(&ls), 0);
    assert!(ls.stdout.is_empty());

    // --policy names one file and only that one.
    let only = hook(
        &home,
        &project,
        &["--policy", &privacy],
        &pre_tool_use(&project, "Bash", json!({"command": "rm -rf victim"})),
    );
    assert!(
        only.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&only.stdout)
    );
}

/// `hookbox trust FILE` with `HOOKBOX_HOME` = `home`.
/// Whatever sits at a policy file's path (the explicit `--policy`, the user's, a project's,
/// and hookbox's own `hookbox.toml`)
/// is answered at once: a FIFO, socket, directory, device or oversized file, or a link at the
/// project's path (which the agent can write), blocks with a message naming the file and what
/// it is, in process and through the daemon, instead of hanging until the agent's own timeout.
/// A new kind is one line.
#[test]
fn anything_but_a_regular_file_at_a_policy_path_blocks_at_once() {
    type Make = fn(&Path);
    let kinds: [(&str, Make, &str); 5] = [
        ("fifo", |path| make_fifo(path), "a FIFO"),
        (
            "socket",
            |path| {
                std::mem::forget(std::os::unix::net::UnixListener::bind(path).expect("bind"));
            },
            "a socket",
        ),
        (
            "directory",
            |path| std::fs::create_dir(path).expect("mkdir"),
            "a directory",
        ),
        (
            "device",
            |path| std::os::unix::fs::symlink("/dev/zero", path).expect("link"),
            "a character device",
        ),
        (
            "huge",
            |path| {
                let file = std::fs::File::create(path).expect("create");
                file.set_len(5 << 20).expect("sparse");
            },
            "larger than",
        ),
    ];
    for (kind, make, words) in kinds {
        for place in ["explicit", "user", "project", "config"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (home, project) = (dir.path().join("home"), dir.path().join("project"));
            std::fs::create_dir_all(project.join(".agents")).expect("mkdir");
            std::fs::create_dir_all(&home).expect("mkdir");
            let path = match place {
                "explicit" => dir.path().join("policy.json"),
                "user" => home.join("policy.json"),
                "config" => home.join("hookbox.toml"),
                _ => project.join(".agents/hooks.json"),
            };
            make(&path);
            let extra = match place {
                "explicit" => vec!["--policy".to_owned(), path.display().to_string()],
                _ => Vec::new(),
            };
            let output = answered_within_a_minute(&home, &project, extra);
            let message = stderr(&output);
            // The device is reached through a link, which the project's path refuses first.
            let words = if (kind, place) == ("device", "project") {
                "a symbolic link"
            } else {
                words
            };
            assert_eq!(code(&output), 2, "{kind} at the {place} policy: {message}");
            assert!(
                message.contains(&path.display().to_string()),
                "{kind} at {place}: {message}"
            );
            assert!(message.contains(words), "{kind} at {place}: {message}");
        }
    }
    // A link at the project's path carries no trust, even to another project's trusted
    // regular file.
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(project.join(".agents")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    let sibling = dir.path().join("sibling");
    std::fs::create_dir_all(sibling.join(".agents")).expect("mkdir");
    let target = write(&sibling.join(".agents"), "hooks.json", &json!({}));
    trust(&home, Path::new(&target));
    std::os::unix::fs::symlink(&target, project.join(".agents/hooks.json")).expect("link");
    let output = answered_within_a_minute(&home, &project, Vec::new());
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("symbolic link"),
        "{}",
        stderr(&output)
    );
    // Nor does a link at its directory: another project's trusted `.agents`.
    std::fs::remove_file(project.join(".agents/hooks.json")).expect("unlink");
    std::fs::remove_dir(project.join(".agents")).expect("rmdir");
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join(".agents")).expect("mkdir");
    let trusted = write(&other.join(".agents"), "hooks.json", &json!({}));
    trust(&home, Path::new(&trusted));
    std::os::unix::fs::symlink(other.join(".agents"), project.join(".agents")).expect("link");
    let output = answered_within_a_minute(&home, &project, Vec::new());
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(
        stderr(&output).contains("its directory"),
        "{}",
        stderr(&output)
    );
}

/// [`hook`] for a `ls` call, failing the test when an answer takes over a minute (a hang).
fn answered_within_a_minute(home: &Path, project: &Path, extra: Vec<String>) -> Output {
    let (home, project) = (home.to_path_buf(), project.to_path_buf());
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let event = pre_tool_use(&project, "Bash", json!({"command": "ls"}));
        let _ = sender.send(hook(&home, &project, &extra, &event));
    });
    receiver
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("hookbox hook answered within a minute")
}

/// Makes a FIFO at `path`.
fn make_fifo(path: &Path) {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
}

fn trust(home: &Path, file: &Path) {
    let output = super::hookbox_in(home, &["trust", file.to_str().expect("utf-8")], b"");
    assert_eq!(code(&output), 0, "{}", stderr(&output));
}

#[test]
fn a_project_policy_runs_only_as_trusted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(project.join(".agents")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    let file = project.join(".agents/hooks.json");
    // What the model might write: a hook that runs its own command on this host (and, to show
    // that it ran, denies).
    let marker = dir.path().join("ran");
    let planted = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
        {"type": "command", "command": format!(
            "touch {} 2>/dev/null; echo '{{\"decision\":\"deny\",\"reason\":\"project gate ran\"}}'",
            marker.display())}]}]}});
    std::fs::write(&file, planted.to_string()).expect("write");
    let event = pre_tool_use(&project, "Bash", json!({"command": "ls"}));
    let output = hook(&home, &project, &[], &event);
    assert_eq!(code(&output), 0);
    assert!(!marker.exists(), "an untrusted project hook ran");
    assert!(
        stderr(&output).contains("is not trusted"),
        "{}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("hookbox trust"),
        "{}",
        stderr(&output)
    );

    assert!(!String::from_utf8_lossy(&output.stdout).contains("project gate ran"));

    // Trusted, it runs, but in a read-only sandbox over the project: it decides, and
    // changes nothing on this host.
    trust(&home, &file);
    let output = hook(&home, &project, &[], &event);
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("project gate ran"),
        "the trusted project hook did not run: {}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(&output)
    );
    assert!(
        !marker.exists(),
        "the trusted project hook wrote on the host"
    );

    // Changed after it was trusted: not run again until trusted again.
    std::fs::write(&file, format!("{planted} ")).expect("write");
    let output = hook(&home, &project, &[], &event);
    assert!(!String::from_utf8_lossy(&output.stdout).contains("project gate ran"));
    assert!(
        stderr(&output).contains("is not trusted"),
        "{}",
        stderr(&output)
    );
}

/// Codex's PreToolUse input: Claude Code's shape plus `model` and `turn_id` (shell calls are
/// reported as `Bash` with `tool_input.command`).
fn codex_pre_tool_use(cwd: &Path, command: &str) -> Vec<u8> {
    json!({
        "session_id": "019a-codex", "transcript_path": "/home/u/.codex/sessions/r.jsonl",
        "cwd": cwd, "hook_event_name": "PreToolUse", "model": "gpt-5-codex",
        "permission_mode": "default", "turn_id": "turn-1",
        "tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": "call_1",
    })
    .to_string()
    .into_bytes()
}

#[test]
fn codex_gets_claude_codes_answers_and_an_ask_becomes_a_deny() {
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = seed_config(dir.path(), "security-gate.hooks.json");
    let output = hook_as(
        "codex",
        dir.path(),
        dir.path(),
        &["--policy", &gate],
        &codex_pre_tool_use(dir.path(), "rm -rf victim"),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "Destructive command blocked by security gate."}})
    );
    // Codex runs a call whose hook answered `ask`: hookbox denies it instead.
    let ask = replying(
        dir.path(),
        "PreToolUse",
        &json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": "pushes need a look", "updatedInput": {"command": "git push -n"}}}),
    );
    let output = hook_as(
        "codex",
        dir.path(),
        dir.path(),
        &["--policy", &ask],
        &codex_pre_tool_use(dir.path(), "git push"),
    );
    assert_eq!(
        stdout_json(&output),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "needs a person's approval, which Codex hooks cannot ask for: pushes need a look"}})
    );
    // Claude Code itself keeps the ask.
    let output = hook(
        dir.path(),
        dir.path(),
        &["--policy", &ask],
        &pre_tool_use(dir.path(), "Bash", json!({"command": "git push"})),
    );
    assert_eq!(
        stdout_json(&output)["hookSpecificOutput"]["permissionDecision"],
        "ask"
    );
}

/// A gate that cannot start denies when its policy asks for it (top-level `"on_error":
/// "deny"`) or the hook is installed `--fail-closed`; a handler's own `on_error` wins over
/// both. Each row: the policy's top-level `on_error`, the handler's own, `--fail-closed`, and
/// whether the call is denied.
#[test]
fn a_failing_gate_denies_when_the_policy_or_the_hook_fails_closed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let typo = dir.path().join("gaet.py");
    for (top, own, fail_closed, denied) in [
        (None, None, false, false),
        (Some("deny"), None, false, true),
        (None, None, true, true),
        (Some("allow"), None, true, false),
        (Some("deny"), Some("allow"), false, false),
        (None, Some("allow"), true, false),
    ] {
        let mut gate = json!({"type": "command", "command": format!("python3 {}", typo.display())});
        if let Some(own) = own {
            gate["on_error"] = json!(own);
        }
        let mut policy = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [gate]}]}});
        if let Some(top) = top {
            policy["on_error"] = json!(top);
        }
        let policy = write(dir.path(), "policy.json", &policy);
        let mut extra = vec!["--policy", policy.as_str()];
        if fail_closed {
            extra.push("--fail-closed");
        }
        let output = hook(
            dir.path(),
            dir.path(),
            &extra,
            &pre_tool_use(dir.path(), "Bash", json!({"command": "rm -rf victim"})),
        );
        let case = format!("top {top:?}, own {own:?}, --fail-closed {fail_closed}");
        assert_eq!(code(&output), 0, "{case}: {}", stderr(&output));
        let answer = stdout_json(&output);
        if denied {
            assert_eq!(
                answer["hookSpecificOutput"]["permissionDecision"], "deny",
                "{case}: {answer}"
            );
            assert!(stderr(&output).contains("failed closed"), "{case}");
        } else {
            assert_eq!(
                answer["hookSpecificOutput"],
                Value::Null,
                "{case}: {answer}"
            );
            assert!(
                answer["systemMessage"]
                    .as_str()
                    .is_some_and(|m| m.contains("failed open")),
                "{case}: {answer}"
            );
        }
    }
}
