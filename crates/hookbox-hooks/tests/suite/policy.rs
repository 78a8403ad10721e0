//! The policy the model cannot change: group precedence, cut answers, bounded model-writable
//! files, shadow mode and Claude's `onFailure`.

use std::sync::Arc;

use hookbox_hooks::{
    Decision, Dispatcher, HandlerResult, HookSet, MODEL_FILE_MAX_BYTES, Runners, Severity, Trust,
};
use serde_json::{Value, json};

use super::support::{bash_call, command, dispatcher, pre, pre_rule};

const DENY_RM: &str =
    r#"grep -q 'rm -rf' && echo '{"decision":"deny","reason":"owner says no"}' || echo '{}'"#;

/// The owner's gate, as `/.agents/hooks.json`, failing closed.
fn owner_gate() -> Value {
    json!({"security-gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": DENY_RM, "timeout": 10, "on_error": "deny"}]}]}})
}

fn rm_rf() -> Value {
    json!({"code": "rm -rf /workspace", "language": "bash"})
}

#[tokio::test]
async fn a_later_file_cannot_disable_replace_or_loosen_an_earlier_group() {
    let takeovers = [
        json!({"security-gate": {"enabled": false}}),
        json!({"security-gate": {"pre_tool_execution": [{"matcher": "code_execution",
            "hooks": [command("echo '{\"decision\":\"allow\"}'", 5)]}]}}),
        json!({"security-gate": {"pre_tool_execution": []}}),
        json!({"security-gate": {"mode": "shadow"}}),
    ];
    for takeover in takeovers {
        let hooks = dispatcher(&[owner_gate(), takeover.clone()], None);
        let outcome = pre(&hooks, "code_execution", rm_rf()).await;
        assert_eq!(outcome.decision, Decision::Deny, "{takeover}: {outcome:#?}");
        assert_eq!(outcome.reason.as_deref(), Some("owner says no"));
        let diagnostics = hooks.hooks().diagnostics();
        let ignored = diagnostics
            .iter()
            .find(|d| d.source == "config1.json" && d.message.contains("is ignored"))
            .unwrap_or_else(|| panic!("{takeover}: {diagnostics:#?}"));
        assert_eq!(ignored.severity, Severity::Warning);
        assert_eq!(ignored.json_path, "$[\"security-gate\"]");
        assert!(
            ignored.message.contains("config0.json"),
            "{}",
            ignored.message
        );
    }
}

#[tokio::test]
async fn a_later_file_still_adds_groups_of_its_own() {
    let extra = pre_rule(
        "read_file",
        json!([command(
            "echo '{\"decision\":\"deny\",\"reason\":\"added\"}'",
            5
        )]),
    );
    let hooks = dispatcher(&[owner_gate(), extra], None);
    let outcome = pre(&hooks, "read_file", json!({"path": "x"})).await;
    assert_eq!(outcome.reason.as_deref(), Some("added"));
    assert_eq!(hooks.hooks().sources()[1].groups[0].name, "gate");
}

#[tokio::test]
async fn a_deny_cut_at_the_capture_cap_still_denies() {
    // The gate echoes its input in the reason, like many real gates: a 2 MiB input makes the
    // answer longer than the 1 MiB cap.
    let echoing = r#"jq -c '{decision: "deny", reason: ("refused: " + .tool_call.args.code)}'"#;
    let hooks = dispatcher(
        &[pre_rule("code_execution", json!([command(echoing, 20)]))],
        None,
    );
    let code = format!("rm -rf / #{}", "x".repeat(2 * 1024 * 1024));
    let outcome = pre(
        &hooks,
        "code_execution",
        json!({"code": code, "language": "bash"}),
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny, "{:#?}", outcome.trace);
    let reason = outcome.reason.unwrap_or_default();
    assert!(reason.contains("answer was cut"), "{reason}");
    assert!(outcome.trace[0].failed_closed);
}

#[tokio::test]
async fn an_allow_cut_at_the_capture_cap_denies_too() {
    let hooks = dispatcher(
        &[pre_rule(
            ".*",
            json!([command(
                "head -c 2097152 /dev/zero | tr '\\0' ' '; echo '{\"decision\":\"allow\"}'",
                20
            )]),
        )],
        None,
    );
    let outcome = pre(&hooks, "read_file", json!({"path": "x"})).await;
    assert_eq!(outcome.decision, Decision::Deny);
}

/// A hook set with `text` loaded as a model-writable file after the owner's gate.
fn with_model_file(text: &str) -> HookSet {
    let mut builder = HookSet::builder();
    builder
        .load_str("/.agents/hooks.json", &owner_gate().to_string(), None)
        .expect("owner file");
    builder
        .load_model_writable("/workspace/.agents/hooks.json", text, None)
        .expect("model file");
    builder.build()
}

#[test]
fn a_model_written_file_over_256_kib_is_ignored_and_reported() {
    let padding = " ".repeat(MODEL_FILE_MAX_BYTES);
    let text = format!(
        "{{\"extra\": {{\"pre_tool_execution\": [{{\"hooks\": [{{\"type\": \"command\", \"command\": \"true\"}}]}}]}}}}{padding}"
    );
    let hooks = with_model_file(&text);
    assert_eq!(hooks.bindings().count(), 1);
    let reported = hooks
        .diagnostics()
        .iter()
        .find(|d| d.source == "/workspace/.agents/hooks.json")
        .expect("reported");
    assert_eq!(reported.severity, Severity::Error);
    assert!(
        reported.message.contains("is ignored"),
        "{}",
        reported.message
    );
}

#[tokio::test]
async fn a_catch_all_flood_in_a_model_written_file_runs_nothing() {
    let handlers: Vec<Value> = (0..5000)
        .map(|_| json!({"type": "command", "command": "true"}))
        .collect();
    let text = json!({"flood": {"pre_tool_execution": [{"hooks": handlers}]}}).to_string();
    assert!(text.len() <= MODEL_FILE_MAX_BYTES);
    let hooks = Arc::new(with_model_file(&text));
    assert_eq!(hooks.bindings().count(), 1);
    assert!(
        hooks
            .diagnostics()
            .iter()
            .any(|d| d.message.contains("5000 handlers")),
        "{:#?}",
        hooks.diagnostics()
    );
    let dispatcher = Dispatcher::new(hooks, Runners::host(None).expect("runners"));
    let outcome = pre(&dispatcher, "code_execution", json!({"code": "ls"})).await;
    assert_eq!(outcome.trace.len(), 1);
}

#[test]
fn bindings_carry_who_can_change_their_file() {
    let extra = pre_rule("read_file", json!([command("true", 5)]));
    let hooks = with_model_file(&extra.to_string());
    let trusts: Vec<Trust> = hooks.bindings().map(|b| b.origin.trust).collect();
    assert_eq!(trusts, [Trust::Owner, Trust::ModelWritable]);
    let entry =
        serde_json::to_value(&hooks.bindings().nth(1).expect("binding").origin).expect("json");
    assert_eq!(entry["trust"], "model_writable");
}

#[tokio::test]
async fn a_shadow_group_records_would_deny_and_never_blocks() {
    let config = json!({
        "new-policy": {"mode": "shadow", "pre_tool_execution": [{"matcher": "code_execution",
            "hooks": [command(DENY_RM, 10)]}]},
        "audit": {"pre_tool_execution": [{"hooks": [command("echo '{}'", 5)]}]}
    });
    let hooks = dispatcher(&[config], None);
    assert!(
        hooks.hooks().diagnostics().is_empty(),
        "{:#?}",
        hooks.hooks().diagnostics()
    );
    let outcome = pre(&hooks, "code_execution", rm_rf()).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(outcome.trace.len(), 2, "the chain goes on");
    assert!(outcome.trace[0].would_deny);
    assert_eq!(outcome.trace[0].result, HandlerResult::NoDecision);
    assert_eq!(outcome.trace[0].reason.as_deref(), Some("owner says no"));
    let json = serde_json::to_value(&outcome.trace[0]).expect("json");
    assert_eq!(json["would_deny"], true);
    assert!(!outcome.trace[1].would_deny);
}

#[tokio::test]
async fn a_shadow_settings_matcher_records_would_deny() {
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "mode": "shadow",
        "hooks": [{"type": "command", "command": "echo 'nope' >&2; exit 2"}]}]}});
    let hooks = dispatcher(&[settings], None);
    assert!(
        hooks.hooks().diagnostics().is_empty(),
        "{:#?}",
        hooks.hooks().diagnostics()
    );
    let binding = hooks.hooks().bindings().next().expect("binding");
    assert!(binding.shadow);
}

#[test]
fn unknown_modes_are_reported_and_enforced() {
    for config in [
        json!({"g": {"mode": "audit", "pre_tool_execution": [{"hooks": [command("true", 5)]}]}}),
        json!({"hooks": {"Stop": [{"mode": "Shadow", "hooks": [{"type": "command", "command": "true"}]}]}}),
    ] {
        let mut builder = HookSet::builder();
        builder
            .load_str("x.json", &config.to_string(), None)
            .expect("loads");
        let hooks = builder.build();
        assert!(!hooks.bindings().next().expect("binding").shadow);
        let diagnostic = &hooks.diagnostics()[0];
        assert_eq!(diagnostic.severity, Severity::Error);
        assert!(diagnostic.json_path.ends_with(".mode"), "{diagnostic}");
        assert!(
            diagnostic.message.contains("unknown `mode`"),
            "{diagnostic}"
        );
    }
}

#[tokio::test]
async fn claude_on_failure_block_fails_closed() {
    let settings = json!({"hooks": {"PreToolUse": [{"matcher": "Bash",
        "hooks": [{"type": "command", "command": "exit 1", "onFailure": "block"}]}]}});
    let mut builder = HookSet::builder();
    builder
        .load_str("settings.json", &settings.to_string(), None)
        .expect("loads");
    let hooks = builder.build();
    assert!(hooks.diagnostics().is_empty(), "{:#?}", hooks.diagnostics());
    let dispatcher = Dispatcher::new(Arc::new(hooks), Runners::host(None).expect("runners"));
    let outcome = dispatcher.dispatch(&bash_call()).await;
    assert_eq!(outcome.decision, Decision::Deny, "{outcome:#?}");
    assert!(outcome.trace[0].failed_closed);
}

#[test]
fn http_hook_urls_must_be_https() {
    let config = pre_rule(
        ".*",
        json!([{"type": "http", "url": "http://hooks.example.com/gate"}]),
    );
    let mut builder = HookSet::builder();
    builder
        .load_str("hooks.json", &config.to_string(), None)
        .expect("loads");
    let hooks = builder.build();
    let diagnostic = &hooks.diagnostics()[0];
    assert_eq!(diagnostic.severity, Severity::Error);
    assert_eq!(
        diagnostic.json_path,
        "$.gate.pre_tool_execution[0].hooks[0].url"
    );
    assert!(
        diagnostic
            .hint
            .as_deref()
            .unwrap_or_default()
            .contains("https://hooks.example.com/gate")
    );
}

#[tokio::test]
async fn the_host_runner_never_runs_a_model_written_files_commands() {
    let marker = tempfile::tempdir().expect("dir");
    let planted = marker.path().join("ran-on-the-host");
    let hooks = json!({"planted": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": format!("touch {}; echo '{{}}'", planted.display()),
                   "on_error": "deny"}]}]}});
    let mut builder = HookSet::builder();
    builder
        .load_model_writable("/workspace/.agents/hooks.json", &hooks.to_string(), None)
        .expect("model file");
    let dispatcher = Dispatcher::new(
        Arc::new(builder.build()),
        Runners::host(None).expect("runners"),
    );
    let outcome = pre(&dispatcher, "code_execution", rm_rf()).await;
    assert!(!planted.exists(), "a model-written hook ran on the host");
    assert_eq!(
        outcome.decision,
        Decision::Deny,
        "its on_error: deny applies"
    );
    let entry = outcome
        .trace
        .iter()
        .find(|entry| entry.origin.source == "/workspace/.agents/hooks.json")
        .expect("the model file's handler is traced");
    let failure = entry
        .failure
        .as_ref()
        .unwrap_or_else(|| panic!("it failed: {:#?}", outcome.trace))
        .to_string();
    assert!(
        failure.contains("may not run commands on this host"),
        "{failure}"
    );
}

#[tokio::test]
async fn a_project_policy_runs_in_a_read_only_sandbox_over_the_project() {
    if !hookbox_test_support::require_root(
        "a_project_policy_runs_in_a_read_only_sandbox_over_the_project",
    ) {
        return;
    }
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("verdict.txt"), "deny-me").expect("verdict");
    let host = tempfile::tempdir().expect("host dir");
    let owner_marker = host.path().join("owner-ran");
    let owner = json!({"owner": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command",
                   "command": format!("touch {}; echo '{{\"decision\":\"allow\"}}'", owner_marker.display())}]}]}});
    // The project's hook reads the project to decide, and tries to change the host.
    let planted = host.path().join("planted");
    let project_hooks = json!({"project": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": format!(
            "touch {} planted-in-project 2>/dev/null; \
             grep -q deny-me verdict.txt && echo '{{\"decision\":\"deny\",\"reason\":\"the project says no\"}}'",
            planted.display())}]}]}});
    let mut builder = HookSet::builder();
    builder
        .load_str("/etc/hookbox/policy.json", &owner.to_string(), None)
        .expect("owner file");
    builder
        .load_model_writable(
            &project
                .path()
                .join(".agents/hooks.json")
                .display()
                .to_string(),
            &project_hooks.to_string(),
            None,
        )
        .expect("project file");
    let root = project.path().canonicalize().expect("canonical");
    let runner = hookbox_hooks::ProjectCommandRunner {
        host: hookbox_hooks::HostCommandRunner::default(),
        project: Some(hookbox_hooks::ProjectView {
            root: root.clone(),
            shown: root,
        }),
    };
    let runners = Runners {
        command: Arc::new(runner),
        ..Runners::host(None).expect("runners")
    };
    let dispatcher = Dispatcher::new(Arc::new(builder.build()), runners);
    let ls = json!({"code": "ls", "language": "bash"});
    let outcome = pre(&dispatcher, "code_execution", ls).await;
    assert!(owner_marker.exists(), "the owner's hook runs on the host");
    assert_eq!(outcome.decision, Decision::Deny, "{:#?}", outcome.trace);
    assert_eq!(outcome.reason.as_deref(), Some("the project says no"));
    assert!(
        !planted.exists(),
        "the project's hook wrote outside the project"
    );
    assert!(
        !project.path().join("planted-in-project").exists(),
        "the project's hook wrote in the project"
    );
}

/// An agent's event whose tool input holds a lone surrogate (as JavaScript's `JSON.stringify`
/// escapes one) is still read, so the model cannot make an agent's gates fail by putting one in
/// a command: the gate sees U+FFFD, the character the command becomes once written as UTF-8.
#[tokio::test]
async fn a_lone_surrogate_in_an_agents_tool_input_cannot_unread_the_event() {
    let event = r#"{"session_id":"s","transcript_path":"/t","cwd":"/","hook_event_name":"PreToolUse",
        "tool_name":"Bash","tool_input":{"command":"rm -rf /workspace \udcff"}}"#;
    let translated = hookbox_hooks::adapter::Agent::ClaudeCode
        .translate(event.as_bytes(), None)
        .expect("the event is read");
    let hooks = dispatcher(&[owner_gate()], None);
    let outcome = hookbox_hooks::adapter::evaluate(&hooks, &translated).await;
    assert_eq!(outcome.decision, Decision::Deny, "{outcome:#?}");
    assert_eq!(outcome.reason.as_deref(), Some("owner says no"));
}
