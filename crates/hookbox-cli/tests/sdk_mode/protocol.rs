//! The protocol's edge cases, spoken by the test itself to the `hookbox` binary.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookbox_test_support::FakeTurn;
use serde_json::{Value, json};

use super::{AGENT, KEY, KEY_ENV, World, bin, call};

const PATIENCE: Duration = Duration::from_secs(60);

/// A running `hookbox` in SDK mode and what it wrote.
pub(super) struct Cli {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Result<Value, String>>,
    stderr: Arc<Mutex<String>>,
    seen: Vec<Value>,
}

impl Cli {
    /// Starts hookbox in SDK mode with `--model AGENT` and `extra` arguments.
    pub(super) fn start(world: &World, extra: &[&str]) -> Self {
        Self::start_with(world, &[&["--model", AGENT], extra].concat())
    }

    /// Starts hookbox in SDK mode with the fixed stream-json flags and `args`.
    #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
    fn start_with(world: &World, args: &[&str]) -> Self {
        let mut child = std::process::Command::new(bin())
            .args([
                "--output-format",
                "stream-json",
                "--verbose",
                "--input-format",
                "stream-json",
            ])
            .args(args)
            .current_dir(world.work())
            .env("HOOKBOX_HOME", world.home.path())
            .env("HOME", world.home.path())
            .env(KEY_ENV, KEY)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (sender, lines) = mpsc::channel();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            let mut line = Vec::new();
            loop {
                line.clear();
                match stdout.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let parsed = if line.is_ascii() {
                    serde_json::from_slice::<Value>(&line).map_err(|err| {
                        format!(
                            "stdout line is not JSON ({err}): {}",
                            String::from_utf8_lossy(&line)
                        )
                    })
                } else {
                    Err(format!(
                        "stdout line is not ASCII: {}",
                        String::from_utf8_lossy(&line)
                    ))
                };
                if sender.send(parsed).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let log = Arc::clone(&stderr);
        let mut errors = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            let mut line = String::new();
            while errors.read_line(&mut line).is_ok_and(|read| read > 0) {
                log.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            seen: Vec::new(),
        }
    }

    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub(super) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(format!("{message}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next message matching `wanted`, within `PATIENCE`.
    pub(super) fn until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(Ok(message)) => {
                    self.seen.push(message.clone());
                    if wanted(&message) {
                        return message;
                    }
                }
                Ok(Err(problem)) => panic!("{problem}"),
                Err(_) => panic!(
                    "no {what} within {PATIENCE:?}; seen {:#?}\nstderr: {}",
                    self.seen,
                    self.log()
                ),
            }
        }
    }

    fn control_request(&mut self, subtype: &str) -> Value {
        self.until(subtype, |message| {
            message["type"] == "control_request" && message["request"]["subtype"] == subtype
        })
    }

    pub(super) fn response_to(&mut self, request_id: &str) -> Value {
        self.until("control_response", |message| {
            message["type"] == "control_response" && message["response"]["request_id"] == request_id
        })["response"]
            .clone()
    }

    pub(super) fn result(&mut self) -> Value {
        self.until("result", |message| message["type"] == "result")
    }

    /// Sends `initialize` with `hooks` (and `extra` keys) and checks the success response.
    pub(super) fn initialize(&mut self, hooks: Value, extra: Value) {
        let mut request = json!({"subtype": "initialize", "hooks": hooks});
        if let (Value::Object(request), Value::Object(extra)) = (&mut request, extra) {
            request.extend(extra);
        }
        self.send(
            &json!({"type": "control_request", "request_id": "req_1_init", "request": request}),
        );
        let response = self.response_to("req_1_init");
        assert_eq!(response["subtype"], "success", "{response}");
        assert_eq!(response["response"]["hook_on_failure_supported"], true);
    }

    pub(super) fn prompt(&mut self, text: &str) {
        self.send(&json!({"type": "user", "session_id": "default", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, "parent_tool_use_id": null}));
    }

    fn respond(&mut self, request: &Value, response: Value) {
        let id = request["request_id"].clone();
        self.send(&json!({"type": "control_response", "response": {"subtype": "success", "request_id": id, "response": response}}));
    }

    /// Waits for the exit, at most `limit`.
    pub(super) fn exit_within(
        mut self,
        limit: Duration,
    ) -> (std::process::ExitStatus, Vec<Value>, String) {
        self.stdin = None;
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(50));
                while let Ok(Ok(message)) = self.lines.try_recv() {
                    self.seen.push(message);
                }
                let log = self.log();
                return (status, self.seen, log);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "hookbox did not exit within {limit:?}; stderr: {}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn bash_hook(timeout: Option<u64>) -> Value {
    let mut matcher = json!({"matcher": "Bash", "hookCallbackIds": ["hook_0"]});
    if let Some(timeout) = timeout {
        matcher["timeout"] = json!(timeout);
    }
    json!({"PreToolUse": [matcher]})
}

#[test]
fn version_probe_prints_a_version_without_reading_stdin() {
    #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
    let mut child = std::process::Command::new(bin())
        .arg("-v")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // stdin stays open: the probe must not wait for it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "-v waited for stdin");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    let version = text.trim();
    let parts: Vec<&str> = version.split('.').collect();
    assert_eq!(parts.len(), 3, "{text:?}");
    assert!(
        parts.iter().all(|part| part.parse::<u32>().is_ok()),
        "{text:?}"
    );
}

#[test]
fn a_blocked_call_reaches_the_model_and_stdin_eof_exits_0() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "rm -rf /tmp/x"})),
        FakeTurn::text("understood"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(bash_hook(Some(30)), json!({}));
    cli.prompt("clean up");
    let init = cli.until("system/init", |message| message["type"] == "system");
    for key in [
        "uuid",
        "session_id",
        "cwd",
        "model",
        "tools",
        "mcp_servers",
        "permissionMode",
    ] {
        assert!(init.get(key).is_some(), "init lacks {key}: {init}");
    }
    let request = cli.control_request("hook_callback");
    let tool_use = cli
        .seen
        .iter()
        .position(|message| message["type"] == "assistant")
        .expect("the tool call is written before its hook_callback");
    assert!(tool_use < cli.seen.len() - 1);
    assert_eq!(request["request"]["callback_id"], "hook_0");
    assert_eq!(request["request"]["input"]["tool_name"], "Bash");
    assert_eq!(request["request"]["input"]["hook_event_name"], "PreToolUse");
    cli.respond(
        &request,
        json!({"decision": "block", "reason": "no deleting"}),
    );
    let result = cli.result();
    for key in [
        "duration_ms",
        "duration_api_ms",
        "is_error",
        "num_turns",
        "session_id",
    ] {
        assert!(result.get(key).is_some(), "result lacks {key}: {result}");
    }
    assert_eq!(result["result"], "understood");
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("no deleting"),
        "{results:?}"
    );
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{status:?}: {log}");
}

#[test]
fn disconnecting_mid_callback_ends_promptly() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo hi"})),
        FakeTurn::text("done"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(bash_hook(None), json!({}));
    cli.prompt("say hi");
    cli.control_request("hook_callback");
    cli.close_stdin();
    let started = Instant::now();
    let (status, seen, log) = cli.exit_within(Duration::from_secs(20));
    // The query was interrupted: its result is an error, so the exit status is 1.
    assert_eq!(status.code(), Some(1), "{status:?}: {log}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(
        !world
            .bodies()
            .iter()
            .skip(1)
            .any(|body| body.contains("\"hi\\n\"")),
        "the tool must not run after the SDK left"
    );
    assert!(seen.iter().all(Value::is_object));
}

#[test]
fn a_callback_that_never_answers_times_out_and_blocks() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran > ran.txt"})),
        FakeTurn::text("ok"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(bash_hook(Some(1)), json!({}));
    cli.prompt("go");
    let request = cli.control_request("hook_callback");
    let cancel = cli.until("control_cancel_request", |message| {
        message["type"] == "control_cancel_request"
    });
    assert_eq!(cancel["request_id"], request["request_id"]);
    let result = cli.result();
    assert_eq!(result["result"], "ok");
    assert!(
        !world.work().join("ran.txt").exists(),
        "the blocked tool ran"
    );
    let results = world.tool_results();
    assert!(results[0].1, "{results:?}");
    // A late answer is ignored.
    cli.respond(&request, json!({}));
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn an_error_response_to_a_callback_blocks() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran > ran.txt"})),
        FakeTurn::text("ok"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(bash_hook(None), json!({}));
    cli.prompt("go");
    let request = cli.control_request("hook_callback");
    cli.send(&json!({"type": "control_response", "response": {"subtype": "error", "request_id": request["request_id"], "error": "ValueError: callback exploded"}}));
    cli.result();
    assert!(
        !world.work().join("ran.txt").exists(),
        "the blocked tool ran"
    );
    let results = world.tool_results();
    assert!(results[0].1, "{results:?}");
    assert!(
        world.bodies().last().unwrap().contains("callback exploded"),
        "{results:?}"
    );
}

#[test]
fn out_of_order_responses_reach_their_callbacks() {
    let world = World::new(vec![
        call(
            "toolu_1",
            "Bash",
            json!({"command": "echo original > out.txt"}),
        ),
        FakeTurn::text("ok"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(
        json!({"PreToolUse": [{"matcher": "Bash", "hookCallbackIds": ["hook_0", "hook_1"], "timeout": 30}]}),
        json!({}),
    );
    cli.prompt("go");
    let first = cli.control_request("hook_callback");
    let second = cli.control_request("hook_callback");
    assert_ne!(first["request_id"], second["request_id"]);
    let rewrite = |text: &str| json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": format!("echo {text} > out.txt")}}});
    // Answer in reverse order; the last registered callback's rewrite wins, so a mix-up shows.
    let (hook_0, hook_1) = if first["request"]["callback_id"] == "hook_0" {
        (first, second)
    } else {
        (second, first)
    };
    cli.respond(&hook_1, rewrite("from-hook-1"));
    std::thread::sleep(Duration::from_millis(100));
    cli.respond(&hook_0, rewrite("from-hook-0"));
    // The rewritten input goes to both callbacks again (it runs only once every hook saw it);
    // they rewrite as before, so it settles.
    for _ in 0..2 {
        let again = cli.control_request("hook_callback");
        assert_eq!(
            again["request"]["input"]["tool_input"]["command"],
            "echo from-hook-1 > out.txt"
        );
        let text = if again["request"]["callback_id"] == "hook_0" {
            "from-hook-0"
        } else {
            "from-hook-1"
        };
        cli.respond(&again, rewrite(text));
    }
    cli.result();
    let out = std::fs::read_to_string(world.work().join("out.txt")).unwrap();
    assert_eq!(out.trim(), "from-hook-1");
}

#[test]
fn non_utf8_tool_output_stays_ascii_json() {
    let world = World::new(vec![
        call(
            "toolu_1",
            "Bash",
            json!({"command": "printf 'bad \\377\\376 bytes, caf\\303\\251 \\360\\237\\230\\200\\n'"}),
        ),
        FakeTurn::text("ok"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("print");
    // `until` fails on any line that is not ASCII JSON.
    let tool_result = cli.until("tool result", |message| message["type"] == "user");
    let text = tool_result.to_string();
    assert!(text.contains("bytes, caf\u{e9}"), "{text}");
    cli.result();
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn unknown_control_requests_get_an_error_and_mcp_status_answers() {
    let world = World::new(vec![]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.send(&json!({"type": "control_request", "request_id": "req_2", "request": {"subtype": "rewind_files", "user_message_id": "x"}}));
    let response = cli.response_to("req_2");
    assert_eq!(response["subtype"], "error");
    assert!(
        response["error"].as_str().unwrap().contains("unsupported"),
        "{response}"
    );
    cli.send(&json!({"type": "control_request", "request_id": "req_3", "request": {"subtype": "mcp_status"}}));
    assert_eq!(
        cli.response_to("req_3")["response"],
        json!({"mcpServers": []})
    );
    cli.send(&json!({"type": "control_request", "request_id": "req_4", "request": {"subtype": "set_permission_mode", "mode": "yolo"}}));
    assert_eq!(cli.response_to("req_4")["subtype"], "error");
    cli.send(&json!({"type": "control_request", "request_id": "req_5", "request": {"subtype": "set_model", "model": "nope"}}));
    let response = cli.response_to("req_5");
    assert_eq!(response["subtype"], "error");
    assert!(
        response["error"].as_str().unwrap().contains(AGENT),
        "{response}"
    );
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn set_permission_mode_applies_to_the_next_tool_call() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran > ran.txt"})),
        FakeTurn::text("ok"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.send(&json!({"type": "control_request", "request_id": "req_2", "request": {"subtype": "set_permission_mode", "mode": "plan"}}));
    assert_eq!(cli.response_to("req_2")["subtype"], "success");
    cli.prompt("go");
    let init = cli.until("system/init", |message| message["type"] == "system");
    assert_eq!(init["permissionMode"], "plan");
    cli.result();
    assert!(!world.work().join("ran.txt").exists(), "plan mode ran Bash");
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("plan mode"),
        "{results:?}"
    );
}

#[test]
fn an_ask_from_pre_tool_use_goes_to_can_use_tool() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran > ran.txt"})),
        FakeTurn::text("ok"),
    ]);
    let mut cli = Cli::start(&world, &["--permission-prompt-tool", "stdio"]);
    cli.initialize(bash_hook(Some(30)), json!({}));
    cli.prompt("go");
    let hook = cli.control_request("hook_callback");
    cli.respond(
        &hook,
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "check with the user"}}),
    );
    let ask = cli.control_request("can_use_tool");
    assert_eq!(ask["request"]["tool_name"], "Bash");
    assert_eq!(ask["request"]["input"]["command"], "echo ran > ran.txt");
    assert_eq!(ask["request"]["tool_use_id"], "toolu_1");
    cli.respond(
        &ask,
        json!({"behavior": "deny", "message": "the user said no"}),
    );
    cli.result();
    assert!(!world.work().join("ran.txt").exists());
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("the user said no"),
        "{results:?}"
    );
}

#[test]
fn no_agent_is_an_error_result_after_init() {
    let world = World::new(vec![]);
    #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
    let mut child = std::process::Command::new(bin())
        .args([
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
        ])
        .current_dir(world.work())
        .env("HOOKBOX_HOME", world.home.path())
        .env("HOME", world.home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"type\":\"user\",\"session_id\":\"\",\"message\":{\"role\":\"user\",\"content\":\"hi\"},\"parent_tool_use_id\":null}\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    // An error result: the process exits 1 when stdin closes, as Claude Code does.
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let lines: Vec<Value> = output
        .stdout
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    assert_eq!(lines[0]["type"], "system");
    assert_eq!(lines[0]["subtype"], "init");
    let result = &lines[1];
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["is_error"], true);
    let error = result["errors"][0].as_str().unwrap();
    assert!(
        error.contains("default_agent") && error.contains(AGENT),
        "{error}"
    );
}

#[test]
fn stdin_closed_right_after_the_prompt_still_finishes_the_turn() {
    // claude-agent-sdk's query() without hooks closes stdin right after the prompt.
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran > ran.txt"})),
        FakeTurn::text("finished"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("go");
    cli.close_stdin();
    let result = cli.result();
    assert_eq!(result["result"], "finished");
    assert!(world.work().join("ran.txt").exists());
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn without_model_the_sdk_default_agent_answers() {
    let world = World::new(vec![FakeTurn::text("from the default agent")]);
    let config = world.home.path().join("hookbox.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("[sdk]\ndefault_agent = \"{AGENT}\"\n"));
    std::fs::write(&config, text).unwrap();
    let mut cli = Cli::start_with(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("hello");
    let result = cli.result();
    assert_eq!(result["result"], "from the default agent", "{result}");
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn claude_style_settings_hooks_load_from_the_project_unless_sources_exclude_it() {
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo 'blocked by project settings' >&2; exit 2"}
    ]}]}});
    let turns = || {
        vec![
            call("toolu_1", "Bash", json!({"command": "echo ran > ran.txt"})),
            FakeTurn::text("done"),
        ]
    };
    let world = World::new(turns());
    std::fs::create_dir_all(world.work().join(".claude")).unwrap();
    std::fs::write(
        world.work().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("go");
    cli.result();
    assert_eq!(
        world.tool_results(),
        [("blocked by project settings".to_owned(), true)]
    );
    assert!(!world.work().join("ran.txt").exists());
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");

    // `--setting-sources user` leaves the project's settings out.
    let world = World::new(turns());
    std::fs::create_dir_all(world.work().join(".claude")).unwrap();
    std::fs::write(
        world.work().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut cli = Cli::start(&world, &["--setting-sources", "user"]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("go");
    cli.result();
    assert!(world.work().join("ran.txt").exists(), "{}", cli.log());
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn agents_from_initialize_run_as_task_subagents_with_their_hooks() {
    let world = World::new(vec![
        call(
            "toolu_task",
            "Task",
            json!({"description": "review", "prompt": "say what you are", "subagent_type": "reviewer"}),
        ),
        FakeTurn::text("I am the reviewer"),
        FakeTurn::text("the reviewer answered"),
    ]);
    let mut cli = Cli::start(&world, &["--dangerously-allow-all-tool-calls"]);
    cli.initialize(
        json!({"SubagentStart": [{"matcher": "reviewer", "hookCallbackIds": ["hook_0"]}]}),
        json!({"agents": {"reviewer": {"description": "Reviews", "prompt": "You are the reviewer.", "tools": ["Read"]}}}),
    );
    cli.prompt("get a review");
    let init = cli.until("system/init", |message| message["type"] == "system");
    assert!(
        init["tools"].as_array().unwrap().contains(&json!("Task")),
        "{init}"
    );
    let request = cli.control_request("hook_callback");
    assert_eq!(
        request["request"]["input"]["hook_event_name"],
        "SubagentStart"
    );
    assert_eq!(request["request"]["input"]["agent_type"], "reviewer");
    cli.respond(&request, json!({}));
    let result = cli.result();
    assert_eq!(result["result"], "the reviewer answered", "{result}");
    let bodies = world.bodies();
    assert!(bodies[1].contains("You are the reviewer."), "{}", bodies[1]);
    // The sub-agent only answered in text, which the SDK did not ask for
    // (`forwardSubagentText`): nothing of it is forwarded but the Task call's result.
    assert!(
        !cli.seen
            .iter()
            .any(|message| message["parent_tool_use_id"] == "toolu_task"),
        "{}",
        cli.log()
    );
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn initialize_answers_with_the_commands_agents_and_models() {
    let world = World::new(vec![FakeTurn::text("hi")]);
    std::fs::create_dir_all(world.work().join(".claude/agents")).unwrap();
    std::fs::write(
        world.work().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code\nmodel: haiku\n---\nreview",
    )
    .unwrap();
    let mut cli = Cli::start(&world, &[]);
    cli.send(
        &json!({"type": "control_request", "request_id": "req_init", "request": {
        "subtype": "initialize", "hooks": null,
        "agents": {"helper": {"description": "Helps", "prompt": "help"}}}}),
    );
    let response = cli.response_to("req_init");
    let info = &response["response"];
    assert_eq!(info["hook_on_failure_supported"], true, "{response}");
    let commands: Vec<&str> = info["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|command| command["name"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["compact", "clear"], "{info}");
    assert_eq!(
        info["agents"],
        json!([
            {"name": "reviewer", "description": "Reviews code", "model": "haiku"},
            {"name": "helper", "description": "Helps", "model": null}
        ]),
        "{info}"
    );
    assert_eq!(info["models"][0]["value"], AGENT, "{info}");
    assert_eq!(info["output_style"], "default");
    cli.prompt("hello");
    cli.result();
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
}

#[test]
fn stdin_closing_ends_the_session_with_session_end() {
    let world = World::new(vec![FakeTurn::text("bye")]);
    std::fs::create_dir_all(world.work().join(".claude")).unwrap();
    let settings = json!({"hooks": {"SessionEnd": [{"hooks": [
        {"type": "command", "command": "cat > session-end.json"}
    ]}]}});
    std::fs::write(
        world.work().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("hello");
    cli.result();
    assert!(!world.work().join("session-end.json").exists());
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
    let event: Value = serde_json::from_str(
        &std::fs::read_to_string(world.work().join("session-end.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(event["hook_event_name"], "SessionEnd");
    assert_eq!(event["reason"], "prompt_input_exit");
}

#[test]
fn bash_cannot_plant_hooks_that_the_next_session_would_run_on_the_host() {
    let evil = json!({"hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR\"/pwned"}]}],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "touch \"$CLAUDE_PROJECT_DIR\"/pwned"}]}]
    }})
    .to_string();
    let attack = format!(
        "mkdir -p .claude; echo '{evil}' > .claude/settings.json; \
         echo '{evil}' > .claude/settings.local.json; \
         git init -q . ; git config core.fsmonitor 'touch pwned-by-git'; \
         mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/post-checkout; \
         mv .claude old-claude; mkdir real; echo '{evil}' > real/settings.json; \
         ln -s real .claude; echo attempted"
    );
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": attack})),
        FakeTurn::text("planted"),
        FakeTurn::text("second session"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("plant hooks");
    cli.result();
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
    assert!(world.tool_results()[0].0.contains("attempted"), "{log}");
    for entry in [".claude", ".git", ".agents"] {
        let path = world.work().join(entry);
        assert!(
            std::fs::symlink_metadata(&path).unwrap().is_dir(),
            "{entry}"
        );
        assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0, "{entry}");
    }

    // The next session finds nothing to run.
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("hello");
    cli.result();
    let (status, _, log) = cli.exit_within(Duration::from_secs(10));
    assert!(status.success(), "{log}");
    assert!(!world.work().join("pwned").exists(), "{log}");
    assert!(!world.work().join("pwned-by-git").exists(), "{log}");
}

/// `hookbox audit status --json` of `world`'s home: the destinations' counts.
fn audit_status(world: &World) -> Value {
    let output = super::super::hookbox_in(world.home.path(), &["audit", "status", "--json"], b"");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("status JSON")
}

#[test]
fn durable_post_tool_use_events_wait_out_a_receiver_outage_and_arrive_once_in_order_signed() {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo one"})),
        call("toolu_2", "Bash", json!({"command": "echo two"})),
        call("toolu_3", "Bash", json!({"command": "echo three"})),
        FakeTurn::text("done"),
        FakeTurn::text("still here"),
    ]);
    // The receiver: HTTPS on loopback, 503 while down, keeps what it answered 200.
    let certificates = hookbox_test_support::TestCertificates::for_names(&["localhost"]).unwrap();
    let up = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let taken = Arc::new(Mutex::new(Vec::new()));
    let (is_up, keep) = (Arc::clone(&up), Arc::clone(&taken));
    let receiver = {
        let _entered = world.runtime.enter();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        hookbox_test_support::TestHttpServer::start_https_on(
            listener,
            &certificates,
            move |request| {
                if !is_up.load(std::sync::atomic::Ordering::SeqCst) {
                    return hookbox_test_support::Reply::text(503, "down");
                }
                keep.lock().unwrap().push(request.clone());
                hookbox_test_support::Reply::json(200, &json!({}))
            },
        )
        .unwrap()
    };
    let url = format!("https://localhost:{}/events", receiver.addr().port());
    let home = world.home.path();
    std::fs::write(home.join("receiver-ca.pem"), certificates.ca_pem()).unwrap();
    let mut config = std::fs::read_to_string(home.join("hookbox.toml")).unwrap();
    config.push_str(
        "[network]\npermit_loopback_hooks = true\nextra_ca_certs = [\"receiver-ca.pem\"]\n\
         [audit]\nmax_backoff = 1\n",
    );
    std::fs::write(home.join("hookbox.toml"), config).unwrap();
    // The handler signs with a key of its own, kept in the credential store.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let added = super::super::hookbox_in(
        home,
        &[
            "credentials",
            "add",
            "receiver-key",
            "--domain",
            "localhost",
        ],
        SECRET.as_bytes(),
    );
    assert!(added.status.success(), "{added:?}");
    let settings = json!({"hooks": {"PostToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "http", "url": url, "delivery": "at_least_once",
         "signing_credential": "receiver-key"}
    ]}]}});
    std::fs::create_dir_all(world.work().join(".claude")).unwrap();
    std::fs::write(
        world.work().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();

    // The receiver is down for the whole first session: its events wait in the outbox.
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("go");
    let result = cli.result();
    assert_eq!(result["result"], "done", "{result}");
    let (status, _, log) = cli.exit_within(Duration::from_secs(20));
    assert!(status.success(), "{log}");
    let status = audit_status(&world);
    assert_eq!(status[0]["url"], url, "{status}");
    assert_eq!(status[0]["pending"], 3, "{status}");
    assert!(taken.lock().unwrap().is_empty());

    // Up again: the next session's process delivers them while it runs.
    up.store(true, std::sync::atomic::Ordering::SeqCst);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("again");
    cli.result();
    let deadline = Instant::now() + PATIENCE;
    while taken.lock().unwrap().len() < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let (status, _, log) = cli.exit_within(Duration::from_secs(20));
    assert!(status.success(), "{log}");
    let taken = taken.lock().unwrap().clone();
    let mut ids = Vec::new();
    let mut commands = Vec::new();
    let signer = hookbox_runtime::WebhookSigner::new(SECRET).unwrap();
    for request in &taken {
        let id = request.header("webhook-id").expect("webhook-id").to_owned();
        let timestamp: i64 = request
            .header("webhook-timestamp")
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            request.header("webhook-signature"),
            Some(signer.sign(&id, timestamp, &request.body).as_str()),
            "{request:?}"
        );
        if !ids.contains(&id) {
            commands.push(request.json()["tool_input"]["command"].clone());
            ids.push(id);
        }
    }
    assert_eq!(
        commands,
        ["echo one", "echo two", "echo three"],
        "{taken:?}"
    );
    let status = audit_status(&world);
    assert_eq!(
        (&status[0]["pending"], &status[0]["delivered"]),
        (&json!(0), &json!(3)),
        "{status}"
    );
}

/// The pids of processes whose command line contains `marker`.
fn processes_showing(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).contains(marker))
        })
        .collect()
}

#[test]
fn a_killed_session_leaves_no_process_of_its_host_hooks_behind() {
    let tag = format!("{}{}", std::process::id(), line!());
    // The hook leaves a `setsid` grandchild, then sleeps well within its timeout.
    let hook =
        format!("setsid sleep 1000.{tag} </dev/null >/dev/null 2>&1 & sleep 30.{tag}; echo '{{}}'");
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": hook, "timeout": 120}
    ]}]}});
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran"})),
        FakeTurn::text("done"),
    ]);
    std::fs::create_dir_all(world.work().join(".claude")).unwrap();
    std::fs::write(
        world.work().join(".claude/settings.json"),
        settings.to_string(),
    )
    .unwrap();
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("go");
    let markers = [format!("sleep 1000.{tag}"), format!("sleep 30.{tag}")];
    let deadline = Instant::now() + PATIENCE;
    while !markers
        .iter()
        .all(|marker| !processes_showing(marker).is_empty())
    {
        assert!(
            Instant::now() < deadline,
            "the hook never ran: {}",
            cli.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    cli.child.kill().unwrap();
    cli.child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut left: Vec<u32> = markers.iter().flat_map(|m| processes_showing(m)).collect();
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        left = markers.iter().flat_map(|m| processes_showing(m)).collect();
    }
    for &pid in &left {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_raw(pid.cast_signed()).unwrap(),
            rustix::process::Signal::KILL,
        );
    }
    assert!(
        left.is_empty(),
        "processes of the killed session's hook survive it: {left:?}"
    );
}

#[test]
fn the_exit_status_follows_the_last_result() {
    // The turn limit ends the first query with an error result: exit 1.
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo one"})),
        FakeTurn::text("never reached"),
    ]);
    let mut cli = Cli::start(&world, &["--max-turns", "1"]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("go");
    let result = cli.result();
    assert_eq!(result["subtype"], "error_max_turns", "{result}");
    assert_eq!(result["terminal_reason"], "max_turns", "{result}");
    let (status, _, log) = cli.exit_within(Duration::from_secs(20));
    assert_eq!(status.code(), Some(1), "{log}");

    // An error result followed by a success: the last one counts, exit 0.
    let world = World::new(vec![
        FakeTurn::Error {
            status: 500,
            message: "down".into(),
            retry_after: None,
        },
        FakeTurn::text("back"),
    ]);
    let mut cli = Cli::start(&world, &[]);
    cli.initialize(Value::Null, json!({}));
    cli.prompt("first");
    let failed = cli.result();
    assert_eq!(failed["api_error_status"], 500, "{failed}");
    cli.prompt("second");
    let answered = cli.result();
    assert_eq!(answered["is_error"], false, "{answered}");
    let (status, _, log) = cli.exit_within(Duration::from_secs(20));
    assert!(status.success(), "{status:?}: {log}");
}
