//! The tools an SDK session offers the model: the coding tools of the registry (the SDK
//! dialect's `Bash`, `Read`…), and `Task` when the session has sub-agents.

use hookbox_env::Vocabulary;
use hookbox_env::builtin_tool;
use serde_json::json;

use std::collections::BTreeMap;

use super::SubagentDefinition;
use crate::declarations::declaration;
use hookbox_llm::ToolDeclaration;

/// The sub-agent tool's name.
pub(crate) const TASK: &str = "Task";

/// The declarations of the coding tools named in `names` (in that order), plus `Task` listing
/// `task_agents` (each with its description and tools, as Claude Code's `Task` does) when
/// there are any.
pub(crate) fn declarations(
    names: &[&str],
    task_agents: Option<&BTreeMap<String, SubagentDefinition>>,
) -> Vec<ToolDeclaration> {
    let mut declarations: Vec<ToolDeclaration> = names
        .iter()
        .filter_map(|name| builtin_tool(Vocabulary::Sdk, name))
        .map(declaration)
        .collect();
    if let Some(agents) = task_agents {
        let mut description = "Start a sub-agent (one of the session's agents) on a task and \
                               return its final answer.\n\nAvailable agent types:"
            .to_owned();
        for (name, agent) in agents {
            let tools = agent
                .tools
                .as_ref()
                .map_or_else(|| "all tools".to_owned(), |tools| tools.join(", "));
            description.push_str(&format!(
                "\n- {name}: {} (Tools: {tools})",
                agent.description
            ));
        }
        declarations.push(ToolDeclaration {
            name: TASK.into(),
            description,
            parameters: json!({"type": "object", "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
                "prompt": {"type": "string", "description": "The task for the sub-agent."},
                "subagent_type": {"type": "string", "description": "The name of the agent to use."}
            }, "required": ["description", "prompt", "subagent_type"]}),
        });
    }
    declarations
}
