//! `hookbox mcp --listen`: the MCP server over streamable HTTP at `/mcp`, behind the REST
//! API's guards: every request needs an API key (`hookbox api-keys create`; `Authorization:
//! Bearer`, `x-goog-api-key` or `?key=`) unless authentication is disabled, and a request
//! carrying an `Origin` (a web page, whatever its host) is refused with 403. [`crate::serve`]
//! adds the `Host` check against DNS rebinding (421) and the connection limits.

use std::sync::Arc;

use axum::Router;
use axum::middleware;
use hookbox_runtime::Runtime;
use rmcp::transport::StreamableHttpService;
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;

use super::McpTools;
use crate::auth::{self, Auth, KeyCheck};
use crate::keys::ApiKeys;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

/// The router serving `tools` at [`MCP_PATH`], requests authenticated as `auth` says with the
/// API keys of `runtime`'s store. Each request is answered on its own (no MCP session is kept
/// between requests), with a JSON body.
pub fn router(runtime: &Runtime, tools: McpTools, auth: Auth) -> Router {
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
        .layer(middleware::from_fn_with_state(
            key_check,
            auth::authenticate,
        ))
}
