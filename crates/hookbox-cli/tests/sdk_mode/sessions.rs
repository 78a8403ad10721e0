//! Sessions through the published claude-agent-sdk: hookbox's transcripts where the SDK's
//! session helpers read them, `resume`, `continue_conversation`, `fork_session`,
//! `resume_session_at`, ids that must not be paths, and `/clear` (skipped without
//! `HOOKBOX_PYTHON`).

use std::path::Path;
use std::process::Output;

use hookbox_test_support::FakeTurn;
use serde_json::{Value, json};

use super::python::{assert_finished, python, run};
use super::{KEY, World, call};

/// `sessions.py query PROMPT SPEC`.
fn query(
    python: &std::ffi::OsStr,
    world: &World,
    prompt: &str,
    spec: &Value,
) -> (Output, Vec<Value>) {
    run(
        python,
        world,
        "sessions.py",
        &["query", prompt, &spec.to_string()],
    )
}

/// What `list_sessions` (with each session's messages and sub-agents) says of the world's
/// working directory.
fn sessions(python: &std::ffi::OsStr, world: &World) -> Vec<Value> {
    let (output, messages) = run(python, world, "sessions.py", &["list"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    messages
        .into_iter()
        .filter_map(|message| message.get("session").cloned())
        .collect()
}

/// The listed session `id`.
fn session<'a>(listed: &'a [Value], id: &str) -> &'a Value {
    listed
        .iter()
        .find(|session| session["session_id"] == id)
        .unwrap_or_else(|| panic!("session {id} is not listed: {listed:#?}"))
}

/// The messages of the class `class` (`AssistantMessage`, `ResultMessage`…).
fn of_class<'a>(messages: &'a [Value], class: &str) -> Vec<&'a Value> {
    messages
        .iter()
        .filter(|message| message["message_class"] == class)
        .collect()
}

/// `(type, text)` of each message a session helper returned: the text of its content, or
/// the kinds of its blocks when it has no text.
fn turns(messages: &Value) -> Vec<(String, String)> {
    messages
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            let content = &message["message"]["content"];
            let text = match content {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .map(|block| match block["text"].as_str() {
                        Some(text) => text.to_owned(),
                        None => format!("[{}]", block["type"].as_str().unwrap_or("?")),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                other => other.to_string(),
            };
            (message["type"].as_str().unwrap_or("?").to_owned(), text)
        })
        .collect()
}

fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
    items
        .iter()
        .map(|(kind, text)| ((*kind).to_owned(), (*text).to_owned()))
        .collect()
}

/// The text of every file under `dir`, recursively.
fn files_text(dir: &Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            text.push_str(&files_text(&path));
        } else {
            text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
        }
    }
    text
}

#[test]
fn claude_sdk_lists_reads_resumes_forks_and_continues_hookbox_sessions() {
    let Some(python) =
        python("claude_sdk_lists_reads_resumes_forks_and_continues_hookbox_sessions")
    else {
        return;
    };
    let world = World::new(vec![FakeTurn::text("first answer")]);
    let (output, messages) = query(&python, &world, "remember 42", &json!({}));
    let id = assert_finished(&output, &messages)["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer_uuid = of_class(&messages, "AssistantMessage")[0]["uuid"].clone();

    // The session helpers read what hookbox wrote.
    let listed = sessions(&python, &world);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(listed[0]["session_id"], id.as_str());
    assert_eq!(listed[0]["summary"], "remember 42");
    assert_eq!(
        turns(&listed[0]["messages"]),
        pairs(&[("user", "remember 42"), ("assistant", "first answer")])
    );
    // The uuid the SDK saw live names the same message in the transcript.
    assert_eq!(listed[0]["messages"][1]["uuid"], answer_uuid);

    // Resume: same id, the model sees the earlier turns.
    world.server.push(FakeTurn::text("second answer"));
    let (output, messages) = query(&python, &world, "what did I say?", &json!({"resume": id}));
    assert_eq!(
        assert_finished(&output, &messages)["session_id"],
        id.as_str()
    );
    let last = world.bodies().pop().unwrap();
    for earlier in ["remember 42", "first answer", "what did I say?"] {
        assert!(last.contains(earlier), "{earlier} missing from {last}");
    }
    let listed = sessions(&python, &world);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(turns(&listed[0]["messages"]).len(), 4, "{listed:#?}");

    // Fork: a new id with the same history; the original is left as it was.
    world.server.push(FakeTurn::text("forked answer"));
    let (output, messages) = query(
        &python,
        &world,
        "and now?",
        &json!({"resume": id, "fork_session": true}),
    );
    let forked = assert_finished(&output, &messages)["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(forked, id);
    assert!(world.bodies().pop().unwrap().contains("second answer"));
    let listed = sessions(&python, &world);
    assert_eq!(listed.len(), 2, "{listed:#?}");
    assert_eq!(turns(&session(&listed, &id)["messages"]).len(), 4);
    assert_eq!(
        turns(&session(&listed, &forked)["messages"]),
        pairs(&[
            ("user", "remember 42"),
            ("assistant", "first answer"),
            ("user", "what did I say?"),
            ("assistant", "second answer"),
            ("user", "and now?"),
            ("assistant", "forked answer"),
        ])
    );

    // Truncating resume: only the turns up to the first answer.
    world.server.push(FakeTurn::text("truncated answer"));
    let (output, messages) = query(
        &python,
        &world,
        "try again",
        &json!({"resume": id, "resume_session_at": answer_uuid, "fork_session": true}),
    );
    let truncated = assert_finished(&output, &messages)["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let last = world.bodies().pop().unwrap();
    assert!(last.contains("first answer"), "{last}");
    assert!(!last.contains("second answer"), "{last}");
    assert_eq!(
        turns(&session(&sessions(&python, &world), &truncated)["messages"]),
        pairs(&[
            ("user", "remember 42"),
            ("assistant", "first answer"),
            ("user", "try again"),
            ("assistant", "truncated answer"),
        ])
    );

    // Continue: the latest session of this directory goes on.
    world.server.push(FakeTurn::text("continued"));
    let (output, messages) = query(
        &python,
        &world,
        "go on",
        &json!({"continue_conversation": true}),
    );
    assert_eq!(
        assert_finished(&output, &messages)["session_id"],
        truncated.as_str()
    );
    assert!(world.bodies().pop().unwrap().contains("truncated answer"));

    // The transcripts are where the SDK looks, private, and hold no credential.
    let config = world.home.path().join(".claude");
    let text = files_text(&config);
    assert!(text.contains("remember 42"));
    assert!(
        !text.contains(KEY),
        "the model's API key is in a transcript"
    );
    use std::os::unix::fs::PermissionsExt;
    let transcript = std::fs::read_dir(config.join("projects"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
        .join(format!("{id}.jsonl"));
    let mode = std::fs::metadata(&transcript).unwrap().permissions().mode();
    assert_eq!(
        mode & 0o077,
        0,
        "{} is readable by others",
        transcript.display()
    );
}

#[test]
fn claude_sdk_resume_of_an_unknown_id_or_a_path_is_a_clear_error() {
    let Some(python) = python("claude_sdk_resume_of_an_unknown_id_or_a_path_is_a_clear_error")
    else {
        return;
    };
    let world = World::new(vec![]);
    for (spec, expected) in [
        (
            json!({"resume": "0b6f4c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e"}),
            "No conversation found with session ID: 0b6f4c1e-2d3a-4b5c-8d9e-0f1a2b3c4d5e",
        ),
        (
            json!({"resume": "../../escape"}),
            "cannot resume `../../escape`",
        ),
        (
            json!({"session_id": "../escape"}),
            "invalid --session-id `../escape`",
        ),
    ] {
        let (output, messages) = query(&python, &world, "hi", &spec);
        let log = format!(
            "{spec}: {messages:#?}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let raised = messages
            .iter()
            .find(|message| message.get("exception").is_some())
            .unwrap_or_else(|| panic!("nothing raised: {log}"));
        // hookbox ended the query with an error result and exited non-zero.
        assert_eq!(raised["exception"], "ResultError", "{log}");
        assert_eq!(raised["exit_code"], 1, "{log}");
        assert!(
            raised["errors"][0]
                .as_str()
                .is_some_and(|error| error.contains(expected)),
            "{log}"
        );
    }
    assert!(world.bodies().is_empty(), "the model was called");
    assert!(!world.home.path().join(".claude/escape.jsonl").exists());
    assert!(
        !world
            .home
            .path()
            .join(".claude/projects/escape.jsonl")
            .exists()
    );
}

#[test]
fn claude_sdk_clear_resets_the_conversation_under_a_new_session_id() {
    let Some(python) = python("claude_sdk_clear_resets_the_conversation_under_a_new_session_id")
    else {
        return;
    };
    let world = World::new(vec![
        FakeTurn::text("hello Ada"),
        FakeTurn::text("I do not know your name"),
    ]);
    let (output, messages) = run(
        &python,
        &world,
        "sessions.py",
        &[
            "client",
            "{}",
            "my name is Ada",
            "/clear",
            "what is my name?",
        ],
    );
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{log}");
    let results = of_class(&messages, "ResultMessage");
    assert_eq!(results.len(), 3, "{log}");
    let first = results[0]["session_id"].as_str().unwrap();
    let fresh = results[2]["session_id"].as_str().unwrap();
    assert_ne!(first, fresh, "{log}");
    assert_eq!(results[1]["session_id"], fresh, "{log}");
    assert_eq!(results[1]["is_error"], false, "{log}");
    let reset = of_class(&messages, "ConversationResetMessage");
    assert_eq!(reset.len(), 1, "{log}");
    assert_eq!(reset[0]["session_id"], first, "{log}");
    assert_eq!(reset[0]["new_conversation_id"], fresh, "{log}");
    // `/clear` reached no model; the next prompt started from nothing.
    let bodies = world.bodies();
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    assert!(!bodies[1].contains("Ada"), "{}", bodies[1]);
    let listed = sessions(&python, &world);
    assert_eq!(
        turns(&session(&listed, first)["messages"]),
        pairs(&[("user", "my name is Ada"), ("assistant", "hello Ada")])
    );
    assert_eq!(
        turns(&session(&listed, fresh)["messages"]),
        pairs(&[
            ("user", "what is my name?"),
            ("assistant", "I do not know your name")
        ])
    );
}

#[test]
fn claude_sdk_lists_subagents_under_their_hooks_agent_id_with_the_task_call() {
    let Some(python) =
        python("claude_sdk_lists_subagents_under_their_hooks_agent_id_with_the_task_call")
    else {
        return;
    };
    let world = World::new(vec![
        call(
            "toolu_task",
            "Task",
            json!({"description": "review", "prompt": "say what you are", "subagent_type": "reviewer"}),
        ),
        FakeTurn::text("I am the reviewer"),
        FakeTurn::text("the reviewer answered"),
    ]);
    let spec = json!({
        "permission_mode": "bypassPermissions",
        "agents": {"reviewer": {"description": "Reviews", "prompt": "You are the reviewer.", "tools": ["Read"]}},
        "hooks": {"SubagentStart": {}, "SubagentStop": {}},
    });
    let (output, messages) = query(&python, &world, "get a review", &spec);
    let result = assert_finished(&output, &messages);
    let hook = |event: &str| {
        messages
            .iter()
            .find(|message| message["callback"] == event)
            .unwrap_or_else(|| panic!("no {event} hook: {messages:#?}"))["input"]
            .clone()
    };
    let (start, stop) = (hook("SubagentStart"), hook("SubagentStop"));
    let agent_id = start["agent_id"].as_str().unwrap();
    assert_eq!(stop["agent_id"], agent_id);
    // SubagentStop names the sub-agent's own transcript, which its hooks' id names too.
    let path = stop["agent_transcript_path"].as_str().unwrap();
    assert!(
        path.ends_with(&format!(
            "/{}/subagents/agent-{agent_id}.jsonl",
            result["session_id"].as_str().unwrap()
        )),
        "{path}"
    );
    assert_ne!(stop["agent_transcript_path"], stop["transcript_path"]);
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("I am the reviewer"), "{text}");
    let listed = sessions(&python, &world);
    assert_eq!(listed.len(), 1, "{listed:#?}");
    assert_eq!(
        turns(&listed[0]["messages"]),
        pairs(&[
            ("user", "get a review"),
            ("assistant", "[tool_use]"),
            ("user", "[tool_result]"),
            ("assistant", "the reviewer answered"),
        ])
    );
    let subagents = listed[0]["subagents"].as_object().unwrap();
    assert_eq!(subagents.len(), 1, "{listed:#?}");
    let (listed_id, sub) = subagents.iter().next().unwrap();
    assert_eq!(
        listed_id, agent_id,
        "list_subagents names the id the hooks saw"
    );
    assert_eq!(
        turns(sub),
        pairs(&[
            ("user", "say what you are"),
            ("assistant", "I am the reviewer")
        ])
    );
    for message in sub.as_array().unwrap() {
        assert_eq!(message["parent_tool_use_id"], "toolu_task", "{message}");
    }
}

#[test]
fn claude_sdk_compact_fires_pre_compact_and_a_resume_starts_from_the_summary() {
    let Some(python) =
        python("claude_sdk_compact_fires_pre_compact_and_a_resume_starts_from_the_summary")
    else {
        return;
    };
    let world = World::new(vec![
        FakeTurn::text("hello Ada"),
        FakeTurn::text("The user is called Ada."),
        FakeTurn::text("You are Ada"),
    ]);
    let (output, messages) = run(
        &python,
        &world,
        "sessions.py",
        &[
            "client",
            r#"{"hooks": {"PreCompact": true}}"#,
            "my name is Ada",
            "/compact keep names",
            "what is my name?",
        ],
    );
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{log}");
    let pre = messages
        .iter()
        .find(|message| message["callback"] == "PreCompact")
        .unwrap_or_else(|| panic!("PreCompact did not fire: {log}"));
    assert_eq!(pre["input"]["trigger"], "manual", "{log}");
    assert_eq!(pre["input"]["custom_instructions"], "keep names", "{log}");
    assert!(
        of_class(&messages, "SystemMessage")
            .iter()
            .any(|message| message["subtype"] == "compact_boundary"),
        "{log}"
    );
    let id = of_class(&messages, "ResultMessage")[2]["session_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let bodies = world.bodies();
    assert_eq!(bodies.len(), 3, "{bodies:#?}");
    assert!(bodies[1].contains("keep names"), "{}", bodies[1]);
    assert!(
        bodies[2].contains("The user is called Ada."),
        "{}",
        bodies[2]
    );
    assert!(!bodies[2].contains("hello Ada"), "{}", bodies[2]);

    // The transcript's chain starts at the compaction: a resume sees the summary, not what
    // it replaced.
    world.server.push(FakeTurn::text("Still Ada"));
    let (output, messages) = query(&python, &world, "and now?", &json!({"resume": id}));
    assert_finished(&output, &messages);
    let last = world.bodies().pop().unwrap();
    assert!(last.contains("The user is called Ada."), "{last}");
    assert!(last.contains("You are Ada"), "{last}");
    assert!(!last.contains("hello Ada"), "{last}");
    let listed = sessions(&python, &world);
    let turns = turns(&session(&listed, &id)["messages"]);
    assert_eq!(turns.len(), 5, "{turns:#?}");
    assert!(turns[0].1.contains("The user is called Ada."), "{turns:#?}");
    assert_eq!(turns[4], ("assistant".to_owned(), "Still Ada".to_owned()));
}

#[test]
fn claude_sdk_a_prompt_a_hook_blocked_is_never_written_to_a_transcript() {
    let Some(python) =
        python("claude_sdk_a_prompt_a_hook_blocked_is_never_written_to_a_transcript")
    else {
        return;
    };
    let world = World::new(vec![]);
    let secret = "my token is tok-4f9a-secret";
    let spec =
        json!({"hooks": {"UserPromptSubmit": {"decision": "block", "reason": "no secrets"}}});
    let (output, messages) = query(&python, &world, secret, &spec);
    let log = format!(
        "{messages:#?}\nstderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        messages
            .iter()
            .any(|message| message["callback"] == "UserPromptSubmit"),
        "{log}"
    );
    assert!(
        world.bodies().is_empty(),
        "the prompt reached the model: {log}"
    );
    let text = files_text(&world.home.path().join(".claude"));
    assert!(!text.contains("tok-4f9a-secret"), "{text}");
    // Nothing to list or resume: the session said nothing.
    assert!(sessions(&python, &world).is_empty());
}
