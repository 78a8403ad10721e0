//! `/{v}/environments…`: create, get, list, delete.

use std::collections::HashMap;
use std::sync::Arc;

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use hookbox_env::{EnvironmentSpec, Source};
use hookbox_store::{Resource, json_kind};
use serde_json::{Value, json};

use crate::Shared;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::page::Page;

/// Members of the create body (`docs/wire/interactions-api.md` §9), `mode` (google-genai ≥ 3.6;
/// only `"on_demand"`), and the hookbox extension `agents_writable`.
const CREATE_FIELDS: &[&str] = &[
    "from_environment",
    "network",
    "sources",
    "mode",
    "agents_writable",
];

/// `POST /{v}/environments` with `{from_environment?, network?, sources?}`.
pub(crate) async fn create(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, ApiError> {
    let value = json_body(body)?;
    let Value::Object(map) = &value else {
        return Err(ApiError::invalid(format!(
            "invalid request at `$`: expected a JSON object with `from_environment`, `network` \
             or `sources`, got {}",
            json_kind(&value)
        )));
    };
    if let Some(key) = map
        .keys()
        .find(|key| !CREATE_FIELDS.contains(&key.as_str()))
    {
        return Err(ApiError::invalid(format!(
            "invalid request at `$.{key}`: unknown field; the create body takes {}",
            CREATE_FIELDS.join(", ")
        )));
    }
    let mut map = map.clone();
    match map.remove("mode") {
        None => {}
        Some(Value::String(mode)) if mode == "on_demand" => {}
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "invalid request at `$.mode`: hookbox runs environments on demand only; give \
                 \"on_demand\" or omit `mode` (got {other})"
            )));
        }
    }
    // The SDK documents `environments/{id}` as well as `{id}`.
    if let Some(Value::String(from)) = map.get_mut("from_environment")
        && let Some(id) = from.strip_prefix("environments/")
    {
        *from = id.to_owned();
    }
    let spec = EnvironmentSpec::from_json(&Value::Object(map))?;
    if !state.settings.allow_host_sources {
        refuse_host_sources(&spec)?;
    }
    if let Some(from) = &spec.from_environment {
        state.owners.environment(&caller, from).await?;
    }
    let environment = state.runtime.environments().create(&spec).await?;
    // The environment recorded its own record in the store; the owner is the server's.
    if let Err(err) = state
        .owners
        .claim(&caller, Resource::Environment, environment.id())
        .await
    {
        let _ = state.runtime.environments().delete(environment.id());
        return Err(err);
    }
    tracing::info!(id = environment.id(), "environment created");
    Ok(Json(environment.to_json()))
}

/// `GET /{v}/environments/{id}`.
pub(crate) async fn get(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    state.owners.environment(&caller, &id).await?;
    Ok(Json(state.runtime.environments().describe(&id)?.to_json()))
}

/// `GET /{v}/environments?page_size=&page_token=` → `{environments, next_page_token}`.
pub(crate) async fn list(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let page = Page::parse(
        query.get("page_size").map(String::as_str),
        query.get("page_token").map(String::as_str),
        50,
        1000,
    )?;
    let all = state
        .owners
        .environments(&caller, state.runtime.environments().list()?)
        .await?;
    let (environments, next) = page.take(all);
    let environments: Vec<Value> = environments
        .iter()
        .map(hookbox_env::Environment::to_json)
        .collect();
    let mut reply = json!({ "environments": environments });
    if let Some(next) = next {
        reply["next_page_token"] = next.into();
    }
    Ok(Json(reply))
}

/// `DELETE /{v}/environments/{id}` → `{}`.
pub(crate) async fn delete(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    state.owners.environment(&caller, &id).await?;
    // Nothing runs in it any more once its files go.
    state.interactions.stop_runs_in(&id).await?;
    // Its record and owner go with it; removing the directory (and unmounting its file
    // system) blocks.
    let runtime = Arc::clone(&state.runtime);
    let owned = id.clone();
    crate::files::blocking(move || Ok(runtime.environments().delete(&owned)?)).await?;
    tracing::info!(id, "environment deleted");
    Ok(Json(json!({})))
}

/// The request body as JSON, or a 400 saying where it stops being JSON (413 when too large).
pub(crate) fn json_body(body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let bytes = body.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(format!(
                "the request body is larger than this server accepts ({rejection})"
            ))
        } else {
            ApiError::invalid(format!("cannot read the request body: {rejection}"))
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(&bytes).map_err(|err| {
        ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "invalid_json",
            format!(
                "the request body is not valid JSON at line {}, column {}: {err}",
                err.line(),
                err.column()
            ),
        )
    })
}

/// Refuses sources that would copy this host's files into the environment.
fn refuse_host_sources(spec: &EnvironmentSpec) -> Result<(), ApiError> {
    if let Some(index) = spec.sources.iter().position(Source::reads_host) {
        return Err(ApiError::invalid(format!(
            "invalid environment at `$.sources[{index}]`: this source reads the server's own \
                 filesystem, which the API does not allow; use an inline source or a remote \
                 repository URL (the server's operator can set `allow_host_sources`)"
        )));
    }
    Ok(())
}
