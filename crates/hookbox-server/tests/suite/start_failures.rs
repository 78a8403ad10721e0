//! An interaction whose tools cannot be opened ends `failed` with the reason, never stays
//! `in_progress`: each step of opening them is made to fail for real, one at a time.

use std::path::Path;

use hookbox_llm::{ModelConfig, ProviderKind};
use hookbox_store::Store;
use serde_json::json;

use super::support::Api;

const AGENT: &str = "scripted";

/// Makes one step of opening environment `id`'s tools fail.
type Breaker = fn(&Api, &str);

/// Each step of opening an interaction's tools (after the interaction is stored): its name, how
/// to make it fail, and what the interaction's error then says. A new step is one line.
const STEPS: &[(&str, Breaker, &str)] = &[
    (
        "open the environment's root",
        |api, id| replace_with_file(&api.root(id)),
        "open the environment root",
    ),
    (
        "write the sandbox's CA bundle",
        |api, _| replace_with_file(&own_run_dir(api.home())),
        "CA bundle",
    ),
];

/// Replaces directory `dir` with an empty file.
fn replace_with_file(dir: &Path) {
    std::fs::remove_dir_all(dir).unwrap();
    std::fs::write(dir, "").unwrap();
}

/// This process's directory under `home/run` (where the sandboxes' CA bundles are written).
fn own_run_dir(home: &Path) -> std::path::PathBuf {
    let prefix = format!("{}-", std::process::id());
    std::fs::read_dir(home.join("run"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| {
            path.file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with(&prefix))
        })
        .expect("this process's run directory")
}

#[tokio::test]
async fn an_interaction_whose_tools_cannot_be_opened_ends_failed_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent.script.json");
    std::fs::write(
        &script,
        json!([{"tool_calls": [{"name": "code_execution", "args": {"code": "echo hi"}}]},
               {"text": "done"}])
        .to_string(),
    )
    .unwrap();
    for (step, break_it, expected) in STEPS {
        let api = Api::start_with(|config| {
            let mut model = ModelConfig::new(ProviderKind::Scripted, "");
            model.script = Some(script.clone());
            config.agents.insert(AGENT.to_owned(), model);
        })
        .await;
        // Public egress (the default), so that the sandbox gets a CA bundle.
        let environment = api.create(&json!({"sources": []})).await;
        break_it(&api, &environment);
        let reply = api
            .post_json(
                "/v1/interactions",
                &json!({"agent": AGENT, "input": "run", "environment": environment,
                        "tools": [{"type": "code_execution"}]}),
            )
            .await;
        // Nothing is left in progress: a restart would find nothing to recover.
        let store =
            hookbox_store::SqliteStore::open_without_recovery(api.home().join("hookbox.db"))
                .unwrap();
        assert_eq!(
            store.recover().unwrap(),
            Vec::<String>::new(),
            "{step}: {reply:?}"
        );
        assert_eq!(reply.status, 200, "{step}: {reply:?}");
        let interaction = reply.json();
        assert_eq!(interaction["status"], "failed", "{step}: {interaction}");
        assert_eq!(interaction["errors"][0]["code"], "internal", "{step}");
        let message = interaction["errors"][0]["message"].as_str().unwrap();
        assert!(
            message.contains("cannot open the environment's tools") && message.contains(expected),
            "{step}: {message}"
        );
        // The caller reads it again, as stored.
        let id = interaction["id"].as_str().unwrap();
        let stored = api.get(&format!("/v1/interactions/{id}")).await;
        assert_eq!(stored.status, 200, "{step}: {stored:?}");
        assert_eq!(stored.json()["errors"], interaction["errors"], "{step}");
    }
}
