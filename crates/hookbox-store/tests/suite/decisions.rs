use std::time::Duration;

use hookbox_store::{DecisionQuery, NewDecision, Store, Timestamp};

/// The log size the tests ask for.
const KEEP: u64 = 1000;

use crate::suite::support::{db_path, memory};

fn decision(agent: &str, tool: &str, decision: &str) -> NewDecision {
    NewDecision {
        agent: agent.to_owned(),
        session: Some("s-1".to_owned()),
        event: "PreToolUse".to_owned(),
        tool: Some(tool.to_owned()),
        decision: decision.to_owned(),
        reason: (decision == "deny").then(|| "no rm -rf".to_owned()),
        latency: Duration::from_micros(1234),
        policy: Some("/etc/hookbox/policy.json".to_owned()),
        handler: Some("command `python3 gate.py` at $.security".to_owned()),
    }
}

fn all(agent: Option<&str>) -> DecisionQuery {
    DecisionQuery {
        agent: agent.map(str::to_owned),
        since: None,
        limit: 100,
    }
}

#[test]
fn decisions_are_recorded_and_listed_oldest_first_by_agent_and_time() {
    let store = memory();
    let before = Timestamp::now();
    store
        .record_decision(&decision("claude-code", "Bash", "deny"), KEEP)
        .unwrap();
    store
        .record_decision(&decision("gemini-cli", "run_shell_command", "allow"), KEEP)
        .unwrap();
    store
        .record_decision(&decision("claude-code", "Read", "none"), KEEP)
        .unwrap();
    let listed = store.list_decisions(&all(None)).unwrap();
    let tools: Vec<_> = listed
        .iter()
        .map(|record| record.decision.tool.clone().unwrap())
        .collect();
    assert_eq!(tools, ["Bash", "run_shell_command", "Read"]);
    assert_eq!(listed[0].decision, decision("claude-code", "Bash", "deny"));
    assert!(listed[0].at >= before && listed[0].seq < listed[1].seq);
    let claude = store.list_decisions(&all(Some("claude-code"))).unwrap();
    assert_eq!(claude.len(), 2);
    let future = DecisionQuery {
        since: Some(Timestamp::from_unix_millis(
            Timestamp::now().unix_millis() + 60_000,
        )),
        ..all(None)
    };
    assert!(store.list_decisions(&future).unwrap().is_empty());
    let newest = DecisionQuery {
        limit: 1,
        ..all(None)
    };
    let newest = store.list_decisions(&newest).unwrap();
    assert_eq!(newest[0].decision.tool.as_deref(), Some("Read"));
}

#[test]
fn decisions_survive_reopening_the_file() {
    let (_dir, path) = db_path();
    {
        let store = hookbox_store::SqliteStore::open_without_recovery(&path).unwrap();
        store
            .record_decision(&decision("codex", "shell", "deny"), KEEP)
            .unwrap();
    }
    let store = hookbox_store::SqliteStore::open_without_recovery(&path).unwrap();
    let listed = store.list_decisions(&all(Some("codex"))).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].decision.reason.as_deref(), Some("no rm -rf"));
}

#[test]
fn the_log_keeps_only_the_newest_decisions() {
    let store = memory();
    let keep = 50;
    for index in 0..2 * keep {
        let tool = format!("t{index}");
        store
            .record_decision(&decision("claude-code", &tool, "allow"), keep)
            .unwrap();
    }
    let query = DecisionQuery {
        limit: u32::MAX,
        ..all(None)
    };
    let kept = store.list_decisions(&query).unwrap();
    assert_eq!(u64::try_from(kept.len()).unwrap(), keep);
    assert_eq!(kept[0].decision.tool.as_deref(), Some("t50"));
}
