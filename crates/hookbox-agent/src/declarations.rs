//! The tools an agent offers its model, as the model wires declare them: built from the
//! registry of built-in tools ([`hookbox_env::BUILTIN_TOOLS`]), where each tool's name, schema
//! and hooks vocabulary are defined beside its argument parser.

use hookbox_env::{ToolDefinition, Vocabulary, builtin_tools};
use hookbox_llm::ToolDeclaration;

/// The declarations of the built-in tools of `vocabulary`, in the registry's order.
pub(crate) fn builtin_declarations(vocabulary: Vocabulary) -> Vec<ToolDeclaration> {
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
