//! The session's MCP servers: those of `--mcp-config` and the cortex SDK's `sdkMcpServers`
//! (none under `--no-mcp`), connected before the session starts and handed to it; and the
//! `mcp_status` answer.
//! SDK-hosted servers (`type: "sdk"`) are served by the SDK over the control protocol
//! ([`sdk`]) and connected before the session is built; `stdio` and `http` servers are
//! connected by hookbox itself through rmcp's client ([`remote`]) once the session exists,
//! since a stdio server runs in its sandbox; other kinds (`sse`) are reported `failed`.
//! Nothing the model can write is trusted: a configuration file where it writes expands no
//! `${VAR}` ([`config`]), and a stdio server's files there are kept read-only to it, or the
//! server refused ([`trust`]).

mod config;
mod remote;
mod sdk;
mod trust;
mod writable;

use std::path::PathBuf;
use std::sync::Arc;

use hookbox_agent::session::{McpServer, McpServerStatus, McpTool, Session, SessionBuilder};
use hookbox_net::GuardedClient;
use serde_json::{Value, json};

pub(crate) use config::ServerConfig;
use config::Transport;
use writable::Writable;

use crate::control::ControlClient;
use crate::init::InitOptions;
use crate::setup::Setup;

/// What the session being built gets of its MCP servers: the SDK-hosted ones, connected, and
/// the paths of the stdio ones' files to keep read-only to the model ([`protect`]).
pub(crate) struct ForSession {
    /// The SDK-hosted servers.
    pub(crate) hosted: Vec<Connected>,
    /// The paths (directories, and masks of missing scripts).
    pub(crate) protected: Vec<PathBuf>,
}

/// A configured server, connected or not.
pub(crate) enum Connected {
    /// Its tools, and the connection calls go through.
    Ready {
        name: String,
        tools: Vec<McpTool>,
        server: Arc<dyn McpServer>,
    },
    /// Why it is not usable.
    Failed { name: String, error: String },
}

impl Connected {
    /// Hands the server to the session being built.
    pub(crate) fn add_to(self, builder: SessionBuilder) -> SessionBuilder {
        match self {
            Self::Ready {
                name,
                tools,
                server,
            } => builder.mcp_server(&name, tools, server),
            Self::Failed { name, error } => builder.failed_mcp_server(&name, error),
        }
    }
}

/// The configured servers: `--mcp-config`'s, then the cortex SDK's
/// `sdkMcpServers` not among them; none under `--no-mcp` (its `--mcp-config` not even read).
/// An unusable `--mcp-config` is an error, and so is a `${VAR}` in one the model can write.
pub(crate) fn configured(setup: &Setup, init: &InitOptions) -> anyhow::Result<Vec<ServerConfig>> {
    let args = &setup.args;
    if args.no_mcp {
        return Ok(Vec::new());
    }
    let mut servers = config::parse(&args.mcp_configs, &writable(setup))?;
    for name in &init.sdk_mcp_servers {
        if !servers.iter().any(|known| known.name == *name) {
            servers.push(ServerConfig {
                name: name.clone(),
                kind: "sdk".to_owned(),
                source: "the SDK's sdkMcpServers".to_owned(),
                transport: Transport::Other,
            });
        }
    }
    Ok(servers)
}

/// Where the model writes in the session `setup` builds: its working directory and added
/// directories.
fn writable(setup: &Setup) -> Writable {
    let added = setup.args.add_dirs.iter().map(|dir| setup.cwd.join(dir));
    Writable::new(std::iter::once(setup.cwd.clone()).chain(added))
}

/// The paths of the stdio `servers`' programs and scripts (their directories) that the session
/// `setup` builds must keep read-only to the model; a server whose files cannot be is refused (it
/// fails to connect, saying why).
pub(crate) fn protect(servers: &mut [ServerConfig], setup: &Setup) -> Vec<PathBuf> {
    // Where the servers start: the working directory as the sandbox binds it.
    let cwd = setup
        .cwd
        .canonicalize()
        .unwrap_or_else(|_| setup.cwd.clone());
    trust::secure(servers, &writable(setup), &cwd)
}

/// Whether hookbox connects `server` itself, once the session is built ([`connect_to`]).
pub(crate) fn connected_by_hookbox(server: &ServerConfig) -> bool {
    !matches!(server.transport, Transport::Other)
}

/// Connects every configured server: lists an SDK-hosted server's tools (from the cortex
/// SDK's definitions when it sent them, else over `mcp_message` through `connecting`, a client
/// that does not wait on the query driver), its calls later going through `client`. A server
/// that cannot be connected is `Failed`, with a warning on stderr.
pub(crate) async fn connect(
    servers: Vec<ServerConfig>,
    init: &InitOptions,
    client: &ControlClient,
    connecting: &ControlClient,
) -> Vec<Connected> {
    let mut connected = Vec::new();
    for ServerConfig { name, kind, .. } in servers {
        let outcome = if kind == "sdk" {
            let definitions = init
                .sdk_mcp_tool_definitions
                .iter()
                .find(|(server, _)| *server == name)
                .map(|(_, tools)| tools);
            let server = sdk::SdkServer::new(&name, client.clone(), definitions.is_some());
            let tools = match definitions {
                Some(tools) => tools.iter().map(sdk::tool).collect(),
                None => server.list_tools(connecting).await,
            };
            tools.map(|tools| (tools, server as Arc<dyn McpServer>))
        } else {
            Err(format!(
                "`{kind}` MCP servers are not supported (hookbox connects `sdk`, `stdio` and \
                 `http` ones); its tools are not offered"
            ))
        };
        connected.push(match outcome {
            Ok((tools, server)) => Connected::Ready {
                name,
                tools,
                server,
            },
            Err(error) => {
                crate::warn(&format!("MCP server `{name}`: {error}"));
                Connected::Failed { name, error }
            }
        });
    }
    connected
}

/// Connects the `stdio` and `http` `servers` to `session` (before its first query): a stdio
/// server starts in the session's sandbox, an http one is reached through `http`; all at
/// once, recorded in their order. A server that cannot be connected is recorded `failed`,
/// with a warning on stderr; so are tools it lists that cannot be offered. (`servers` are
/// those [`connected_by_hookbox`] says.)
pub(crate) async fn connect_to(
    session: &mut Session,
    servers: Vec<ServerConfig>,
    http: &GuardedClient,
) {
    // All at once, as Claude Code does: a slow server does not delay the others.
    let connecting = servers.into_iter().map(|server| {
        let session = &*session;
        async move {
            let outcome = match server.transport {
                Transport::Stdio { command, args, env } => {
                    remote::stdio(session, &command, &args, &env).await
                }
                Transport::Http { url, headers } => remote::http(http, &url, &headers).await,
                Transport::Refused(why) => Err(why),
                Transport::Other => Err("not a server hookbox connects".to_owned()),
            };
            (server.name, outcome)
        }
    });
    for (name, outcome) in futures_util::future::join_all(connecting).await {
        match outcome {
            Ok((tools, connection)) => {
                session.add_mcp_server(&name, tools, connection).await;
                for skipped in session
                    .mcp_servers()
                    .last()
                    .into_iter()
                    .flat_map(|s| &s.skipped)
                {
                    crate::warn(skipped);
                }
            }
            Err(error) => {
                crate::warn(&format!("MCP server `{name}`: {error}"));
                session.add_failed_mcp_server(&name, error).await;
            }
        }
    }
}

/// The `mcp_status` answer: each server with its status, error and tools (Claude Code's
/// `McpServerStatus`); `servers` is `None` before the session starts, when every configured
/// server (`pending`) is still to be connected.
pub(crate) fn status(servers: Option<&[McpServerStatus]>, pending: &[ServerConfig]) -> Value {
    let servers: Vec<Value> = match servers {
        Some(servers) => servers
            .iter()
            .map(|server| {
                let tools: Vec<Value> = server
                    .tools
                    .iter()
                    .map(|(_, tool)| {
                        json!({"name": tool.name, "description": tool.description,
                               "annotations": {"readOnly": tool.read_only}})
                    })
                    .collect();
                let mut entry =
                    json!({"name": server.name, "status": server.status(), "tools": tools});
                if let Some(error) = &server.error {
                    entry["error"] = json!(error);
                }
                entry
            })
            .collect(),
        None => pending
            .iter()
            .map(|server| json!({"name": server.name, "status": "pending"}))
            .collect(),
    };
    json!({"mcpServers": servers})
}
