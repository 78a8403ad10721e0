//! The agents' own events without a hookbox counterpart, bound by name in the sandbox dialect:
//! handlers run in order, the first deny ends the chain where the agent lets a hook block, and
//! nothing is enforced where it does not.

use hookbox_hooks::adapter::{self, Agent};
use hookbox_hooks::{HandlerResult, HookSet, Severity};
use serde_json::{Value, json};

use super::support::{command, dispatcher};

/// Gemini CLI's input for `event`.
fn gemini(event: &str) -> Vec<u8> {
    json!({"session_id": "s", "transcript_path": "/t", "cwd": "/", "hook_event_name": event,
        "timestamp": "2026-12-03T00:00:00.000Z", "llm_request": {"model": "m", "messages": []}})
    .to_string()
    .into_bytes()
}

/// One sandbox group holding, under `event`, a handler that denies and one that must not run
/// after it.
fn deny_then_more(event: &str) -> Value {
    json!({"model-gate": {event: [{"hooks": [
        command(r#"cat > /dev/null; echo '{"decision":"deny","reason":"off"}'"#, 5),
        command("cat > /dev/null; echo '{}'", 5),
    ]}]}})
}

#[tokio::test]
async fn the_first_deny_on_a_blockable_agent_event_ends_the_chain() {
    let hooks = dispatcher(&[deny_then_more("BeforeModel")], None);
    let translated = Agent::GeminiCli
        .translate(&gemini("BeforeModel"), None)
        .expect("translated");
    assert!(translated.has_handlers(hooks.hooks()));
    let outcome = adapter::evaluate(&hooks, &translated).await;
    let results: Vec<_> = outcome.trace.iter().map(|entry| entry.result).collect();
    assert_eq!(results[1], HandlerResult::Skipped, "{outcome:#?}");
    let reply = Agent::GeminiCli.answer(&translated, &outcome);
    assert_eq!(
        serde_json::from_str::<Value>(&reply.stdout).expect("JSON"),
        json!({"decision": "deny", "reason": "off"})
    );
    assert_eq!(reply.exit_code, 0);
}

#[tokio::test]
async fn a_deny_on_an_event_the_agent_cannot_block_is_not_enforced() {
    let hooks = dispatcher(&[deny_then_more("BeforeToolSelection")], None);
    let translated = Agent::GeminiCli
        .translate(&gemini("BeforeToolSelection"), None)
        .expect("translated");
    let outcome = adapter::evaluate(&hooks, &translated).await;
    let results: Vec<_> = outcome.trace.iter().map(|entry| entry.result).collect();
    assert_eq!(
        results,
        [HandlerResult::NoDecision, HandlerResult::NoDecision],
        "{outcome:#?}"
    );
    let reply = Agent::GeminiCli.answer(&translated, &outcome);
    assert_eq!((reply.stdout.as_str(), reply.exit_code), ("", 0));
}

#[tokio::test]
async fn another_agents_event_of_that_name_is_not_passed_through() {
    // `BeforeModel` is Gemini CLI's: sent by Claude Code it is no event any policy sees.
    let hooks = dispatcher(&[deny_then_more("BeforeModel")], None);
    let translated = Agent::ClaudeCode
        .translate(&gemini("BeforeModel"), None)
        .expect("translated");
    assert!(!translated.has_handlers(hooks.hooks()));
}

#[test]
fn outside_hookbox_hook_a_hook_on_an_agents_event_is_warned_about() {
    let policy = deny_then_more("BeforeModel").to_string();
    let mut own_agent = HookSet::builder();
    own_agent
        .load_str("hooks.json", &policy, None)
        .expect("loads");
    let diagnostics = own_agent.build().diagnostics().to_vec();
    assert_eq!(diagnostics.len(), 2, "{diagnostics:#?}");
    assert_eq!(diagnostics[0].severity, Severity::Warning);
    assert_eq!(
        diagnostics[0].json_path,
        "$[\"model-gate\"].BeforeModel[0].hooks[0]"
    );
    assert!(
        diagnostics[0]
            .message
            .contains("only `hookbox hook` answers"),
        "{}",
        diagnostics[0].message
    );
    let mut answering = HookSet::builder();
    answering.answers_agents();
    answering
        .load_str("hooks.json", &policy, None)
        .expect("loads");
    assert!(answering.build().diagnostics().is_empty());
}
