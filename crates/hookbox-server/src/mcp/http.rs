//! `hookbox mcp --listen`: the MCP server over streamable HTTP at `/mcp`, behind the REST
//! API's guards: every request needs an API key (`hookbox api-keys create`; `Authorization:
//! Bearer`, `x-goog-api-key` or `?key=`) unless authentication is disabled, and a request
//! carrying an `Origin` (a web page, whatever its host) is refused with 403, and a key the
//! environment does not belong to gets the REST API's 404 for it (the same rule,
//! [`Owners`]). [`crate::serve`] adds the `Host` check against DNS rebinding (421) and the
//! connection limits.

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Extension, State};
use axum::http::Request;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use hookbox_runtime::Runtime;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;

use super::McpTools;
use crate::auth::{self, Auth, Caller, KeyCheck};
use crate::keys::ApiKeys;
use crate::owners::Owners;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The router serving `tools` at [`MCP_PATH`], requests authenticated as `auth` says with the
/// API keys of `runtime`'s store, for callers the environment belongs to. Each request is answered on its own (no MCP session is kept
/// between requests), with a JSON body.
pub fn router(runtime: &Runtime, tools: McpTools, auth: Auth) -> Router {
    let served = Arc::new(Served {
        owners: Owners::new(Arc::clone(runtime.store()), auth),
        environment: tools.environment_id.clone(),
    });
    let key_check = Arc::new(KeyCheck {
        auth,
        keys: ApiKeys::new(Arc::clone(runtime.store())),
    });
    // The host check is `serve`'s (it knows `[server] allowed_hosts`); no browser page may
    // drive these tools, so any `Origin` is refused.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .disable_allowed_hosts()
        .enforce_origin_validation();
    let service = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .nest_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(served, owned))
        .layer(middleware::from_fn_with_state(
            key_check,
            auth::authenticate,
        ))
}

/// The environment served and who may use it.
struct Served {
    owners: Owners,
    environment: String,
}

/// Lets the request through if its caller may use the served environment; else the 404 the
/// REST API answers for it.
async fn owned(
    State(served): State<Arc<Served>>,
    Extension(caller): Extension<Caller>,
    request: Request<Body>,
    next: Next,
) -> Response {
    match served
        .owners
        .environment(&caller, &served.environment)
        .await
    {
        Ok(()) => next.run(request).await,
        Err(error) => error.into_response(),
    }
}
