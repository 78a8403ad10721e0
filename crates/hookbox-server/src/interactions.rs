//! `/{v}/interactions…`: create, get, cancel, delete, and their server-sent events. The work is
//! [`crate::service`]'s; this module maps HTTP to it.

use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use hookbox_store::Resource;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use crate::Shared;
use crate::auth::Caller;
use crate::drain::Drain;
use crate::environments::json_body;
use crate::error::ApiError;
use crate::service::Event;

/// `POST /{v}/interactions`.
pub(crate) async fn create(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    drain: Option<Extension<Drain>>,
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
        .create(
            value,
            key,
            caller.owner(),
            drain.map(|Extension(drain)| drain),
        )
        .await?;
    state
        .owners
        .claim(&caller, Resource::Interaction, &outcome.id)
        .await?;
    if let Some(environment) = outcome.interaction["environment_id"].as_str() {
        state
            .owners
            .claim(&caller, Resource::Environment, environment)
            .await?;
    }
    tracing::info!(id = outcome.id, "interaction created");
    // The answer is being written: an identical body from now on is a new interaction.
    drop(outcome.open);
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
    state.owners.interaction(&caller, &id).await?;
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
    state.owners.interaction(&caller, &id).await?;
    Ok(Json(state.interactions.cancel(&id).await?))
}

/// `DELETE /{v}/interactions/{id}` → `{}`.
pub(crate) async fn delete(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    state.owners.interaction(&caller, &id).await?;
    state.interactions.delete(&id).await?;
    tracing::info!(id, "interaction deleted");
    Ok(Json(json!({})))
}

/// Refuses a create body that names an interaction or environment the caller does not own,
/// with the 404 a missing one gets: `previous_interaction_id`, `environment` as an id, and
/// `environment.environment_id` (an update).
async fn check_references(state: &Shared, caller: &Caller, body: &Value) -> Result<(), ApiError> {
    if let Some(previous) = body["previous_interaction_id"].as_str()
        && !state
            .owners
            .owns(caller, Resource::Interaction, previous)
            .await?
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
    if state.owners.owns(caller, Resource::Environment, id).await? {
        return Ok(());
    }
    Err(ApiError::not_found(format!(
        "invalid request at `{path}`: environment `{id}` not found; create one with POST \
         /{{v}}/environments or pass an environment object"
    )))
}

/// A `text/event-stream` reply with the interaction's events after `last`, following the run
/// until it stops, then `data: [DONE]`; a comment every 15 s keeps an idle connection open.
/// The stream catches up from the store, then follows the run's own channel; if it falls
/// behind the channel it catches up from the store again.
fn event_stream(state: Shared, id: String, last: Option<u64>) -> Response {
    let (sender, receiver) = tokio::sync::mpsc::channel::<SseEvent>(16);
    tokio::spawn(async move {
        let mut last = last;
        // Subscribed before the store is read: what the store does not show yet comes after.
        let mut follow = state.interactions.follow(&id);
        loop {
            let (events, finished) = match state.interactions.events(&id, last).await {
                Ok(found) => found,
                Err(err) => {
                    let error = json!({"event_type": "error", "error": {"code": "not_found", "message": err.message}});
                    let _ = sender
                        .send(SseEvent::default().event("error").data(error.to_string()))
                        .await;
                    return;
                }
            };
            for event in events {
                last = Some(event.id);
                if sender.send(frame(&event)).await.is_err() {
                    return;
                }
            }
            if finished {
                let _ = sender.send(SseEvent::default().data("[DONE]")).await;
                return;
            }
            let Some(run) = follow.as_mut() else {
                // Running, but not in this process's registry: look again shortly.
                tokio::time::sleep(Duration::from_millis(500)).await;
                follow = state.interactions.follow(&id);
                continue;
            };
            loop {
                match run.recv().await {
                    Ok(event) if last.is_some_and(|last| event.id <= last) => {}
                    Ok(event) => {
                        last = Some(event.id);
                        if sender.send(frame(&event)).await.is_err() {
                            return;
                        }
                    }
                    // Fallen behind: catch up from the store, then follow again.
                    Err(RecvError::Lagged(_)) => break,
                    // The run is over: its end is in the store.
                    Err(RecvError::Closed) => {
                        follow = None;
                        break;
                    }
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver
            .recv()
            .await
            .map(|event| (Ok::<_, Infallible>(event), receiver))
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// One event as SSE: `event:`, `id:` and `data:` lines.
fn frame(event: &Event) -> SseEvent {
    SseEvent::default()
        .event(event.event_type)
        .id(event.id.to_string())
        .data(event.data.to_string())
}
