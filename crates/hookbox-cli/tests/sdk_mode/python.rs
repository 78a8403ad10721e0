//! Seed 002's Python examples, as written, run by the published SDKs against the `hookbox`
//! binary (skipped without `HOOKBOX_PYTHON`).

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use hookbox_test_support::{FakeToolCall, FakeTurn};
use serde_json::{Value, json};

use super::{AGENT, KEY, KEY_ENV, World, bin, call};

/// The Python with both SDKs installed, or `None` (and a SKIPPED line) without one.
pub(super) fn python(test: &str) -> Option<std::ffi::OsString> {
    let python = std::env::var_os("HOOKBOX_PYTHON").filter(|value| !value.is_empty());
    if python.is_none() {
        hookbox_test_support::skip(
            test,
            "set HOOKBOX_PYTHON to a python with cortex-code-agent-sdk==1.0.7 and \
             claude-agent-sdk==0.2.189 installed (.ci/run does)",
        );
    }
    python
}

/// Runs `script` (a file of `tests/sdk_mode`) with `args` in the world's working directory;
/// returns the output and the messages it printed.
pub(super) fn run(
    python: &std::ffi::OsStr,
    world: &World,
    script: &str,
    args: &[&str],
) -> (Output, Vec<Value>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/sdk_mode")
        .join(script);
    run_program(python, world, &script, args)
}

/// Runs `program script args` (an SDK's client) in the world's working directory, with the
/// hookbox binary, the world's agent and homes in its environment; returns the output and the
/// JSON lines it printed.
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the SDK's client program"
)]
pub(super) fn run_program(
    program: &std::ffi::OsStr,
    world: &World,
    script: &Path,
    args: &[&str],
) -> (Output, Vec<Value>) {
    let child = std::process::Command::new(program)
        .arg(script)
        .args(args)
        .current_dir(world.work())
        .env("HOOKBOX_SDK_CLI", bin())
        .env("HOOKBOX_SDK_CWD", world.work())
        .env("HOOKBOX_SDK_MODEL", AGENT)
        .env("HOOKBOX_HOME", world.home.path())
        .env("HOME", world.home.path())
        .env(KEY_ENV, KEY)
        .env_remove("ASYNC_API")
        .env_remove("CORTEX_CODE_AGENT_SDK_ASYNC_API")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = rustix::process::Pid::from_child(&child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = match receiver.recv_timeout(Duration::from_secs(120)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            panic!("{args:?} did not finish within 120 s");
        }
    };
    let messages = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (output, messages)
}

pub(super) fn assert_finished(output: &Output, messages: &[Value]) -> Value {
    let log = format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{log}");
    let result = messages
        .iter()
        .find(|message| message["message_class"] == "ResultMessage")
        .unwrap_or_else(|| panic!("no ResultMessage: {log}"))
        .clone();
    assert_eq!(result["is_error"], false, "{log}");
    result
}

/// Runs one of seed 002's examples by name (`block_dangerous`, `auto_approve_reads`,
/// `add_timeout`, `audit_log`) with a prompt in a world, through one SDK; returns the output
/// and the messages, each with its `message_class` (the Python SDKs' class names).
pub(super) type SeedDriver<'a> = &'a dyn Fn(&World, &str, &str) -> (Output, Vec<Value>);

/// Seed 002's "block dangerous tools": `rm -rf` is blocked with the hook's reason.
pub(super) fn seed_block_dangerous(drive: SeedDriver<'_>) {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "rm -rf build"})),
        FakeTurn::text("I will not delete it."),
    ]);
    let (output, messages) = drive(&world, "block_dangerous", "delete the build dir");
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "I will not delete it.");
    let results = world.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0]
            .0
            .contains("Destructive commands are not allowed"),
        "{results:?}"
    );
    assert!(
        messages
            .iter()
            .any(|message| message["message_class"] == "AssistantMessage"),
        "{messages:?}"
    );
}

/// Seed 002's "auto-approve read-only permission requests": the read runs.
pub(super) fn seed_auto_approve_reads(drive: SeedDriver<'_>) {
    let world = World::new(vec![]);
    let notes = world.work().join("notes.txt");
    std::fs::write(&notes, "the answer is 42\n").unwrap();
    world
        .server
        .push(call("toolu_1", "Read", json!({"file_path": notes})));
    world.server.push(FakeTurn::text("It says 42."));
    let (output, messages) = drive(&world, "auto_approve_reads", "read notes.txt");
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "It says 42.");
    let results = world.tool_results();
    assert!(!results[0].1, "the read was not approved: {results:?}");
    assert!(results[0].0.contains("the answer is 42"), "{results:?}");
}

/// Seed 002's "modify tool input": the command runs as `timeout 30 …`.
pub(super) fn seed_add_timeout(drive: SeedDriver<'_>) {
    // The command records its parent's command line: with the rewrite, `timeout 30 sh -c …`.
    let world = World::new(vec![
        call(
            "toolu_1",
            "Bash",
            json!({"command": "sh -c 'tr \"\\0\" \" \" < /proc/$PPID/cmdline > marker.txt; echo recorded'"}),
        ),
        FakeTurn::text("Done."),
    ]);
    let (output, messages) = drive(&world, "add_timeout", "record");
    assert_finished(&output, &messages);
    let marker = std::fs::read_to_string(world.work().join("marker.txt"))
        .unwrap_or_else(|err| panic!("no marker ({err}); tool results {:?}", world.tool_results()));
    assert!(marker.starts_with("timeout 30 sh -c"), "{marker:?}");
    let results = world.tool_results();
    assert!(
        !results[0].1 && results[0].0.contains("recorded"),
        "{results:?}"
    );
}

/// Seed 002's "audit log": one line per tool call in `audit.log`, its session id under
/// `session_key` (the Python example's `session_id`, the JavaScript one's `sessionId`).
pub(super) fn seed_audit_log(drive: SeedDriver<'_>, session_key: &str) {
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo first"})),
        call("toolu_2", "Bash", json!({"command": "echo second"})),
        FakeTurn::text("Both ran."),
    ]);
    let (output, messages) = drive(&world, "audit_log", "run two commands");
    let result = assert_finished(&output, &messages);
    let log = std::fs::read_to_string(world.work().join("audit.log")).unwrap();
    let entries: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(entries.len(), 2, "{log}");
    for (entry, command) in entries.iter().zip(["echo first", "echo second"]) {
        assert_eq!(entry["tool"], "Bash");
        assert_eq!(entry["input"]["command"], command);
        assert_eq!(entry[session_key], result["session_id"]);
        assert!(
            entry["timestamp"].as_str().unwrap().contains('T'),
            "{entry}"
        );
    }
}

/// Seed 002's Python examples through cortex-code-agent-sdk, as written.
fn cortex_seed(python: &std::ffi::OsStr) -> impl Fn(&World, &str, &str) -> (Output, Vec<Value>) {
    move |world, example, prompt| run(python, world, "seed_002_cortex.py", &[example, prompt])
}

#[test]
fn cortex_seed_block_dangerous() {
    let Some(python) = python("cortex_seed_block_dangerous") else {
        return;
    };
    seed_block_dangerous(&cortex_seed(&python));
}

#[test]
fn cortex_seed_auto_approve_reads() {
    let Some(python) = python("cortex_seed_auto_approve_reads") else {
        return;
    };
    seed_auto_approve_reads(&cortex_seed(&python));
}

#[test]
fn cortex_seed_add_timeout() {
    let Some(python) = python("cortex_seed_add_timeout") else {
        return;
    };
    seed_add_timeout(&cortex_seed(&python));
}

#[test]
fn cortex_seed_audit_log() {
    let Some(python) = python("cortex_seed_audit_log") else {
        return;
    };
    seed_audit_log(&cortex_seed(&python), "session_id");
}

#[test]
fn claude_query_block_dangerous() {
    let Some(python) = python("claude_query_block_dangerous") else {
        return;
    };
    let world = World::new(vec![
        call(
            "toolu_1",
            "Bash",
            json!({"command": "psql -c 'DROP TABLE users'"}),
        ),
        FakeTurn::text("Refused."),
    ]);
    let (output, messages) = run(
        &python,
        &world,
        "seed_002_claude.py",
        &["drop the users table"],
    );
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "Refused.");
    let results = world.tool_results();
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0]
            .0
            .contains("Destructive commands are not allowed"),
        "{results:?}"
    );
}

#[test]
fn claude_sdk_receives_a_hook_response_for_a_hook_that_failed_open() {
    let Some(python) = python("claude_sdk_receives_a_hook_response_for_a_hook_that_failed_open")
    else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo ran"})),
        FakeTurn::text("Done."),
    ]);
    let (output, messages) = run(
        &python,
        &world,
        "hook_failures.py",
        &["fail_open", "run echo"],
    );
    assert_finished(&output, &messages);
    let response = messages
        .iter()
        .find(|message| message["message_class"] == "HookEventMessage")
        .unwrap_or_else(|| panic!("no HookEventMessage: {messages:?}"));
    assert_eq!(response["subtype"], "hook_response", "{response}");
    assert_eq!(response["hook_event_name"], "PreToolUse", "{response}");
    let data = &response["data"];
    assert_eq!(data["outcome"], "error", "{response}");
    assert_eq!(data["fail_open"], true, "{response}");
    assert_eq!(data["exit_code"], 3, "{response}");
    assert!(
        data["cause"]
            .as_str()
            .is_some_and(|cause| cause.contains("gate crashed")),
        "{response}"
    );
    assert_eq!(data["handler"]["type"], "command", "{response}");
    // The call went on (fail-open), and the user was warned on stderr too.
    assert_eq!(world.tool_results()[0], ("ran".to_owned(), false));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("warning: PreToolUse hook") && stderr.contains("failed open"),
        "{stderr}"
    );
}

#[test]
fn claude_sdk_on_failure_block_blocks_a_reply_the_cli_rejects() {
    let Some(python) = python("claude_sdk_on_failure_block_blocks_a_reply_the_cli_rejects") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "touch gated"})),
        FakeTurn::text("Blocked."),
    ]);
    let (output, messages) = run(
        &python,
        &world,
        "hook_failures.py",
        &["on_failure", "touch a file"],
    );
    assert_finished(&output, &messages);
    let results = world.tool_results();
    assert!(results[0].1, "{results:?}");
    assert!(results[0].0.contains("Deny"), "{results:?}");
    assert!(!world.work().join("gated").exists());
}

/// The entry `results.py` printed for the exception the SDK raised, if any.
pub(super) fn exception(messages: &[Value]) -> Option<&Value> {
    messages
        .iter()
        .find(|message| message.get("exception").is_some())
}

#[test]
fn claude_sdk_raises_result_error_for_an_api_failure() {
    let Some(python) = python("claude_sdk_raises_result_error_for_an_api_failure") else {
        return;
    };
    let world = World::new(vec![FakeTurn::Error {
        status: 529,
        message: "the fake API is overloaded".into(),
        retry_after: None,
    }]);
    let (output, messages) = run(&python, &world, "results.py", &["plain", "hi"]);
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = messages
        .iter()
        .find(|message| message["message_class"] == "ResultMessage")
        .unwrap_or_else(|| panic!("no ResultMessage: {log}"));
    assert_eq!(result["is_error"], true, "{log}");
    assert_eq!(result["subtype"], "success", "{log}");
    assert_eq!(result["terminal_reason"], "api_error", "{log}");
    assert_eq!(result["api_error_status"], 529, "{log}");
    // hookbox exited non-zero after the error result, so the SDK raised its ResultError.
    let raised = exception(&messages).unwrap_or_else(|| panic!("nothing raised: {log}"));
    assert_eq!(raised["exception"], "ResultError", "{log}");
    assert_eq!(raised["exit_code"], 1, "{log}");
    assert_eq!(raised["terminal_reason"], "api_error", "{log}");
    assert_eq!(raised["api_error_status"], 529, "{log}");
    let text = raised["result"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("API Error: ") && text.contains("the fake API is overloaded"),
        "{log}"
    );
}

#[test]
fn claude_sdk_raises_result_error_for_an_unknown_agent() {
    let Some(python) = python("claude_sdk_raises_result_error_for_an_unknown_agent") else {
        return;
    };
    let world = World::new(vec![]);
    let (output, messages) = run(
        &python,
        &world,
        "results.py",
        &["plain", "hi", "no-such-agent"],
    );
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let raised = exception(&messages).unwrap_or_else(|| panic!("nothing raised: {log}"));
    assert_eq!(raised["exception"], "ResultError", "{log}");
    assert_eq!(raised["exit_code"], 1, "{log}");
    assert_eq!(raised["subtype"], "error_during_execution", "{log}");
    assert!(
        raised["errors"][0]
            .as_str()
            .is_some_and(|error| error.contains("no-such-agent")),
        "{log}"
    );
    assert!(world.bodies().is_empty(), "the model was called: {log}");
}

#[test]
fn claude_sdk_result_echoes_the_prompt_origin() {
    let Some(python) = python("claude_sdk_result_echoes_the_prompt_origin") else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("hello")]);
    let (output, messages) = run(&python, &world, "results.py", &["origin", "hi"]);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["origin"], json!({"kind": "human"}), "{result}");
    assert_eq!(
        result["user_message_uuid"], "5f0c3a8e-0000-4000-8000-000000000001",
        "{result}"
    );
    assert_eq!(result["terminal_reason"], "completed", "{result}");
    assert!(exception(&messages).is_none(), "{messages:#?}");
}

/// Runs `options.py` with `prompt` and `spec` (ClaudeAgentOptions, hooks and can_use_tool by
/// name); returns the output and the messages.
pub(super) fn run_options(
    python: &std::ffi::OsStr,
    world: &World,
    prompt: &str,
    spec: &Value,
) -> (Output, Vec<Value>) {
    run(python, world, "options.py", &[prompt, &spec.to_string()])
}

/// The tool names offered in each model request.
fn offered_tools(world: &World) -> Vec<Vec<String>> {
    let _guard = world.runtime.enter();
    world
        .server
        .bodies()
        .iter()
        .map(|body| {
            body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
                .collect()
        })
        .collect()
}

#[test]
fn claude_sdk_disallowed_tools_are_not_offered_to_the_model() {
    let Some(python) = python("claude_sdk_disallowed_tools_are_not_offered_to_the_model") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "touch ran"})),
        FakeTurn::text("Bash is not there."),
    ]);
    let spec = json!({"options": {"disallowed_tools": ["Bash", "Write"]}});
    let (output, messages) = run_options(&python, &world, "run touch", &spec);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "Bash is not there.");
    for tools in offered_tools(&world) {
        assert!(tools.contains(&"Read".to_owned()), "{tools:?}");
        assert!(
            !tools.contains(&"Bash".to_owned()) && !tools.contains(&"Write".to_owned()),
            "{tools:?}"
        );
    }
    let init = messages
        .iter()
        .find(|message| message["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init: {messages:?}"));
    let listed = init["data"]["tools"].as_array().unwrap();
    assert!(!listed.contains(&json!("Bash")), "{init}");
    // A call to the hidden tool anyway is an error result, and nothing ran.
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("No such tool available: Bash"),
        "{results:?}"
    );
    assert!(!world.work().join("ran").exists());
}

#[test]
fn claude_sdk_pre_tool_use_context_reaches_the_model() {
    let Some(python) = python("claude_sdk_pre_tool_use_context_reaches_the_model") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo hi"})),
        FakeTurn::text("Noted."),
    ]);
    let spec = json!({"hooks": {"PreToolUse": ["pre_context"]}});
    let (output, messages) = run_options(&python, &world, "run echo", &spec);
    assert_finished(&output, &messages);
    let results = world.tool_results();
    assert!(!results[0].1, "{results:?}");
    assert!(
        results[0].0.starts_with("hi")
            && results[0].0.contains("remember: the build is on Fridays"),
        "{results:?}"
    );
}

#[test]
fn claude_sdk_bash_calls_of_a_session_share_one_warm_sandbox_each_in_its_own_pid_namespace() {
    const TEST: &str =
        "claude_sdk_bash_calls_of_a_session_share_one_warm_sandbox_each_in_its_own_pid_namespace";
    let Some(python) = python(TEST) else {
        return;
    };
    if !hookbox_test_support::require_root(TEST) {
        return;
    }
    // A sandbox is its user, network and mount-root namespaces; a call, its pid namespace.
    let namespaces = "readlink /proc/self/ns/user /proc/self/ns/net /proc/self/ns/pid";
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": namespaces})),
        call("toolu_2", "Bash", json!({"command": namespaces})),
        FakeTurn::text("Compared."),
    ]);
    let (output, messages) = run_options(&python, &world, "compare", &json!({}));
    assert_finished(&output, &messages);
    let results = world.tool_results();
    let seen: Vec<Vec<&str>> = results
        .iter()
        .map(|(text, failed)| {
            assert!(!failed, "{results:?}");
            text.lines().collect()
        })
        .collect();
    assert_eq!(seen.len(), 2, "{results:?}");
    assert_eq!(
        seen[0][..2],
        seen[1][..2],
        "one sandbox for both calls: {results:?}"
    );
    assert_ne!(
        seen[0][2], seen[1][2],
        "a pid namespace per call: {results:?}"
    );
    // Not the host's namespaces.
    let host_user = std::fs::read_link("/proc/self/ns/user").unwrap();
    assert_ne!(seen[0][0], host_user.to_string_lossy(), "{results:?}");
}

#[test]
fn claude_sdk_updated_tool_output_replaces_what_the_model_sees() {
    let Some(python) = python("claude_sdk_updated_tool_output_replaces_what_the_model_sees") else {
        return;
    };
    let world = World::new(vec![
        call(
            "toolu_1",
            "Bash",
            json!({"command": "echo the-secret-value"}),
        ),
        FakeTurn::text("Done."),
    ]);
    let spec = json!({"hooks": {"PostToolUse": ["post_replace"]}});
    let (output, messages) = run_options(&python, &world, "print it", &spec);
    assert_finished(&output, &messages);
    let results = world.tool_results();
    assert!(!results[0].1, "{results:?}");
    assert!(!results[0].0.contains("the-secret-value"), "{results:?}");
    let shown: Value = serde_json::from_str(&results[0].0).unwrap();
    assert_eq!(shown["stdout"], "[redacted]", "{shown}");
    assert_eq!(shown["exit_code"], 0, "{shown}");
    // The hook saw the real output.
    let seen = messages
        .iter()
        .find(|message| message["callback"] == "post_replace")
        .unwrap();
    assert_eq!(
        seen["input"]["tool_response"]["stdout"],
        "the-secret-value\n"
    );
}

#[test]
fn claude_sdk_updated_tool_output_of_another_shape_keeps_the_output() {
    let Some(python) = python("claude_sdk_updated_tool_output_of_another_shape_keeps_the_output")
    else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "echo original"})),
        FakeTurn::text("Done."),
    ]);
    let spec = json!({"hooks": {"PostToolUse": ["post_replace_badly"]}});
    let (output, messages) = run_options(&python, &world, "print it", &spec);
    assert_finished(&output, &messages);
    assert_eq!(world.tool_results()[0], ("original".to_owned(), false));
    let note = messages
        .iter()
        .find(|message| message["subtype"] == "hook_system_message")
        .unwrap_or_else(|| panic!("the user was not told: {messages:#?}"));
    assert!(
        note["data"]["message"]
            .as_str()
            .is_some_and(|text| text.contains("has no field `text`")),
        "{note}"
    );
}

#[test]
fn claude_sdk_async_hook_outputs_are_accepted_without_blocking() {
    let Some(python) = python("claude_sdk_async_hook_outputs_are_accepted_without_blocking") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "touch ran"})),
        FakeTurn::text("Done."),
    ]);
    let spec = json!({"hooks": {"PreToolUse": ["deferred"], "PostToolUse": ["deferred"]}});
    let (output, messages) = run_options(&python, &world, "touch", &spec);
    assert_finished(&output, &messages);
    let calls = messages
        .iter()
        .filter(|message| message["callback"] == "deferred")
        .count();
    assert_eq!(calls, 2, "{messages:#?}");
    assert!(world.work().join("ran").exists());
    assert_eq!(world.tool_results()[0], (String::new(), false));
}

#[test]
fn claude_sdk_bash_asks_when_settings_turn_auto_allow_off() {
    let Some(python) = python("claude_sdk_bash_asks_when_settings_turn_auto_allow_off") else {
        return;
    };
    let turns = || {
        vec![
            call("toolu_1", "Bash", json!({"command": "touch ran"})),
            FakeTurn::text("Done."),
        ]
    };
    // By default sandboxed Bash runs without asking.
    let world = World::new(turns());
    let spec = json!({"can_use_tool": "deny"});
    let (output, messages) = run_options(&python, &world, "touch", &spec);
    assert_finished(&output, &messages);
    assert!(world.work().join("ran").exists());
    assert!(
        !messages.iter().any(|message| message["callback"] == "deny"),
        "{messages:#?}"
    );
    // With the setting off it asks can_use_tool like any other tool.
    let world = World::new(turns());
    let settings = json!({"sandbox": {"autoAllowBashIfSandboxed": false}}).to_string();
    let spec = json!({"can_use_tool": "deny", "options": {"settings": settings}});
    let (output, messages) = run_options(&python, &world, "touch", &spec);
    assert_finished(&output, &messages);
    let asked = messages
        .iter()
        .find(|message| message["callback"] == "deny")
        .unwrap_or_else(|| panic!("can_use_tool was not asked: {messages:#?}"));
    assert_eq!(asked["tool_name"], "Bash");
    assert!(!world.work().join("ran").exists());
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("the user said no"),
        "{results:?}"
    );
}

#[test]
fn claude_sdk_can_use_tool_allow_reaches_a_path_outside_cwd_but_not_through_the_sandbox() {
    let Some(python) = python(
        "claude_sdk_can_use_tool_allow_reaches_a_path_outside_cwd_but_not_through_the_sandbox",
    ) else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("report.txt");
    let through_bash = outside.path().join("bash.txt");
    let turns = || {
        vec![
            call(
                "toolu_1",
                "Write",
                json!({"file_path": target, "content": "written outside"}),
            ),
            call(
                "toolu_2",
                "Bash",
                json!({"command": format!("echo x > {}", through_bash.display())}),
            ),
            FakeTurn::text("Done."),
        ]
    };
    // acceptEdits would let a Write in cwd run unasked; outside cwd it asks.
    let world = World::new(turns());
    let spec = json!({"can_use_tool": "deny", "options": {"permission_mode": "acceptEdits"}});
    let (output, messages) = run_options(&python, &world, "write the report", &spec);
    assert_finished(&output, &messages);
    let asked = messages
        .iter()
        .find(|message| message["callback"] == "deny")
        .unwrap_or_else(|| panic!("can_use_tool was not asked: {messages:#?}"));
    assert_eq!(asked["tool_name"], "Write");
    assert!(!target.exists());

    let world = World::new(turns());
    let spec = json!({"can_use_tool": "allow", "options": {"permission_mode": "acceptEdits"}});
    let (output, messages) = run_options(&python, &world, "write the report", &spec);
    assert_finished(&output, &messages);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "written outside",
        "{:?}",
        world.tool_results()
    );
    // Bash still runs in the sandbox, where the outside directory does not exist.
    let results = world.tool_results();
    assert!(results[1].1, "{results:?}");
    assert!(!through_bash.exists());
}

#[test]
fn claude_sdk_add_dirs_widen_the_writable_set_with_its_protections() {
    let Some(python) = python("claude_sdk_add_dirs_widen_the_writable_set_with_its_protections")
    else {
        return;
    };
    let added = tempfile::tempdir().unwrap();
    let dir = added.path();
    let world = World::new(vec![
        call(
            "toolu_1",
            "Write",
            json!({"file_path": dir.join("notes.txt"), "content": "by Write"}),
        ),
        call(
            "toolu_2",
            "Bash",
            json!({"command": format!(
                "echo by-bash > {0}/bash.txt; mkdir -p {0}/.git/hooks && echo planted > {0}/.git/hooks/pre-commit",
                dir.display()
            )}),
        ),
        FakeTurn::text("Done."),
    ]);
    let spec = json!({"options": {"permission_mode": "acceptEdits", "add_dirs": [dir]}});
    let (output, messages) = run_options(&python, &world, "write notes", &spec);
    assert_finished(&output, &messages);
    let results = world.tool_results();
    assert_eq!(
        std::fs::read_to_string(dir.join("notes.txt")).unwrap(),
        "by Write",
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("bash.txt")).unwrap(),
        "by-bash\n",
        "{results:?}"
    );
    // The added directory's .git is read-only in the sandbox, as cwd's is.
    assert!(results[1].1, "{results:?}");
    assert!(!dir.join(".git/hooks/pre-commit").exists());
}

#[test]
fn claude_sdk_permission_request_allow_reaches_a_path_outside_cwd() {
    let Some(python) = python("claude_sdk_permission_request_allow_reaches_a_path_outside_cwd")
    else {
        return;
    };
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("from-hook.txt");
    let world = World::new(vec![
        call(
            "toolu_1",
            "Write",
            json!({"file_path": target, "content": "allowed by a hook"}),
        ),
        FakeTurn::text("Done."),
    ]);
    // bypassPermissions alone does not reach outside cwd; the PermissionRequest hook's allow
    // does.
    let spec = json!({
        "hooks": {"PermissionRequest": ["permission_allow"]},
        "options": {"permission_mode": "bypassPermissions"},
    });
    let (output, messages) = run_options(&python, &world, "write it", &spec);
    assert_finished(&output, &messages);
    let asked = messages
        .iter()
        .find(|message| message["callback"] == "permission_allow")
        .unwrap_or_else(|| panic!("PermissionRequest did not fire: {messages:#?}"));
    assert_eq!(asked["input"]["tool_name"], "Write");
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "allowed by a hook",
        "{:?}",
        world.tool_results()
    );
}

/// The `event`s of the `StreamEvent` messages, in order.
fn stream_events(messages: &[Value]) -> Vec<&Value> {
    messages
        .iter()
        .filter(|message| message["message_class"] == "StreamEvent")
        .map(|message| &message["event"])
        .collect()
}

#[test]
fn claude_sdk_partial_messages_stream_each_turn() {
    let Some(python) = python("claude_sdk_partial_messages_stream_each_turn") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "true"})),
        FakeTurn::text("streamed in pieces"),
    ]);
    // Without the option: no stream events, and the model is asked without streaming.
    let (output, messages) = run_options(&python, &world, "go", &json!({}));
    assert_finished(&output, &messages);
    assert!(stream_events(&messages).is_empty(), "{messages:#?}");
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "true"})),
        FakeTurn::text("streamed in pieces"),
    ]);
    let spec = json!({"options": {"include_partial_messages": true}});
    let (output, messages) = run_options(&python, &world, "go", &spec);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "streamed in pieces");
    let events = stream_events(&messages);
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| event["type"].as_str().unwrap())
        .collect();
    // Turn 1: the tool call; turn 2: the text, as the provider streamed it (4 pieces).
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ],
        "{events:#?}"
    );
    assert_eq!(events[1]["content_block"]["type"], "tool_use");
    assert_eq!(events[1]["content_block"]["id"], "toolu_1");
    let input: Value =
        serde_json::from_str(events[2]["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input, json!({"command": "true"}));
    assert_eq!(events[4]["delta"]["stop_reason"], "tool_use");
    let text: String = events[8..12]
        .iter()
        .map(|event| {
            assert_eq!(event["delta"]["type"], "text_delta");
            event["delta"]["text"].as_str().unwrap()
        })
        .collect();
    assert_eq!(text, "streamed in pieces");
    assert_eq!(events[13]["delta"]["stop_reason"], "end_turn");
    // Each turn's stream events come before its assistant message, which has the same id.
    let assistants: Vec<&Value> = messages
        .iter()
        .filter(|message| message["message_class"] == "AssistantMessage")
        .collect();
    assert_eq!(assistants[1]["message_id"], events[6]["message"]["id"]);
    assert!(
        messages
            .iter()
            .all(|message| message["message_class"] != "StreamEvent"
                || message["parent_tool_use_id"].is_null())
    );
    let _guard = world.runtime.enter();
    assert!(
        world
            .server
            .bodies()
            .iter()
            .all(|body| body["stream"] == true)
    );
}

#[test]
fn claude_sdk_thinking_reaches_the_model_and_comes_back_as_blocks_and_deltas() {
    let Some(python) = python("claude_sdk_thinking_reaches_the_model_and_comes_back") else {
        return;
    };
    let world = World::new(vec![
        FakeTurn::Reply {
            thinking: "list first".to_owned(),
            text: String::new(),
            tool_calls: vec![FakeToolCall {
                id: "toolu_1".to_owned(),
                name: "Bash".to_owned(),
                args: json!({"command": "true"}),
            }],
        },
        FakeTurn::thought("nothing to see", "All quiet."),
    ]);
    let spec = json!({"options": {"max_thinking_tokens": 5000, "include_partial_messages": true}});
    let (output, messages) = run_options(&python, &world, "look", &spec);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "All quiet.");
    let thinking: Vec<&Value> = messages
        .iter()
        .filter(|message| message["message_class"] == "AssistantMessage")
        .flat_map(|message| message["content"].as_array().unwrap())
        .filter(|block| block.get("thinking").is_some())
        .collect();
    assert_eq!(
        thinking,
        [
            &json!({"thinking": "list first", "signature": "fake-signature"}),
            &json!({"thinking": "nothing to see", "signature": "fake-signature"}),
        ],
        "{messages:#?}"
    );
    let streamed: String = stream_events(&messages)
        .iter()
        .filter(|event| event["delta"]["type"] == "thinking_delta")
        .map(|event| event["delta"]["thinking"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "list firstnothing to see");
    // Every request asked for thinking; the second sent the first turn's block back (the
    // fake refuses a tool-use turn without it, as the API does).
    let _guard = world.runtime.enter();
    for body in world.server.bodies() {
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 5000})
        );
    }
    assert_eq!(
        world.server.bodies()[1]["messages"][1]["content"][0]["type"],
        "thinking"
    );
}

#[test]
fn claude_sdk_thinking_follows_max_thinking_tokens_and_the_thinking_option() {
    let Some(python) = python("claude_sdk_thinking_follows_max_thinking_tokens") else {
        return;
    };
    let env = json!({"MAX_THINKING_TOKENS": "3000"});
    for (options, expected) in [
        (
            json!({"env": env}),
            json!({"type": "enabled", "budget_tokens": 3000}),
        ),
        (
            json!({"env": env, "thinking": {"type": "enabled", "budget_tokens": 4000}}),
            json!({"type": "enabled", "budget_tokens": 4000}),
        ),
        (
            json!({"env": env, "thinking": {"type": "disabled"}}),
            Value::Null,
        ),
    ] {
        let world = World::new(vec![FakeTurn::text("ok")]);
        let (output, messages) = run_options(&python, &world, "hi", &json!({"options": options}));
        assert_finished(&output, &messages);
        let _guard = world.runtime.enter();
        assert_eq!(world.server.bodies()[0]["thinking"], expected, "{options}");
    }
}

/// The schema of the structured-output tests.
fn count_schema() -> Value {
    json!({"type": "object", "properties": {"count": {"type": "integer"}},
        "required": ["count"], "additionalProperties": false})
}

#[test]
fn claude_sdk_output_format_returns_validated_structured_output_with_tools() {
    let Some(python) = python("claude_sdk_output_format_returns_validated_structured_output")
    else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "Bash", json!({"command": "touch ran"})),
        FakeTurn::text("There are two."),
        call("toolu_2", "StructuredOutput", json!({"count": "two"})),
        call("toolu_3", "StructuredOutput", json!({"count": 2})),
    ]);
    let spec = json!({"options": {
        "output_format": {"type": "json_schema", "schema": count_schema()},
    }});
    let (output, messages) = run_options(&python, &world, "count them", &spec);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["structured_output"], json!({"count": 2}), "{result}");
    assert!(
        world.work().join("ran").exists(),
        "the tool in the same query ran"
    );
    let bodies = world.bodies();
    assert_eq!(bodies.len(), 4, "{bodies:#?}");
    let _guard = world.runtime.enter();
    let sent = world.server.bodies();
    // Offered with the schema as its input schema; the system prompt says to call it.
    let tool = sent[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "StructuredOutput")
        .unwrap_or_else(|| panic!("not offered: {}", sent[0]["tools"]));
    assert_eq!(tool["input_schema"], count_schema());
    assert!(
        sent[0]["system"]
            .as_str()
            .unwrap()
            .contains("You MUST call the StructuredOutput tool exactly once")
    );
    // The answer without the call got the reminder; the mismatching call its error.
    assert!(
        bodies[2].contains("[structured-output-enforce] You MUST call the StructuredOutput"),
        "{}",
        bodies[2]
    );
    drop(_guard);
    let results = world.tool_results();
    let mismatch = &results[1];
    assert!(mismatch.1, "{results:?}");
    assert!(
        mismatch
            .0
            .starts_with("Output does not match required schema: /count: "),
        "{results:?}"
    );
}

#[test]
fn claude_sdk_output_format_gives_up_after_the_retry_limit() {
    let Some(python) = python("claude_sdk_output_format_gives_up_after_the_retry_limit") else {
        return;
    };
    let world = World::new(vec![
        FakeTurn::text("two"),
        call("toolu_1", "StructuredOutput", json!({"total": 2})),
        FakeTurn::text("never reached"),
    ]);
    let spec = json!({"options": {
        "output_format": {"type": "json_schema", "schema": count_schema()},
        "env": {"MAX_STRUCTURED_OUTPUT_RETRIES": "2"},
    }});
    let (output, messages) = run_options(&python, &world, "count them", &spec);
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = messages
        .iter()
        .find(|message| message["message_class"] == "ResultMessage")
        .unwrap_or_else(|| panic!("no ResultMessage: {log}"));
    assert_eq!(
        result["subtype"], "error_max_structured_output_retries",
        "{log}"
    );
    assert_eq!(result["is_error"], true, "{log}");
    assert_eq!(
        result["terminal_reason"], "structured_output_retry_exhausted",
        "{log}"
    );
    assert!(result["structured_output"].is_null(), "{log}");
    let error = result["errors"][0].as_str().unwrap_or_default();
    assert!(
        error.starts_with("Failed to provide valid structured output after 2 attempts")
            && error.contains("\"count\""),
        "{log}"
    );
    // hookbox exits non-zero after the error result, as with any error result.
    assert!(!output.status.success(), "{log}");
    assert_eq!(world.bodies().len(), 2, "{log}");
}

#[test]
fn claude_sdk_output_format_with_a_bad_schema_is_a_clear_error() {
    let Some(python) = python("claude_sdk_output_format_with_a_bad_schema_is_a_clear_error") else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("never asked")]);
    let spec = json!({"options": {
        "output_format": {"type": "json_schema", "schema": {"type": "no-such-type"}},
    }});
    let (output, messages) = run_options(&python, &world, "count them", &spec);
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = messages
        .iter()
        .find(|message| message["message_class"] == "ResultMessage")
        .unwrap_or_else(|| panic!("no ResultMessage: {log}"));
    assert_eq!(result["is_error"], true, "{log}");
    assert!(
        result["errors"][0]
            .as_str()
            .is_some_and(|error| error.contains("--json-schema")
                && error.contains("not a usable JSON schema")),
        "{log}"
    );
    assert!(world.bodies().is_empty(), "the model was called: {log}");
}

#[test]
fn claude_sdk_unknown_slash_commands_do_not_reach_the_model() {
    let Some(python) = python("claude_sdk_unknown_slash_commands_do_not_reach_the_model") else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("it is a path")]);
    let (output, messages) = run(&python, &world, "results.py", &["plain", "/nosuch now"]);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "Unknown command: /nosuch", "{result}");
    assert!(world.bodies().is_empty(), "{:?}", world.bodies());
    // A prompt that starts with a path is a prompt.
    let (output, messages) = run(&python, &world, "results.py", &["plain", "/tmp/x is what?"]);
    let result = assert_finished(&output, &messages);
    assert_eq!(result["result"], "it is a path", "{result}");
    assert!(world.bodies()[0].contains("/tmp/x is what?"));
}
