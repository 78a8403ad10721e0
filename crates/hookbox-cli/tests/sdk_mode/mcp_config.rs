//! `--mcp-config` stdio servers through the Python claude-agent-sdk: a standard-library MCP
//! server started by hookbox in the session's sandbox, its tools offered as `mcp__NAME__TOOL`,
//! called, hooked and permissioned like the SDK's own servers; servers that cannot start, never
//! answer or die mid-session fail without hanging anything, and nothing runs on the host
//! (skipped without `HOOKBOX_PYTHON`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp::{drive, handled, hooked, init, mcp_status};
use super::python::python;
use super::{World, call, tool_results_in};
use hookbox_test_support::FakeTurn;

/// The standard-library MCP server, written into the world's workspace; its path.
fn server_script(world: &World) -> PathBuf {
    let script = world.work().join("stdio_mcp_server.py");
    std::fs::write(&script, include_str!("stdio_mcp_server.py")).unwrap();
    script
}

/// The stdio server config running `script` with `args` (the sandbox's own `python3`).
fn python_server(script: &Path, args: &[&str]) -> Value {
    let mut argv = vec![json!(script)];
    argv.extend(args.iter().map(|arg| json!(arg)));
    json!({"command": "python3", "args": argv, "env": {"GREETING": "hi"}})
}

/// Waits (up to 10 s) until no process runs `script` any more.
fn assert_no_server_left(script: &Path) {
    let needle = script.as_os_str().as_encoded_bytes().to_vec();
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let running: Vec<String> = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| {
                let name = entry.ok()?.file_name().into_string().ok()?;
                name.parse::<u32>().ok()?;
                let cmdline = std::fs::read(format!("/proc/{name}/cmdline")).ok()?;
                cmdline
                    .windows(needle.len())
                    .any(|window| window == needle)
                    .then_some(name)
            })
            .collect();
        if running.is_empty() {
            return;
        }
        assert!(
            Instant::now() < give_up,
            "server processes left: {running:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server runs in the sandbox (hostname `sandbox`, pid 1 of its namespace, a host file
/// out of sight, hookbox's environment not inherited, the config's `env` given); its tools are
/// allowed by an `mcp__local__*` pattern, hooked by `mcp__local__.*` matchers; `isError` is a
/// tool failure and huge output is cut as Bash's is; init and `mcp_status` report it.
#[test]
fn claude_stdio_mcp_server_runs_in_the_sandbox_and_is_called_hooked_and_allowed() {
    let Some(python) =
        python("claude_stdio_mcp_server_runs_in_the_sandbox_and_is_called_hooked_and_allowed")
    else {
        return;
    };
    let host = tempfile::tempdir().unwrap();
    let secret = host.path().join("secret.txt");
    std::fs::write(&secret, "host only").unwrap();
    let world = World::new(vec![
        call("toolu_1", "mcp__local__whoami", json!({"path": secret})),
        call("toolu_2", "mcp__local__fail", json!({"why": "on purpose"})),
        call("toolu_3", "mcp__local__huge", json!({})),
        FakeTurn::text("The summary."),
        FakeTurn::text("Done."),
    ]);
    let script = server_script(&world);
    let config = json!({"mcpServers": {"local": python_server(&script, &[])}});
    let spec = json!({
        "servers": {},
        "options": {"allowed_tools": ["mcp__local__*"],
                    "extra_args": {"mcp-config": config.to_string()}},
        "hooks": {"PreToolUse": ["mcp__local__.*"], "PostToolUse": ["mcp__local__.*"]},
    });
    let messages = drive(&python, &world, "claude", &spec);
    assert_no_server_left(&script);
    let bodies = world.server.bodies();
    assert_eq!(bodies.len(), 5, "{bodies:?}");
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    for name in ["mcp__local__whoami", "mcp__local__fail", "mcp__local__die"] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
    let results = tool_results_in(&bodies[2]);
    let whoami = &results[0].0;
    assert!(
        whoami.starts_with("host=sandbox pid=1 greeting=hi key=False path_exists=False cwd="),
        "{results:?}"
    );
    assert!(
        whoami.ends_with(&world.work().display().to_string()),
        "{whoami}"
    );
    assert!(!results[0].1);
    assert_eq!(results[1], ("it broke: on purpose".to_owned(), true));
    let summary = bodies[3].to_string();
    assert!(
        summary.contains("the MCP tool's output was 3145728 bytes; cut to the first 1048576"),
        "{}",
        &summary[summary.len().saturating_sub(500)..]
    );
    assert!(handled(&messages).is_empty(), "no SDK server was called");
    let hook = |event: &str, tool: &str| {
        (
            "mcp__local__.*".to_owned(),
            event.to_owned(),
            format!("mcp__local__{tool}"),
        )
    };
    assert_eq!(
        hooked(&messages),
        [
            hook("PreToolUse", "whoami"),
            hook("PostToolUse", "whoami"),
            hook("PreToolUse", "fail"),
            hook("PreToolUse", "huge"),
            hook("PostToolUse", "huge"),
        ]
    );
    let post = messages
        .iter()
        .find(|message| message["input"]["hook_event_name"] == "PostToolUse")
        .unwrap();
    assert_eq!(
        post["input"]["tool_response"],
        json!([{"type": "text", "text": whoami}])
    );
    assert_eq!(
        init(&messages)["mcp_servers"],
        json!([{"name": "local", "status": "connected"}])
    );
    let status = mcp_status(&messages);
    let server = &status["mcpServers"][0];
    assert_eq!(server["status"], "connected", "{status}");
    let tools: Vec<&str> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["whoami", "fail", "huge", "die"], "{status}");
    assert_eq!(server["tools"][0]["annotations"]["readOnly"], true);
}

/// Attacks and failures: a config whose command would write on the host writes nothing there;
/// a server that never answers `initialize` fails after `MCP_TIMEOUT` with its stderr quoted;
/// a server that dies mid-session gives the model an error result for that call and the next,
/// and the session goes on.
#[test]
fn claude_stdio_mcp_servers_that_escape_hang_or_die_fail_cleanly() {
    let Some(python) = python("claude_stdio_mcp_servers_that_escape_hang_or_die_fail_cleanly")
    else {
        return;
    };
    let host = tempfile::tempdir().unwrap();
    let marker = host.path().join("pwned");
    let world = World::new(vec![
        call("toolu_1", "mcp__local__die", json!({})),
        call("toolu_2", "mcp__local__whoami", json!({})),
        FakeTurn::text("Still here."),
    ]);
    let script = server_script(&world);
    let config = json!({"mcpServers": {
        "silent": python_server(&script, &["--silent"]),
        "escape": {"command": "/bin/sh", "args": ["-c", format!("echo pwned > {}", marker.display())]},
        "local": python_server(&script, &[]),
    }});
    let spec = json!({
        "servers": {},
        "options": {"permission_mode": "bypassPermissions", "env": {"MCP_TIMEOUT": "2000"},
                    "extra_args": {"mcp-config": config.to_string()}},
    });
    let messages = drive(&python, &world, "claude", &spec);
    assert_no_server_left(&script);
    assert!(!marker.exists(), "the config's command wrote on the host");
    let status = mcp_status(&messages);
    let server = |name: &str| {
        status["mcpServers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {status}"))
            .clone()
    };
    let silent = server("silent");
    assert_eq!(silent["status"], "failed");
    let error = silent["error"].as_str().unwrap();
    assert!(
        error.contains("did not connect: no answer within 2000 ms (MCP_TIMEOUT)")
            && error.contains("stdlib-server starting"),
        "{error}"
    );
    let escape = server("escape");
    assert_eq!(escape["status"], "failed", "{status}");
    assert!(
        escape["error"].as_str().unwrap().contains(
            "`/bin/sh` did not connect: it exited instead of answering `initialize`; its \
             stderr: /bin/sh: 1: cannot create"
        ),
        "{status}"
    );
    assert_eq!(server("local")["status"], "connected");
    let results = world.tool_results();
    assert_eq!(results.len(), 2, "{results:?}");
    for (text, is_error) in &results {
        assert!(*is_error, "{results:?}");
        assert!(text.contains("the server is gone"), "{results:?}");
    }
}
