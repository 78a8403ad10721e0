//! `GET /{v}/interactions/{id}/hook_traces`: what each hook handler of an interaction did (its
//! decision, failure cause, duration), with the tool it gated and fail-opens marked, so a gate
//! that did not fire is never silent. [`read`] gives `hookbox traces` the same view.

use std::path::Path;
use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::extract::{Path as UrlPath, State};
use hookbox_store::{SqliteStore, Store};
use serde_json::{Value, json};

use crate::Shared;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::files::blocking;

/// `GET /{v}/interactions/{id}/hook_traces` → `{"hook_traces": [...]}`.
pub(crate) async fn list(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    UrlPath((_version, id)): UrlPath<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    state.owners.interaction(&caller, &id).await?;
    let store = Arc::clone(state.runtime.store());
    let traces = blocking(move || {
        load(store.as_ref(), &id).map_err(|err| match err {
            hookbox_store::Error::NotFound { .. } => ApiError::not_found(err.to_string()),
            other => ApiError::internal("cannot read the hook traces", &other),
        })
    })
    .await?;
    Ok(Json(json!({ "hook_traces": traces })))
}

/// The hook traces of interaction `id` in the store of hookbox home `home` (read without
/// disturbing a running server).
pub fn read(home: &Path, id: &str) -> Result<Vec<Value>, hookbox_store::Error> {
    let store = SqliteStore::open_without_recovery(home.join("hookbox.db"))?;
    load(&store, id)
}

/// The traces of `id`, in order: each stored entry plus `seq`, `step_index`, `created`, the
/// `tool` of the call it belongs to and `fail_open` (the handler failed and the call went on).
fn load(store: &dyn Store, id: &str) -> Result<Vec<Value>, hookbox_store::Error> {
    let stored = store.get_interaction_with_steps(id)?;
    let traces = store.list_traces(id)?;
    let steps: Vec<&Value> = stored.steps.iter().map(|step| &step.body).collect();
    Ok(traces
        .into_iter()
        .map(|trace| {
            let mut view = match trace.entry {
                Value::Object(map) => map,
                other => [("entry".to_owned(), other)].into_iter().collect(),
            };
            let fail_open = view
                .get("failure")
                .is_some_and(|failure| !failure.is_null())
                && view.get("failed_closed") != Some(&Value::Bool(true));
            view.insert("fail_open".to_owned(), fail_open.into());
            view.insert("seq".to_owned(), trace.seq.into());
            view.insert("step_index".to_owned(), trace.step_index.into());
            view.insert("created".to_owned(), trace.created.to_string().into());
            let tool = trace
                .step_index
                .and_then(|index| steps.get(usize::try_from(index).ok()?).copied())
                .and_then(tool_of);
            view.insert("tool".to_owned(), tool.into());
            Value::Object(view)
        })
        .collect())
}

/// The tool of a call's result step.
fn tool_of(step: &Value) -> Option<String> {
    match step["type"].as_str()? {
        "code_execution_result" => Some("code_execution".to_owned()),
        _ => step["name"].as_str().map(str::to_owned),
    }
}
