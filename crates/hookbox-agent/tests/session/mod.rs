//! SDK sessions: every lifecycle event fires at its moment with its fields, and every hook
//! output field has its effect, against a fake OpenAI-compatible model server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The fake model, the session builder, and what the tests read from a query's messages.
mod fixture;
/// Protected paths, `CLAUDE_PROJECT_DIR`, failed hooks reported.
mod protect;

use hookbox_agent::session::{
    HookFailure, HookMatcher, PermissionAnswer, PermissionMode, PermissionQuery, ResultSubtype,
    SessionMessage, SubagentDefinition, TerminalReason,
};
use hookbox_hooks::{CallbackError, HookEvent};
use hookbox_test_support::FakeTurn;
use serde_json::{Value, json};

use fixture::*;

#[tokio::test]
async fn pre_tool_use_gets_its_fields_and_a_deny_reaches_the_model() {
    let f = fixture(vec![bash("t1", "rm -rf /tmp/x"), FakeTurn::text("ok")]).await;
    let (pre, matcher) = recorder_on(
        Some("Bash"),
        json!({"decision": "block", "reason": "Destructive commands are not allowed"}),
    );
    let session = f
        .session()
        .permission_mode(PermissionMode::BypassPermissions)
        .hook(HookEvent::PreToolUse, matcher)
        .build()
        .expect("session");
    let messages = run(&session, "clean up").await;

    let inputs = seen(&pre);
    assert_eq!(inputs.len(), 1);
    let input = &inputs[0];
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["session_id"], "test-session");
    assert_eq!(input["permission_mode"], "bypassPermissions");
    assert_eq!(input["tool_name"], "Bash");
    assert_eq!(input["tool_input"], json!({"command": "rm -rf /tmp/x"}));
    assert_eq!(input["tool_use_id"], "t1");
    assert!(input["cwd"].as_str().is_some_and(|cwd| !cwd.is_empty()));
    assert!(input.get("transcript_path").is_some());
    assert_eq!(
        tool_results(&messages),
        vec![("Destructive commands are not allowed".to_owned(), true)]
    );
    assert!(
        f.request_text(1)
            .contains("Destructive commands are not allowed")
    );
    let result = result(&messages);
    assert_eq!(result.subtype, ResultSubtype::Success);
    assert_eq!(result.result.as_deref(), Some("ok"));
    assert_eq!(result.permission_denials.len(), 1);
    assert!(matches!(
        messages.first(),
        Some(SessionMessage::Init { .. })
    ));
}

#[tokio::test]
async fn updated_input_replaces_the_call() {
    let f = fixture(vec![
        bash("t1", "echo original > out.txt"),
        FakeTurn::text("done"),
    ])
    .await;
    let (_, matcher) = recorder(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "updatedInput": {"command": "echo rewritten > out.txt"}
    }}));
    let (post, post_matcher) = recorder(json!({}));
    run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PreToolUse, matcher)
            .hook(HookEvent::PostToolUse, post_matcher),
        "write",
    )
    .await;
    let written = std::fs::read_to_string(f.dir.path().join("out.txt")).expect("out.txt");
    assert_eq!(written.trim(), "rewritten");
    assert_eq!(
        seen(&post)[0]["tool_input"]["command"],
        "echo rewritten > out.txt"
    );
}

#[tokio::test]
async fn post_tool_use_context_and_block_feedback_reach_the_model() {
    let f = fixture(vec![bash("t1", "echo hello"), FakeTurn::text("done")]).await;
    let (post, matcher) = recorder(json!({
        "decision": "block",
        "reason": "output looks suspicious",
        "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "remember the style guide"}
    }));
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PostToolUse, matcher),
        "say hello",
    )
    .await;
    let input = &seen(&post)[0];
    assert_eq!(input["hook_event_name"], "PostToolUse");
    assert_eq!(input["tool_response"]["stdout"], "hello\n");
    assert_eq!(input["tool_use_id"], "t1");
    let (text, is_error) = &tool_results(&messages)[0];
    assert!(!is_error);
    assert!(text.contains("hello"));
    let seen_by_model = f.request_text(1);
    assert!(seen_by_model.contains("remember the style guide"));
    assert!(seen_by_model.contains("output looks suspicious"));
}

#[tokio::test]
async fn a_failed_tool_fires_post_tool_use_failure_and_not_post_tool_use() {
    let f = fixture(vec![
        FakeTurn::tool_call("", "t1", "Read", json!({"file_path": "missing.txt"})),
        FakeTurn::text("done"),
    ])
    .await;
    let (failure, failure_matcher) = recorder(json!({
        "hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "try Glob first"}
    }));
    let (post, post_matcher) = recorder(json!({}));
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PostToolUseFailure, failure_matcher)
            .hook(HookEvent::PostToolUse, post_matcher),
        "read it",
    )
    .await;
    let input = &seen(&failure)[0];
    assert_eq!(input["hook_event_name"], "PostToolUseFailure");
    assert_eq!(input["tool_name"], "Read");
    assert_eq!(input["is_interrupt"], false);
    assert!(
        input["error"]
            .as_str()
            .is_some_and(|error| !error.is_empty())
    );
    assert!(seen(&post).is_empty());
    assert!(tool_results(&messages)[0].1);
    assert!(f.request_text(1).contains("try Glob first"));
}

#[tokio::test]
async fn user_prompt_submit_block_erases_the_prompt_and_context_reaches_the_model() {
    let f = fixture(vec![FakeTurn::text("fine")]).await;
    let (prompts, matcher) =
        recorder(json!({"decision": "block", "reason": "no secrets in prompts"}));
    let messages = run_once(
        f.session().hook(HookEvent::UserPromptSubmit, matcher),
        "my password is hunter2",
    )
    .await;
    assert_eq!(seen(&prompts)[0]["prompt"], "my password is hunter2");
    assert!(
        f.server.requests().is_empty(),
        "the blocked prompt reached the model"
    );
    let result = result(&messages);
    assert!(result.is_error);
    assert!(result.errors[0].contains("no secrets in prompts"));

    let (_, matcher) = recorder(json!({"hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit", "additionalContext": "the user is on call this week"
    }}));
    run_once(
        f.session().hook(HookEvent::UserPromptSubmit, matcher),
        "hello",
    )
    .await;
    let sent = f.request_text(0);
    assert!(sent.contains("hello") && sent.contains("the user is on call this week"));
    assert!(!sent.contains("hunter2"));
}

#[tokio::test]
async fn stop_block_continues_the_turn_with_stop_hook_active_and_is_capped() {
    let f = fixture(vec![FakeTurn::text("first"), FakeTurn::text("second")]).await;
    let calls = Arc::new(Mutex::new(Vec::<Value>::new()));
    let log = Arc::clone(&calls);
    let matcher = HookMatcher::new(None).hook(move |input: Value, _id: Option<String>| {
        let mut log = log.lock().expect("log");
        log.push(input);
        let reply = if log.len() == 1 {
            json!({"decision": "block", "reason": "run the tests before stopping"})
        } else {
            json!({})
        };
        async move { Ok::<_, CallbackError>(reply) }
    });
    let session = f
        .session()
        .hook(HookEvent::Stop, matcher)
        .build()
        .expect("session");
    let messages = run(&session, "finish").await;
    let calls = calls.lock().expect("log").clone();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["stop_hook_active"], false);
    assert_eq!(calls[0]["last_assistant_message"], "first");
    assert_eq!(calls[1]["stop_hook_active"], true);
    assert!(f.request_text(1).contains("run the tests before stopping"));
    assert_eq!(result(&messages).result.as_deref(), Some("second"));

    // A hook that always blocks is obeyed 8 times, then the session stops anyway.
    let f = fixture(
        (0..9)
            .map(|n| FakeTurn::text(&format!("answer {n}")))
            .collect(),
    )
    .await;
    let (stops, matcher) = recorder(json!({"decision": "block", "reason": "again"}));
    let messages = run_once(f.session().hook(HookEvent::Stop, matcher), "finish").await;
    assert_eq!(seen(&stops).len(), 9);
    assert_eq!(f.server.requests().len(), 9);
    assert_eq!(result(&messages).result.as_deref(), Some("answer 8"));
}

#[tokio::test]
async fn continue_false_stops_the_session_with_its_reason() {
    let f = fixture(vec![bash("t1", "touch ran.txt"), FakeTurn::text("never")]).await;
    let (_, matcher) = recorder(
        json!({"continue": false, "stopReason": "maintenance window", "systemMessage": "hookbox paused"}),
    );
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PreToolUse, matcher),
        "go",
    )
    .await;
    assert!(!f.dir.path().join("ran.txt").exists());
    assert_eq!(f.server.requests().len(), 1);
    let result = result(&messages);
    assert_eq!(result.subtype, ResultSubtype::Success);
    assert_eq!(result.stop_reason.as_deref(), Some("maintenance window"));
    assert!(messages.iter().any(|message| matches!(
        message,
        SessionMessage::HookSystemMessage { event: HookEvent::PreToolUse, message } if message == "hookbox paused"
    )));
}

#[tokio::test]
async fn ask_goes_to_permission_request_hooks_then_to_can_use_tool() {
    let f = fixture(vec![bash("t1", "echo asked"), FakeTurn::text("done")]).await;
    let (_, ask) = recorder(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "confirm shell"
    }}));
    let (requests, request_matcher) = recorder(json!({}));
    let (notifications, notification_matcher) = recorder_on(Some("permission_prompt"), json!({}));
    let queries = Arc::new(Mutex::new(Vec::<PermissionQuery>::new()));
    let log = Arc::clone(&queries);
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PreToolUse, ask)
            .hook(HookEvent::PermissionRequest, request_matcher)
            .hook(HookEvent::Notification, notification_matcher)
            .can_use_tool(move |query: PermissionQuery| {
                log.lock().expect("log").push(query);
                async {
                    PermissionAnswer::Allow {
                        updated_input: Some(json!({"command": "echo approved"})),
                    }
                }
            }),
        "go",
    )
    .await;
    let request = &seen(&requests)[0];
    assert_eq!(request["hook_event_name"], "PermissionRequest");
    assert_eq!(request["tool_name"], "Bash");
    assert!(request.get("tool_use_id").is_none());
    assert_eq!(
        seen(&notifications)[0]["notification_type"],
        "permission_prompt"
    );
    let queries = queries.lock().expect("log").clone();
    assert_eq!(queries.len(), 1);
    assert_eq!(queries[0].decision_reason, "confirm shell");
    assert_eq!(tool_results(&messages)[0], ("approved".to_owned(), false));
}

#[tokio::test]
async fn permission_request_hooks_decide_and_without_them_nobody_can_be_asked() {
    let turns = || {
        vec![
            FakeTurn::tool_call("", "t1", "Read", json!({"file_path": "notes.txt"})),
            FakeTurn::text("done"),
        ]
    };
    let f = fixture(turns()).await;
    std::fs::write(f.dir.path().join("notes.txt"), "the launch is on friday").expect("notes");
    let (requests, matcher) = recorder_on(
        Some("Read|Glob|Grep"),
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}),
    );
    let messages = run_once(
        f.session().hook(HookEvent::PermissionRequest, matcher),
        "read my notes",
    )
    .await;
    assert_eq!(seen(&requests)[0]["tool_name"], "Read");
    assert!(!tool_results(&messages)[0].1);
    assert!(f.request_text(1).contains("the launch is on friday"));

    let f = fixture(turns()).await;
    std::fs::write(f.dir.path().join("notes.txt"), "secret").expect("notes");
    let messages = run_once(f.session(), "read my notes").await;
    let (text, is_error) = &tool_results(&messages)[0];
    assert!(is_error);
    assert!(text.contains("cannot ask"), "{text}");
    assert!(!f.request_text(1).contains("secret"));

    let f = fixture(turns()).await;
    let (_, deny) = recorder(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "reads are audited today"}}}),
    );
    let messages = run_once(f.session().hook(HookEvent::PermissionRequest, deny), "read").await;
    assert_eq!(
        tool_results(&messages)[0],
        ("reads are audited today".to_owned(), true)
    );
}

#[tokio::test]
async fn disallowed_tools_and_plan_mode_deny_even_when_a_hook_allows() {
    let f = fixture(vec![bash("t1", "touch x"), FakeTurn::text("done")]).await;
    let (_, allow) = recorder(
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}),
    );
    let messages = run_once(
        f.session()
            .disallowed_tools(["Bash"])
            .hook(HookEvent::PreToolUse, allow.clone()),
        "go",
    )
    .await;
    // A disallowed tool is not offered at all, so a call to it anyway names no tool.
    assert!(
        tool_results(&messages)[0]
            .0
            .contains("No such tool available: Bash")
    );
    assert!(!f.dir.path().join("x").exists());

    let f = fixture(vec![bash("t1", "touch x"), FakeTurn::text("done")]).await;
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::Plan)
            .hook(HookEvent::PreToolUse, allow),
        "go",
    )
    .await;
    assert!(tool_results(&messages)[0].0.contains("plan mode"));
    assert!(!f.dir.path().join("x").exists());
}

#[tokio::test]
async fn a_callback_that_overruns_its_timeout_blocks() {
    let f = fixture(vec![bash("t1", "touch slow"), FakeTurn::text("done")]).await;
    let matcher = HookMatcher::new(Some("Bash"))
        .hook(|_input: Value, _id: Option<String>| async {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Ok::<_, CallbackError>(json!({}))
        })
        .timeout(Duration::from_millis(200));
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PreToolUse, matcher),
        "go",
    )
    .await;
    assert!(tool_results(&messages)[0].1);
    assert!(!f.dir.path().join("slow").exists());
}

#[tokio::test]
async fn subagents_fire_start_and_stop_and_their_tool_calls_pass_the_hooks() {
    let f = fixture(vec![
        FakeTurn::tool_call(
            "",
            "task1",
            "Task",
            json!({"description": "review", "prompt": "list the files", "subagent_type": "reviewer"}),
        ),
        FakeTurn::tool_call("", "g1", "Glob", json!({"pattern": "*.txt"})),
        FakeTurn::text("one file: a.txt"),
        FakeTurn::text("the reviewer found a.txt"),
    ])
    .await;
    std::fs::write(f.dir.path().join("a.txt"), "a").expect("a.txt");
    let (starts, start) = recorder_on(
        Some("reviewer"),
        json!({"hookSpecificOutput": {"hookEventName": "SubagentStart", "additionalContext": "be thorough"}}),
    );
    let (stops, stop) = recorder(json!({}));
    let (pre, pre_matcher) = recorder_on(Some("Glob"), json!({}));
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .agent(
                "reviewer",
                SubagentDefinition {
                    description: "Reviews code".into(),
                    prompt: "You review code.".into(),
                    tools: Some(vec!["Glob".into(), "Read".into()]),
                    model: None,
                },
            )
            .hook(HookEvent::SubagentStart, start)
            .hook(HookEvent::SubagentStop, stop)
            .hook(HookEvent::PreToolUse, pre_matcher),
        "review please",
    )
    .await;
    let start = &seen(&starts)[0];
    assert_eq!(start["agent_type"], "reviewer");
    let agent_id = start["agent_id"].as_str().expect("agent id").to_owned();
    let stop = &seen(&stops)[0];
    assert_eq!(stop["agent_id"], agent_id.as_str());
    assert_eq!(stop["last_assistant_message"], "one file: a.txt");
    assert_eq!(stop["stop_hook_active"], false);
    assert!(stop.get("agent_transcript_path").is_some());
    assert_eq!(seen(&pre)[0]["agent_id"], agent_id.as_str());
    // The parent's Task tool lists the agent, its description and its tools.
    let task = f.server.bodies()[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|tool| tool["function"]["name"] == "Task")
        .expect("Task offered")["function"]["description"]
        .to_string();
    assert!(
        task.contains("reviewer: Reviews code (Tools: Glob, Read)"),
        "{task}"
    );
    // The sub-agent's request carries its own prompt and the start hook's context, and only its tools.
    let sub_request = &f.server.bodies()[1];
    let sub_text = sub_request["messages"].to_string();
    assert!(sub_text.contains("You review code.") && sub_text.contains("be thorough"));
    let tools: Vec<&str> = sub_request["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(tools, ["Read", "Glob"]);
    assert!(f.request_text(3).contains("one file: a.txt"));
    assert!(messages.iter().any(|message| matches!(
        message,
        SessionMessage::Assistant { parent_tool_use_id: Some(parent), .. } if parent == "task1"
    )));
    assert_eq!(
        result(&messages).result.as_deref(),
        Some("the reviewer found a.txt")
    );
}

#[tokio::test]
async fn compact_manual_and_auto_fire_pre_compact_and_summarise_the_history() {
    let f = fixture(vec![
        FakeTurn::text("the answer is 42"),
        FakeTurn::text("SUMMARY: the user asked a question; the answer was 42"),
        FakeTurn::text("still 42"),
    ])
    .await;
    let (compacts, matcher) = recorder(json!({}));
    let session = f
        .session()
        .hook(HookEvent::PreCompact, matcher)
        .build()
        .expect("session");
    run(&session, "what is the answer to everything?").await;
    let messages = run(&session, "/compact keep the numbers").await;
    let input = &seen(&compacts)[0];
    assert_eq!(input["trigger"], "manual");
    assert_eq!(input["custom_instructions"], "keep the numbers");
    assert!(
        f.request_text(1)
            .contains("what is the answer to everything?")
    );
    assert!(f.request_text(1).contains("keep the numbers"));
    assert!(
        messages
            .iter()
            .any(|message| matches!(message, SessionMessage::CompactBoundary { .. }))
    );
    run(&session, "and now?").await;
    let after = f.request_text(2);
    assert!(after.contains("SUMMARY: the user asked a question"));
    assert!(!after.contains("what is the answer to everything?"));

    // Auto: past the threshold, the history is compacted before the next model turn; a
    // PreCompact block keeps it.
    let f = fixture(vec![FakeTurn::text("plain answer")]).await;
    let (compacts, matcher) = recorder_on(
        Some("auto"),
        json!({"decision": "block", "reason": "keep everything"}),
    );
    let session = f
        .session()
        .compact_threshold_tokens(1)
        .hook(HookEvent::PreCompact, matcher)
        .build()
        .expect("session");
    let messages = run(
        &session,
        "a prompt long enough to pass a one-token threshold",
    )
    .await;
    assert_eq!(seen(&compacts)[0]["trigger"], "auto");
    assert_eq!(result(&messages).result.as_deref(), Some("plain answer"));
}

#[tokio::test]
async fn notifications_session_start_and_the_message_stream_shape() {
    let f = fixture(vec![FakeTurn::text("hi")]).await;
    let (idle, idle_matcher) = recorder_on(Some("idle_prompt"), json!({}));
    let (starts, start_matcher) = recorder(json!({"hookSpecificOutput": {
        "hookEventName": "SessionStart", "additionalContext": "repo uses rust"
    }}));
    let transcripts = tempfile::tempdir().expect("transcripts");
    let session = f
        .session()
        // One line per message: the session id and the message's `Debug`.
        .transcript_dir(transcripts.path(), |message, session_id| {
            format!("{session_id} {message:?}")
        })
        .hook(HookEvent::Notification, idle_matcher)
        .hook(HookEvent::SessionStart, start_matcher)
        .build()
        .expect("session");
    let messages = run(&session, "hello").await;
    assert_eq!(seen(&idle)[0]["notification_type"], "idle_prompt");
    assert_eq!(seen(&starts)[0]["source"], "startup");
    assert!(f.request_text(0).contains("repo uses rust"));
    // The stream-json shape of these messages is hookbox-stream-json's (its `messages` tests).
    assert!(matches!(messages[0], SessionMessage::Init { .. }));
    assert!(matches!(messages.last(), Some(SessionMessage::Result(_))));
    let transcript =
        std::fs::read_to_string(transcripts.path().join("test-session.jsonl")).expect("transcript");
    assert_eq!(transcript.lines().count(), messages.len());
    assert_eq!(
        seen(&starts)[0]["transcript_path"],
        transcripts
            .path()
            .join("test-session.jsonl")
            .display()
            .to_string()
    );
}

#[tokio::test]
async fn interrupt_ends_a_query_waiting_for_permission() {
    let f = fixture(vec![bash("t1", "echo hi")]).await;
    let session = f
        .session()
        .can_use_tool(|_query: PermissionQuery| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            PermissionAnswer::Deny {
                message: "late".into(),
                interrupt: false,
            }
        })
        .build()
        .expect("session");
    let control = session.control();
    let stream = session.query("go");
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        control.interrupt();
    });
    let messages = tokio::time::timeout(Duration::from_secs(30), stream.collect_all())
        .await
        .expect("interrupted in time");
    let result = result(&messages);
    assert_eq!(result.subtype, ResultSubtype::ErrorDuringExecution);
    assert_eq!(result.errors, ["interrupted"]);
    assert_eq!(result.terminal_reason, Some(TerminalReason::AbortedTools));

    // The session stays usable, and a mode change applies to the next calls.
    session
        .control()
        .set_permission_mode(PermissionMode::BypassPermissions);
    f.server.push(bash("t2", "echo again"));
    f.server.push(FakeTurn::text("ok"));
    let messages = run(&session, "again").await;
    assert_eq!(tool_results(&messages)[0], ("again".to_owned(), false));
}

#[tokio::test]
async fn sandboxed_bash_runs_in_default_mode_inside_the_sandbox() {
    if let Err(err) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip(
            "sandboxed_bash_runs_in_default_mode_inside_the_sandbox",
            err,
        );
        return;
    }
    let f = fixture(vec![bash("t1", "pwd > where.txt"), FakeTurn::text("done")]).await;
    let messages = run_once(f.sandboxed(), "where am I?").await;
    assert!(!tool_results(&messages)[0].1, "{messages:?}");
    let cwd = std::fs::canonicalize(f.dir.path()).expect("cwd");
    let written = std::fs::read_to_string(cwd.join("where.txt")).expect("where.txt");
    assert_eq!(written.trim(), cwd.display().to_string());
}

#[tokio::test]
async fn close_fires_session_end_with_its_reason() {
    let f = fixture(vec![FakeTurn::text("hi")]).await;
    let (ends, matcher) = recorder(json!({}));
    let session = f
        .session()
        .hook(HookEvent::SessionEnd, matcher)
        .build()
        .expect("session");
    run(&session, "hello").await;
    assert!(seen(&ends).is_empty(), "SessionEnd fired before the end");
    session.close("prompt_input_exit").await;
    let inputs = seen(&ends);
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0]["hook_event_name"], "SessionEnd");
    assert_eq!(inputs[0]["reason"], "prompt_input_exit");
}

#[tokio::test]
async fn an_explicit_pre_tool_use_allow_skips_the_permission_ask() {
    let turns = || {
        vec![
            FakeTurn::tool_call("", "t1", "Read", json!({"file_path": "notes.txt"})),
            FakeTurn::text("done"),
        ]
    };
    let f = fixture(turns()).await;
    std::fs::write(f.dir.path().join("notes.txt"), "allowed content").expect("notes");
    let (_, allow) = recorder_on(
        Some("Read"),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}),
    );
    let (requests, request_matcher) = recorder(json!({}));
    let messages = run_once(
        f.session()
            .hook(HookEvent::PreToolUse, allow)
            .hook(HookEvent::PermissionRequest, request_matcher),
        "read",
    )
    .await;
    assert!(!tool_results(&messages)[0].1, "{messages:?}");
    assert!(f.request_text(1).contains("allowed content"));
    assert!(
        seen(&requests).is_empty(),
        "an allowed call still asked for permission"
    );
}

#[tokio::test]
async fn clear_ends_the_session_and_starts_a_fresh_one_without_the_model() {
    let f = fixture(vec![FakeTurn::text("hello Ada"), FakeTurn::text("who?")]).await;
    let (ends, end_matcher) = recorder(json!({}));
    let (starts, start_matcher) = recorder(json!({}));
    let transcripts = tempfile::tempdir().expect("transcripts");
    let session = f
        .session()
        .transcript_dir(transcripts.path(), |message, session_id| {
            format!("{session_id} {message:?}")
        })
        .hook(HookEvent::SessionEnd, end_matcher)
        .hook(HookEvent::SessionStart, start_matcher)
        .build()
        .expect("session");
    run(&session, "my name is Ada").await;
    let cleared = run(&session, "/clear").await;
    let fresh = session.session_id();
    assert_ne!(fresh, "test-session");
    assert!(
        cleared.contains(&SessionMessage::ConversationReset {
            previous_session_id: "test-session".into(),
            session_id: fresh.clone(),
        }),
        "{cleared:?}"
    );
    assert_eq!(result(&cleared).subtype, ResultSubtype::Success);
    assert_eq!(seen(&ends)[0]["reason"], "clear");
    assert_eq!(seen(&ends)[0]["session_id"], "test-session");
    let starts = seen(&starts);
    assert_eq!(
        (
            starts[1]["source"].as_str(),
            starts[1]["session_id"].as_str()
        ),
        (Some("clear"), Some(fresh.as_str()))
    );
    assert!(
        starts[1]["transcript_path"]
            .as_str()
            .is_some_and(|path| path.ends_with(&format!("{fresh}.jsonl")))
    );
    run(&session, "what is my name?").await;
    // Two model requests: `/clear` asked nothing, and the history was gone after it.
    assert_eq!(f.server.bodies().len(), 2);
    assert!(!f.request_text(1).contains("Ada"));
    assert!(transcripts.path().join(format!("{fresh}.jsonl")).is_file());
}

#[tokio::test]
async fn a_resumed_history_reaches_the_model_and_session_start_says_resume() {
    let f = fixture(vec![FakeTurn::text("still 42")]).await;
    let (starts, start_matcher) = recorder(json!({}));
    let session = f
        .session()
        .history(vec![
            hookbox_llm::Message::User {
                text: "remember 42".into(),
            },
            hookbox_llm::Message::Assistant {
                text: "noted".into(),
                tool_calls: Vec::new(),
                thinking: Vec::new(),
            },
        ])
        .hook(HookEvent::SessionStart, start_matcher)
        .build()
        .expect("session");
    run(&session, "what was it?").await;
    assert_eq!(seen(&starts)[0]["source"], "resume");
    let sent = f.request_text(0);
    for earlier in ["remember 42", "noted", "what was it?"] {
        assert!(sent.contains(earlier), "{earlier} missing from {sent}");
    }
}

/// An MCP server answering every call with its tool name and arguments.
struct EchoServer;

impl hookbox_agent::session::McpServer for EchoServer {
    fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
    ) -> futures_util::future::BoxFuture<
        'static,
        Result<hookbox_agent::session::McpToolResult, String>,
    > {
        let text = format!("{tool} got {arguments}");
        Box::pin(async move {
            Ok(hookbox_agent::session::McpToolResult {
                content: vec![json!({"type": "text", "text": text})],
                is_error: false,
            })
        })
    }
}

#[tokio::test]
async fn mcp_tools_reach_sub_agents_that_name_their_server() {
    let f = fixture(vec![
        FakeTurn::tool_call(
            "",
            "task1",
            "Task",
            json!({"description": "look", "prompt": "read the note", "subagent_type": "reader"}),
        ),
        FakeTurn::tool_call("", "m1", "mcp__notes__read", json!({"id": 7})),
        FakeTurn::text("the note says hi"),
        FakeTurn::text("done"),
    ])
    .await;
    let read = hookbox_agent::session::McpTool {
        name: "read".into(),
        description: "Reads a note".into(),
        input_schema: json!({"type": "object", "properties": {"id": {"type": "integer"}}}),
        read_only: true,
    };
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::AcceptEdits)
            .allowed_tools(["Task"])
            .mcp_server("notes", vec![read], Arc::new(EchoServer))
            .failed_mcp_server("gone", "it did not answer")
            .agent(
                "reader",
                SubagentDefinition {
                    description: "Reads notes".into(),
                    prompt: "You read notes.".into(),
                    tools: Some(vec!["mcp__notes".into()]),
                    model: None,
                },
            ),
        "what does note 7 say?",
    )
    .await;
    let Some(SessionMessage::Init {
        tools, mcp_servers, ..
    }) = messages.first()
    else {
        panic!("no init first: {messages:?}");
    };
    assert!(tools.contains(&"mcp__notes__read".to_owned()), "{tools:?}");
    assert_eq!(
        mcp_servers,
        &[
            ("notes".to_owned(), "connected".to_owned()),
            ("gone".to_owned(), "failed".to_owned())
        ]
    );
    // The sub-agent gets only its server's tool, which runs unasked in acceptEdits mode (it is
    // read-only).
    let bodies = f.server.bodies();
    let sub_tools: Vec<&str> = bodies[1]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["function"]["name"].as_str())
        .collect();
    assert_eq!(sub_tools, ["mcp__notes__read"]);
    assert!(
        f.request_text(2).contains(r#"read got {\"id\":7}"#),
        "{}",
        f.request_text(2)
    );
}

/// An input rewritten at the permission stage (a `PermissionRequest` hook's `updatedInput`,
/// or `can_use_tool`'s) runs only once the `PreToolUse` gates have seen it: a gate that denies
/// what it was rewritten to denies the call, and one that lets it through sees it.
#[tokio::test]
async fn a_rewrite_at_the_permission_stage_is_gated_by_pre_tool_use_again() {
    let gate = || {
        let seen: Seen = Arc::default();
        let log = Arc::clone(&seen);
        let matcher =
            HookMatcher::new(Some("Bash")).hook(move |input: Value, _id: Option<String>| {
                let command = input["tool_input"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                log.lock().expect("log").push(input);
                async move {
                    Ok::<_, CallbackError>(if command.contains("pwned") {
                        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                        "permissionDecision": "deny", "permissionDecisionReason": "no pwned"}})
                    } else {
                        json!({})
                    })
                }
            });
        (seen, matcher)
    };
    for rewrite in ["echo pwned > out.txt", "echo fine > out.txt"] {
        let f = fixture(vec![
            bash("t1", "echo safe > out.txt"),
            FakeTurn::text("done"),
        ])
        .await;
        let (pre, gate) = gate();
        let (_, request) = recorder(
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow", "updatedInput": {"command": rewrite}}}}),
        );
        let messages = run_once(
            f.session()
                .hook(HookEvent::PreToolUse, gate)
                .hook(HookEvent::PermissionRequest, request),
            "write",
        )
        .await;
        let commands: Vec<Value> = seen(&pre)
            .iter()
            .map(|input| input["tool_input"]["command"].clone())
            .collect();
        assert_eq!(
            commands,
            [json!("echo safe > out.txt"), json!(rewrite)],
            "{rewrite}"
        );
        let written = std::fs::read_to_string(f.dir.path().join("out.txt")).ok();
        if rewrite.contains("pwned") {
            assert_eq!(tool_results(&messages), [("no pwned".to_owned(), true)]);
            assert_eq!(written, None, "the rewritten command ran");
        } else {
            assert_eq!(written.as_deref().map(str::trim), Some("fine"));
        }
    }
}
