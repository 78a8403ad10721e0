//! MCP tools: the tools of the MCP servers a session's host connected, offered to the model as
//! `mcp__SERVER__TOOL` (Claude Code's names) and called through each server's [`McpServer`]
//! connection. They go through the same hooks and permission rules as the coding tools; a tool
//! is read-only (runs in `plan` mode, without asking in `acceptEdits`) only when its
//! annotations say so.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use hookbox_env::Effect;
use hookbox_llm::ToolDeclaration;
use serde_json::{Value, json};

/// The most bytes of a tool result's text the model sees (as `Bash`'s output is capped); the
/// rest is cut with a note saying how much.
pub const MAX_MCP_OUTPUT_BYTES: usize = hookbox_exec::ProcessSpec::DEFAULT_OUTPUT_LIMIT;

/// The longest offered tool name: model APIs refuse longer ones.
const MAX_NAME_LEN: usize = 64;

/// One tool an MCP server lists (`tools/list`).
#[derive(Debug, Clone, PartialEq)]
pub struct McpTool {
    /// Its name on the server.
    pub name: String,
    /// What it does (shown to the model).
    pub description: String,
    /// The JSON schema of its input.
    pub input_schema: Value,
    /// Its `readOnlyHint` annotation: it changes nothing.
    pub read_only: bool,
}

/// What a tool call gave back (`tools/call`'s result).
#[derive(Debug, Clone, PartialEq)]
pub struct McpToolResult {
    /// The MCP content blocks (`[{"type": "text", "text": …}, …]`).
    pub content: Vec<Value>,
    /// The server's `isError`: the call is a tool failure.
    pub is_error: bool,
}

/// The connection to one MCP server, as its host made it.
pub trait McpServer: Send + Sync {
    /// Calls the server's tool `tool` (its name on the server) with `arguments`; `Err` is a
    /// failure of the call itself (the server is gone, answered garbage…), for the model.
    fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
    ) -> BoxFuture<'static, Result<McpToolResult, String>>;
}

/// A server's state, as `system/init` and `mcp_status` report it.
#[derive(Debug, Clone, PartialEq)]
pub struct McpServerStatus {
    /// The server's configured name.
    pub name: String,
    /// Why it failed to connect (`None`: connected).
    pub error: Option<String>,
    /// The tools it offers: `(offered name, tool)`.
    pub tools: Vec<(String, McpTool)>,
    /// Tools it listed that are not offered, with why.
    pub skipped: Vec<String>,
}

impl McpServerStatus {
    /// `connected` or `failed`.
    pub fn status(&self) -> &'static str {
        if self.error.is_some() {
            "failed"
        } else {
            "connected"
        }
    }
}

/// The name Claude Code offers tool `tool` of server `server` under: `mcp__SERVER__TOOL`, each
/// part with every character but ASCII letters, digits, `_` and `-` replaced by `_`.
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let clean = |part: &str| -> String {
        part.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    format!("mcp__{}__{}", clean(server), clean(tool))
}

struct Offered {
    server: Arc<dyn McpServer>,
    tool: McpTool,
}

/// A session's MCP tools by offered name, and its servers' states.
#[derive(Default)]
pub(crate) struct McpTools {
    tools: BTreeMap<String, Offered>,
    servers: Vec<McpServerStatus>,
}

impl McpTools {
    /// Adds server `name` with the `tools` it listed, reached through `server`. A tool whose
    /// offered name is taken (by another tool after cleaning: `a__b`+`c` and
    /// `a`+`b__c` are both `mcp__a__b__c`), too long, or empty is skipped and said why.
    pub(crate) fn add(&mut self, name: &str, tools: Vec<McpTool>, server: Arc<dyn McpServer>) {
        let mut status = McpServerStatus {
            name: name.to_owned(),
            error: None,
            tools: Vec::new(),
            skipped: Vec::new(),
        };
        for tool in tools {
            let offered = mcp_tool_name(name, &tool.name);
            let problem = if tool.name.is_empty() {
                Some("it has no name".to_owned())
            } else if offered.len() > MAX_NAME_LEN {
                Some(format!(
                    "its name `{offered}` is longer than {MAX_NAME_LEN} characters"
                ))
            } else if self.tools.contains_key(&offered) {
                Some(format!("`{offered}` is already the name of another tool"))
            } else {
                None
            };
            if let Some(problem) = problem {
                status.skipped.push(format!(
                    "MCP server `{name}`: tool {:?} is not offered: {problem}",
                    tool.name
                ));
                continue;
            }
            status.tools.push((offered.clone(), tool.clone()));
            self.tools.insert(
                offered,
                Offered {
                    server: Arc::clone(&server),
                    tool,
                },
            );
        }
        self.servers.push(status);
    }

    /// Records server `name` as failed to connect, for `error`.
    pub(crate) fn add_failed(&mut self, name: &str, error: String) {
        self.servers.push(McpServerStatus {
            name: name.to_owned(),
            error: Some(error),
            tools: Vec::new(),
            skipped: Vec::new(),
        });
    }

    /// The servers' states, in the order they were added.
    pub(crate) fn servers(&self) -> &[McpServerStatus] {
        &self.servers
    }

    /// Whether `name` is an MCP tool of the session.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The offered names, sorted.
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    /// The names offered to the model, sorted: all but those `disallowed` names (a
    /// disallowed tool is not offered at all, as in Claude Code).
    pub(crate) fn offered(&self, disallowed: &[String]) -> Vec<String> {
        self.names()
            .filter(|tool| !super::permissions::listed(disallowed, tool))
            .map(str::to_owned)
            .collect()
    }

    /// The declarations of the tools named `names` that are MCP tools.
    pub(crate) fn declarations<'a>(
        &self,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Vec<ToolDeclaration> {
        names
            .into_iter()
            .filter_map(|name| {
                self.tools.get(name).map(|offered| ToolDeclaration {
                    name: name.to_owned(),
                    description: offered.tool.description.clone(),
                    parameters: offered.tool.input_schema.clone(),
                })
            })
            .collect()
    }

    /// What MCP tool `name` does for the permission modes: it reads when its annotations say
    /// so; `None` for any other tool (one that may change anything).
    pub(crate) fn effect(&self, name: &str) -> Option<Effect> {
        self.tools
            .get(name)
            .filter(|offered| offered.tool.read_only)
            .map(|_| Effect::Reads)
    }

    /// Calls MCP tool `name`: the text the model sees, the response hooks and the SDK see (the
    /// content blocks), and the error when the call failed (`isError`, or the call itself).
    pub(crate) async fn call(&self, name: &str, input: &Value) -> (String, Value, Option<String>) {
        let Some(offered) = self.tools.get(name) else {
            let error = format!("No such tool available: {name}");
            return (error.clone(), json!({"error": error}), Some(error));
        };
        match offered
            .server
            .call_tool(&offered.tool.name, input.clone())
            .await
        {
            Ok(result) => {
                let text = capped(content_text(&result.content));
                let response = if text.len() < MAX_MCP_OUTPUT_BYTES {
                    Value::Array(result.content)
                } else {
                    json!([{"type": "text", "text": text}])
                };
                let error = result.is_error.then(|| text.clone());
                (text, response, error)
            }
            Err(error) => {
                let error = capped(format!("MCP tool {name} failed: {error}"));
                (error.clone(), json!({"error": error}), Some(error))
            }
        }
    }
}

/// The text of MCP content blocks, as the model sees it: text blocks as they are, an embedded
/// resource's text, a note for images and audio, anything else as its JSON; one per line.
fn content_text(content: &[Value]) -> String {
    let texts: Vec<String> = content
        .iter()
        .map(|block| {
            let text = |value: &Value| value.as_str().map(str::to_owned);
            match block.get("type").and_then(Value::as_str) {
                Some("text") => block.get("text").and_then(text),
                Some("resource") => block.pointer("/resource/text").and_then(text),
                Some(kind @ ("image" | "audio")) => Some(format!(
                    "[{kind}: {}]",
                    block
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown type")
                )),
                _ => None,
            }
            .unwrap_or_else(|| block.to_string())
        })
        .collect();
    texts.join("\n")
}

/// `text` cut to [`MAX_MCP_OUTPUT_BYTES`] (at a character boundary) with a note.
fn capped(mut text: String) -> String {
    if text.len() <= MAX_MCP_OUTPUT_BYTES {
        return text;
    }
    let total = text.len();
    let mut cut = MAX_MCP_OUTPUT_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(&format!(
        "\n[hookbox: the MCP tool's output was {total} bytes; cut to the first {cut}]"
    ));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl McpServer for Echo {
        fn call_tool(
            &self,
            tool: &str,
            arguments: Value,
        ) -> BoxFuture<'static, Result<McpToolResult, String>> {
            let text = format!("{tool} {arguments}");
            Box::pin(async move {
                Ok(McpToolResult {
                    content: vec![json!({"type": "text", "text": text})],
                    is_error: false,
                })
            })
        }
    }

    fn tool(name: &str) -> McpTool {
        McpTool {
            name: name.to_owned(),
            description: String::new(),
            input_schema: json!({"type": "object"}),
            read_only: false,
        }
    }

    #[test]
    fn names_are_cleaned_and_collisions_skipped() {
        assert_eq!(mcp_tool_name("my server", "do.it"), "mcp__my_server__do_it");
        let mut tools = McpTools::default();
        tools.add("a__b", vec![tool("c")], Arc::new(Echo));
        tools.add(
            "a",
            vec![tool("b__c"), tool(""), tool(&"x".repeat(80)), tool("Bash")],
            Arc::new(Echo),
        );
        let names: Vec<&str> = tools.names().collect();
        assert_eq!(names, ["mcp__a__Bash", "mcp__a__b__c"]);
        assert_eq!(tools.servers()[1].skipped.len(), 3, "{:?}", tools.servers());
        assert!(tools.servers()[1].skipped[0].contains("already the name"));
    }

    #[tokio::test]
    async fn calls_reach_the_tool_by_its_server_name_and_output_is_capped() {
        let mut tools = McpTools::default();
        tools.add("s", vec![tool("echo")], Arc::new(Echo));
        let (text, response, error) = tools.call("mcp__s__echo", &json!({"a": 1})).await;
        assert_eq!(text, "echo {\"a\":1}");
        assert_eq!(
            response,
            json!([{"type": "text", "text": "echo {\"a\":1}"}])
        );
        assert_eq!(error, None);
        let huge = capped("é".repeat(MAX_MCP_OUTPUT_BYTES));
        assert!(huge.len() < MAX_MCP_OUTPUT_BYTES + 100);
        assert!(huge.ends_with(&format!(
            "output was {} bytes; cut to the first {}]",
            2 * MAX_MCP_OUTPUT_BYTES,
            MAX_MCP_OUTPUT_BYTES
        )));
    }

    #[test]
    fn content_blocks_become_text() {
        let content = [
            json!({"type": "text", "text": "one"}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "file:///x", "text": "two"}}),
            json!({"type": "other"}),
        ];
        assert_eq!(
            content_text(&content),
            "one\n[image: image/png]\ntwo\n{\"type\":\"other\"}"
        );
    }
}
