use std::sync::Arc;
use std::time::Duration;

use hookbox_hooks::{
    CallbackError, CallbackHandler, Decision, Dispatcher, EventInput, Failure, HookOutcome,
    HookSet, Runners, SdkEvent, SessionContext,
};
use serde_json::{Value, json};

use super::support::bash_call;

/// A callback that waits `delay` then returns `reply`.
fn reply_after(delay_ms: u64, reply: Value) -> CallbackHandler {
    CallbackHandler {
        name: format!("cb({reply})"),
        timeout: Duration::from_secs(5),
        callback: Arc::new(move |_input: Value, _tool_use_id: Option<String>| {
            let reply = reply.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
                Ok(reply)
            }
        }),
    }
}

fn reply(value: Value) -> CallbackHandler {
    reply_after(0, value)
}

fn pre_tool_use(decision: &str, reason: &str) -> CallbackHandler {
    reply(json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason
    }}))
}

/// A `UserPromptSubmit` of `hi` in a default session.
fn prompt_hi() -> EventInput {
    EventInput::sdk(
        &SessionContext::default(),
        SdkEvent::UserPromptSubmit { prompt: "hi" },
    )
}

/// Dispatches `input` through callbacks registered on its event in the given order.
async fn run(input: &EventInput, callbacks: Vec<CallbackHandler>) -> HookOutcome {
    let mut builder = HookSet::builder();
    for callback in callbacks {
        builder
            .add_callback(input.event(), None, callback)
            .expect("registers");
    }
    Dispatcher::new(
        Arc::new(builder.build()),
        Runners::host(None).expect("runners"),
    )
    .dispatch(input)
    .await
}

#[tokio::test]
async fn permission_decisions_merge_deny_over_ask_over_allow() {
    let cases: &[(&[&str], Decision, &str)] = &[
        (&["allow"], Decision::Allow, "r0"),
        (&["allow", "ask"], Decision::Ask, "r1"),
        (&["ask", "allow"], Decision::Ask, "r0"),
        (&["allow", "deny", "ask"], Decision::Deny, "r1"),
        (&["deny", "deny"], Decision::Deny, "r0"),
        (&["ask", "ask", "deny", "allow"], Decision::Deny, "r2"),
    ];
    for (decisions, expected, reason) in cases {
        let callbacks = decisions
            .iter()
            .enumerate()
            .map(|(index, decision)| pre_tool_use(decision, &format!("r{index}")))
            .collect();
        let outcome = run(&bash_call(), callbacks).await;
        assert_eq!(outcome.decision, *expected, "{decisions:?}");
        assert_eq!(outcome.reason.as_deref(), Some(*reason), "{decisions:?}");
        assert!(outcome.explicit);
    }
}

#[tokio::test]
async fn no_callbacks_or_empty_replies_allow_implicitly() {
    let outcome = run(&bash_call(), vec![reply(json!({})), reply(Value::Null)]).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(!outcome.explicit);
    assert!(outcome.continue_);
    assert_eq!(outcome.trace.len(), 2);
}

#[tokio::test]
async fn continue_false_wins_over_everything() {
    let outcome = run(
        &bash_call(),
        vec![
            pre_tool_use("allow", "fine"),
            reply(json!({"continue": false, "stopReason": "budget exhausted"})),
            reply(json!({"continue": false, "stopReason": "second"})),
        ],
    )
    .await;
    assert!(!outcome.continue_);
    assert_eq!(outcome.stop_reason.as_deref(), Some("budget exhausted"));
    assert!(outcome.is_blocked());
}

#[tokio::test]
async fn updated_input_last_in_registration_order_wins_whatever_finishes_first() {
    let outcome = run(
        &bash_call(),
        vec![
            reply_after(0, json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "first"}}})),
            reply_after(150, json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "second"}}})),
            reply_after(0, json!({})),
            reply_after(0, json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "third", "timeout": 30}}})),
            reply_after(100, json!({})),
        ],
    )
    .await;
    assert_eq!(
        outcome.updated_input,
        Some(json!({"command": "third", "timeout": 30}))
    );
}

#[tokio::test]
async fn context_and_messages_concatenate_in_registration_order() {
    let outcome = run(
        &prompt_hi(),
        vec![
            reply_after(120, json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "one"}, "systemMessage": "m1"})),
            reply_after(0, json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "two"}})),
            reply_after(60, json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "three"}, "systemMessage": "m3"})),
        ],
    )
    .await;
    assert_eq!(
        outcome.additional_context.as_deref(),
        Some("one\ntwo\nthree")
    );
    assert_eq!(outcome.system_message.as_deref(), Some("m1\nm3"));
    assert_eq!(outcome.decision, Decision::Allow);
}

#[tokio::test]
async fn callbacks_run_concurrently() {
    let callbacks = (0..5).map(|_| reply_after(300, json!({}))).collect();
    let started = std::time::Instant::now();
    run(&bash_call(), callbacks).await;
    // Five 300 ms callbacks in series would take 1.5 s.
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_callback_timeout_blocks() {
    let mut slow = reply_after(5_000, json!({}));
    slow.timeout = Duration::from_millis(100);
    let outcome = run(&bash_call(), vec![pre_tool_use("allow", "ok"), slow]).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(
        outcome.trace[1].failure,
        Some(Failure::Timeout { after_ms: 100 })
    );
    assert!(outcome.trace[1].failed_closed);

    let mut slow = reply_after(5_000, json!({}));
    slow.timeout = Duration::from_millis(100);
    assert_eq!(
        run(&prompt_hi(), vec![slow]).await.decision,
        Decision::Block
    );
}

#[tokio::test]
async fn a_callback_error_or_panic_blocks() {
    let failing = CallbackHandler {
        name: "failing".into(),
        timeout: Duration::from_secs(1),
        callback: Arc::new(|_: Value, _: Option<String>| async {
            Err(CallbackError("boom".into()))
        }),
    };
    let outcome = run(&bash_call(), vec![failing]).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(
        outcome.trace[0].failure,
        Some(Failure::CallbackError {
            message: "boom".into()
        })
    );

    let panicking = CallbackHandler {
        name: "panicking".into(),
        timeout: Duration::from_secs(1),
        callback: Arc::new(|_: Value, _: Option<String>| async { panic!("callback bug") }),
    };
    let outcome = run(&bash_call(), vec![panicking]).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.trace[0].failure, Some(Failure::CallbackPanicked));
}

#[tokio::test]
async fn callbacks_receive_the_input_and_tool_use_id() {
    let seen = Arc::new(std::sync::Mutex::new(None));
    let recorder = {
        let seen = Arc::clone(&seen);
        CallbackHandler {
            name: "recorder".into(),
            timeout: Duration::from_secs(1),
            callback: Arc::new(move |input: Value, tool_use_id: Option<String>| {
                *seen.lock().expect("lock") = Some((input, tool_use_id));
                async { Ok(json!({})) }
            }),
        }
    };
    run(&bash_call(), vec![recorder]).await;
    let (input, tool_use_id) = seen.lock().expect("lock").clone().expect("called");
    assert_eq!(tool_use_id.as_deref(), Some("toolu_1"));
    assert_eq!(input["hook_event_name"], "PreToolUse");
    assert_eq!(input["tool_input"], json!({"command": "ls"}));
    for field in ["session_id", "transcript_path", "cwd", "permission_mode"] {
        assert!(input.get(field).is_some(), "missing {field}");
    }
}

#[tokio::test]
async fn seed_block_dangerous_reply_denies_pre_tool_use() {
    let outcome = run(
        &bash_call(),
        vec![reply(
            json!({"decision": "block", "reason": "Destructive commands are not allowed"}),
        )],
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(
        outcome.reason.as_deref(),
        Some("Destructive commands are not allowed")
    );
}

#[tokio::test]
async fn permission_request_behavior_decides() {
    let read = json!({"file_path": "a"});
    let input = EventInput::sdk(
        &SessionContext::default(),
        SdkEvent::PermissionRequest {
            agent: None,
            tool_name: "Read",
            tool_input: &read,
        },
    );
    let allow = reply(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}),
    );
    let outcome = run(&input, vec![allow]).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(outcome.explicit);
    let deny = reply(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "no reads"}}}),
    );
    let outcome = run(&input, vec![deny]).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.reason.as_deref(), Some("no reads"));
}

#[tokio::test]
async fn unknown_reply_fields_are_ignored_but_traced() {
    let outcome = run(
        &bash_call(),
        vec![reply(json!({"decison": "block", "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "x", "updatedToolOutput": 1}}))],
    )
    .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(
        outcome.trace[0].ignored_fields,
        vec![
            "decison".to_owned(),
            "hookSpecificOutput.updatedToolOutput".to_owned()
        ]
    );
    assert_eq!(outcome.additional_context.as_deref(), Some("x"));
}

/// SDK-dialect command hooks follow Claude Code's exit-code rules.
mod command_hooks {
    use super::*;

    async fn run_commands(input: &EventInput, commands: &[&str]) -> HookOutcome {
        let handlers: Vec<Value> = commands
            .iter()
            .map(|command| json!({"type": "command", "command": command}))
            .collect();
        let config = json!({"hooks": {input.event().name(): [{"hooks": handlers}]}});
        super::super::support::dispatcher(&[config], None)
            .dispatch(input)
            .await
    }

    #[tokio::test]
    async fn exit_two_blocks_with_stderr_as_reason() {
        let outcome = run_commands(&bash_call(), &["echo 'rm is not allowed' >&2; exit 2"]).await;
        assert_eq!(outcome.decision, Decision::Deny);
        assert_eq!(outcome.reason.as_deref(), Some("rm is not allowed"));
    }

    #[tokio::test]
    async fn exit_two_overrides_a_printed_allow() {
        let outcome = run_commands(
            &bash_call(),
            &[r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}'; echo no >&2; exit 2"#],
        )
        .await;
        assert_eq!(outcome.decision, Decision::Deny);
    }

    #[tokio::test]
    async fn exit_one_does_not_block() {
        let outcome = run_commands(&bash_call(), &["echo broken >&2; exit 1"]).await;
        assert_eq!(outcome.decision, Decision::Allow);
        assert_eq!(
            outcome.trace[0].failure,
            Some(Failure::NonZeroExit {
                code: 1,
                stderr: "broken".into()
            })
        );
    }

    #[tokio::test]
    async fn json_stdout_is_parsed() {
        let outcome = run_commands(
            &bash_call(),
            &[r#"echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"check"}}'"#],
        )
        .await;
        assert_eq!(outcome.decision, Decision::Ask);
        assert_eq!(outcome.reason.as_deref(), Some("check"));
    }

    #[tokio::test]
    async fn plain_stdout_is_context_for_user_prompt_submit_only() {
        let outcome = run_commands(&prompt_hi(), &["echo 'today is Monday'"]).await;
        assert_eq!(
            outcome.additional_context.as_deref(),
            Some("today is Monday")
        );
        let outcome = run_commands(&bash_call(), &["echo 'today is Monday'"]).await;
        assert_eq!(outcome.additional_context, None);
    }

    #[tokio::test]
    async fn stop_block_gives_the_reason_to_continue_with() {
        let stop = EventInput::sdk(
            &SessionContext::default(),
            SdkEvent::Stop {
                stop_hook_active: false,
                last_assistant_message: "done",
            },
        );
        let outcome = run_commands(
            &stop,
            &[r#"echo '{"decision":"block","reason":"run the tests first"}'"#],
        )
        .await;
        assert_eq!(outcome.decision, Decision::Block);
        assert_eq!(outcome.reason.as_deref(), Some("run the tests first"));
    }

    #[tokio::test]
    async fn notification_cannot_be_blocked() {
        let notification = EventInput::sdk(
            &SessionContext::default(),
            SdkEvent::Notification {
                message: "waiting",
                notification_type: "idle_prompt",
                title: None,
            },
        );
        let outcome = run_commands(&notification, &["exit 2"]).await;
        assert_eq!(outcome.decision, Decision::Allow);
        assert!(!outcome.trace[0].ignored_fields.is_empty());
    }

    #[tokio::test]
    async fn command_timeout_does_not_block_unless_on_error_deny() {
        let config = json!({"hooks": {"PreToolUse": [{"timeout": 0.2, "hooks": [
            {"type": "command", "command": "sleep 5"},
            {"type": "command", "command": "sleep 5", "timeout": 0.3, "on_error": "deny"}
        ]}]}});
        let outcome = super::super::support::dispatcher(&[config], None)
            .dispatch(&bash_call())
            .await;
        assert_eq!(
            outcome.trace[0].failure,
            Some(Failure::Timeout { after_ms: 200 })
        );
        assert!(!outcome.trace[0].failed_closed);
        assert_eq!(
            outcome.trace[1].failure,
            Some(Failure::Timeout { after_ms: 300 })
        );
        assert!(outcome.trace[1].failed_closed);
        assert_eq!(outcome.decision, Decision::Deny);
    }
}

#[tokio::test]
async fn updated_tool_output_last_wins_and_only_on_post_tool_use() {
    let input = json!({"command": "ls"});
    let response = json!({"stdout": "a\n"});
    let tool = hookbox_hooks::ToolUse {
        tool_name: "Bash",
        tool_input: &input,
        tool_use_id: "toolu_1",
    };
    let post = EventInput::sdk(
        &SessionContext::default(),
        SdkEvent::PostToolUse {
            agent: None,
            tool,
            tool_response: &response,
        },
    );
    let replace = |stdout: &str| {
        reply(
            json!({"hookSpecificOutput": {"hookEventName": "PostToolUse", "updatedToolOutput": {"stdout": stdout}}}),
        )
    };
    let outcome = run(
        &post,
        vec![replace("one"), reply(json!({})), replace("two")],
    )
    .await;
    assert_eq!(outcome.updated_tool_output, Some(json!({"stdout": "two"})));
    // On PreToolUse the field means nothing.
    let outcome = run(
        &bash_call(),
        vec![reply(
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedToolOutput": "x"}}),
        )],
    )
    .await;
    assert_eq!(outcome.updated_tool_output, None);
    assert_eq!(
        outcome.trace[0].ignored_fields,
        ["hookSpecificOutput.updatedToolOutput"]
    );
}

#[tokio::test]
async fn an_async_reply_decides_nothing_and_does_not_block() {
    let outcome = run(
        &bash_call(),
        vec![reply(json!({
            "async": true,
            "asyncTimeout": 30000,
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"},
        }))],
    )
    .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(!outcome.explicit);
    assert!(!outcome.is_blocked());
    assert_eq!(
        outcome.trace[0].ignored_fields,
        ["hookSpecificOutput (in an async reply)"]
    );
    // `async: false` is an ordinary reply.
    let outcome = run(
        &bash_call(),
        vec![reply(json!({
            "async": false,
            "hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"},
        }))],
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny);
}
