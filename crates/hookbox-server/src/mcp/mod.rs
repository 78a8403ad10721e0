//! `hookbox mcp`: one environment's built-in tools as an MCP server (the `rmcp` crate).
//!
//! [`McpTools`] answers `tools/list` with the registry's five sandbox tools (their names,
//! descriptions and JSON schemas exactly as the Interactions agent declares them to models) and
//! runs each `tools/call` through [`SandboxTools::call`]: the environment's pre hooks, the tool
//! in its sandbox (egress through the runtime's proxy), its post hooks, `at_least_once` events
//! in the audit outbox. A denied call is a tool result with `isError: true` whose text carries
//! the hook's reason, as the Interactions agent shows its model; a tool that fails is an
//! `isError: true` result too; an unknown tool is a JSON-RPC error (`-32602`).
//!
//! It is served over stdio ([`McpTools::serve_stdio`]) or streamable HTTP ([`router`], behind
//! the REST API's API keys; [`serve`](crate::serve) adds the same host check and connection
//! limits).

mod http;

use std::sync::Arc;

use hookbox_agent::{SandboxTools, ToolCallReport, builtin_declarations};
use hookbox_env::{Vocabulary, builtin_tool, builtin_tools};
use hookbox_llm::ToolDeclaration;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;

pub use http::{MCP_PATH, router};

/// Why the stdio MCP server stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The client closed the connection or spoke no MCP before `initialize` was answered.
    #[error("the MCP client did not initialize the connection: {0}")]
    Initialize(#[source] Box<rmcp::service::ServerInitializeError>),
    /// The task serving the connection failed.
    #[error("the MCP server stopped unexpectedly: {0}")]
    Stopped(#[from] tokio::task::JoinError),
}

/// One environment's built-in tools, served as MCP tools.
#[derive(Clone)]
pub struct McpTools {
    tools: Arc<SandboxTools>,
    environment_id: String,
}

impl McpTools {
    /// The tools of `tools` (one environment's, from `Runtime::sandbox_tools`), which is
    /// `environment_id`.
    pub fn new(tools: SandboxTools, environment_id: &str) -> Self {
        Self {
            tools: Arc::new(tools),
            environment_id: environment_id.to_owned(),
        }
    }

    /// Serves the MCP client on standard input and output until it closes them.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| McpError::Initialize(Box::new(error)))?;
        running.waiting().await?;
        Ok(())
    }

    /// Calls `name` through the environment's hooks and sandbox.
    async fn call(&self, name: &str, arguments: Value) -> Result<CallToolResult, ErrorData> {
        if builtin_tool(Vocabulary::Sandbox, name).is_none() {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{name}`; this server's tools are {}",
                    tool_names().join(", ")
                ),
                None,
            ));
        }
        let report = match self.tools.call(name, arguments, None).await {
            Ok(report) => report,
            Err(error) => {
                return Ok(CallToolResult::error(vec![ContentBlock::text(
                    error.to_string(),
                )]));
            }
        };
        self.log(&report);
        let (content, is_error) = report.model_result();
        let text = match content {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let content = vec![ContentBlock::text(text)];
        Ok(if is_error {
            CallToolResult::error(content)
        } else {
            CallToolResult::success(content)
        })
    }

    /// Logs what the caller does not see: hooks that failed open, problems with hook files.
    fn log(&self, report: &ToolCallReport) {
        let environment = self.environment_id.as_str();
        report.log_hook_problems(&format!("environment {environment}"));
        if report.denied {
            tracing::info!(
                environment,
                tool = report.tool,
                reason = report.reason.as_deref().unwrap_or("no reason given"),
                "denied by a pre_tool_execution hook"
            );
        }
    }
}

impl ServerHandler for McpTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("hookbox", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "The tools of hookbox environment {}: code and files in its sandbox, every call \
                 through the environment's hooks (a call they deny fails with their reason).",
                self.environment_id
            ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            builtin_declarations(Vocabulary::Sandbox)
                .into_iter()
                .map(tool)
                .collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&request.name, arguments).await?.into())
    }
}

/// `declaration` (as models are offered it) as an MCP tool.
fn tool(declaration: ToolDeclaration) -> Tool {
    let schema = match declaration.parameters {
        Value::Object(schema) => schema,
        _ => serde_json::Map::new(),
    };
    Tool::new(declaration.name, declaration.description, schema)
}

/// The names of the sandbox tools.
fn tool_names() -> Vec<&'static str> {
    builtin_tools(Vocabulary::Sandbox)
        .map(|definition| definition.name)
        .collect()
}
