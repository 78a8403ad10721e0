//! Sub-agents: a `Task` call runs one of the session's agents in its own loop.

use std::hash::{DefaultHasher, Hash, Hasher};

use hookbox_hooks::{SdkEvent, SubagentRef};
use hookbox_llm::{Conversation, ToolCall};
use serde_json::{Value, json};

use super::core::{Core, Runner};
use super::emit::Emitter;
use super::outcome::{End, Stats};
use super::permissions::listed;
use super::tools::declarations;

/// The id of the sub-agent that `Task` call `task_call_id` of session `session_id` starts: 16
/// hexadecimal digits, the same wherever it is computed in the process, so the `agent_id` its
/// hooks see also names its transcript (`<session_id>/subagents/agent-<id>.jsonl`, which the
/// caller writing the transcript derives the same way). Only hexadecimal digits, whatever id
/// the model gave the call, so it is safe in a file name.
pub fn subagent_id(session_id: &str, task_call_id: &str) -> String {
    let mut hasher = DefaultHasher::new();
    (session_id, task_call_id).hash(&mut hasher);
    format!("{:016x}", hasher.finish())
}

impl Core {
    /// Runs a `Task` call: `SubagentStart`, the sub-agent's own loop (its tools through the same
    /// hooks, with `agent_id`/`agent_type`), `SubagentStop` in place of `Stop`.
    pub(super) async fn subagent(
        &self,
        call: &ToolCall,
        input: &Value,
        out: &mut Emitter<'_>,
        stats: &mut Stats,
    ) -> Result<(String, Value, Option<String>), End> {
        let kind = input
            .get("subagent_type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let task = input
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(definition) = self.agents.get(kind) else {
            let known: Vec<&str> = self.agents.keys().map(String::as_str).collect();
            let error = format!(
                "no sub-agent named `{kind}`; this session's agents: {}",
                known.join(", ")
            );
            return Ok((error.clone(), json!({"error": error}), Some(error)));
        };
        let agent_id = subagent_id(&self.session_id, &call.id);
        let tool_names: Vec<&'static str> = self
            .tool_names
            .iter()
            .copied()
            .filter(|name| {
                definition
                    .tools
                    .as_ref()
                    .is_none_or(|tools| tools.iter().any(|tool| tool == name))
            })
            .collect();
        let sub = Runner {
            agent: Some((agent_id.clone(), kind.to_owned())),
            parent_tool_use_id: Some(call.id.clone()),
            declarations: declarations(&tool_names, None)
                .into_iter()
                .chain(
                    self.mcp
                        .declarations(self.mcp_names.iter().map(String::as_str).filter(|name| {
                            definition
                                .tools
                                .as_ref()
                                .is_none_or(|tools| listed(tools, name))
                        })),
                )
                .collect(),
            model: definition.model.clone(),
        };
        let agent = SubagentRef {
            agent_id: &agent_id,
            agent_type: kind,
        };
        let start = self.fire(SdkEvent::SubagentStart { agent }, out).await;
        let mut conversation = Conversation {
            thinking_budget: self.thinking_budget,
            ..Conversation::new(Some(definition.prompt.clone()))
        };
        let mut text = task.to_owned();
        if let Some(context) = start.additional_context {
            text.push_str(&format!("\n\n{context}"));
        }
        conversation.push_user(text);
        match self.run_loop(&sub, &mut conversation, out, stats).await {
            End::Answered(answer) => Ok((
                answer.clone(),
                json!({"agent_id": agent_id, "agent_type": kind, "content": [{"type": "text", "text": answer}]}),
                None,
            )),
            End::MaxTurns => {
                let error = "the sub-agent ran out of turns".to_owned();
                Ok((
                    error.clone(),
                    json!({"agent_id": agent_id, "error": error}),
                    Some(error),
                ))
            }
            End::Failed(error) | End::ApiFailed { message: error, .. } => Ok((
                error.clone(),
                json!({"agent_id": agent_id, "error": error}),
                Some(error),
            )),
            end => Err(end),
        }
    }
}
