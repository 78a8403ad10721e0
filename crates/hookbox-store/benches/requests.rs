//! The store's share of one REST interaction create: the API key lookup and its use, the
//! environment record, the interaction and its owner, three steps stored as they are made (each
//! with a hook trace), the final update, and the read the response is rendered from.
//!
//! Run: `cargo bench -p hookbox-store --bench requests`. Results go to BENCHMARKS.md.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use criterion::{Criterion, criterion_group, criterion_main};
use hookbox_store::{
    Append, NewApiKey, NewInteraction, NewStep, Resource, SqliteStore, Status, Store, Update,
};
use serde_json::json;

fn one_create(c: &mut Criterion) {
    let home = tempfile::tempdir().expect("home");
    let store = SqliteStore::open(home.path().join("hookbox.db")).expect("store");
    store
        .create_api_key(NewApiKey {
            id: "key_bench".to_owned(),
            name: "bench".to_owned(),
            hash: vec![7; 32],
        })
        .expect("key");
    store
        .put_environment("env_bench", json!({"network": null}))
        .expect("environment");
    let request = json!({"agent": "assistant", "input": "read /workspace/data.txt"});
    let step = json!({"type": "function_call", "name": "read_file",
                      "arguments": {"path": "/workspace/data.txt"}});
    let trace = json!({"event": "pre_tool_execution", "handler": "command", "decision": "allow"});
    c.bench_function("store_work_of_one_rest_create", |b| {
        b.iter(|| {
            store.find_api_key("key_bench").expect("find key");
            store.touch_api_key("key_bench").expect("touch key");
            store.get_environment("env_bench").expect("environment");
            let mut new = NewInteraction::new("assistant", request.clone());
            new.environment_id = Some("env_bench".to_owned());
            let id = store
                .create_interaction(new)
                .expect("create")
                .interaction
                .id;
            store
                .claim(Resource::Interaction, &id, "key_bench")
                .expect("claim");
            for _ in 0..3 {
                store
                    .append_steps(
                        &id,
                        vec![NewStep {
                            body: step.clone(),
                            traces: vec![trace.clone()],
                        }],
                    )
                    .expect("step");
            }
            store
                .append(
                    &id,
                    Append {
                        steps: Vec::new(),
                        traces: Vec::new(),
                        update: Some(Update {
                            status: Some(Status::Completed),
                            ..Update::default()
                        }),
                    },
                )
                .expect("update");
            store.get_interaction_with_steps(&id).expect("read back");
        });
    });
}

criterion_group!(benches, one_create);
criterion_main!(benches);
