use std::sync::Arc;

use hookbox_store::{NewStep, SqliteStore, Store};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{db_path, memory, start};

/// Threads in the batch.
const THREADS: usize = 6;
/// Batches per thread.
const BATCHES: usize = 15;
/// Steps per batch.
const PARTS: usize = 3;

/// A batch of steps tagged with who wrote it, each with one trace.
fn batch(thread: usize, batch: usize) -> Vec<NewStep> {
    (0..PARTS)
        .map(|part| NewStep {
            body: json!({"type": "model_output", "thread": thread, "batch": batch, "part": part}),
            traces: vec![json!({"thread": thread, "batch": batch, "part": part})],
        })
        .collect()
}

/// Every step is there once, indexes have no gaps, and each batch's steps are contiguous.
fn check(store: &dyn Store, id: &str) {
    let steps = store.list_steps(id).unwrap();
    assert_eq!(steps.len(), THREADS * BATCHES * PARTS);
    for (position, step) in steps.iter().enumerate() {
        assert_eq!(step.index as usize, position);
    }
    for chunk in steps.chunks(PARTS) {
        let first = &chunk[0].body;
        for (part, step) in chunk.iter().enumerate() {
            assert_eq!(step.body["part"], part, "batch split: {chunk:?}");
            assert_eq!(
                (&step.body["thread"], &step.body["batch"]),
                (&first["thread"], &first["batch"])
            );
        }
    }
    let traces = store.list_traces(id).unwrap();
    assert_eq!(traces.len(), steps.len());
    for trace in traces {
        let step = &steps[trace.step_index.unwrap() as usize];
        assert_eq!(step.body["thread"], trace.entry["thread"]);
        assert_eq!(step.body["part"], trace.entry["part"]);
    }
}

#[test]
fn threads_appending_to_one_interaction_interleave_whole_batches() {
    let store = memory();
    let id = start(&store, "shared");
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let (store, id) = (&store, &id);
            scope.spawn(move || {
                for n in 0..BATCHES {
                    let range = store.append_steps(id, batch(thread, n)).unwrap();
                    assert_eq!(range.len(), PARTS);
                }
            });
        }
    });
    check(&store, &id);
}

/// Two connections (as two processes would have) on one file take turns through the write lock.
#[test]
fn connections_sharing_a_file_take_turns() {
    let (_dir, path) = db_path();
    let first = Arc::new(SqliteStore::open(&path).unwrap());
    let second = Arc::new(SqliteStore::open_without_recovery(&path).unwrap());
    let id = start(first.as_ref(), "shared");
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let store = if thread % 2 == 0 { &first } else { &second };
            let id = &id;
            scope.spawn(move || {
                for n in 0..BATCHES {
                    store.append_steps(id, batch(thread, n)).unwrap();
                    if n % 5 == 0 {
                        store.get_interaction_with_steps(id).unwrap();
                    }
                }
            });
        }
    });
    check(first.as_ref(), &id);
    check(second.as_ref(), &id);
}

/// The store is usable as a shared trait object.
#[test]
fn the_store_is_a_shareable_trait_object() {
    let store: Arc<dyn Store> = Arc::new(memory());
    let handles: Vec<_> = (0..4)
        .map(|n| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || start(store.as_ref(), &format!("request {n}")))
        })
        .collect();
    for handle in handles {
        let id = handle.join().unwrap();
        assert!(store.get_interaction(&id).is_ok());
    }
}
