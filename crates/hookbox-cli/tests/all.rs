//! hookbox-cli integration tests: the real binary, real hook processes.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

/// `hookbox hook AGENT`: agents' own hook events answered by a hookbox policy.
mod agent_hooks;
/// The real agents from npm (Claude Code, Gemini CLI) gated by `hookbox install`, fake models.
mod agents;
/// `hookbox credentials` and the `[network]` section of hookbox.toml.
mod credentials;
/// `hookbox env` and `hookbox exec`: environments, the sandbox and hooks inside it.
mod environments;
/// `hookbox install AGENT`: the agents' hook files written, merged and restored.
mod install;
/// `hookbox mcp`: an environment's tools to MCP clients, over stdio and streamable HTTP.
mod mcp;
/// The seeds' network examples end to end: HTTP hooks under an environment's allowlist (root only).
mod network;
/// SDK mode: the stream-json control protocol, driven by the Python agent SDKs.
mod sdk_mode;
/// `hookbox serve`: the REST API as a process, driven by the official google-genai SDK.
mod serve;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

use serde_json::{Value, json};

/// Spawns `command`, whose program a test may have just copied into place: a child that
/// another test's thread forked meanwhile holds the copy open for writing until it executes
/// (the descriptor is close-on-exec), and executing the copy fails with ETXTBSY until then;
/// retried every 10 ms for up to 2 s.
fn spawn_copied(command: &mut Command) -> std::io::Result<Child> {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(error)
                if error.kind() == std::io::ErrorKind::ExecutableFileBusy && attempts < 200 =>
            {
                attempts += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            spawned => return spawned,
        }
    }
}

/// Runs the `hookbox` binary with `args`.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn hookbox(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(args)
        .output()
        .expect("run hookbox")
}

/// Runs the `hookbox` binary with `args`, `HOOKBOX_HOME` set to `home` and `stdin` fed in.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn hookbox_in(home: &Path, args: &[&str], stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(args)
        .env("HOOKBOX_HOME", home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run hookbox");
    // hookbox may refuse its arguments and exit before reading stdin: a closed pipe is not an error.
    match child.stdin.take().expect("stdin").write_all(stdin) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => {}
        result => result.expect("write stdin"),
    }
    child.wait_with_output().expect("wait for hookbox")
}

/// A test network namespace, or `None` when `test` is skipped because the sandbox or the
/// namespace is unavailable here (the reason printed).
fn sandbox_and_netns(test: &str) -> Option<hookbox_test_support::TestNetns> {
    if let Err(error) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip(test, format_args!("the sandbox is unavailable: {error}"));
        return None;
    }
    match hookbox_test_support::TestNetns::create() {
        Ok(netns) => Some(netns),
        Err(reason) => {
            hookbox_test_support::skip(
                test,
                format_args!("cannot create a test network namespace: {reason}"),
            );
            None
        }
    }
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("exit code")
}

fn stdout_json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| {
        panic!(
            "stdout is not JSON ({err}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn seeds() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seeds")
}

/// A seed config with its sandbox script paths pointed at the fixtures, written to `dir`.
fn seed_config(dir: &Path, name: &str) -> String {
    let text = std::fs::read_to_string(seeds().join(name)).expect("seed");
    let path = dir.join(name);
    std::fs::write(
        &path,
        text.replace(
            "/.agents/hooks-scripts/",
            &format!("{}/", seeds().display()),
        ),
    )
    .expect("write");
    path.display().to_string()
}

fn write(dir: &Path, name: &str, value: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, value.to_string()).expect("write");
    path.display().to_string()
}

/// The seeds with their scripts where they are (as in the sandbox, where `/.agents/` holds
/// them) are valid; as shipped, checked on this host, their scripts are not there.
#[test]
fn check_accepts_the_seed_configs() {
    let dir = tempfile::tempdir().expect("tempdir");
    // (name, whether it has command hooks)
    for (name, commands) in [
        ("security-gate.hooks.json", true),
        ("privacy-gate.hooks.json", true),
        ("audit-logging.hooks.json", false),
    ] {
        let shipped = seeds().join(name);
        let shipped = shipped.to_str().expect("utf-8");
        let output = hookbox(&["check", shipped]);
        assert_eq!(code(&output), i32::from(commands), "{name}");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            !commands
                || (text.contains("cannot start: the script /.agents/hooks-scripts/")
                    && text.contains("--allow-missing")),
            "{text}"
        );
        let output = hookbox(&["check", "--allow-missing", shipped]);
        assert_eq!(code(&output), 0, "{name}");
        let path = seed_config(dir.path(), name);
        let output = hookbox(&["check", &path]);
        assert_eq!(
            code(&output),
            0,
            "{name}: {}",
            String::from_utf8_lossy(&output.stdout)
        );
        assert!(String::from_utf8_lossy(&output.stdout).contains("valid (0 errors, 0 warnings)"));
    }
}

/// A gate that cannot start is an error at its JSON path, naming what is missing; with
/// `--allow-missing` a warning. Each row is a handler's command; a new case is one line.
#[test]
fn check_reports_a_command_hook_that_cannot_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let typo = dir.path().join("gaet.py");
    let typo = typo.display();
    for (command, problem) in [
        (
            format!("python3 {typo}"),
            format!("the script {typo} does not exist"),
        ),
        (format!("{typo}"), format!("{typo} does not exist")),
        (
            "no-such-gate-program".to_owned(),
            "`no-such-gate-program` is not on the PATH".to_owned(),
        ),
    ] {
        let policy = write(
            dir.path(),
            "policy.json",
            &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": command}]}]}}),
        );
        let output = hookbox(&["check", &policy]);
        assert_eq!(code(&output), 1, "{command}");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            text.contains("$.hooks.PreToolUse[0].hooks[0]") && text.contains(&problem),
            "{text}"
        );
        let output = hookbox(&["check", "--allow-missing", &policy]);
        assert_eq!(code(&output), 0, "{command}");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(text.contains("valid (0 errors, 1 warnings)"), "{text}");
    }
}

#[test]
fn check_reports_problems_with_json_paths() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(
        dir.path(),
        "bad.json",
        &json!({"g": {"pre_tool_execution": [{"matcher": "*_file", "hooks": [{"type": "command", "command": "true", "timeout": 0}]}]}}),
    );
    let output = hookbox(&["check", "--json", &bad]);
    assert_eq!(code(&output), 1);
    let report = stdout_json(&output);
    assert_eq!(report["valid"], false);
    let paths: Vec<&str> = report["files"][0]["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| d["json_path"].as_str().expect("path"))
        .collect();
    assert!(
        paths.contains(&"$.g.pre_tool_execution[0].matcher"),
        "{paths:?}"
    );
    assert!(
        paths.contains(&"$.g.pre_tool_execution[0].hooks[0].timeout"),
        "{paths:?}"
    );

    let text = hookbox(&["check", &bad]);
    assert_eq!(code(&text), 1);
    assert!(String::from_utf8_lossy(&text.stdout).contains("hint:"));
}

#[test]
fn check_reports_http_urls_and_groups_a_later_file_cannot_replace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = write(
        dir.path(),
        "root.json",
        &json!({"gate": {"pre_tool_execution": [{"matcher": ".*", "hooks": [{"type": "command", "command": "true"}]}]}}),
    );
    let workspace = write(
        dir.path(),
        "workspace.json",
        &json!({"gate": {"enabled": false}, "audit": {"post_tool_execution": [{"hooks": [
            {"type": "http", "url": "http://audit.example.com/events"}]}]}}),
    );
    let output = hookbox(&["check", "--json", &root, &workspace]);
    assert_eq!(code(&output), 1);
    let report = stdout_json(&output);
    assert_eq!(report["files"][0]["valid"], true);
    let diagnostics = report["files"][1]["diagnostics"]
        .as_array()
        .expect("diagnostics");
    let ignored = diagnostics
        .iter()
        .find(|d| d["json_path"] == "$[\"gate\"]")
        .unwrap_or_else(|| panic!("{diagnostics:#?}"));
    assert!(
        ignored["message"]
            .as_str()
            .expect("message")
            .contains("is ignored")
    );
    let http = diagnostics
        .iter()
        .find(|d| d["json_path"] == "$.audit.post_tool_execution[0].hooks[0].url")
        .unwrap_or_else(|| panic!("{diagnostics:#?}"));
    assert_eq!(http["severity"], "error");
}

#[test]
fn check_reports_unreadable_and_non_json_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{not json").expect("write");
    let output = hookbox(&[
        "check",
        "--json",
        garbage.to_str().expect("utf-8"),
        "/nonexistent/hooks.json",
    ]);
    assert_eq!(code(&output), 1);
    let report = stdout_json(&output);
    assert_eq!(report["files"].as_array().expect("files").len(), 2);
    assert!(
        report["files"][1]["diagnostics"][0]["message"]
            .as_str()
            .expect("message")
            .contains("cannot read")
    );
}

#[test]
fn hooks_run_denies_with_exit_2_and_reports_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = seed_config(dir.path(), "security-gate.hooks.json");
    let output = hookbox(&[
        "hooks",
        "run",
        "--config",
        &config,
        "--event",
        "pre_tool_execution",
        "--tool",
        "code_execution",
        "--args",
        r#"{"code":"rm -rf /tmp/forbidden","language":"bash"}"#,
        "--json",
    ]);
    assert_eq!(
        code(&output),
        2,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let outcome = stdout_json(&output);
    assert_eq!(outcome["decision"], "deny");
    assert_eq!(
        outcome["reason"],
        "Destructive command blocked by security gate."
    );
    assert_eq!(outcome["continue"], true);
    for field in ["updated_input", "additional_context", "trace"] {
        assert!(outcome.get(field).is_some(), "missing {field}");
    }
    assert_eq!(outcome["trace"][0]["result"], json!({"decided": "deny"}));
}

#[test]
fn hooks_run_allows_with_exit_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = seed_config(dir.path(), "privacy-gate.hooks.json");
    let output = hookbox(&[
        "hooks",
        "run",
        "--config",
        &config,
        "--event",
        "pre_tool_execution",
        "--tool",
        "read_file",
        "--args",
        r#"{"path":"/workspace/public/summary.json"}"#,
    ]);
    assert_eq!(code(&output), 0);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("decision: allow"), "{text}");
    assert!(text.contains("check_privacy.py"), "{text}");
}

#[test]
fn hooks_run_sdk_event_rewrites_input_and_adds_context() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"PreToolUse\",\"updatedInput\":{\"command\":\"timeout 30 ls\"},\"additionalContext\":\"wrapped\"}}'"}
        ]}]}}),
    );
    let output = hookbox(&[
        "hooks",
        "run",
        "--config",
        &config,
        "--event",
        "PreToolUse",
        "--tool",
        "Bash",
        "--args",
        r#"{"command":"ls"}"#,
        "--json",
    ]);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let outcome = stdout_json(&output);
    assert_eq!(outcome["decision"], "allow");
    assert_eq!(
        outcome["updated_input"],
        json!({"command": "timeout 30 ls"})
    );
    assert_eq!(outcome["additional_context"], "wrapped");
}

#[test]
fn hooks_run_passes_input_fields_and_blocks_prompts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(
        dir.path(),
        "settings.json",
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [
            {"type": "command", "command": "grep -q secret && { echo 'no secrets' >&2; exit 2; } || true"}
        ]}]}}),
    );
    let run = |prompt: &str| {
        hookbox(&[
            "hooks",
            "run",
            "--config",
            &config,
            "--event",
            "UserPromptSubmit",
            "--input",
            &json!({"prompt": prompt}).to_string(),
            "--json",
        ])
    };
    let blocked = run("my secret is 42");
    assert_eq!(code(&blocked), 2);
    assert_eq!(stdout_json(&blocked)["decision"], "block");
    assert_eq!(stdout_json(&blocked)["reason"], "no secrets");
    assert_eq!(code(&run("hello")), 0);
}

#[test]
fn usage_and_config_errors_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = seed_config(dir.path(), "security-gate.hooks.json");
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "hooks",
            "run",
            "--config",
            &config,
            "--event",
            "pre_tool_use",
            "--tool",
            "x",
        ],
        vec![
            "hooks",
            "run",
            "--config",
            &config,
            "--event",
            "pre_tool_execution",
        ],
        vec![
            "hooks",
            "run",
            "--config",
            &config,
            "--event",
            "pre_tool_execution",
            "--tool",
            "x",
            "--args",
            "[1]",
        ],
        vec![
            "hooks",
            "run",
            "--config",
            &config,
            "--event",
            "pre_tool_execution",
            "--tool",
            "x",
            "--args",
            "{",
        ],
        vec![
            "hooks",
            "run",
            "--config",
            "/nonexistent.json",
            "--event",
            "pre_tool_execution",
            "--tool",
            "x",
        ],
        vec!["hooks", "run", "--event", "pre_tool_execution"],
        vec!["frobnicate"],
    ];
    for args in cases {
        let output = hookbox(&args);
        assert_eq!(code(&output), 1, "{args:?}");
        assert!(!output.stderr.is_empty(), "{args:?}: no message");
    }
}

#[test]
fn error_messages_print_each_cause_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.json");
    let output = hookbox(&[
        "hooks",
        "run",
        "--config",
        missing.to_str().expect("utf-8"),
        "--event",
        "pre_tool_execution",
        "--tool",
        "x",
    ]);
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr,
        format!(
            "error: cannot read hook config `{}`: No such file or directory (os error 2)\n",
            missing.display()
        )
    );

    let garbage = dir.path().join("garbage.json");
    std::fs::write(&garbage, "{not json").expect("write");
    let output = hookbox(&[
        "hooks",
        "run",
        "--config",
        garbage.to_str().expect("utf-8"),
        "--event",
        "pre_tool_execution",
        "--tool",
        "x",
    ]);
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with(&format!("error: {}: $: not valid JSON", garbage.display())),
        "{stderr}"
    );
    assert!(!stderr.contains("error: error:"), "{stderr}");
}

#[test]
fn help_is_available_for_every_command() {
    for args in [
        vec!["--help"],
        vec!["check", "--help"],
        vec!["hooks", "--help"],
        vec!["hooks", "run", "--help"],
        vec!["demo", "--help"],
        vec!["env", "--help"],
        vec!["env", "create", "--help"],
        vec!["exec", "--help"],
        vec!["install", "--help"],
        vec!["log", "--help"],
        vec!["--version"],
    ] {
        let output = hookbox(&args);
        assert_eq!(code(&output), 0, "{args:?}");
        assert!(!output.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn demo_runs_the_seed_gates() {
    let output = hookbox(&["demo"]);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("SCRIPTED"),
        "the scripted model must say so: {text}"
    );
    assert!(
        text.contains("DENY: Destructive command blocked by security gate."),
        "{text}"
    );
    assert!(
        text.contains("DENY: Access to confidential `/private/` records"),
        "{text}"
    );
    assert!(text.contains("(in the sandbox) → ALLOW"), "{text}");
    assert!(
        text.contains("tool result (error): Blocked by a pre_tool_execution hook"),
        "{text}"
    );
    assert!(
        text.contains("\\\"team_size\\\": 42"),
        "the public summary was read: {text}"
    );
    // The audit example: both events reach the local receiver with the injected header.
    assert!(text.contains("(posted by hookbox) → no decision"), "{text}");
    for tool in ["write_file", "read_file"] {
        assert!(
            text.contains(&format!(
                "POST /api/v1/agent-events post_tool_execution {tool}, with Authorization: Bearer telemetry_secret_… (injected"
            )),
            "{text}"
        );
    }
}

#[test]
fn demo_uses_a_configured_agent_and_reports_unknown_ones() {
    use hookbox_test_support::{FakeModelServer, FakeTurn};
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let server = runtime
        .block_on(FakeModelServer::openai(
            "demo-model",
            None,
            vec![
                FakeTurn::tool_call(
                    "",
                    "c1",
                    "code_execution",
                    json!({"code": "rm -rf /tmp/forbidden", "language": "bash"}),
                ),
                FakeTurn::text("Blocked by the security gate."),
                FakeTurn::tool_call(
                    "",
                    "c2",
                    "read_file",
                    json!({"path": "/workspace/private/employees.json"}),
                ),
                FakeTurn::text("Blocked by the privacy gate."),
                FakeTurn::tool_call(
                    "",
                    "c3",
                    "read_file",
                    json!({"path": "/workspace/public/summary.json"}),
                ),
                FakeTurn::text("Engineering: 42 people."),
                FakeTurn::tool_call(
                    "",
                    "c4",
                    "write_file",
                    json!({"path": "/workspace/audit.log", "content": "ok\n"}),
                ),
                FakeTurn::text("Written."),
            ],
        ))
        .expect("fake model");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("hookbox.toml");
    std::fs::write(
        &config,
        format!("[agents.\"antigravity-preview-05-2026\"]\nprovider = \"openai\"\nmodel = \"demo-model\"\nbase_url = \"{}\"\n", server.base_url()),
    )
    .expect("config");
    let config = config.to_str().expect("utf-8");

    let output = hookbox(&[
        "demo",
        "--agent",
        "antigravity-preview-05-2026",
        "--config",
        config,
    ]);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("The model is openai:demo-model"), "{text}");
    assert!(
        text.contains("DENY: Destructive command blocked by security gate."),
        "{text}"
    );
    assert!(text.contains("model: Engineering: 42 people."), "{text}");

    let unknown = hookbox(&["demo", "--agent", "nope", "--config", config]);
    assert_eq!(code(&unknown), 1);
    assert!(
        String::from_utf8_lossy(&unknown.stderr)
            .contains("configured agents: antigravity-preview-05-2026")
    );
}
