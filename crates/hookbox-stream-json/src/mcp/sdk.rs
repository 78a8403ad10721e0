//! SDK-hosted MCP servers (`create_sdk_mcp_server`): JSON-RPC carried in `mcp_message` control
//! requests (`docs/wire/sdk-control-protocol.md` §6), as Claude Code speaks to them:
//! `initialize`, `notifications/initialized` and `tools/list` when the session starts,
//! `tools/call` for each call. The cortex SDK also sends the tools' definitions in
//! `initialize` (`sdkMcpToolDefinitions`) and takes calls as `mcp_tool_call` requests; those
//! servers are listed from the definitions and called that way.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::future::BoxFuture;
use hookbox_agent::session::{McpServer, McpTool, McpToolResult};
use serde_json::{Value, json};

use crate::control::ControlClient;

/// How long hookbox waits for each answer while connecting a server (Claude Code's default
/// `MCP_TIMEOUT`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The most `tools/list` pages read from one server.
const MAX_PAGES: usize = 100;

/// The MCP protocol version hookbox asks for.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// One SDK-hosted server, reached through the SDK.
pub(crate) struct SdkServer {
    name: String,
    client: ControlClient,
    /// cortex: calls go as `mcp_tool_call` requests.
    direct_calls: bool,
    next_id: AtomicU64,
}

impl SdkServer {
    /// Server `name` of the SDK behind `client`; `direct_calls` for the cortex SDK's
    /// `mcp_tool_call`.
    pub(crate) fn new(name: &str, client: ControlClient, direct_calls: bool) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            client,
            direct_calls,
            next_id: AtomicU64::new(0),
        })
    }

    /// Sends one JSON-RPC message to the server and returns its answer (the `result` of a
    /// request); a JSON-RPC error or an answer that is not one is an error saying so.
    async fn rpc(
        &self,
        client: &ControlClient,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let mut message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        let notification = method.starts_with("notifications/");
        if !notification {
            message["id"] = json!(self.next_id.fetch_add(1, Ordering::Relaxed));
        }
        let reply = client
            .request(
                json!({"subtype": "mcp_message", "server_name": self.name, "message": message}),
            )
            .await?;
        if notification {
            return Ok(Value::Null);
        }
        let response = reply.get("mcp_response").unwrap_or(&Value::Null);
        if let Some(error) = response.get("error") {
            let text = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(format!("{method} failed: {text}"));
        }
        match response.get("result") {
            Some(result) if result.is_object() => Ok(result.clone()),
            _ => Err(format!(
                "the answer to {method} is not a JSON-RPC result: {}",
                excerpt(&reply)
            )),
        }
    }

    /// Connects the server the way Claude Code does (`initialize`,
    /// `notifications/initialized`, `tools/list` page by page) through `client` (one that
    /// does not wait on the query driver), each answer within [`CONNECT_TIMEOUT`]; returns
    /// its tools.
    pub(crate) async fn list_tools(&self, client: &ControlClient) -> Result<Vec<McpTool>, String> {
        let timed = |work| async move {
            tokio::time::timeout(CONNECT_TIMEOUT, work)
                .await
                .unwrap_or_else(|_| {
                    Err(format!("no answer within {} s", CONNECT_TIMEOUT.as_secs()))
                })
        };
        let hello = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "hookbox", "version": env!("CARGO_PKG_VERSION")},
        });
        timed(self.rpc(client, "initialize", hello)).await?;
        timed(self.rpc(client, "notifications/initialized", json!({}))).await?;
        let mut tools = Vec::new();
        let mut cursor = Value::Null;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Value::Null => json!({}),
                cursor => json!({"cursor": cursor}),
            };
            let page = timed(self.rpc(client, "tools/list", params)).await?;
            let Some(listed) = page.get("tools").and_then(Value::as_array) else {
                return Err(format!(
                    "tools/list answered without a `tools` array: {}",
                    excerpt(&page)
                ));
            };
            tools.extend(listed.iter().map(tool).collect::<Result<Vec<_>, _>>()?);
            cursor = page.get("nextCursor").cloned().unwrap_or(Value::Null);
            if cursor.is_null() {
                break;
            }
        }
        Ok(tools)
    }
}

/// One tool of `tools/list` (or cortex's `sdkMcpToolDefinitions`).
pub(crate) fn tool(listed: &Value) -> Result<McpTool, String> {
    let Some(name) = listed.get("name").and_then(Value::as_str) else {
        return Err(format!(
            "a listed tool has no string `name`: {}",
            excerpt(listed)
        ));
    };
    let input_schema = match listed.get("inputSchema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        None | Some(Value::Null) => json!({"type": "object", "properties": {}}),
        Some(other) => {
            return Err(format!(
                "tool `{name}`'s inputSchema is not an object: {}",
                excerpt(other)
            ));
        }
    };
    Ok(McpTool {
        name: name.to_owned(),
        description: listed
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        input_schema,
        read_only: listed.pointer("/annotations/readOnlyHint") == Some(&Value::Bool(true)),
    })
}

impl McpServer for SdkServer {
    fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
    ) -> BoxFuture<'static, Result<McpToolResult, String>> {
        let client = self.client.clone();
        let (server, tool) = (self.name.clone(), tool.to_owned());
        if self.direct_calls {
            return Box::pin(async move {
                let request = json!({"subtype": "mcp_tool_call", "server_name": server,
                                     "tool_name": tool, "arguments": arguments});
                let reply = client.request(request).await?;
                tool_result(reply.get("result").unwrap_or(&Value::Null))
            });
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        Box::pin(async move {
            let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                 "params": {"name": tool, "arguments": arguments}});
            let reply = client
                .request(
                    json!({"subtype": "mcp_message", "server_name": server, "message": message}),
                )
                .await?;
            let response = reply.get("mcp_response").unwrap_or(&Value::Null);
            if let Some(error) = response.get("error") {
                let text = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_owned);
                return Err(text);
            }
            tool_result(response.get("result").unwrap_or(&Value::Null))
        })
    }
}

/// A `tools/call` result: its `content` blocks and `isError` (the cortex SDK writes
/// `is_error`).
pub(crate) fn tool_result(result: &Value) -> Result<McpToolResult, String> {
    let Some(content) = result.get("content").and_then(Value::as_array) else {
        return Err(format!(
            "the server answered with something that is not an MCP tool result (no `content` \
             array): {}",
            excerpt(result)
        ));
    };
    let is_error = [result.get("isError"), result.get("is_error")]
        .into_iter()
        .flatten()
        .any(|flag| flag == &Value::Bool(true));
    Ok(McpToolResult {
        content: content.clone(),
        is_error,
    })
}

/// The start of `value`'s JSON, for error messages.
fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_and_results_are_read_or_refused_clearly() {
        let listed = json!({"name": "add", "description": "Add", "inputSchema": {"type": "object"},
                            "annotations": {"readOnlyHint": true}});
        let add = tool(&listed).unwrap();
        assert!(add.read_only);
        assert_eq!(add.description, "Add");
        assert!(!tool(&json!({"name": "x"})).unwrap().read_only);
        assert!(tool(&json!({"description": "no name"})).is_err());
        assert!(tool(&json!({"name": "x", "inputSchema": "s"})).is_err());
        let failed = tool_result(&json!({"content": [], "is_error": true})).unwrap();
        assert!(failed.is_error);
        let failed = tool_result(&json!({"content": [], "isError": true})).unwrap();
        assert!(failed.is_error);
        let garbage = tool_result(&json!("lol".repeat(500))).unwrap_err();
        assert!(garbage.contains("not an MCP tool result"), "{garbage}");
        assert!(garbage.len() < 400, "{garbage}");
    }
}
