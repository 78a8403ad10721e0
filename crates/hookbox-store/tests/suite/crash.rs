//! A child process (this test binary, re-run on one test) writes to an interaction in a loop and
//! aborts mid-way; the parent reopens the database and checks what is left.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hookbox_store::{
    Append, NewInteraction, NewStep, NewTrace, SqliteStore, Status, Store, Update,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{db_path, request, start};

/// Set, to the database path, in the child only.
const CHILD_ENV: &str = "HOOKBOX_STORE_CRASH_CHILD_DB";
/// The child's test, by its full name.
const CHILD_TEST: &str = "suite::crash::child_writes_until_it_aborts";
/// The interaction the child writes to.
const ID: &str = "int_crash";
/// Steps per append.
const BATCH: usize = 25;
/// Traces per step.
const TRACES_PER_STEP: usize = 2;
/// Appends the child commits before aborting, at least.
const COMMITS_BEFORE_ABORT: usize = 5;

/// Padding of each step once the child has committed enough: 25 × 256 KiB per batch overflows
/// SQLite's 2 MiB page cache, so the open transaction spills uncommitted pages into the WAL file,
/// which is what recovery must then ignore.
const HEAVY_PADDING: usize = 256 * 1024;
/// What the child prints when it aborted while the WAL held uncommitted pages.
const SPILLED: &str = "aborted with uncommitted pages in the WAL";

/// One append: `BATCH` steps with their traces, a loose trace, and a usage update counting batches.
/// So every trace of a torn batch, or a usage ahead of the steps, would show.
fn batch(number: usize) -> Append {
    let padding = if number < COMMITS_BEFORE_ABORT {
        512
    } else {
        HEAVY_PADDING
    };
    let steps = (0..BATCH)
        .map(|part| NewStep {
            body: json!({"type": "model_output", "batch": number, "part": part,
                         "padding": "x".repeat(padding)}),
            traces: (0..TRACES_PER_STEP)
                .map(|trace| json!({"batch": number, "part": part, "trace": trace}))
                .collect(),
        })
        .collect();
    Append {
        steps,
        traces: vec![NewTrace {
            step_index: None,
            entry: json!({"batch": number, "loose": true}),
        }],
        update: Some(Update {
            usage: Some(json!({"batches": number + 1})),
            ..Update::default()
        }),
    }
}

/// In the child: creates the interaction, appends in a loop from a thread, and aborts from the
/// main thread while the writer is busy, preferably once its transaction has spilled into the WAL.
/// Elsewhere: does nothing.
#[test]
fn child_writes_until_it_aborts() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let wal = {
        let mut wal = path.clone();
        wal.push("-wal");
        wal
    };
    let wal_size = || std::fs::metadata(&wal).map_or(0, |metadata| metadata.len());
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let new = NewInteraction {
        id: Some(ID.to_owned()),
        ..NewInteraction::new("hookbox", request("crash"))
    };
    store.create_interaction(new).unwrap();
    let committed = Arc::new(AtomicUsize::new(0));
    {
        let (store, committed) = (Arc::clone(&store), Arc::clone(&committed));
        std::thread::spawn(move || {
            for number in 0.. {
                store.append(ID, batch(number)).unwrap();
                committed.fetch_add(1, Ordering::SeqCst);
            }
        });
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed.load(Ordering::SeqCst) < COMMITS_BEFORE_ABORT && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let base = wal_size();
    while committed.load(Ordering::SeqCst) == COMMITS_BEFORE_ABORT && Instant::now() < deadline {
        if wal_size() > base + 2 * 1024 * 1024 {
            println!("{SPILLED}");
            break;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    std::process::abort();
}

/// Runs the child on `path`, checks it died by `SIGABRT`, and says whether it aborted with
/// uncommitted pages in the WAL.
#[expect(
    clippy::disallowed_methods,
    reason = "re-running this test binary, not a tool run"
)]
fn run_child(path: &Path) -> bool {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD_ENV, path)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        output.status.signal(),
        Some(6),
        "the child should abort: {}",
        output.status
    );
    String::from_utf8_lossy(&output.stdout).contains(SPILLED)
}

#[test]
fn an_aborted_writer_leaves_whole_batches_and_a_failed_interaction() {
    let mut spilled = 0;
    for _round in 0..3 {
        let (_dir, path) = db_path();
        spilled += usize::from(run_child(&path));

        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.recovered_at_open(), [ID.to_owned()]);
        let interaction = store.get_interaction(ID).unwrap();
        assert_eq!(interaction.status, Status::Failed);
        assert_eq!(
            interaction.error.as_ref().unwrap()["code"],
            "hookbox_restarted"
        );

        let steps = store.list_steps(ID).unwrap();
        assert_eq!(
            steps.len() % BATCH,
            0,
            "a torn batch: {} steps",
            steps.len()
        );
        let batches = steps.len() / BATCH;
        assert!(batches >= COMMITS_BEFORE_ABORT, "{batches} batches");
        for (position, step) in steps.iter().enumerate() {
            assert_eq!(step.index as usize, position);
            assert_eq!(
                (&step.body["batch"], &step.body["part"]),
                (&json!(position / BATCH), &json!(position % BATCH))
            );
        }
        assert_eq!(
            interaction.usage,
            Some(json!({"batches": batches})),
            "update and steps agree"
        );

        let traces = store.list_traces(ID).unwrap();
        assert_eq!(traces.len(), batches * (BATCH * TRACES_PER_STEP + 1));
        for trace in &traces {
            if let Some(index) = trace.step_index {
                assert_eq!(trace.entry["part"], json!(index as usize % BATCH));
            }
        }

        // The conversation goes on from the failed interaction.
        let next = NewInteraction {
            previous_interaction_id: Some(ID.to_owned()),
            ..NewInteraction::new("hookbox", request("again"))
        };
        let next = store.create_interaction(next).unwrap().interaction.id;
        let history = store.history(&next, 10).unwrap();
        assert_eq!(history.interactions.len(), 2);
        assert_eq!(history.interactions[0].steps.len(), steps.len());
        assert_eq!(start(&store, "still writable").len(), 30);
    }
    assert!(
        spilled > 0,
        "no child aborted mid-transaction; the test proved less than it should"
    );
}
