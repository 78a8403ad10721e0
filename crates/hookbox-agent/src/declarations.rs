//! The tools an agent offers its model, as the model wires declare them: built from the
//! registry of built-in tools ([`hookbox_env::BUILTIN_TOOLS`]), where each tool's name, schema
//! and hooks vocabulary are defined beside its argument parser.

use hookbox_env::{ToolDefinition, Vocabulary, builtin_tools};
use hookbox_hooks::{HookSet, HookSetBuilder};
use hookbox_llm::ToolDeclaration;

/// A builder of hooks for the sandbox tools: sandbox-dialect matchers that match none of the
/// registry's sandbox tools are warned about.
pub fn sandbox_hooks_builder() -> HookSetBuilder {
    let mut builder = HookSet::builder();
    builder.sandbox_tools(builtin_tools(Vocabulary::Sandbox).map(|tool| tool.name));
    builder
}

/// The declarations of the built-in tools of `vocabulary`, in the registry's order: what the
/// agents offer models, and `hookbox mcp` its clients.
pub fn builtin_declarations(vocabulary: Vocabulary) -> Vec<ToolDeclaration> {
    builtin_tools(vocabulary).map(declaration).collect()
}

/// `definition` as the model sees it.
pub(crate) fn declaration(definition: &ToolDefinition) -> ToolDeclaration {
    ToolDeclaration {
        name: definition.name.into(),
        description: definition.description.into(),
        parameters: (definition.parameters)(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_matchers_are_checked_against_the_registry() {
        let warnings = |matcher: &str| {
            let config = format!(
                r#"{{"g": {{"pre_tool_execution": [{{"matcher": "{matcher}",
                    "hooks": [{{"type": "command", "command": "true"}}]}}]}}}}"#
            );
            let mut builder = sandbox_hooks_builder();
            builder
                .load_str("hooks.json", &config, None)
                .expect("usable config");
            builder.build().diagnostics().len()
        };
        for tool in builtin_tools(Vocabulary::Sandbox) {
            assert_eq!(warnings(tool.name), 0, "{}", tool.name);
        }
        assert_eq!(warnings("Bash"), 1);
        assert_eq!(warnings("read_file|Bash"), 0);
    }

    #[test]
    fn the_interactions_agent_offers_the_five_sandbox_tools() {
        let names: Vec<String> = builtin_declarations(Vocabulary::Sandbox)
            .into_iter()
            .map(|declaration| declaration.name)
            .collect();
        assert_eq!(
            names,
            [
                "code_execution",
                "read_file",
                "write_file",
                "list_files",
                "delete_file"
            ]
        );
    }
}
