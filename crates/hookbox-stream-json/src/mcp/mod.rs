//! The session's MCP servers: those of `--mcp-config` and the cortex SDK's `sdkMcpServers`
//! (none under `--no-mcp`), connected before the session starts and handed to it; and the
//! `mcp_status` answer.
//! SDK-hosted servers (`type: "sdk"`) are served by the SDK over the control protocol
//! ([`sdk`]); other kinds are reported `failed` (not supported yet).

mod config;
mod sdk;

use std::sync::Arc;

use hookbox_agent::session::{McpServer, McpServerStatus, McpTool, SessionBuilder};
use serde_json::{Value, json};

use crate::argv::SdkArgs;
use crate::control::ControlClient;
use crate::init::InitOptions;

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

/// The names of the configured servers: `--mcp-config`'s, then the cortex SDK's
/// `sdkMcpServers` not among them; none under `--no-mcp` (its `--mcp-config` not even read).
/// An unusable `--mcp-config` is an error.
pub(crate) fn configured(
    args: &SdkArgs,
    init: &InitOptions,
) -> anyhow::Result<Vec<(String, String)>> {
    if args.no_mcp {
        return Ok(Vec::new());
    }
    let mut servers: Vec<(String, String)> = config::parse(&args.mcp_configs)?
        .into_iter()
        .map(|server| (server.name, server.kind))
        .collect();
    for name in &init.sdk_mcp_servers {
        if !servers.iter().any(|(known, _)| known == name) {
            servers.push((name.clone(), "sdk".to_owned()));
        }
    }
    Ok(servers)
}

/// Connects every configured server: lists an SDK-hosted server's tools (from the cortex
/// SDK's definitions when it sent them, else over `mcp_message` through `connecting`, a client
/// that does not wait on the query driver), its calls later going through `client`. A server
/// that cannot be connected is `Failed`, with a warning on stderr.
pub(crate) async fn connect(
    servers: Vec<(String, String)>,
    init: &InitOptions,
    client: &ControlClient,
    connecting: &ControlClient,
) -> Vec<Connected> {
    let mut connected = Vec::new();
    for (name, kind) in servers {
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
                "`{kind}` MCP servers are not supported yet (only SDK-hosted `sdk` servers are); \
                 its tools are not offered"
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

/// The `mcp_status` answer: each server with its status, error and tools (Claude Code's
/// `McpServerStatus`); `servers` is `None` before the session starts, when every configured
/// server (`pending`) is still to be connected.
pub(crate) fn status(servers: Option<&[McpServerStatus]>, pending: &[(String, String)]) -> Value {
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
            .map(|(name, _)| json!({"name": name, "status": "pending"}))
            .collect(),
    };
    json!({"mcpServers": servers})
}
