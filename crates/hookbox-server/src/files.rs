//! `/{v}/environments/{id}/files/{path}`: list (`{files, next_page_token}`) or download
//! (`?alt=media`).

use std::collections::HashMap;
use std::io::Read;

use axum::Extension;
use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hookbox_env::EnvironmentFiles;
use serde_json::{Value, json};

use crate::Shared;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::page::Page;

/// `GET /{v}/environments/{id}/files` (and `…/files/`): the root.
pub(crate) async fn list_root(
    state: State<Shared>,
    caller: Extension<Caller>,
    Path((_version, id)): Path<(String, String)>,
    query: Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    respond(state, caller, id, String::new(), query).await
}

/// `GET /{v}/environments/{id}/files/{path}`.
pub(crate) async fn get(
    state: State<Shared>,
    caller: Extension<Caller>,
    Path((_version, id, path)): Path<(String, String, String)>,
    query: Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    respond(state, caller, id, path, query).await
}

/// Lists `path`, or downloads it when `alt=media`.
async fn respond(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    id: String,
    path: String,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ApiError> {
    state.owners.environment(&caller, &id).await?;
    let environment = state.runtime.environments().get(&id)?;
    match query.get("alt").map(String::as_str) {
        Some("media") => return download(environment, path).await,
        Some("json") | None => {}
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "`alt={other}` is not supported; use `alt=media` to download, or omit it to list"
            )));
        }
    }
    let recursive = match query.get("recursive").map(String::as_str) {
        None | Some("false" | "False" | "0" | "") => false,
        Some("true" | "True" | "1") => true,
        Some(other) => {
            return Err(ApiError::invalid(format!(
                "`recursive` must be true or false, got `{other}`"
            )));
        }
    };
    let page = Page::parse(
        query.get("page_size").map(String::as_str),
        query.get("page_token").map(String::as_str),
        1000,
        10_000,
    )?;
    let files = blocking(move || {
        EnvironmentFiles::open(&environment)?
            .list(&path, recursive)
            .map_err(ApiError::from)
    })
    .await?;
    let (files, next) = page.take(files);
    let mut reply = json!({ "files": files });
    if let Some(next) = next {
        reply["next_page_token"] = Value::String(next);
    }
    Ok(Json(reply).into_response())
}

/// The file's bytes, streamed, `Content-Type` from its name.
async fn download(
    environment: hookbox_env::Environment,
    path: String,
) -> Result<Response, ApiError> {
    let name = path.rsplit('/').next().unwrap_or_default().to_owned();
    let (mut file, size) =
        blocking(move || Ok(EnvironmentFiles::open(&environment)?.open_file(&path)?)).await?;
    let (sender, receiver) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(4);
    tokio::task::spawn_blocking(move || {
        let mut buffer = vec![0; 64 * 1024];
        loop {
            let item = match file.read(&mut buffer) {
                Ok(0) => return,
                Ok(count) => Ok(Bytes::copy_from_slice(&buffer[..count])),
                Err(err) => Err(err),
            };
            let failed = item.is_err();
            if sender.blocking_send(item).is_err() || failed {
                return;
            }
        }
    });
    let stream = futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|item| (item, receiver))
    });
    let mut response = (StatusCode::OK, Body::from_stream(stream)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(hookbox_env::mime_type(&name)),
    );
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    Ok(response)
}

/// Runs filesystem work off the async threads.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| ApiError::internal("a file operation stopped", &err))?
}
