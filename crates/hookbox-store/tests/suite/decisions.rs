use std::io::Write;
use std::time::Duration;

use hookbox_store::{DecisionJournal, DecisionQuery, NewDecision, SqliteStore, Store, Timestamp};

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
        .record_decisions(
            &[(Timestamp::now(), decision("claude-code", "Bash", "deny"))],
            KEEP,
        )
        .unwrap();
    store
        .record_decisions(
            &[(
                Timestamp::now(),
                decision("gemini-cli", "run_shell_command", "allow"),
            )],
            KEEP,
        )
        .unwrap();
    store
        .record_decisions(
            &[(Timestamp::now(), decision("claude-code", "Read", "none"))],
            KEEP,
        )
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
            .record_decisions(
                &[(Timestamp::now(), decision("codex", "shell", "deny"))],
                KEEP,
            )
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
            .record_decisions(
                &[(Timestamp::now(), decision("claude-code", &tool, "allow"))],
                keep,
            )
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

#[test]
fn journaled_decisions_are_imported_once_in_order_with_their_times() {
    let dir = tempfile::tempdir().unwrap();
    let journal = DecisionJournal::in_dir(dir.path());
    let at = Timestamp::from_unix_millis(1_767_225_605_000);
    let size = journal
        .append(at, &decision("claude-code", "Bash", "deny"))
        .unwrap();
    assert!(size > 0);
    journal
        .append(at, &decision("gemini-cli", "read_file", "allow"))
        .unwrap();
    let file = dir.path().join("decisions.journal");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // A line a crash cut short is skipped.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap()
        .write_all(b"{\"at_ms\": 1, \"agent\": \"cod")
        .unwrap();
    let store = memory();
    assert_eq!(journal.import(&store, KEEP).unwrap(), 2);
    let listed = store.list_decisions(&all(None)).unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].at, at);
    assert_eq!(listed[0].decision, decision("claude-code", "Bash", "deny"));
    assert_eq!(listed[1].decision.tool.as_deref(), Some("read_file"));
    // Nothing is imported twice, and the journal is gone.
    assert_eq!(journal.import(&store, KEEP).unwrap(), 0);
    assert_eq!(store.list_decisions(&all(None)).unwrap().len(), 2);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn appends_racing_imports_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_db_dir, path) = db_path();
    let store = SqliteStore::open_without_recovery(&path).unwrap();
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let journal = DecisionJournal::in_dir(dir.path());
            std::thread::spawn(move || {
                for n in 0..200 {
                    let tool = format!("w{writer}-{n}");
                    journal
                        .append(Timestamp::now(), &decision("codex", &tool, "allow"))
                        .unwrap();
                }
            })
        })
        .collect();
    let journal = DecisionJournal::in_dir(dir.path());
    let mut imported = 0;
    while writers.iter().any(|writer| !writer.is_finished()) {
        imported += journal.import(&store, 100_000).unwrap();
    }
    for writer in writers {
        writer.join().unwrap();
    }
    imported += journal.import(&store, 100_000).unwrap();
    assert_eq!(imported, 800);
    let query = DecisionQuery {
        limit: u32::MAX,
        ..all(None)
    };
    let listed = store.list_decisions(&query).unwrap();
    let mut tools: Vec<String> = listed
        .into_iter()
        .map(|record| record.decision.tool.unwrap())
        .collect();
    tools.sort();
    tools.dedup();
    assert_eq!(tools.len(), 800);
}

#[test]
fn the_journal_is_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    std::fs::write(&elsewhere, "mine\n").unwrap();
    std::os::unix::fs::symlink(&elsewhere, dir.path().join("decisions.journal")).unwrap();
    let journal = DecisionJournal::in_dir(dir.path());
    assert!(
        journal
            .append(Timestamp::now(), &decision("codex", "shell", "deny"))
            .is_err()
    );
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "mine\n");
}
