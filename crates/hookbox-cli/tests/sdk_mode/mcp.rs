//! SDK-hosted MCP servers (`create_sdk_mcp_server`) through both published SDKs: their tools
//! offered as `mcp__NAME__TOOL`, called over the control protocol, hooked and permissioned as
//! built-in tools are; failures, garbage, huge output and odd names handled (skipped without
//! `HOOKBOX_PYTHON`).

use serde_json::{Value, json};

use super::python::{assert_finished, python, run};
use super::{World, call, tool_results_in};
use hookbox_test_support::FakeTurn;

/// `sdk_mcp_servers.py SDK PROMPT SPEC`, which must finish without an error result.
pub(super) fn drive(
    python: &std::ffi::OsStr,
    world: &World,
    sdk: &str,
    spec: &Value,
) -> Vec<Value> {
    let (output, messages) = run(
        python,
        world,
        "sdk_mcp_servers.py",
        &[sdk, "use the tools", &spec.to_string()],
    );
    assert_finished(&output, &messages);
    messages
}

/// The names of the tools offered in the model's first request.
pub(super) fn offered(world: &World) -> Vec<String> {
    let bodies = world.server.bodies();
    bodies[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The `(tool, args)` of the calls the SDK's tool handlers got.
pub(super) fn handled(messages: &[Value]) -> Vec<(String, Value)> {
    messages
        .iter()
        .filter_map(|message| {
            let tool = message["tool_called"].as_str()?;
            Some((tool.to_owned(), message["args"].clone()))
        })
        .collect()
}

/// The `(matcher, hook_event_name, tool_name)` of the hook inputs the SDK's callbacks got.
pub(super) fn hooked(messages: &[Value]) -> Vec<(String, String, String)> {
    messages
        .iter()
        .filter_map(|message| {
            let matcher = message["hook"].as_str()?;
            let input = &message["input"];
            Some((
                matcher.to_owned(),
                input["hook_event_name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                input["tool_name"].as_str().unwrap_or_default().to_owned(),
            ))
        })
        .collect()
}

pub(super) fn stderr(messages: &[Value]) -> String {
    messages
        .iter()
        .filter_map(|message| message["stderr"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

pub(super) fn mcp_status(messages: &[Value]) -> Value {
    messages
        .iter()
        .find_map(|message| message.get("mcp_status").cloned())
        .unwrap_or_else(|| panic!("no mcp_status: {messages:#?}"))
}

pub(super) fn init(messages: &[Value]) -> Value {
    messages
        .iter()
        .find(|message| message["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init: {messages:#?}"))["data"]
        .clone()
}

/// A tool is offered with its schema, called through the SDK, hooked by `mcp__test__.*`
/// matchers, allowed by an `mcp__test__*` pattern; init and `mcp_status` report the server.
fn tools_are_offered_called_hooked_and_allowed_by_pattern(sdk: &str) {
    let Some(python) = python(&format!(
        "{sdk}_sdk_mcp_tools_are_offered_called_and_hooked"
    )) else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "mcp__test__note", json!({"text": "hello"})),
        FakeTurn::text("Noted."),
    ]);
    let spec = json!({
        "options": {"allowed_tools": ["mcp__test__*"]},
        "hooks": {"PreToolUse": ["mcp__test__.*", "Bash"], "PostToolUse": ["mcp__test__.*"]},
    });
    let messages = drive(&python, &world, sdk, &spec);
    let names = offered(&world);
    for name in [
        "mcp__test__add",
        "mcp__test__note",
        "mcp__test__Bash",
        "Bash",
    ] {
        assert!(
            names.iter().any(|offered| offered == name),
            "{name} not in {names:?}"
        );
    }
    let note = &world.server.bodies()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "mcp__test__note")
        .unwrap()
        .clone();
    assert_eq!(note["description"], "Writes a note (changes things)");
    assert_eq!(
        note["input_schema"]["properties"]["text"]["type"], "string",
        "{note}"
    );
    assert_eq!(
        handled(&messages),
        [("note".to_owned(), json!({"text": "hello"}))]
    );
    assert_eq!(world.tool_results(), [("noted: hello".to_owned(), false)]);
    assert_eq!(
        hooked(&messages),
        [
            (
                "mcp__test__.*".to_owned(),
                "PreToolUse".to_owned(),
                "mcp__test__note".to_owned()
            ),
            (
                "mcp__test__.*".to_owned(),
                "PostToolUse".to_owned(),
                "mcp__test__note".to_owned()
            ),
        ]
    );
    let post = messages
        .iter()
        .find(|message| message["input"]["hook_event_name"] == "PostToolUse")
        .unwrap();
    assert_eq!(
        post["input"]["tool_response"],
        json!([{"type": "text", "text": "noted: hello"}])
    );
    let init = init(&messages);
    assert_eq!(
        init["mcp_servers"],
        json!([{"name": "test", "status": "connected"}])
    );
    assert!(
        init["tools"]
            .as_array()
            .unwrap()
            .contains(&json!("mcp__test__add")),
        "{init}"
    );
    let status = mcp_status(&messages);
    let server = &status["mcpServers"][0];
    assert_eq!(server["name"], "test", "{status}");
    assert_eq!(server["status"], "connected", "{status}");
    let tools: Vec<&str> = server["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"add") && tools.contains(&"note"),
        "{status}"
    );
}

#[test]
fn claude_sdk_mcp_tools_are_offered_called_and_hooked() {
    tools_are_offered_called_hooked_and_allowed_by_pattern("claude");
}

#[test]
fn cortex_sdk_mcp_tools_are_offered_called_and_hooked() {
    tools_are_offered_called_hooked_and_allowed_by_pattern("cortex");
}

/// `isError` is a tool failure (`PostToolUseFailure`), a tool named `Bash` stays apart from the
/// built-in one, and huge output is cut as Bash's is (then compacted: the summary request
/// holds the cut output).
fn failures_huge_output_and_a_built_in_name(sdk: &str) {
    let Some(python) = python(&format!(
        "{sdk}_sdk_mcp_failures_huge_output_and_a_built_in_name"
    )) else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "mcp__test__fail", json!({"why": "on purpose"})),
        call("toolu_2", "Bash", json!({"command": "echo built-in"})),
        call("toolu_3", "mcp__test__Bash", json!({"command": "echo mcp"})),
        call("toolu_4", "mcp__test__huge", json!({})),
        FakeTurn::text("The summary."),
        FakeTurn::text("Done."),
    ]);
    // `mcp__test` allows every tool of the server; `Bash` runs sandboxed without asking.
    let spec = json!({
        "options": {"allowed_tools": ["mcp__test"]},
        "hooks": {"PostToolUseFailure": ["mcp__test__.*"], "PostToolUse": ["Bash"]},
    });
    let messages = drive(&python, &world, sdk, &spec);
    let bodies = world.server.bodies();
    assert_eq!(bodies.len(), 6, "{bodies:?}");
    assert_eq!(
        tool_results_in(&bodies[3]),
        [
            ("it broke: on purpose".to_owned(), true),
            ("built-in".to_owned(), false),
            ("the MCP Bash got echo mcp".to_owned(), false),
        ]
    );
    // The 3 MiB answer reached the model cut to 1 MiB (the next request compacts it).
    let summary = bodies[4].to_string();
    assert!(
        summary.len() < 1024 * 1024 + 20_000,
        "{} bytes",
        summary.len()
    );
    assert!(
        summary.contains("the MCP tool's output was 3145728 bytes; cut to the first 1048576"),
        "{}",
        &summary[summary.len() - 500..]
    );
    let tools: Vec<String> = handled(&messages)
        .into_iter()
        .map(|(tool, _)| tool)
        .collect();
    assert_eq!(tools, ["fail", "Bash", "huge"]);
    assert_eq!(
        hooked(&messages),
        [
            (
                "mcp__test__.*".to_owned(),
                "PostToolUseFailure".to_owned(),
                "mcp__test__fail".to_owned()
            ),
            (
                "Bash".to_owned(),
                "PostToolUse".to_owned(),
                "Bash".to_owned()
            ),
        ]
    );
}

#[test]
fn claude_sdk_mcp_failures_huge_output_and_a_built_in_name() {
    failures_huge_output_and_a_built_in_name("claude");
}

#[test]
fn cortex_sdk_mcp_failures_huge_output_and_a_built_in_name() {
    failures_huge_output_and_a_built_in_name("cortex");
}

/// `no_mcp` (`--no-mcp`): the SDK's server is neither connected nor offered, nor reported; a
/// call of one of its tools is a call of an unknown tool, and its handler never runs.
#[test]
fn cortex_sdk_no_mcp_connects_and_offers_no_mcp_server() {
    let Some(python) = python("cortex_sdk_no_mcp_connects_and_offers_no_mcp_server") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "mcp__test__note", json!({"text": "hello"})),
        FakeTurn::text("No such tool."),
    ]);
    let spec = json!({"options": {"no_mcp": true, "allowed_tools": ["mcp__test__*"]}});
    let messages = drive(&python, &world, "cortex", &spec);
    let names = offered(&world);
    assert!(
        names.iter().any(|name| name == "Bash")
            && !names.iter().any(|name| name.starts_with("mcp__")),
        "{names:?}"
    );
    assert_eq!(handled(&messages), []);
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("mcp__test__note"),
        "{results:?}"
    );
    assert_eq!(init(&messages)["mcp_servers"], json!([]));
    assert_eq!(mcp_status(&messages), json!({"mcpServers": []}));
}

#[test]
fn cortex_sdk_mcp_garbage_is_a_tool_failure() {
    let Some(python) = python("cortex_sdk_mcp_garbage_is_a_tool_failure") else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "mcp__test__garbage", json!({})),
        FakeTurn::text("Odd."),
    ]);
    let spec = json!({"options": {"allowed_tools": ["mcp__test__garbage"]}});
    drive(&python, &world, "cortex", &spec);
    let results = world.tool_results();
    assert!(results[0].1, "{results:?}");
    assert!(
        results[0].0.contains("not an MCP tool result"),
        "{results:?}"
    );
    assert!(results[0].0.contains("surprise"), "{results:?}");
}

#[test]
fn claude_sdk_mcp_tools_ask_deny_and_respect_plan_mode_and_disallowed_tools() {
    let Some(python) =
        python("claude_sdk_mcp_tools_ask_deny_and_respect_plan_mode_and_disallowed_tools")
    else {
        return;
    };
    // Default mode, nothing allowed: an MCP tool asks, and with no one to ask it is denied.
    let world = World::new(vec![
        call("toolu_1", "mcp__test__note", json!({"text": "x"})),
        FakeTurn::text("Denied."),
    ]);
    let messages = drive(&python, &world, "claude", &json!({}));
    assert!(handled(&messages).is_empty());
    let results = world.tool_results();
    assert!(
        results[0].1 && results[0].0.contains("needs permission"),
        "{results:?}"
    );
    // Plan mode: the read-only `add` runs, `note` does not.
    let world = World::new(vec![
        call("toolu_1", "mcp__test__add", json!({"a": 2.5, "b": 2.5})),
        call("toolu_2", "mcp__test__note", json!({"text": "x"})),
        FakeTurn::text("Planned."),
    ]);
    let spec = json!({"options": {"permission_mode": "plan"}});
    let messages = drive(&python, &world, "claude", &spec);
    let results = world.tool_results();
    assert_eq!(results[0], ("sum: 5.0".to_owned(), false));
    assert!(
        results[1].1 && results[1].0.contains("plan mode"),
        "{results:?}"
    );
    assert_eq!(handled(&messages).len(), 1);
    // Disallowed by server: none of its tools is offered, and a call is refused.
    let world = World::new(vec![
        call("toolu_1", "mcp__test__add", json!({"a": 1, "b": 1})),
        FakeTurn::text("Gone."),
    ]);
    let spec = json!({"options": {"disallowed_tools": ["mcp__test"], "permission_mode": "bypassPermissions"}});
    let messages = drive(&python, &world, "claude", &spec);
    assert!(
        !offered(&world).iter().any(|name| name.starts_with("mcp__")),
        "{:?}",
        offered(&world)
    );
    assert!(handled(&messages).is_empty());
    assert!(world.tool_results()[0].1);
}

#[test]
fn claude_sdk_mcp_odd_and_colliding_names_are_cleaned_or_skipped() {
    let Some(python) = python("claude_sdk_mcp_odd_and_colliding_names_are_cleaned_or_skipped")
    else {
        return;
    };
    let world = World::new(vec![
        call("toolu_1", "mcp__a__b__c", json!({})),
        call("toolu_2", "mcp__odd_server__do_it_", json!({})),
        FakeTurn::text("Done."),
    ]);
    let spec = json!({
        "servers": {"a__b": ["c"], "a": ["b__c"], "odd server": ["do it!"]},
        "options": {"permission_mode": "bypassPermissions"},
    });
    let messages = drive(&python, &world, "claude", &spec);
    let mut names: Vec<String> = offered(&world)
        .into_iter()
        .filter(|name| name.starts_with("mcp__"))
        .collect();
    names.sort();
    assert_eq!(names, ["mcp__a__b__c", "mcp__odd_server__do_it_"]);
    // The first server listed keeps the name; the other tool is skipped, with a warning.
    let tools: Vec<String> = handled(&messages)
        .into_iter()
        .map(|(tool, _)| tool)
        .collect();
    assert_eq!(tools, ["c", "do it!"]);
    let stderr = stderr(&messages);
    assert!(
        stderr.contains("MCP server `a`: tool \"b__c\" is not offered")
            && stderr.contains("already the name of another tool"),
        "{stderr}"
    );
}

#[test]
fn claude_sdk_mcp_servers_that_cannot_connect_fail_and_start_nothing() {
    let Some(python) = python("claude_sdk_mcp_servers_that_cannot_connect_fail_and_start_nothing")
    else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("Still here.")]);
    let host = tempfile::tempdir().unwrap();
    let marker = host.path().join("started");
    // A server the SDK does not host, and a stdio one whose command would leave a marker on
    // the host (it runs in the sandbox, where that directory does not exist, and is no
    // MCP server: it fails).
    let extra = json!({"mcpServers": {
        "ghost": {"type": "sdk", "name": "ghost"},
        "local": {"command": "touch", "args": [marker]},
    }});
    // And a project `.mcp.json`, which the model could have written: never read.
    let planted = world.work().join("planted");
    let project = json!({"mcpServers": {"project": {"command": "touch", "args": [planted]}}});
    std::fs::write(world.work().join(".mcp.json"), project.to_string()).unwrap();
    let spec = json!({"options": {"extra_args": {"mcp-config": extra.to_string()}}});
    let messages = drive(&python, &world, "claude", &spec);
    assert!(
        !marker.exists(),
        "the stdio server's command ran on the host"
    );
    assert!(
        !planted.exists(),
        "the project's .mcp.json started a process"
    );
    let init = init(&messages);
    let mut servers: Vec<(String, String)> = init["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|server| {
            (
                server["name"].as_str().unwrap().to_owned(),
                server["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    servers.sort();
    assert_eq!(
        servers,
        [
            ("ghost".to_owned(), "failed".to_owned()),
            ("local".to_owned(), "failed".to_owned()),
            ("test".to_owned(), "connected".to_owned()),
        ]
    );
    let status = mcp_status(&messages);
    let ghost = status["mcpServers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|server| server["name"] == "ghost")
        .unwrap();
    assert!(
        ghost["error"]
            .as_str()
            .unwrap()
            .contains("Server 'ghost' not found"),
        "{status}"
    );
    let stderr = stderr(&messages);
    assert!(
        stderr.contains(
            "MCP server `local`: `touch` did not connect: it exited instead of answering \
             `initialize`; its stderr: touch: cannot touch"
        ),
        "{stderr}"
    );
    assert!(offered(&world).iter().any(|name| name == "mcp__test__add"));
}
