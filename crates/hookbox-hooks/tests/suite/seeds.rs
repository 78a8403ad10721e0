use hookbox_hooks::{Decision, Failure, HandlerResult, HookSet};
use serde_json::{Value, json};

use super::support::{dispatcher, pre, seeds_dir};

/// A seed hooks.json with its `/.agents/hooks-scripts/` paths pointed at the fixtures folder.
fn seed_config(name: &str) -> Value {
    let text = std::fs::read_to_string(seeds_dir().join(name)).expect("seed config");
    let scripts = format!("{}/", seeds_dir().display());
    serde_json::from_str(&text.replace("/.agents/hooks-scripts/", &scripts)).expect("json")
}

#[tokio::test]
async fn security_gate_denies_rm_rf_with_the_seed_reason() {
    let hooks = dispatcher(&[seed_config("security-gate.hooks.json")], None);
    let outcome = pre(
        &hooks,
        "code_execution",
        json!({"code": "rm -rf /tmp/forbidden", "language": "bash"}),
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(
        outcome.reason.as_deref(),
        Some("Destructive command blocked by security gate.")
    );
    assert_eq!(outcome.trace.len(), 1);
    assert_eq!(
        outcome.trace[0].result,
        HandlerResult::Decided(Decision::Deny)
    );
    assert_eq!(outcome.trace[0].exit_code, Some(0));
}

#[tokio::test]
async fn security_gate_allows_ls() {
    let hooks = dispatcher(&[seed_config("security-gate.hooks.json")], None);
    let outcome = pre(
        &hooks,
        "code_execution",
        json!({"code": "ls", "language": "bash"}),
    )
    .await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(outcome.explicit, "gate.py prints an explicit allow");
    assert_eq!(outcome.trace[0].failure, None);
}

#[tokio::test]
async fn security_gate_does_not_fire_for_other_tools() {
    let hooks = dispatcher(&[seed_config("security-gate.hooks.json")], None);
    let outcome = pre(&hooks, "read_file", json!({"path": "rm -rf"})).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(outcome.trace.is_empty());
}

#[tokio::test]
async fn privacy_gate_denies_private_and_allows_public() {
    let hooks = dispatcher(&[seed_config("privacy-gate.hooks.json")], None);
    let private = pre(
        &hooks,
        "read_file",
        json!({"path": "/workspace/private/employees.json"}),
    )
    .await;
    assert_eq!(private.decision, Decision::Deny);
    assert_eq!(
        private.reason.as_deref(),
        Some(
            "Access to confidential `/private/` records is blocked by PII compliance policy. \
             Query approved `/public/` summary tables instead."
        )
    );
    let public = pre(
        &hooks,
        "read_file",
        json!({"path": "/workspace/public/summary.json"}),
    )
    .await;
    assert_eq!(public.decision, Decision::Allow);
    assert_eq!(public.reason, None);
}

#[tokio::test]
async fn both_gates_together_run_in_file_order() {
    let hooks = dispatcher(
        &[
            seed_config("security-gate.hooks.json"),
            seed_config("privacy-gate.hooks.json"),
        ],
        None,
    );
    let outcome = pre(&hooks, "read_file", json!({"path": "/workspace/private/x"})).await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.trace.len(), 1, "only the read_file rule matches");
}

#[test]
fn audit_config_loads_an_http_post_hook() {
    let mut builder = HookSet::builder();
    builder
        .load_file(&seeds_dir().join("audit-logging.hooks.json"), None)
        .expect("loads");
    let hooks = builder.build();
    assert!(hooks.diagnostics().is_empty(), "{:?}", hooks.diagnostics());
    let selected = hooks.select(hookbox_hooks::HookEvent::PostToolExecution, "write_file");
    assert_eq!(selected.len(), 1);
    assert_eq!(
        selected[0].handler.label(),
        "https://telemetry.example.com/api/v1/agent-events"
    );
    assert!(
        hooks
            .select(hookbox_hooks::HookEvent::PostToolExecution, "list_files")
            .is_empty()
    );
}

#[tokio::test]
async fn gate_script_sees_the_seed_payload() {
    // The seed's gate stringifies `tool_call.args`; a deny proves it got the args it expects.
    let hooks = dispatcher(&[seed_config("security-gate.hooks.json")], None);
    let outcome = pre(
        &hooks,
        "code_execution",
        json!({"code": "cd / && rm -rf --no-preserve-root x", "language": "bash"}),
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert!(!matches!(
        outcome.trace[0].failure,
        Some(Failure::NotJson { .. })
    ));
}
