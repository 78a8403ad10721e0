//! hookbox's REST API, served with axum: the Environments API of the `google-genai` SDK
//! (`docs/wire/interactions-api.md` §2, §9), so the official client works with only `base_url`
//! changed, and the Interactions API (§2–§8): the wire format (requests, views, server-sent
//! events, idempotency, error mapping) and the run registry are this crate's (its `service`
//! module).
//!
//! The server builds nothing of its own: [`router`] serves a [`Runtime`] (`hookbox-runtime`:
//! the store, environments, agents, hook clients and egress proxy); environments, their files
//! and their confinement are `hookbox-env`'s, the agent loop is `hookbox-agent`'s. Every error is `{"error":{"code":"<string>","message":"…"}}` with a 4xx/5xx
//! status; nothing answers 204. Any `{v}` path segment is accepted (`v1`, `v1beta`, …).
//!
//! ```text
//! POST   /{v}/environments                         create (from_environment, network, sources)
//! GET    /{v}/environments?page_size=&page_token=  list
//! GET    /{v}/environments/{id}                    get
//! DELETE /{v}/environments/{id}                    delete → {} (its running interactions fail first)
//! GET    /{v}/environments/{id}/files/{path}       list files (recursive=, page_size=, page_token=)
//! GET    /{v}/environments/{id}/files/{path}?alt=media   download
//! PUT    /upload/{v}/environments/{id}/files/{path}      start a resumable upload
//! POST   <x-goog-upload-url>                       upload chunks (upload / upload, finalize)
//! POST   /{v}/interactions                         create (JSON, or SSE with "stream": true)
//! GET    /{v}/interactions/{id}[?stream=true&last_event_id=]   get, or replay its events
//! POST   /{v}/interactions/{id}/cancel             cancel a running interaction
//! DELETE /{v}/interactions/{id}                    delete → {}
//! GET    /{v}/interactions/{id}/hook_traces        its hook traces → {"hook_traces": [...]}
//! ```
//!
//! Every request needs an API key ([`ApiKeys`]; `x-goog-api-key`, `Authorization: Bearer` or
//! `?key=`) unless [`Auth::Disabled`]; what a key creates only that key sees (others get 404).
//! POSTs to JSON endpoints must be JSON (415), `Host` must name this server (421), and
//! [`serve`] caps connections, keeps a share of them for clients with a key and times out slow
//! ones ([`Limits`]).

mod admission;
mod auth;
mod connections;
mod drain;
mod environments;
mod error;
mod files;
mod hosts;
mod interactions;
mod keys;
pub mod mcp;
mod media;
mod owners;
mod page;
mod service;
mod traces;
mod upload;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use futures_util::Stream;
use hookbox_runtime::Runtime;
use service::InteractionService;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

pub use auth::Auth;
pub use connections::Limits;
pub use error::ApiError;
pub use keys::{ApiKeys, KeyError};
pub use traces::read as read_hook_traces;

/// Largest request body unless `[server] max_body_bytes` says otherwise: 16 MiB (the SDK sends
/// upload chunks of at most 8 MiB).
const DEFAULT_MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Largest upload unless `[server] max_upload_bytes` says otherwise: 1 GiB.
const DEFAULT_MAX_UPLOAD_BYTES: u64 = 1024 * 1024 * 1024;

/// What the HTTP layer itself enforces (`[server]` of hookbox.toml and the command line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Largest file a resumable upload may declare, in bytes. Larger uploads get 413.
    pub(crate) max_upload_bytes: u64,
    /// Whether create may use sources that read this host's filesystem (`local`, `gcs` with a
    /// path, repositories given as a local path). Off by default: API clients are not trusted
    /// with the server's files.
    pub(crate) allow_host_sources: bool,
}

/// Why the server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The interactions a previous process left running could not be marked failed.
    #[error("cannot recover the interaction store: {0}")]
    Recovery(#[from] hookbox_store::Error),
    /// The upload staging directory could not be prepared.
    #[error("cannot prepare the upload directory `{}`: {source}", path.display())]
    Uploads {
        /// The directory.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
}

/// What every handler shares.
pub(crate) struct State {
    pub(crate) settings: Settings,
    /// The store (API keys and owners too), environments and agents.
    pub(crate) runtime: Arc<Runtime>,
    /// Who may see and use which environments and interactions.
    pub(crate) owners: owners::Owners,
    pub(crate) uploads: upload::Uploads,
    pub(crate) interactions: Arc<InteractionService>,
}

/// The shared state as handlers receive it.
pub(crate) type Shared = Arc<State>;

/// The API's router over `runtime`, requests authenticated as `auth` says, with body limits,
/// JSON errors everywhere and request logging. Interactions a previous process left running in
/// the runtime's store are marked failed first.
pub fn router(runtime: Arc<Runtime>, auth: Auth) -> Result<Router, ServerError> {
    let server = &runtime.config().server;
    let limit = server.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    let settings = Settings {
        max_upload_bytes: server.max_upload_bytes.unwrap_or(DEFAULT_MAX_UPLOAD_BYTES),
        allow_host_sources: server.allow_host_sources.unwrap_or(false),
    };
    let uploads = upload::Uploads::open(&runtime.home().join("uploads"))?;
    let interactions = InteractionService::open(Arc::clone(&runtime))?;
    let keys = ApiKeys::new(Arc::clone(runtime.store()));
    let key_check = Arc::new(auth::KeyCheck { auth, keys });
    let owners = owners::Owners::new(Arc::clone(runtime.store()), auth);
    let state: Shared = Arc::new(State {
        settings,
        runtime,
        owners,
        uploads,
        interactions,
    });
    Ok(Router::new()
        .route(
            "/{v}/environments",
            get(environments::list).post(environments::create),
        )
        .route(
            "/{v}/environments/{id}",
            get(environments::get).delete(environments::delete),
        )
        .route("/{v}/environments/{id}/files", get(files::list_root))
        .route("/{v}/environments/{id}/files/", get(files::list_root))
        .route("/{v}/environments/{id}/files/{*path}", get(files::get))
        .route(
            "/upload/{v}/environments/{id}/files/{*path}",
            put(upload::start).post(upload::chunk),
        )
        .route("/{v}/interactions", post(interactions::create))
        .route(
            "/{v}/interactions/{id}",
            get(interactions::get).delete(interactions::delete),
        )
        .route("/{v}/interactions/{id}/cancel", post(interactions::cancel))
        .route("/{v}/interactions/{id}/hook_traces", get(traces::list))
        .fallback(no_route)
        .with_state(Arc::clone(&state))
        .layer(DefaultBodyLimit::max(limit))
        .layer(RequestBodyLimitLayer::new(limit))
        .layer(middleware::from_fn(media::json_only))
        .layer(middleware::from_fn_with_state(
            key_check,
            auth::authenticate,
        ))
        .layer(middleware::from_fn(json_errors))
        .layer(CatchPanicLayer::custom(ApiError::panicked))
        .layer(TraceLayer::new_for_http()))
}

/// How long [`serve`] lets requests and runs in flight finish once told to stop, unless
/// `[server] shutdown_timeout_secs` says otherwise: 30 s.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

/// How [`serve`] listens: its connection limits, the extra host names it answers to and how
/// long it drains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOptions {
    /// Connection cap and timeouts.
    pub limits: Limits,
    /// Host names (`[server] allowed_hosts`) answered besides the listen address and, on
    /// loopback, `localhost`; for a server behind a reverse proxy or a DNS name.
    pub allowed_hosts: Vec<String>,
    /// How long requests and runs in flight may go on once the server is told to stop
    /// (`[server] shutdown_timeout_secs`); then they are cut short.
    pub shutdown_timeout: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            limits: Limits::default(),
            allowed_hosts: Vec::new(),
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// Serves `app` on `listener` until `shutdown` resolves, then stops as
/// [`serve_until_signals`] does after its first signal.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_until_signals(listener, app, options, futures_util::stream::once(shutdown)).await
}

/// Serves `app` on `listener` until the first of `signals`; requests whose `Host` is not the
/// listen address (or an allowed host) get 421. Then it stops: the listener is closed at once
/// (new connections are refused), the requests and interaction runs in flight may finish for
/// `options.shutdown_timeout`, and the runs still going then, or at the next of `signals`,
/// end `failed` with the error `server_stopped` (their in-flight tool calls killed) and their
/// requests are answered. What it waits for and what it cuts short are logged.
pub async fn serve_until_signals(
    listener: TcpListener,
    app: Router,
    options: ServeOptions,
    signals: impl Stream<Item = ()> + Send + 'static,
) -> std::io::Result<()> {
    let allowed = hosts::AllowedHosts::new(listener.local_addr()?, &options.allowed_hosts);
    let app = app.layer(middleware::from_fn_with_state(
        Arc::new(allowed),
        hosts::check,
    ));
    connections::run(
        listener,
        app,
        options.limits,
        options.shutdown_timeout,
        signals,
    )
    .await
}

/// The answer to a path no route serves.
async fn no_route(request: Request<Body>) -> ApiError {
    ApiError::not_found(format!(
        "no endpoint {} {}; this server implements /{{v}}/environments… and /{{v}}/interactions…",
        request.method(),
        request.uri().path()
    ))
}

/// Rewrites error replies that are not JSON (axum's 405, tower-http's 413, extractor
/// rejections) into the API's error shape, and makes sure no reply is a 204.
async fn json_errors(request: Request<Body>, next: Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if status == StatusCode::NO_CONTENT {
        let mut response = (StatusCode::OK, "{}").into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return response;
    }
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
    if is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 64 * 1024)
        .await
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    let (code, message) = match status {
        StatusCode::PAYLOAD_TOO_LARGE => (
            "payload_too_large",
            "the request body is larger than this server accepts; send less (upload files in \
             chunks)"
                .to_owned(),
        ),
        StatusCode::METHOD_NOT_ALLOWED => (
            "method_not_allowed",
            "this endpoint does not take that HTTP method".to_owned(),
        ),
        _ if status.is_server_error() => ("internal", text),
        _ => ("invalid_argument", text),
    };
    let mut error = ApiError::new(status, code, message).into_response();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            error.headers_mut().insert(name.clone(), value.clone());
        }
    }
    error
}

/// Removes and recreates `dir`.
pub(crate) fn fresh_dir(dir: &Path) -> Result<(), ServerError> {
    let fail = |source| ServerError::Uploads {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::remove_dir_all(dir) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(fail(err)),
    }
    std::fs::create_dir_all(dir).map_err(fail)
}
