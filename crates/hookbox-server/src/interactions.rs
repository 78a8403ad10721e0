//! `/{v}/interactions…`: create, get, cancel, delete, and their server-sent events. The work is
//! [`crate::service`]'s; this module maps HTTP to it.

use std::collections::HashMap;
use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use hookbox_store::Resource;
use serde_json::{Value, json};

use crate::Shared;
use crate::auth::Caller;
use crate::environments::json_body;
use crate::error::ApiError;
use crate::owners;

/// `POST /{v}/interactions`.
pub(crate) async fn create(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let value = json_body(body)?;
    check_references(&state, &caller, &value).await?;
    let key = headers
        .get("idempotency-key")
        .and_then(|value| value.to_str().ok())
        .filter(|value| !value.is_empty())
        .map(str::to_owned);
    let outcome = state
        .interactions
        .create(value, key, caller.owner())
        .await?;
    owners::claim(&state, &caller, Resource::Interaction, &outcome.id).await?;
    if let Some(environment) = outcome.interaction["environment_id"].as_str() {
        owners::claim(&state, &caller, Resource::Environment, environment).await?;
    }
    tracing::info!(id = outcome.id, "interaction created");
    if outcome.stream {
        return Ok(event_stream(state, outcome.id, None));
    }
    Ok(Json(outcome.interaction).into_response())
}

/// `GET /{v}/interactions/{id}[?stream=true&last_event_id=]`.
pub(crate) async fn get(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    owners::interaction(&state, &caller, &id).await?;
    let stream = match query.get("stream").map(String::as_str) {
        None | Some("false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "invalid query parameter `stream`: expected true or false, got `{other}`"
            )));
        }
    };
    let interaction = state.interactions.get(&id).await?;
    if !stream {
        return Ok(Json(interaction).into_response());
    }
    let last = match query.get("last_event_id") {
        None => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            ApiError::invalid(format!(
                "invalid query parameter `last_event_id`: `{text}` is not an event id of this \
                 server (they are numbers)"
            ))
        })?),
    };
    Ok(event_stream(state, id, last))
}

/// `POST /{v}/interactions/{id}/cancel`.
pub(crate) async fn cancel(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    owners::interaction(&state, &caller, &id).await?;
    Ok(Json(state.interactions.cancel(&id).await?))
}

/// `DELETE /{v}/interactions/{id}` → `{}`.
pub(crate) async fn delete(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    owners::interaction(&state, &caller, &id).await?;
    state.interactions.delete(&id).await?;
    tracing::info!(id, "interaction deleted");
    Ok(Json(json!({})))
}

/// Refuses a create body that names an interaction or environment the caller does not own,
/// with the 404 a missing one gets: `previous_interaction_id`, `environment` as an id, and
/// `environment.environment_id` (an update).
async fn check_references(state: &Shared, caller: &Caller, body: &Value) -> Result<(), ApiError> {
    if let Some(previous) = body["previous_interaction_id"].as_str()
        && !owners::owns(state, caller, Resource::Interaction, previous).await?
    {
        return Err(ApiError::not_found(format!(
            "invalid request at `$.previous_interaction_id`: interaction `{previous}` not found"
        )));
    }
    let (id, path) = match &body["environment"] {
        Value::String(id) => (id.as_str(), "$.environment"),
        Value::Object(map) => match map.get("environment_id").and_then(Value::as_str) {
            Some(id) => (id, "$.environment.environment_id"),
            None => return Ok(()),
        },
        _ => return Ok(()),
    };
    let id = id.strip_prefix("environments/").unwrap_or(id);
    if owners::owns(state, caller, Resource::Environment, id).await? {
        return Ok(());
    }
    Err(ApiError::not_found(format!(
        "invalid request at `{path}`: environment `{id}` not found; create one with POST \
         /{{v}}/environments or pass an environment object"
    )))
}

/// A `text/event-stream` reply with the interaction's events after `last`, following the run
/// until it stops, then `data: [DONE]`.
fn event_stream(state: Shared, id: String, last: Option<u64>) -> Response {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(16);
    tokio::spawn(async move {
        let mut last = last;
        let mut changes = state.interactions.changes();
        loop {
            changes.borrow_and_update();
            let (events, finished) = match state.interactions.events(&id, last).await {
                Ok(found) => found,
                Err(err) => {
                    let error = json!({"event_type": "error", "error": {"code": "not_found", "message": err.message}});
                    let _ = sender
                        .send(Ok(Bytes::from(format!("event: error\ndata: {error}\n\n"))))
                        .await;
                    break;
                }
            };
            for event in events {
                last = Some(event.id);
                let frame = format!(
                    "event: {}\nid: {}\ndata: {}\n\n",
                    event.event_type, event.id, event.data
                );
                if sender.send(Ok(Bytes::from(frame))).await.is_err() {
                    return;
                }
            }
            if finished {
                let _ = sender
                    .send(Ok(Bytes::from_static(b"data: [DONE]\n\n")))
                    .await;
                break;
            }
            // Woken by any change of a running interaction; the timeout covers the rest.
            let _ = tokio::time::timeout(Duration::from_millis(500), changes.changed()).await;
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}
