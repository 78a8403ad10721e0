//! The resumable upload of `docs/wire/interactions-api.md` §9.
//!
//! 1. `PUT /upload/{v}/environments/{id}/files/{path}[?overwrite=true]` with
//!    `X-Goog-Upload-Protocol: resumable`, `X-Goog-Upload-Command: start` and
//!    `X-Goog-Upload-Header-Content-Length` → 200 with `x-goog-upload-url` (the same path plus
//!    `?upload_id=…`).
//! 2. `POST <url>` chunks with `X-Goog-Upload-Command: upload` (the last `upload, finalize`) and
//!    `X-Goog-Upload-Offset` → `x-goog-upload-status: active`, then `final` with
//!    `{"files":[EnvironmentFile]}`. `query` reports the bytes received, `cancel` drops the
//!    upload.
//!
//! Chunks are appended to a staging file under `<home>/uploads/`; the finished file is written
//! into the environment through [`hookbox_env::EnvironmentFiles`] (temporary file + rename,
//! confined), so a half-finished upload never shows in the environment.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path as FsPath, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Extension;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use hookbox_env::EnvironmentFiles;
use hookbox_store::random_token;
use serde_json::json;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::files::blocking;
use crate::{ServerError, Shared};

/// How long an unfinished upload is kept.
const SESSION_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// `x-goog-upload-status`.
const STATUS: HeaderName = HeaderName::from_static("x-goog-upload-status");

/// Uploads in progress.
#[derive(Debug)]
pub(crate) struct Uploads {
    dir: PathBuf,
    sessions: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Session>>>>,
}

/// One upload in progress.
#[derive(Debug)]
struct Session {
    environment: String,
    path: String,
    declared: u64,
    received: u64,
    overwrite: bool,
    staging: PathBuf,
    started: Instant,
    /// Set once finished or cancelled: later requests on it are refused.
    closed: bool,
}

impl Uploads {
    /// Uploads staged in `dir`, which is emptied (uploads do not survive a restart).
    pub(crate) fn open(dir: &FsPath) -> Result<Self, ServerError> {
        crate::fresh_dir(dir)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            sessions: Mutex::new(HashMap::new()),
        })
    }

    /// The sessions, tolerating a poisoned lock (the map stays consistent).
    fn sessions(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, Arc<tokio::sync::Mutex<Session>>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets `id` and removes its staging file.
    fn remove(&self, id: &str, session: &mut Session) {
        session.closed = true;
        let _ = std::fs::remove_file(&session.staging);
        self.sessions().remove(id);
    }
}

/// `PUT /upload/{v}/environments/{id}/files/{path}`: starts an upload.
pub(crate) async fn start(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((version, id, path)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.owners.environment(&caller, &id).await?;
    let protocol = text_header(&headers, "x-goog-upload-protocol");
    if !protocol.eq_ignore_ascii_case("resumable") {
        return Err(ApiError::invalid(format!(
            "`X-Goog-Upload-Protocol` must be `resumable`, got `{protocol}`"
        )));
    }
    let command = text_header(&headers, "x-goog-upload-command");
    if !command.eq_ignore_ascii_case("start") {
        return Err(ApiError::invalid(format!(
            "`X-Goog-Upload-Command` must be `start` to begin an upload, got `{command}`"
        )));
    }
    let length = text_header(&headers, "x-goog-upload-header-content-length");
    let declared: u64 = length.parse().map_err(|_| {
        ApiError::invalid(format!(
            "`X-Goog-Upload-Header-Content-Length` must be the file's size in bytes, got \
             `{length}`"
        ))
    })?;
    let limit = state.settings.max_upload_bytes;
    if declared > limit {
        return Err(ApiError::too_large(format!(
            "the file is {declared} bytes, more than the {limit}-byte upload limit"
        )));
    }
    if flag(&query, "extract")? {
        return Err(ApiError::invalid(
            "`extract=true` (unpacking archives) is not supported yet; upload the files one by \
             one",
        ));
    }
    let overwrite = flag(&query, "overwrite")?;
    let environment = state.runtime.environments().get(&id)?;
    let checked = path.clone();
    let path = blocking(move || {
        Ok(EnvironmentFiles::open(&environment)?.check_writable(&checked, overwrite)?)
    })
    .await?;
    let host = headers
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| ApiError::invalid("the request has no `Host` header"))?;
    let upload_id =
        random_token().map_err(|err| ApiError::internal("cannot draw an upload id", &err))?;
    let staging = state.uploads.dir.join(&upload_id);
    File::create(&staging)
        .map_err(|err| ApiError::write("cannot create the upload's staging file", &err))?;
    let url = format!(
        "http://{host}/upload/{}/environments/{id}/files/{}?upload_id={upload_id}",
        encode(&version),
        encode(&path)
    );
    {
        let mut sessions = state.uploads.sessions();
        sessions.retain(|_, session| {
            session
                .try_lock()
                .map_or(true, |session| session.started.elapsed() < SESSION_LIFETIME)
        });
        sessions.insert(
            upload_id.clone(),
            Arc::new(tokio::sync::Mutex::new(Session {
                environment: id.clone(),
                path,
                declared,
                received: 0,
                overwrite,
                staging,
                started: Instant::now(),
                closed: false,
            })),
        );
    }
    tracing::info!(environment = id, upload_id, declared, "upload started");
    let mut response = Json(json!({})).into_response();
    let reply = response.headers_mut();
    reply.insert(
        HeaderName::from_static("x-goog-upload-url"),
        HeaderValue::from_str(&url).map_err(|err| ApiError::internal("bad upload URL", &err))?,
    );
    reply.insert(STATUS, HeaderValue::from_static("active"));
    Ok(response)
}

/// `POST /upload/{v}/environments/{id}/files/{path}?upload_id=…`: one chunk (or a query or a
/// cancel).
pub(crate) async fn chunk(
    State(state): State<Shared>,
    Extension(caller): Extension<Caller>,
    Path((_version, id, path)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let owned = state.owners.environment(&caller, &id).await;
    let result = match owned {
        Ok(()) => chunk_inner(&state, &id, &path, &query, &headers, body).await,
        Err(error) => Err((error, "final")),
    };
    match result {
        Ok(response) => response,
        Err((error, status)) => {
            let mut response = error.into_response();
            response
                .headers_mut()
                .insert(STATUS, HeaderValue::from_static(status));
            response
        }
    }
}

/// An error reply to a chunk and the `x-goog-upload-status` it carries: `final` unless the
/// upload can go on.
type ChunkError = (ApiError, &'static str);

async fn chunk_inner(
    state: &Shared,
    id: &str,
    path: &str,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ChunkError> {
    let fatal = |error: ApiError| (error, "final");
    let upload_id = query.get("upload_id").ok_or_else(|| {
        fatal(ApiError::invalid(
            "no `upload_id`: start an upload with PUT and send chunks to its `x-goog-upload-url`",
        ))
    })?;
    let session = state
        .uploads
        .sessions()
        .get(upload_id)
        .cloned()
        .ok_or_else(|| {
            fatal(ApiError::not_found(format!(
                "upload `{upload_id}` does not exist (finished, cancelled, expired or from before \
                 a restart); start a new upload"
            )))
        })?;
    let mut session = session.lock().await;
    if session.closed {
        return Err(fatal(ApiError::not_found(format!(
            "upload `{upload_id}` is already finished or cancelled; start a new upload"
        ))));
    }
    let normalised = path.trim_start_matches('/');
    if session.environment != id || session.path.trim_start_matches('/') != normalised {
        return Err(fatal(ApiError::invalid(format!(
            "upload `{upload_id}` is for `{}` in `{}`; send its chunks to its \
             `x-goog-upload-url`",
            session.path, session.environment
        ))));
    }
    let command = text_header(headers, "x-goog-upload-command").to_ascii_lowercase();
    let parts: Vec<&str> = command.split(',').map(str::trim).collect();
    let (upload, finalize) = match parts.as_slice() {
        ["upload"] => (true, false),
        ["upload", "finalize"] | ["finalize", "upload"] => (true, true),
        ["finalize"] => (false, true),
        ["query"] => return Ok(progress(&session, "active")),
        ["cancel"] => {
            state.uploads.remove(upload_id, &mut session);
            return Ok(progress(&session, "cancelled"));
        }
        _ => {
            return Err(fatal(ApiError::invalid(format!(
                "`X-Goog-Upload-Command` must be `upload`, `upload, finalize`, `finalize`, \
                 `query` or `cancel`, got `{command}`"
            ))));
        }
    };
    let bytes = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            fatal(ApiError::too_large(format!(
                "the chunk is larger than this server accepts ({rejection}); send smaller chunks"
            )))
        } else {
            fatal(ApiError::invalid(format!(
                "cannot read the chunk: {rejection}"
            )))
        }
    })?;
    if upload {
        let offset_text = text_header(headers, "x-goog-upload-offset");
        let offset: u64 = offset_text.parse().map_err(|_| {
            (
                ApiError::invalid(format!(
                    "`X-Goog-Upload-Offset` must be the chunk's byte offset, got `{offset_text}`"
                )),
                "active",
            )
        })?;
        if offset != session.received {
            let mut response = ApiError::new(
                StatusCode::BAD_REQUEST,
                "wrong_offset",
                format!(
                    "the chunk starts at offset {offset}, but {} bytes have been received; send \
                     the chunk that starts at {}",
                    session.received, session.received
                ),
            )
            .into_response();
            add_progress(&mut response, &session, "active");
            return Ok(response);
        }
        let total = session.received + bytes.len() as u64;
        if total > session.declared {
            let declared = session.declared;
            state.uploads.remove(upload_id, &mut session);
            return Err(fatal(ApiError::invalid(format!(
                "the upload declared {declared} bytes but chunks bring {total}; start again with \
                 the right `X-Goog-Upload-Header-Content-Length`"
            ))));
        }
        let staging = session.staging.clone();
        let received = session.received;
        blocking(move || {
            let mut file = OpenOptions::new()
                .append(true)
                .open(&staging)
                .map_err(|err| ApiError::write("cannot stage the chunk", &err))?;
            file.write_all(&bytes).map_err(|err| {
                // No part of a chunk stays staged.
                let _ = file.set_len(received);
                ApiError::write("cannot stage the chunk", &err)
            })
        })
        .await
        .map_err(fatal)?;
        session.received = total;
    }
    if !finalize {
        return Ok(progress(&session, "active"));
    }
    if session.received != session.declared {
        let (received, declared) = (session.received, session.declared);
        state.uploads.remove(upload_id, &mut session);
        return Err(fatal(ApiError::invalid(format!(
            "finalized after {received} of the {declared} declared bytes; start the upload again"
        ))));
    }
    let environment = state
        .runtime
        .environments()
        .get(&session.environment)
        .map_err(|err| fatal(err.into()));
    let environment = match environment {
        Ok(environment) => environment,
        Err(err) => {
            state.uploads.remove(upload_id, &mut session);
            return Err(err);
        }
    };
    let environments = state.runtime.environments().clone();
    let (staging, target, overwrite) = (
        session.staging.clone(),
        session.path.clone(),
        session.overwrite,
    );
    let written = blocking(move || {
        let mut file = File::open(&staging)
            .map_err(|err| ApiError::internal("cannot reopen the staged upload", &err))?;
        // A hook file is refused before anything is written if it would fail silently.
        if target.trim_end_matches('/').ends_with(".agents/hooks.json") {
            let mut content = Vec::new();
            file.read_to_end(&mut content)
                .map_err(|err| ApiError::internal("cannot read the staged upload", &err))?;
            environments.check_owner_file(&environment, &target, &content)?;
            file = File::open(&staging)
                .map_err(|err| ApiError::internal("cannot reopen the staged upload", &err))?;
        }
        Ok(EnvironmentFiles::open(&environment)?.write(
            &target,
            &mut file as &mut dyn Read,
            overwrite,
        )?)
    })
    .await;
    state.uploads.remove(upload_id, &mut session);
    let file = written.map_err(fatal)?;
    // An upload into `/.agents` makes it the owner's (read-only to the model); one into a
    // `/workspace/.agents` the owner did not create the environment with was refused.
    state
        .runtime
        .environments()
        .record_owner_write(id, &file.path)
        .map_err(|err| fatal(err.into()))?;
    tracing::info!(environment = id, path = file.path, "upload finished");
    let mut response = Json(json!({ "files": [file] })).into_response();
    add_progress(&mut response, &session, "final");
    Ok(response)
}

/// A reply carrying only the upload's progress.
fn progress(session: &Session, status: &'static str) -> Response {
    let mut response = Json(json!({})).into_response();
    add_progress(&mut response, session, status);
    response
}

/// Adds `x-goog-upload-status` and `x-goog-upload-size-received`.
fn add_progress(response: &mut Response, session: &Session, status: &'static str) {
    let headers = response.headers_mut();
    headers.insert(STATUS, HeaderValue::from_static(status));
    headers.insert(
        HeaderName::from_static("x-goog-upload-size-received"),
        HeaderValue::from(session.received),
    );
}

/// A header's value as text (`""` when absent or not text).
fn text_header<'h>(headers: &'h HeaderMap, name: &str) -> &'h str {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .trim()
}

/// A boolean query parameter (absent: false).
fn flag(query: &HashMap<String, String>, name: &str) -> Result<bool, ApiError> {
    match query.get(name).map(String::as_str) {
        None | Some("false" | "False" | "0" | "") => Ok(false),
        Some("true" | "True" | "1") => Ok(true),
        Some(other) => Err(ApiError::invalid(format!(
            "`{name}` must be true or false, got `{other}`"
        ))),
    }
}

/// Percent-encodes a path for a URL, keeping `/` and unreserved characters.
fn encode(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_encoded_for_urls() {
        assert_eq!(encode("workspace/a b/ü.txt"), "workspace/a%20b/%C3%BC.txt");
    }
}
