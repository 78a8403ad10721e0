//! The SDK's `initialize` request (`docs/wire/sdk-control-protocol.md` §6): its hook matchers,
//! sub-agents and the cortex extras, read into what the session is built with.

use std::time::Duration;

use hookbox_hooks::HookEvent;
use serde_json::{Map, Value};

use crate::agent_files::AgentSpec;

/// The default time limit of an SDK hook matcher.
pub(crate) const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(60);

/// One SDK matcher: its callbacks on one event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RemoteMatcher {
    /// The event.
    pub(crate) event: HookEvent,
    /// The matcher (`None` = everything; the SDKs' `null`, `""` and `"*"`).
    pub(crate) matcher: Option<String>,
    /// The callback ids, in order.
    pub(crate) callback_ids: Vec<String>,
    /// The matcher's time limit.
    pub(crate) timeout: Duration,
    /// `onFailure` other than `"continue"` (claude-agent-sdk's `on_failure="block"`; like
    /// Claude Code, an unknown value counts as `"block"`): a reply the CLI would reject
    /// blocks too.
    pub(crate) blocks_on_failure: bool,
}

/// What `initialize` asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct InitOptions {
    /// The hook matchers.
    pub(crate) hooks: Vec<RemoteMatcher>,
    /// The sub-agents, by name.
    pub(crate) agents: Vec<(String, AgentSpec)>,
    /// cortex `sdkManagedPermissions`: ask the SDK's `can_use_tool`.
    pub(crate) sdk_managed_permissions: bool,
    /// cortex `systemPrompt`.
    pub(crate) system_prompt: Option<String>,
    /// cortex `appendSystemPrompt`.
    pub(crate) append_system_prompt: Option<String>,
    /// cortex `settingSources`.
    pub(crate) setting_sources: Option<Vec<String>>,
    /// `forwardSubagentText`: sub-agents' text and thinking reach the SDK too, not only their
    /// tool calls and results.
    pub(crate) forward_subagent_text: bool,
    /// cortex `sdkMcpServers`: the names of the servers the SDK hosts.
    pub(crate) sdk_mcp_servers: Vec<String>,
    /// cortex `sdkMcpToolDefinitions`: each SDK-hosted server's tools as `tools/list` gives
    /// them.
    pub(crate) sdk_mcp_tool_definitions: Vec<(String, Vec<Value>)>,
    /// What hookbox could not use (reported on stderr).
    pub(crate) warnings: Vec<String>,
}

/// Reads an `initialize` request.
pub(crate) fn parse(request: &Map<String, Value>) -> InitOptions {
    let mut options = InitOptions::default();
    if let Some(Value::Object(hooks)) = request.get("hooks") {
        for (name, matchers) in hooks {
            let event = match HookEvent::from_name(name) {
                Some(event) if event.dialect() == hookbox_hooks::Dialect::Sdk => event,
                _ => {
                    options
                        .warnings
                        .push(format!("ignoring hooks on unknown event `{name}`"));
                    continue;
                }
            };
            let Some(matchers) = matchers.as_array() else {
                continue;
            };
            for entry in matchers {
                options.hooks.push(matcher(event, entry));
            }
        }
    }
    if let Some(Value::Object(agents)) = request.get("agents") {
        for (name, definition) in agents {
            let text = |key: &str| {
                definition
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let tools = definition
                .get("tools")
                .and_then(Value::as_array)
                .map(|tools| {
                    tools
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                });
            options.agents.push((
                name.clone(),
                AgentSpec {
                    description: text("description"),
                    prompt: text("prompt"),
                    tools,
                    model: Some(text("model")).filter(|model| !model.is_empty()),
                },
            ));
        }
    }
    options.sdk_managed_permissions = request
        .get("sdkManagedPermissions")
        .and_then(Value::as_bool)
        == Some(true);
    options.forward_subagent_text =
        request.get("forwardSubagentText").and_then(Value::as_bool) == Some(true);
    let text = |key: &str| {
        request
            .get(key)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
            .map(str::to_owned)
    };
    options.system_prompt = text("systemPrompt");
    options.append_system_prompt = text("appendSystemPrompt");
    options.setting_sources =
        request
            .get("settingSources")
            .and_then(Value::as_array)
            .map(|sources| {
                sources
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            });
    options.sdk_mcp_servers = request
        .get("sdkMcpServers")
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(definitions)) = request.get("sdkMcpToolDefinitions") {
        for (server, tools) in definitions {
            match tools.as_array() {
                Some(tools) => options
                    .sdk_mcp_tool_definitions
                    .push((server.clone(), tools.clone())),
                None => options.warnings.push(format!(
                    "ignoring sdkMcpToolDefinitions.{server}: not an array of tools; its tools \
                     are listed with tools/list"
                )),
            }
        }
    }
    options
}

fn matcher(event: HookEvent, entry: &Value) -> RemoteMatcher {
    let matcher = entry
        .get("matcher")
        .and_then(Value::as_str)
        .filter(|matcher| !matcher.is_empty() && *matcher != "*")
        .map(str::to_owned);
    let callback_ids = entry
        .get("hookCallbackIds")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let timeout = entry
        .get("timeout")
        .and_then(Value::as_f64)
        .filter(|seconds| seconds.is_finite() && *seconds > 0.0)
        .map(|seconds| Duration::from_secs_f64(seconds.min(86_400.0)))
        .unwrap_or(DEFAULT_HOOK_TIMEOUT);
    let blocks_on_failure = entry
        .get("onFailure")
        .is_some_and(|value| !value.is_null() && value.as_str() != Some("continue"));
    RemoteMatcher {
        event,
        matcher,
        callback_ids,
        timeout,
        blocks_on_failure,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_hooks_agents_and_cortex_extras() {
        let request = json!({
            "subtype": "initialize",
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hookCallbackIds": ["hook_0", "hook_1"], "timeout": 30},
                    {"matcher": null, "hookCallbackIds": ["hook_2"], "onFailure": "block"}
                ],
                "PostToolUse": [{"matcher": "*", "hookCallbackIds": ["hook_3"], "timeout": 0.5}],
                "Bogus": [{"hookCallbackIds": ["hook_4"]}]
            },
            "agents": {"reviewer": {"description": "d", "prompt": "p", "tools": ["Read"], "model": "sonnet"}},
            "sdkManagedPermissions": true,
            "systemPrompt": "be brief",
            "settingSources": ["project"],
            "sdkMcpServers": ["calc"],
            "sdkMcpToolDefinitions": {"calc": [{"name": "add"}], "bad": "x"}
        });
        let options = parse(request.as_object().unwrap());
        assert_eq!(options.hooks.len(), 3);
        let bash = options
            .hooks
            .iter()
            .find(|hook| hook.matcher.as_deref() == Some("Bash"))
            .unwrap();
        assert_eq!(bash.callback_ids, ["hook_0", "hook_1"]);
        assert_eq!(bash.timeout, Duration::from_secs(30));
        assert!(!bash.blocks_on_failure);
        assert!(
            options
                .hooks
                .iter()
                .any(|hook| hook.callback_ids == ["hook_2"] && hook.blocks_on_failure)
        );
        let post = options
            .hooks
            .iter()
            .find(|hook| hook.event == HookEvent::PostToolUse)
            .unwrap();
        assert_eq!(post.matcher, None);
        assert_eq!(post.timeout, Duration::from_millis(500));
        assert!(
            options
                .hooks
                .iter()
                .any(|hook| hook.matcher.is_none() && hook.timeout == DEFAULT_HOOK_TIMEOUT)
        );
        assert_eq!(options.warnings.len(), 2, "{:?}", options.warnings);
        assert_eq!(options.sdk_mcp_servers, ["calc"]);
        assert_eq!(
            options.sdk_mcp_tool_definitions,
            [("calc".to_owned(), vec![serde_json::json!({"name": "add"})])]
        );
        assert_eq!(options.agents[0].0, "reviewer");
        assert_eq!(options.agents[0].1.tools, Some(vec!["Read".to_owned()]));
        assert_eq!(options.agents[0].1.model.as_deref(), Some("sonnet"));
        assert!(options.sdk_managed_permissions);
        assert_eq!(options.system_prompt.as_deref(), Some("be brief"));
        assert_eq!(options.setting_sources, Some(vec!["project".to_owned()]));
    }

    #[test]
    fn null_hooks_are_none() {
        let options = parse(
            json!({"subtype": "initialize", "hooks": null})
                .as_object()
                .unwrap(),
        );
        assert!(options.hooks.is_empty());
        assert!(!options.sdk_managed_permissions);
    }
}
