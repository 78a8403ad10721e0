//! A tenant's 9,000-deep directory chain against the server: the model's recursive listing
//! and the owner's get bounded answers naming the depth limit, and the server goes on serving
//! (before, the listing overflowed a worker's stack and aborted the process for everyone).

use std::path::Path;

use hookbox_llm::{ModelConfig, ProviderKind};
use rustix::fs::{Mode, OFlags};
use serde_json::json;

use super::support::Api;

const AGENT: &str = "antigravity-preview-05-2026";

/// Creates a chain of `depth` directories `d` in `dir` (through descriptors: its paths are
/// longer than any path a syscall takes).
fn chain(dir: &Path, depth: usize) {
    std::fs::create_dir(dir).unwrap();
    let mut at = rustix::fs::open(dir, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&at, "d", Mode::from_raw_mode(0o755)).unwrap();
        at = rustix::fs::openat(&at, "d", OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .unwrap();
    }
}

#[tokio::test]
async fn a_9000_deep_tree_gets_bounded_answers_and_the_server_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent.script.json");
    let turns = json!({"turns": [
        {"tool_calls": [{"name": "list_files", "args": {"path": "/workspace/deep", "recursive": true}}]},
        {"text": "listed"}
    ]});
    std::fs::write(&script, turns.to_string()).unwrap();
    let api = Api::start_with(|config| {
        let mut model = ModelConfig::new(ProviderKind::Scripted, "");
        model.script = Some(script);
        config.agents.insert(AGENT.to_owned(), model);
    })
    .await;
    let id = api.create(&json!({"sources": []})).await;
    chain(&api.root(&id).join("workspace/deep"), 9_000);

    let body = json!({"agent": AGENT, "input": "list it all", "environment": id});
    let reply = api.post_json("/v1/interactions", &body).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "completed", "{interaction}");
    let result = interaction["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["type"] == "function_result")
        .unwrap()["result"]
        .clone();
    assert_eq!(result["truncated"], true, "{result}");
    assert!(
        result["note"].as_str().unwrap().contains("128 levels deep"),
        "{result}"
    );

    let listing = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace/deep?recursive=true"
        ))
        .await;
    assert_eq!(listing.status, 400, "{:?}", listing.body);
    assert!(
        listing.message().contains("128 levels deep"),
        "{}",
        listing.message()
    );

    // Everyone else is still served, and the tree goes with its environment.
    assert_eq!(api.get("/v1/environments").await.status, 200);
    let deleted = api
        .send("DELETE", &format!("/v1/environments/{id}"), &[], "")
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
}
