//! `--mcp-config` stdio and http servers through the Python claude-agent-sdk: a
//! standard-library MCP server started by hookbox in the session's sandbox, and one over HTTPS
//! on loopback, their tools offered as `mcp__NAME__TOOL`, called, hooked and permissioned like
//! the SDK's own servers; servers that cannot start, never answer or die mid-session fail
//! without hanging anything, nothing runs on the host, and http goes through the guarded
//! client only (skipped without `HOOKBOX_PYTHON`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::mcp::{drive, handled, hooked, init, mcp_status};
use super::python::python;
use super::{World, call, tool_results_in};
use hookbox_test_support::{FakeTurn, RecordedRequest, Reply, TestHttpServer};

/// The standard-library MCP server, written into a directory of its own in the world's
/// workspace (hookbox keeps it read-only to the model, and refuses a server script that lies
/// directly in the workspace); its path.
pub(super) fn server_script(world: &World) -> PathBuf {
    let script = world.work().join("mcp/stdio_mcp_server.py");
    std::fs::create_dir_all(script.parent().unwrap()).unwrap();
    std::fs::write(&script, include_str!("stdio_mcp_server.py")).unwrap();
    script
}

/// The stdio server config running `script` with `args` (the sandbox's own `python3`).
pub(super) fn python_server(script: &Path, args: &[&str]) -> Value {
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
/// out of sight, hookbox's environment not inherited, the config's `env` given with its
/// `${VAR}` expanded from the SDK's `env`); its tools are
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
    // The greeting reaches the server through a `${VAR}` expanded from the SDK's `env`.
    let mut server = python_server(&script, &[]);
    server["env"]["GREETING"] = json!("${HOOKBOX_TEST_GREETING}");
    let config = json!({"mcpServers": {"local": server}});
    let spec = json!({
        "servers": {},
        "options": {"allowed_tools": ["mcp__local__*"],
                    "env": {"HOOKBOX_TEST_GREETING": "hi"},
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
    assert_eq!(
        tools,
        ["whoami", "fail", "huge", "write", "hang", "fetch", "die"],
        "{status}"
    );
    assert_eq!(server["tools"][0]["annotations"]["readOnly"], true);
}

/// Attacks and failures: a config whose command would write on the host writes nothing there;
/// the server cannot plant a host hook in the protected `.claude` (it can write the workspace);
/// a server that never answers `initialize` fails after `MCP_TIMEOUT` with its stderr quoted,
/// a call never answered fails after `MCP_TOOL_TIMEOUT`;
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
    let settings = json!({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": format!("touch {}", marker.display())}
    ]}]}});
    let world = World::new(vec![
        call(
            "toolu_1",
            "mcp__local__write",
            json!({"path": ".claude/settings.local.json", "text": settings.to_string()}),
        ),
        call(
            "toolu_2",
            "mcp__local__write",
            json!({"path": "notes.txt", "text": "ok"}),
        ),
        call("toolu_3", "mcp__slow__hang", json!({})),
        call("toolu_4", "mcp__local__die", json!({})),
        call("toolu_5", "mcp__local__whoami", json!({})),
        FakeTurn::text("Still here."),
    ]);
    let script = server_script(&world);
    let config = json!({"mcpServers": {
        "silent": python_server(&script, &["--silent"]),
        "escape": {"command": "/bin/sh", "args": ["-c", format!("echo pwned > {}", marker.display())]},
        "local": python_server(&script, &[]),
        "slow": python_server(&script, &[]),
    }});
    let spec = json!({
        "servers": {},
        "options": {"permission_mode": "bypassPermissions",
                    "env": {"MCP_TIMEOUT": "2000", "MCP_TOOL_TIMEOUT": "1500"},
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
    assert_eq!(results.len(), 5, "{results:?}");
    // The protected `.claude` is read-only in the server's sandbox: no host hook planted
    // (the session's Stop hook would have run it on the host).
    assert!(
        results[0].1 && results[0].0.contains("Read-only file system"),
        "{results:?}"
    );
    assert!(!world.work().join(".claude/settings.local.json").exists());
    // The workspace itself is writable, as for Bash.
    assert_eq!(results[1], ("wrote".to_owned(), false));
    assert_eq!(
        std::fs::read_to_string(world.work().join("notes.txt")).unwrap(),
        "ok"
    );
    assert_eq!(
        results[2],
        (
            "MCP tool mcp__slow__hang failed: no answer within 1500 ms (MCP_TOOL_TIMEOUT)"
                .to_owned(),
            true
        )
    );
    for (text, is_error) in &results[3..] {
        assert!(*is_error, "{results:?}");
        assert!(text.contains("the server is gone"), "{results:?}");
    }
}

/// A streamable HTTP MCP server answering JSON (no event stream): `initialize` (with a
/// session id), `tools/list` (one tool, `echo`), `tools/call`; 202 for notifications, 405 for
/// the GET of a server-initiated stream.
fn http_mcp(request: &RecordedRequest) -> Reply {
    if request.method != "POST" {
        return Reply::text(405, "no event stream");
    }
    let message = request.json();
    let Some(id) = message.get("id").cloned() else {
        return Reply::text(202, "");
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "https-test-server", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "echo", "description": "Says it back",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        }]}),
        "tools/call" => json!({"content": [{"type": "text",
            "text": format!("echo: {}", message["params"]["arguments"]["text"].as_str().unwrap_or_default())}]}),
        other => {
            return Reply::json(
                200,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": other}}),
            );
        }
    };
    let mut reply = Reply::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}));
    reply
        .headers
        .push(("mcp-session-id".to_owned(), "session-1".to_owned()));
    reply
}

/// An `http` server over HTTPS on loopback (allowed by hookbox.toml's `[network]`, as HTTP
/// hooks are): its tool is offered, called with the config's headers, hooked; a plain-HTTP
/// URL, a loopback one the client would refuse without that setting, and an `sse` server
/// fail with the reason.
#[test]
fn claude_http_mcp_server_is_reached_through_the_guarded_client() {
    let Some(python) = python("claude_http_mcp_server_is_reached_through_the_guarded_client")
    else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "mcp__web__echo", json!({"text": "over https"})),
        FakeTurn::text("Done."),
    ]);
    let certificates = hookbox_test_support::TestCertificates::for_names(&["localhost"]).unwrap();
    let server = {
        let _entered = world.runtime.enter();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        TestHttpServer::start_https_on(listener, &certificates, http_mcp).unwrap()
    };
    let home = world.home.path();
    std::fs::write(home.join("mcp-ca.pem"), certificates.ca_pem()).unwrap();
    let mut config = std::fs::read_to_string(home.join("hookbox.toml")).unwrap();
    config.push_str("[network]\npermit_loopback_hooks = true\nextra_ca_certs = [\"mcp-ca.pem\"]\n");
    std::fs::write(home.join("hookbox.toml"), config).unwrap();
    let port = server.addr().port();
    let config = json!({"mcpServers": {
        "web": {"type": "http", "url": format!("https://localhost:{port}/mcp"),
                "headers": {"Authorization": "Bearer t0ken", "X-Team": "blue"}},
        "plain": {"type": "http", "url": format!("http://localhost:{port}/mcp")},
        "metadata": {"type": "http", "url": "https://169.254.169.254/mcp"},
        "events": {"type": "sse", "url": format!("https://localhost:{port}/sse")},
    }});
    let spec = json!({
        "servers": {},
        "options": {"allowed_tools": ["mcp__web"], "env": {"MCP_TIMEOUT": "10000"},
                    "extra_args": {"mcp-config": config.to_string()}},
        "hooks": {"PostToolUse": ["mcp__web__echo"]},
    });
    let messages = drive(&python, &world, "claude", &spec);
    assert_eq!(
        world.tool_results(),
        [("echo: over https".to_owned(), false)]
    );
    let requests = server.requests();
    let posts: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|request| request.method == "POST")
        .collect();
    let methods: Vec<String> = posts
        .iter()
        .map(|request| request.json()["method"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/list",
            "tools/call"
        ]
    );
    for request in &posts {
        assert_eq!(request.path, "/mcp");
        assert_eq!(request.header("authorization"), Some("Bearer t0ken"));
        assert_eq!(request.header("x-team"), Some("blue"));
    }
    assert_eq!(hooked(&messages).len(), 1);
    let status = mcp_status(&messages);
    let error = |name: &str| {
        let server = status["mcpServers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|server| server["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {status}"));
        server["error"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(error("web"), "", "{status}");
    assert!(
        error("plain").contains("this client only sends over HTTPS"),
        "{status}"
    );
    assert!(
        error("metadata").contains("169.254.169.254 is cloud metadata"),
        "{status}"
    );
    assert!(
        error("events").contains("`sse` MCP servers are not supported"),
        "{status}"
    );
}
