//! hookbox's REST API, served with axum: the Environments API of the `google-genai` SDK
//! (`spec/interactions-api.md` §2, §9), so the official client works with only `base_url`
//! changed, and the Interactions API (§2–§8), whose work is `hookbox_agent::service`'s.
//!
//! The server holds no business logic: environments, their files and their confinement are
//! `hookbox-env`'s. Every error is `{"error":{"code":"<string>","message":"…"}}` with a 4xx/5xx
//! status; nothing answers 204. Any `{v}` path segment is accepted (`v1`, `v1beta`, …).
//!
//! ```text
//! POST   /{v}/environments                         create (from_environment, network, sources)
//! GET    /{v}/environments?page_size=&page_token=  list
//! GET    /{v}/environments/{id}                    get
//! DELETE /{v}/environments/{id}                    delete → {}
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
//! [`serve`] caps connections and times out slow ones ([`Limits`]).

mod auth;
mod connections;
mod environments;
mod error;
mod files;
mod hosts;
mod interactions;
mod keys;
mod media;
mod owners;
mod page;
mod traces;
mod upload;

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use hookbox_agent::OwnerHookFiles;
use hookbox_agent::service::{
    EgressProxyOptions, HookClientOptions, InteractionService, ServiceConfig, ServiceError,
};
use hookbox_env::{DiskBudget, Environments, StoreError};
use hookbox_llm::ModelConfig;
use hookbox_store::{SqliteStore, Store};
use tokio::net::TcpListener;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::trace::TraceLayer;

pub use auth::Auth;
pub use connections::Limits;
pub use error::ApiError;
pub use keys::{ApiKeys, KeyError};
pub use traces::read as read_hook_traces;

/// How the server runs: where its data lives and how much a request may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// The hookbox home (`$HOOKBOX_HOME`): environments and upload staging live below it.
    pub home: PathBuf,
    /// Largest request body, in bytes (JSON bodies and upload chunks; the SDK sends ≤ 8 MiB
    /// chunks). Larger requests get 413.
    pub max_body_bytes: usize,
    /// Largest file a resumable upload may declare, in bytes. Larger uploads get 413.
    pub max_upload_bytes: u64,
    /// Whether create may use sources that read this host's filesystem (`local`, `gcs` with a
    /// path, repositories given as a local path). Off by default: API clients are not trusted
    /// with the server's files.
    pub allow_host_sources: bool,
    /// Model turns an interaction may take before it ends `incomplete` (default 32).
    pub max_turns: u32,
    /// Tokens an interaction may use (input plus output) before it ends `incomplete` with
    /// `budget_exceeded` (default: no limit).
    pub max_tokens: Option<u64>,
    /// The agents `POST /{v}/interactions` may name (`[agents."NAME"]` of hookbox.toml).
    pub agents: BTreeMap<String, ModelConfig>,
    /// The options of the client that carries HTTP hooks (`[network]` of hookbox.toml and the
    /// credential store); default: the strict [`HookClientOptions::default`].
    pub hook_http: HookClientOptions,
    /// The options of the egress proxy sandboxes reach the network through (`[network]` of
    /// hookbox.toml); `None` (the default): sandboxes have no network at all.
    pub egress_proxy: Option<EgressProxyOptions>,
    /// How requests authenticate (default: API keys).
    pub auth: Auth,
    /// The disk budget of new environments (`[sandbox] disk_bytes` and `disk_inodes`); default
    /// [`DiskBudget::DEFAULT`].
    pub disk_budget: DiskBudget,
}

impl ServerConfig {
    /// The defaults for `home`: 16 MiB bodies, 1 GiB uploads, no host sources, 32 turns.
    pub fn new(home: impl Into<PathBuf>) -> Self {
        Self {
            home: home.into(),
            max_body_bytes: 16 * 1024 * 1024,
            max_upload_bytes: 1024 * 1024 * 1024,
            allow_host_sources: false,
            max_turns: 32,
            max_tokens: None,
            agents: BTreeMap::new(),
            hook_http: HookClientOptions::default(),
            egress_proxy: None,
            auth: Auth::ApiKeys,
            disk_budget: DiskBudget::DEFAULT,
        }
    }
}

/// Why the server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The environment store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The interaction store could not be opened.
    #[error(transparent)]
    Interactions(#[from] ServiceError),
    /// The key and owner store could not be opened.
    #[error("cannot open the key store: {0}")]
    Keys(#[from] hookbox_store::Error),
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
    pub(crate) config: ServerConfig,
    pub(crate) environments: Environments,
    pub(crate) uploads: upload::Uploads,
    pub(crate) interactions: Arc<InteractionService>,
    /// API keys and owners.
    pub(crate) store: Arc<dyn Store>,
    /// The API keys, checked on every request.
    pub(crate) keys: ApiKeys,
}

/// The shared state as handlers receive it.
pub(crate) type Shared = Arc<State>;

/// The API's router, with body limits, JSON errors everywhere and request logging.
pub fn router(config: ServerConfig) -> Result<Router, ServerError> {
    let environments = Environments::open_with_network(&config.home, &config.hook_http)?
        .with_disk_budget(config.disk_budget)
        .with_hook_file_check(Arc::new(OwnerHookFiles))
        .with_progress(hookbox_env::logged_progress());
    let uploads = upload::Uploads::open(&config.home.join("uploads"))?;
    let limit = config.max_body_bytes;
    let mut service = ServiceConfig::new();
    service.agents = config.agents.clone();
    service.allow_host_sources = config.allow_host_sources;
    service.max_turns = config.max_turns;
    service.max_tokens = config.max_tokens;
    service.hook_http = config.hook_http.clone();
    service.egress_proxy = config.egress_proxy.clone();
    service.disk_budget = config.disk_budget;
    let interactions = InteractionService::open(&config.home, service)?;
    // After the service: it fails interactions a previous process left running.
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open_without_recovery(
        config.home.join("hookbox.db"),
    )?);
    let keys = ApiKeys::new(Arc::clone(&store));
    let state: Shared = Arc::new(State {
        config,
        environments,
        uploads,
        interactions,
        store,
        keys,
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
        .layer(middleware::from_fn_with_state(state, auth::authenticate))
        .layer(middleware::from_fn(json_errors))
        .layer(TraceLayer::new_for_http()))
}

/// How [`serve`] listens: its connection limits and the extra host names it answers to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServeOptions {
    /// Connection cap and timeouts.
    pub limits: Limits,
    /// Host names (`[server] allowed_hosts`) answered besides the listen address and, on
    /// loopback, `localhost`; for a server behind a reverse proxy or a DNS name.
    pub allowed_hosts: Vec<String>,
}

/// Serves `app` on `listener` until `shutdown` resolves, then lets requests in flight finish.
/// Requests whose `Host` is not the listen address (or an allowed host) get 421.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let allowed = hosts::AllowedHosts::new(listener.local_addr()?, &options.allowed_hosts);
    let app = app.layer(middleware::from_fn_with_state(
        Arc::new(allowed),
        hosts::check,
    ));
    connections::run(listener, app, options.limits, shutdown).await
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
