use std::sync::Arc;

use hookbox_hooks::{Decision, Dispatcher, Failure, HandlerResult, HookSet, Runners};
use serde_json::{Value, json};

use super::support::{command, dispatcher, pre, pre_rule};

/// Runs one command handler as a `pre_tool_execution` gate and returns the outcome.
async fn gate(script: &str, timeout: u64) -> hookbox_hooks::HookOutcome {
    let hooks = dispatcher(
        &[pre_rule(
            "code_execution",
            json!([command(script, timeout)]),
        )],
        None,
    );
    pre(
        &hooks,
        "code_execution",
        json!({"code": "rm -rf /", "language": "bash"}),
    )
    .await
}

/// Asserts the gate allowed, as a fail-open, for `cause`.
fn assert_fail_open(outcome: &hookbox_hooks::HookOutcome, cause: &Failure) {
    assert_eq!(outcome.decision, Decision::Allow, "{outcome:#?}");
    assert!(!outcome.explicit);
    assert_eq!(outcome.trace.len(), 1);
    assert_eq!(outcome.trace[0].result, HandlerResult::NoDecision);
    assert_eq!(outcome.trace[0].failure.as_ref(), Some(cause));
    assert!(!outcome.trace[0].failed_closed);
}

const DENY: &str = r#"echo '{"decision":"deny","reason":"no"}'"#;

#[tokio::test]
async fn non_zero_exit_allows_even_with_a_deny_printed() {
    let outcome = gate(&format!("{DENY}; echo oops >&2; exit 1"), 5).await;
    assert_fail_open(
        &outcome,
        &Failure::NonZeroExit {
            code: 1,
            stderr: "oops".into(),
        },
    );
}

#[tokio::test]
async fn exit_two_is_not_special_in_the_sandbox_dialect() {
    let outcome = gate(&format!("{DENY}; exit 2"), 5).await;
    assert_fail_open(
        &outcome,
        &Failure::NonZeroExit {
            code: 2,
            stderr: String::new(),
        },
    );
}

#[tokio::test]
async fn plain_text_allows() {
    let outcome = gate("echo deny", 5).await;
    assert_fail_open(
        &outcome,
        &Failure::NotJson {
            excerpt: "deny".into(),
        },
    );
}

#[tokio::test]
async fn unknown_json_allows() {
    let outcome = gate(r#"echo '{"verdict":"deny"}'"#, 5).await;
    assert_fail_open(&outcome, &Failure::UnrecognizedDecision { found: None });
    assert_eq!(outcome.trace[0].ignored_fields, vec!["verdict".to_owned()]);
}

/// `{}` is the usual "nothing to add" answer (the gated bench's trivial hook prints it): no
/// decision, allowed, and not a failure to warn about on every call; its run stays traced.
#[tokio::test]
async fn an_empty_object_decides_nothing_and_is_no_failure() {
    let outcome = gate("cat > /dev/null; echo '{}'", 5).await;
    assert_eq!(outcome.decision, Decision::Allow, "{outcome:#?}");
    assert!(!outcome.explicit);
    assert_eq!(outcome.trace.len(), 1);
    assert_eq!(outcome.trace[0].result, HandlerResult::NoDecision);
    assert_eq!(outcome.trace[0].failure, None);
    assert_eq!(outcome.trace[0].exit_code, Some(0));
}

#[tokio::test]
async fn uppercase_deny_allows() {
    let outcome = gate(r#"echo '{"decision":"DENY","reason":"no"}'"#, 5).await;
    assert_fail_open(
        &outcome,
        &Failure::UnrecognizedDecision {
            found: Some(json!("DENY")),
        },
    );
}

#[tokio::test]
async fn deny_with_padding_is_not_exact() {
    let outcome = gate(r#"echo '{"decision":" deny"}'"#, 5).await;
    assert_fail_open(
        &outcome,
        &Failure::UnrecognizedDecision {
            found: Some(json!(" deny")),
        },
    );
}

#[tokio::test]
async fn log_line_before_the_json_allows() {
    let outcome = gate(&format!("echo checking...; {DENY}"), 5).await;
    let Some(Failure::NotJson { excerpt }) = &outcome.trace[0].failure else {
        panic!("expected NotJson, got {:?}", outcome.trace[0].failure);
    };
    assert!(excerpt.starts_with("checking..."), "{excerpt}");
    assert_eq!(outcome.decision, Decision::Allow);
}

#[tokio::test]
async fn two_json_objects_allow() {
    let outcome = gate(&format!("{DENY}; {DENY}"), 5).await;
    assert!(matches!(
        outcome.trace[0].failure,
        Some(Failure::NotJson { .. })
    ));
    assert_eq!(outcome.decision, Decision::Allow);
}

#[tokio::test]
async fn json_array_allows() {
    let outcome = gate(r#"echo '[{"decision":"deny"}]'"#, 5).await;
    assert_fail_open(&outcome, &Failure::NotAnObject);
}

#[tokio::test]
async fn empty_output_allows() {
    let outcome = gate("true", 5).await;
    assert_fail_open(&outcome, &Failure::EmptyOutput);
}

#[tokio::test]
async fn timeout_allows() {
    let outcome = gate(&format!("sleep 30; {DENY}"), 1).await;
    assert_fail_open(&outcome, &Failure::Timeout { after_ms: 1000 });
}

/// A gate that ends by a signal before it answered fails open (a crash, in the seeds' words).
#[tokio::test]
async fn killed_by_a_signal_before_answering_allows() {
    let outcome = gate(r#"printf '{"decision":"deny"'; kill -9 $$"#, 5).await;
    assert_fail_open(&outcome, &Failure::Signaled { signal: 9 });
}

/// The failure a gate's ending is traced as, from its timeout in seconds.
type EndingFailure = fn(u64) -> Failure;

/// How a gate's process can end after it printed its answer without choosing an exit status:
/// its timeout, or a signal. A new way to end is one line.
const ENDINGS: [(&str, EndingFailure); 5] = [
    ("sleep 30", |timeout| Failure::Timeout {
        after_ms: timeout * 1000,
    }),
    ("kill -9 $$", |_| Failure::Signaled { signal: 9 }),
    ("kill -TERM $$", |_| Failure::Signaled { signal: 15 }),
    // A child killed by a signal, as the shell running the hook reports it.
    ("sh -c 'kill -9 $$' 2>/dev/null", |_| Failure::NonZeroExit {
        code: 137,
        stderr: String::new(),
    }),
    ("sh -c 'kill -SEGV $$' 2>/dev/null", |_| {
        Failure::NonZeroExit {
            code: 139,
            stderr: String::new(),
        }
    }),
];

/// A complete deny is a deny however the gate's process ends afterwards; what it printed but
/// did not complete, or any answer but a deny, stays the failure it was (a fail-open here).
#[tokio::test]
async fn a_completed_deny_survives_every_ending() {
    let denies: [(&str, &str); 3] = [
        (DENY, "no"),
        (
            r#"python3 -c 'import json; print(json.dumps({"decision": "deny", "reason": "stop"}), flush=True)'"#,
            "stop",
        ),
        (
            r#"python3 -c 'import json; print(json.dumps({"decision": "deny", "reason": b"bad \xff byte".decode("utf-8", "surrogateescape")}), flush=True)'"#,
            "bad \u{fffd} byte",
        ),
    ];
    let not_denies = [
        r#"printf '{"decision":"deny"'"#,
        r#"echo '{"decision":"allow"}'"#,
        "echo '{}'",
        r#"echo '{"decision":"DENY"}'"#,
    ];
    for (ending, failure) in ENDINGS {
        for (answer, reason) in denies {
            let outcome = gate(&format!("{answer}; {ending}"), 1).await;
            assert_eq!(
                outcome.decision,
                Decision::Deny,
                "{answer}; {ending}: {outcome:#?}"
            );
            assert_eq!(
                outcome.reason.as_deref(),
                Some(reason),
                "{answer}; {ending}"
            );
            assert_eq!(
                outcome.trace[0].failure,
                Some(failure(1)),
                "{answer}; {ending}"
            );
            assert!(!outcome.trace[0].failed_closed, "{answer}; {ending}");
        }
        for answer in not_denies {
            let outcome = gate(&format!("{answer}; {ending}"), 1).await;
            assert_fail_open(&outcome, &failure(1));
        }
    }
}

/// The same in the SDK dialect: a completed `permissionDecision: deny` (or `decision: block`)
/// before a timeout blocks.
#[tokio::test]
async fn a_completed_sdk_deny_survives_its_timeout() {
    for answer in [
        r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}"#,
        r#"{"decision":"block","reason":"no"}"#,
    ] {
        let config = json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": format!("echo '{answer}'; sleep 30"), "timeout": 1}
        ]}]}});
        let outcome = dispatcher(&[config], None)
            .dispatch(&super::support::bash_call())
            .await;
        assert_eq!(outcome.decision, Decision::Deny, "{answer}: {outcome:#?}");
        assert_eq!(outcome.reason.as_deref(), Some("no"));
        assert_eq!(
            outcome.trace[0].failure,
            Some(Failure::Timeout { after_ms: 1000 })
        );
    }
}

/// A deny whose reason holds bytes Python could not decode (escaped as lone surrogates) is a
/// deny, in both dialects.
#[tokio::test]
async fn a_deny_with_lone_surrogates_in_its_reason_denies() {
    let outcome = gate(
        r#"printf '%s\n' '{"decision":"deny","reason":"caf\udce9 \ud800"}'"#,
        5,
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny, "{outcome:#?}");
    assert_eq!(outcome.reason.as_deref(), Some("caf\u{fffd} \u{fffd}"));
    let config = json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command":
        r#"printf '%s\n' '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"\udcff"}}'"#}]}]}});
    let outcome = dispatcher(&[config], None)
        .dispatch(&super::support::bash_call())
        .await;
    assert_eq!(outcome.decision, Decision::Deny, "{outcome:#?}");
}

#[tokio::test]
async fn truncated_output_denies() {
    // 2 MiB of spaces then a deny: valid JSON after the cap, but the reply was cut, and a cut
    // answer is never an allow (issue 10; this used to fail open).
    let outcome = gate(
        &format!("head -c 2097152 /dev/zero | tr '\\0' ' '; {DENY}"),
        10,
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny, "{outcome:#?}");
    assert_eq!(outcome.trace[0].failure, Some(Failure::OutputTruncated));
    assert!(outcome.trace[0].failed_closed);
}

#[tokio::test]
async fn missing_program_is_exit_127_and_allows() {
    let outcome = gate("/nonexistent/gate.py", 5).await;
    let Some(Failure::NonZeroExit { code: 127, stderr }) = &outcome.trace[0].failure else {
        panic!("expected exit 127, got {:?}", outcome.trace[0].failure);
    };
    assert!(stderr.contains("not found"), "{stderr}");
    assert_eq!(outcome.decision, Decision::Allow);
}

#[tokio::test]
async fn spawn_failure_allows() {
    // A working directory that does not exist makes the spawn itself fail.
    let mut builder = HookSet::builder();
    builder
        .load_str(
            "c.json",
            &pre_rule("code_execution", json!([command(DENY, 5)])).to_string(),
            None,
        )
        .expect("loads");
    let runners = Runners::host(Some("/nonexistent/dir".into())).expect("runners");
    let hooks = Dispatcher::new(Arc::new(builder.build()), runners);
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    let Some(Failure::SpawnFailed { message }) = &outcome.trace[0].failure else {
        panic!("expected SpawnFailed, got {:?}", outcome.trace[0].failure);
    };
    assert!(message.contains("/bin/sh"), "{message}");
    assert_eq!(outcome.decision, Decision::Allow);
}

#[tokio::test]
async fn on_error_deny_fails_closed_for_each_failure() {
    for script in [
        "exit 1",
        "echo deny",
        "true",
        "sleep 30",
        r#"echo '{"decision":"DENY"}'"#,
    ] {
        let handler =
            json!({"type": "command", "command": script, "timeout": 1, "on_error": "deny"});
        let hooks = dispatcher(&[pre_rule("code_execution", json!([handler]))], None);
        let outcome = pre(&hooks, "code_execution", json!({})).await;
        assert_eq!(outcome.decision, Decision::Deny, "{script}: {outcome:#?}");
        assert!(outcome.trace[0].failed_closed, "{script}");
        assert!(outcome.trace[0].failure.is_some(), "{script}");
        let reason = outcome.reason.unwrap_or_default();
        assert!(reason.contains("fail closed"), "{script}: {reason}");
    }
}

#[tokio::test]
async fn on_error_deny_still_allows_an_explicit_allow() {
    let handler =
        json!({"type": "command", "command": r#"echo '{"decision":"allow"}'"#, "on_error": "deny"});
    let hooks = dispatcher(&[pre_rule("code_execution", json!([handler]))], None);
    let outcome = pre(&hooks, "code_execution", json!({})).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(outcome.explicit);
}

#[tokio::test]
async fn first_deny_skips_the_rest_of_the_chain() {
    let marker = tempfile::tempdir().expect("tempdir");
    let touched = marker.path().join("ran");
    let config = json!({
        "first": {"pre_tool_execution": [{"matcher": ".*", "hooks": [
            command("echo '{}'", 5),
            command(DENY, 5),
            command(&format!("touch {}", touched.display()), 5),
        ]}]},
        "second": {"pre_tool_execution": [{"hooks": [command(&format!("touch {}", touched.display()), 5)]}]}
    });
    let hooks = dispatcher(&[config], None);
    let outcome = pre(&hooks, "write_file", json!({"path": "x"})).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.reason.as_deref(), Some("no"));
    let results: Vec<_> = outcome.trace.iter().map(|entry| entry.result).collect();
    assert_eq!(
        results,
        vec![
            HandlerResult::NoDecision,
            HandlerResult::Decided(Decision::Deny),
            HandlerResult::Skipped,
            HandlerResult::Skipped
        ]
    );
    assert!(!touched.exists(), "a handler after the deny ran");
}

#[tokio::test]
async fn post_hooks_all_run_and_cannot_deny() {
    let marker = tempfile::tempdir().expect("tempdir");
    let log = marker.path().join("log");
    let append = |tag: &str| {
        command(
            &format!(
                "cat >> {}; echo >> {}; echo {tag}",
                log.display(),
                log.display()
            ),
            5,
        )
    };
    let config = json!({"audit": {"post_tool_execution": [
        {"matcher": "write_file", "hooks": [append("one"), command(DENY, 5), command("exit 3", 5)]},
        {"matcher": ".*_file", "hooks": [append("two")]}
    ]}});
    let hooks = dispatcher(&[config], None);
    let input = hookbox_hooks::EventInput::post_tool_execution(
        "write_file",
        json!({"path": "/workspace/a"}),
        "env_test",
        None,
        None,
        Some("disk full"),
    );
    let outcome = hooks.dispatch(&input).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(outcome.trace.len(), 4);
    assert!(
        outcome
            .trace
            .iter()
            .all(|entry| entry.result == HandlerResult::NoDecision)
    );
    assert_eq!(
        outcome.trace[2].failure,
        Some(Failure::NonZeroExit {
            code: 3,
            stderr: String::new()
        })
    );
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    assert_eq!(lines.len(), 2);
    for line in lines {
        assert_eq!(line["error"], "disk full");
        assert_eq!(line["hook_event_name"], "post_tool_execution");
        assert_eq!(line["tool_call"]["name"], "write_file");
    }
}

/// `{"command": "ls", "x": [[…]]}` with `x` nested `depth` arrays deep.
fn nested_input(depth: usize) -> Value {
    let text = format!(
        r#"{{"command": "ls", "x": {}{}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    serde_json::from_str(&text).expect("readable input")
}

/// A gate that echoes the tool input it is sent, deeply nested or not, is never defeated by
/// its depth: its answer is read and applied, or the call is denied. Every depth the event
/// can carry (the model's tool input is read within 128 levels), through a real Python gate.
#[tokio::test]
async fn an_echo_of_a_deeply_nested_input_is_applied_or_denies() {
    let echo = r#"python3 -c 'import json, sys; e = json.load(sys.stdin); print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": e["tool_input"]}}))'"#;
    let config =
        json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": echo}]}]}});
    let hooks = dispatcher(&[config], None);
    for depth in [1, 100, 123, 124, 125, 126] {
        let input = nested_input(depth);
        let tool = hookbox_hooks::ToolUse {
            tool_name: "Bash",
            tool_input: &input,
            tool_use_id: "toolu_1",
        };
        let event = hookbox_hooks::EventInput::sdk(
            &hookbox_hooks::SessionContext::default(),
            hookbox_hooks::SdkEvent::PreToolUse { agent: None, tool },
        );
        let outcome = hooks.dispatch(&event).await;
        let applied =
            outcome.decision == Decision::Allow && outcome.updated_input.as_ref() == Some(&input);
        assert!(
            applied || outcome.decision == Decision::Deny,
            "depth {depth}: {outcome:#?}"
        );
        if !applied {
            assert_eq!(
                outcome.trace[0].failure,
                Some(Failure::TooDeep),
                "depth {depth}"
            );
        }
    }
}

/// A sandbox-dialect answer nested too deep to read denies, as a cut one does.
#[tokio::test]
async fn an_answer_nested_too_deep_to_read_denies() {
    for depth in [127, 128, 129, 10_000] {
        let answer = format!(
            r#"{{"decision": "allow", "x": {}{}}}"#,
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let outcome = gate(&format!("printf '%s' '{answer}'"), 10).await;
        let read = serde_json::from_str::<Value>(&answer).is_ok();
        let expected = if read {
            Decision::Allow
        } else {
            Decision::Deny
        };
        assert_eq!(outcome.decision, expected, "depth {depth}: {outcome:#?}");
    }
}
