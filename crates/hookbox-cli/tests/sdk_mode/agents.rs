//! Sub-agents through the published claude-agent-sdk: Claude Code's `.claude/agents/*.md`
//! files per `setting_sources`, merged with the SDK's `agents` option, listed in init, offered
//! through `Task`, run with their own prompt, tools and model (skipped without
//! `HOOKBOX_PYTHON`).

use std::path::Path;

use hookbox_test_support::{FakeModelServer, FakeTurn};
use serde_json::{Value, json};

use super::python::{assert_finished, python, run};
use super::{KEY, KEY_ENV, World, call};

/// `sessions.py query PROMPT SPEC`, the CLI's stderr included.
pub(super) fn query(python: &std::ffi::OsStr, world: &World, spec: &Value) -> Vec<Value> {
    let mut spec = spec.clone();
    spec["stderr"] = json!(true);
    let (output, messages) = run(
        python,
        world,
        "sessions.py",
        &["query", "get a review", &spec.to_string()],
    );
    assert_finished(&output, &messages);
    messages
}

/// The init message's `agents`, sorted.
fn init_agents(messages: &[Value]) -> Vec<String> {
    let init = messages
        .iter()
        .find(|message| message["subtype"] == "init")
        .unwrap_or_else(|| panic!("no init: {messages:#?}"));
    let mut agents: Vec<String> = init["data"]["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("init has no agents list: {init}"))
        .iter()
        .map(|agent| agent.as_str().unwrap().to_owned())
        .collect();
    agents.sort();
    agents
}

/// What the CLI wrote to stderr.
pub(super) fn stderr(messages: &[Value]) -> String {
    messages
        .iter()
        .filter_map(|message| message["stderr"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names of the tools offered in `body`.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| tool["name"].as_str().unwrap().to_owned())
        .collect()
}

/// The description of the `Task` tool offered in `body`.
fn task_description(body: &Value) -> String {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["name"] == "Task")
        .unwrap_or_else(|| panic!("Task is not offered: {body}"))["description"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Writes `dir/file` (creating `dir`).
pub(super) fn write_agent(dir: &Path, file: &str, text: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(file), text).unwrap();
}

/// The first call of the main model: `Task` on `agent`.
fn task_on(agent: &str) -> FakeTurn {
    call(
        "toolu_task",
        "Task",
        json!({"description": "review", "prompt": "say what you are", "subagent_type": agent}),
    )
}

#[test]
fn claude_sdk_runs_a_project_agent_file_with_its_prompt_tools_and_model() {
    let Some(python) =
        python("claude_sdk_runs_a_project_agent_file_with_its_prompt_tools_and_model")
    else {
        return;
    };
    let world = World::new(vec![task_on("reviewer"), FakeTurn::text("reviewed")]);
    // `model: haiku` selects hookbox.toml's [agents."haiku"]: its own (fake) model server.
    let haiku = world
        .runtime
        .block_on(FakeModelServer::anthropic(
            "fake-haiku",
            KEY,
            vec![FakeTurn::text("I am the file reviewer")],
        ))
        .unwrap();
    let config = world.home.path().join("hookbox.toml");
    let mut toml = std::fs::read_to_string(&config).unwrap();
    toml.push_str(&format!(
        "\n[agents.\"haiku\"]\nprovider = \"anthropic\"\nmodel = \"fake-haiku\"\nbase_url = \"{}\"\napi_key_env = \"{KEY_ENV}\"\nmax_attempts = 1\n",
        haiku.base_url()
    ));
    std::fs::write(&config, toml).unwrap();
    let agents = world.work().join(".claude/agents");
    write_agent(
        &agents,
        "reviewer.md",
        "---\nname: reviewer\ndescription: Reviews code from a file\ntools: Read, Grep, Task\nmodel: haiku\n---\n\nYou are the file reviewer.\n",
    );
    write_agent(
        &agents,
        "helper.md",
        "---\nname: helper\ndescription: the file's helper\n---\nfile helper",
    );
    write_agent(&agents, "broken.md", "no front matter here");
    // A model-written link out of the project is not followed.
    let outside = tempfile::tempdir().unwrap();
    write_agent(
        outside.path(),
        "secret.md",
        "---\nname: leak\ndescription: outside\n---\nsecret",
    );
    std::os::unix::fs::symlink(outside.path().join("secret.md"), agents.join("leak.md")).unwrap();
    let spec = json!({
        "permission_mode": "bypassPermissions",
        "setting_sources": ["project"],
        "agents": {"helper": {"description": "the SDK's helper", "prompt": "sdk helper"}},
    });
    let messages = query(&python, &world, &spec);
    assert_eq!(init_agents(&messages), ["helper", "reviewer"]);
    let warnings = stderr(&messages);
    assert!(
        warnings.contains("broken.md") && warnings.contains("front matter"),
        "{warnings}"
    );
    assert!(
        warnings.contains("leak.md") && warnings.contains("symbolic link"),
        "{warnings}"
    );
    let _guard = world.runtime.enter();
    let main = world.server.bodies();
    let task = task_description(&main[0]);
    assert!(
        task.contains("reviewer: Reviews code from a file (Tools: Read, Grep, Task)"),
        "{task}"
    );
    // The SDK's `agents` win over a file of the same name, as in Claude Code.
    assert!(
        task.contains("helper: the SDK's helper") && !task.contains("the file's helper"),
        "{task}"
    );
    let sub = haiku.bodies();
    assert_eq!(sub.len(), 1, "the sub-agent's turn goes to its own model");
    assert_eq!(sub[0]["model"], "fake-haiku");
    assert!(
        sub[0]["system"]
            .to_string()
            .contains("You are the file reviewer."),
        "{}",
        sub[0]["system"]
    );
    // Its tools only narrow the session's: no Task for a sub-agent, nothing else added.
    let mut tools = tool_names(&sub[0]);
    tools.sort();
    assert_eq!(tools, ["Grep", "Read"]);
    assert_eq!(main.len(), 2, "the parent's model answers after the review");
}

#[test]
fn claude_sdk_reads_user_agent_files_per_setting_sources_and_unmapped_models_inherit() {
    let Some(python) =
        python("claude_sdk_reads_user_agent_files_per_setting_sources_and_unmapped_models_inherit")
    else {
        return;
    };
    let world = World::new(vec![
        task_on("mine"),
        FakeTurn::text("I am yours"),
        FakeTurn::text("done"),
    ]);
    // The user's agents: `$CLAUDE_CONFIG_DIR/agents`, else `~/.claude/agents` (HOME is the
    // world's home here).
    write_agent(
        &world.home.path().join(".claude/agents"),
        "mine.md",
        "---\nname: mine\ndescription: the user's agent\nmodel: sonnet\n---\nYou are the user's agent.",
    );
    write_agent(
        &world.work().join(".claude/agents"),
        "reviewer.md",
        "---\nname: reviewer\ndescription: project\n---\nproject",
    );
    let spec = json!({"permission_mode": "bypassPermissions", "setting_sources": ["user"]});
    let messages = query(&python, &world, &spec);
    assert_eq!(init_agents(&messages), ["mine"]);
    let warnings = stderr(&messages);
    assert!(
        warnings.contains("`sonnet`") && warnings.contains("[agents.\"sonnet\"]"),
        "{warnings}"
    );
    // No [agents."sonnet"]: the sub-agent's turn goes to the session's model.
    let _guard = world.runtime.enter();
    let bodies = world.server.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[1]["system"]
            .to_string()
            .contains("You are the user's agent."),
        "{}",
        bodies[1]["system"]
    );
}

/// A session whose main agent starts `reviewer` (which reads `notes.txt`, saying so, then
/// answers), run with the SDK's `forward_subagent_text` set to `forward`; its messages.
fn review_forwarding(python: &std::ffi::OsStr, forward: bool) -> Vec<Value> {
    let world = World::new(vec![]);
    let notes = world.work().join("notes.txt");
    std::fs::write(&notes, "ship it\n").unwrap();
    for turn in [
        task_on("reviewer"),
        FakeTurn::tool_call(
            "let me look at the notes",
            "toolu_read",
            "Read",
            json!({"file_path": notes}),
        ),
        FakeTurn::text("I am the reviewer"),
        FakeTurn::text("reviewed"),
    ] {
        world.server.push(turn);
    }
    let spec = json!({
        "permission_mode": "bypassPermissions",
        "forward_subagent_text": forward,
        "agents": {"reviewer": {"description": "Reviews", "prompt": "You review.", "tools": ["Read"]}},
    });
    query(python, &world, &spec)
}

/// The kinds of the content blocks of each message of class `class` that the sub-agent of
/// `toolu_task` produced, and their texts.
fn subagent_blocks(messages: &[Value], class: &str) -> (Vec<String>, Vec<String>) {
    let blocks: Vec<&Value> = messages
        .iter()
        .filter(|message| {
            message["message_class"] == class && message["parent_tool_use_id"] == "toolu_task"
        })
        .flat_map(|message| message["content"].as_array().unwrap())
        .collect();
    let kinds = blocks
        .iter()
        .map(|block| {
            ["text", "tool_use_id", "name", "thinking"]
                .into_iter()
                .find(|key| block.get(*key).is_some())
                .unwrap_or("?")
                .to_owned()
        })
        .collect();
    let texts = blocks
        .iter()
        .filter_map(|block| block["text"].as_str().map(str::to_owned))
        .collect();
    (kinds, texts)
}

#[test]
fn claude_sdk_gets_subagent_text_only_when_it_asks_for_it() {
    let Some(python) = python("claude_sdk_gets_subagent_text_only_when_it_asks_for_it") else {
        return;
    };
    // By default: the sub-agent's tool call and its result, none of its text; the Task
    // result carries its answer.
    let messages = review_forwarding(&python, false);
    let (kinds, texts) = subagent_blocks(&messages, "AssistantMessage");
    assert_eq!(kinds, ["name"], "{messages:#?}");
    assert!(texts.is_empty(), "{texts:?}");
    let (kinds, _) = subagent_blocks(&messages, "UserMessage");
    assert_eq!(kinds, ["tool_use_id"], "{messages:#?}");
    let task_result = messages
        .iter()
        .filter(|message| {
            message["message_class"] == "UserMessage" && message["parent_tool_use_id"].is_null()
        })
        .map(Value::to_string)
        .collect::<String>();
    assert!(task_result.contains("I am the reviewer"), "{messages:#?}");
    // Asked for: its text too, with the Task call as parent.
    let messages = review_forwarding(&python, true);
    let (kinds, texts) = subagent_blocks(&messages, "AssistantMessage");
    assert_eq!(kinds, ["text", "name", "text"], "{messages:#?}");
    assert_eq!(texts, ["let me look at the notes", "I am the reviewer"]);
}
