//! Shared helpers.

use std::path::PathBuf;

use hookbox_store::{NewInteraction, NewStep, SqliteStore, Store};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A fresh in-memory store.
pub(crate) fn memory() -> SqliteStore {
    SqliteStore::open_in_memory().unwrap()
}

/// A temporary directory and a database path inside a not-yet-existing subdirectory of it.
pub(crate) fn db_path() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("home").join("hookbox.db");
    (dir, path)
}

/// A create request for `text`.
pub(crate) fn request(text: &str) -> Value {
    json!({"agent": "hookbox", "input": text, "tools": [{"type": "code_execution"}]})
}

/// Creates an `in_progress` interaction for `text`; returns its id.
pub(crate) fn start(store: &dyn Store, text: &str) -> String {
    store
        .create_interaction(NewInteraction::new("hookbox", request(text)))
        .unwrap()
        .interaction
        .id
}

/// A `model_output` step saying `text`.
pub(crate) fn text_step(text: &str) -> NewStep {
    NewStep::new(json!({"type": "model_output", "content": [{"type": "text", "text": text}]}))
}
