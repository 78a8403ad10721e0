//! The MCP servers hookbox connects itself, through rmcp's client: `stdio` servers, each a
//! program started once per session **in the session's sandbox** (as its `Bash` runs, with its
//! network; never on the host unless the session is `--unsandboxed`) and spoken to over its
//! stdin and stdout, and `http` servers (streamable HTTP) through hookbox's guarded client.
//! Connecting (`initialize`, then `tools/list` page by page) is bounded by `MCP_TIMEOUT`
//! (Claude Code's variable, in milliseconds; 30 s by default); a tool call by
//! `MCP_TOOL_TIMEOUT` (10 minutes by default).

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use hookbox_agent::session::{McpServer, McpTool, McpToolResult, Session};
use hookbox_exec::{Interactive, ProcessSpec};
use hookbox_net::{EgressPolicy, GuardedClient};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;

use super::sdk;

/// How long connecting may take when `MCP_TIMEOUT` does not say (Claude Code's default).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a tool call may take when `MCP_TOOL_TIMEOUT` does not say: as long as the longest
/// `Bash` command (Claude Code waits about a day).
const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);

/// The most bytes of a stdio server's stderr kept (and quoted when it fails to connect).
const STDERR_LIMIT: usize = 64 * 1024;

/// How much of that stderr an error message quotes (its end).
const STDERR_QUOTED: usize = 2000;

/// How long a server that failed to connect is given to be seen exiting.
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// The locale given to stdio servers, as to `Bash`'s commands.
const LANG: &str = "C.UTF-8";

/// A connected server: calls go through `peer`.
struct RemoteServer {
    peer: Peer<RoleClient>,
    /// The connection; dropping it closes it.
    _service: RunningService<RoleClient, ()>,
    /// A stdio server's process: dropping it kills its sandbox.
    _child: Option<Interactive>,
}

/// Starts `command` with `args` and only the variables `env_vars` (besides `LANG` and the
/// sandbox's own) where the session's `Bash` runs, with its network, and connects to it over
/// its stdin and stdout. Its tools, and the connection; else why not, with the end of its
/// stderr.
pub(super) async fn stdio(
    session: &Session,
    command: &str,
    args: &[String],
    env_vars: &[(String, String)],
) -> Result<(Vec<McpTool>, Arc<dyn McpServer>), String> {
    let mut env = vec![("LANG".into(), LANG.into())];
    env.extend(
        env_vars
            .iter()
            .map(|(key, value)| (key.into(), value.into())),
    );
    let spec = ProcessSpec {
        program: command.into(),
        args: args.iter().map(Into::into).collect(),
        env_clear: true,
        env,
        output_limit: STDERR_LIMIT,
        ..ProcessSpec::shell("", Duration::MAX)
    };
    let mut child = session
        .spawn_confined(spec)
        .await
        .map_err(|error| format!("cannot start `{command}`: {error}"))?;
    let (Some(stdout), Some(stdin)) = (child.take_stdout(), child.take_stdin()) else {
        return Err(format!(
            "cannot start `{command}`: it has no stdin or stdout"
        ));
    };
    let timeout = connect_timeout();
    let error = match tokio::time::timeout(timeout, connect((stdout, stdin))).await {
        Ok(Ok((service, tools))) => {
            return Ok((
                tools,
                Arc::new(RemoteServer {
                    peer: service.peer().clone(),
                    _service: service,
                    _child: Some(child),
                }),
            ));
        }
        // A server that exited says so rather than how the pipe broke (its exit closed the
        // pipe just before the kernel reports it).
        Ok(Err(error)) => match tokio::time::timeout(EXIT_GRACE, child.exited()).await {
            Ok(()) => {
                // What it wrote before it exited may still be in the pipe.
                let _read = tokio::time::timeout(EXIT_GRACE, child.stderr_closed()).await;
                "it exited instead of answering `initialize`".to_owned()
            }
            Err(_) => error,
        },
        Err(_) => no_answer(timeout),
    };
    let stderr = child.stderr().to_text();
    let stderr = stderr.trim();
    Err(if stderr.is_empty() {
        format!("`{command}` did not connect: {error}")
    } else {
        let mut start = stderr.len().saturating_sub(STDERR_QUOTED);
        while !stderr.is_char_boundary(start) {
            start += 1;
        }
        format!(
            "`{command}` did not connect: {error}; its stderr: {}",
            &stderr[start..]
        )
    })
}

/// How long connecting may take: `MCP_TIMEOUT`, else Claude Code's default.
fn connect_timeout() -> Duration {
    duration_from_env("MCP_TIMEOUT").unwrap_or(DEFAULT_CONNECT_TIMEOUT)
}

/// The error of a server that did not connect within `timeout`.
fn no_answer(timeout: Duration) -> String {
    format!("no answer within {} ms (MCP_TIMEOUT)", timeout.as_millis())
}

/// Connects over `transport`: `initialize`, then every page of `tools/list`.
async fn connect<T, E, A>(
    transport: T,
) -> Result<(RunningService<RoleClient, ()>, Vec<McpTool>), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let service = ().serve(transport).await.map_err(|error| format!("initialize failed: {error}"))?;
    let listed = service
        .list_all_tools()
        .await
        .map_err(|error| format!("tools/list failed: {}", service_error(&error)))?;
    let tools = listed
        .iter()
        .map(|tool| {
            let value = serde_json::to_value(tool).map_err(|error| error.to_string())?;
            sdk::tool(&value)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((service, tools))
}

/// A duration in milliseconds from environment variable `name` (unset or not a number: none).
fn duration_from_env(name: &str) -> Option<Duration> {
    let value = std::env::var(name).ok()?;
    match value.trim().parse() {
        Ok(ms) => Some(Duration::from_millis(ms)),
        Err(_) => {
            crate::warn(&format!(
                "ignoring {name}={value:?}: not a whole number of milliseconds"
            ));
            None
        }
    }
}

/// What went wrong with a request, as the model reads it.
fn service_error(error: &ServiceError) -> String {
    match error {
        ServiceError::McpError(error) => error.message.to_string(),
        ServiceError::TransportClosed => {
            "the connection to the server is closed (the server is gone)".to_owned()
        }
        other => other.to_string(),
    }
}

impl McpServer for RemoteServer {
    fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
    ) -> BoxFuture<'static, Result<McpToolResult, String>> {
        let peer = self.peer.clone();
        let tool = tool.to_owned();
        Box::pin(async move {
            let Value::Object(arguments) = arguments else {
                return Err(format!("the input is not a JSON object: {arguments}"));
            };
            let call = peer.call_tool(CallToolRequestParams::new(tool).with_arguments(arguments));
            let timeout = duration_from_env("MCP_TOOL_TIMEOUT").unwrap_or(DEFAULT_TOOL_TIMEOUT);
            let result = tokio::time::timeout(timeout, call)
                .await
                .map_err(|_| {
                    format!(
                        "no answer within {} ms (MCP_TOOL_TIMEOUT)",
                        timeout.as_millis()
                    )
                })?
                .map_err(|error| service_error(&error))?;
            let value = serde_json::to_value(&result).map_err(|error| error.to_string())?;
            sdk::tool_result(&value)
        })
    }
}

/// Connects the streamable HTTP server at `url`, sending `headers` with each request, through
/// `client` (checked once for `url` under [`EgressPolicy::PUBLIC`], as HTTP hooks are; every
/// connection's address checked by its resolver). Its tools, and the connection.
pub(super) async fn http(
    client: &GuardedClient,
    url: &str,
    headers: &[(String, String)],
) -> Result<(Vec<McpTool>, Arc<dyn McpServer>), String> {
    let endpoint = client
        .endpoint(url, &EgressPolicy::PUBLIC, headers)
        .map_err(|error| error.to_string())?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url);
    config.custom_headers = endpoint
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    let transport = StreamableHttpClientTransport::with_client(endpoint.http, config);
    let timeout = connect_timeout();
    let (service, tools) = tokio::time::timeout(timeout, connect(transport))
        .await
        .unwrap_or_else(|_| Err(no_answer(timeout)))
        .map_err(|error| format!("{url} did not connect: {error}"))?;
    Ok((
        tools,
        Arc::new(RemoteServer {
            peer: service.peer().clone(),
            _service: service,
            _child: None,
        }),
    ))
}
