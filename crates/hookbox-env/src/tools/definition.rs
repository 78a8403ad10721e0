//! The registry of built-in tools: each tool is one [`ToolDefinition`] kept in the file that
//! checks its arguments and runs it (`tools/code.rs`, `tools/read.rs`… for the sandbox tools,
//! `coding/bash.rs`, `coding/read.rs`… for an SDK session's coding tools), and listed once in
//! [`BUILTIN_TOOLS`]. Agents take the tools they offer models from here, so a tool's name,
//! schema and hooks vocabulary never live apart from its argument parser.

use serde_json::{Value, json};

use crate::coding::{self, CodingOutcome, CodingTools, Failure};
use crate::tools::resolve::{Final, Judged};
use crate::tools::{FileTools, ToolError, code, delete, list, read, write};

/// The hooks vocabulary a built-in tool appears under (the hook dialect that names it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Vocabulary {
    /// The sandbox dialect's tools (`code_execution`, `read_file`…, behind
    /// `pre_tool_execution` / `post_tool_execution`).
    Sandbox,
    /// The SDK dialect's coding tools (`Bash`, `Read`…, behind `PreToolUse` / `PostToolUse`).
    Sdk,
}

/// What a built-in tool does to its environment: the SDK permission modes decide by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Only reads files (`plan` mode allows it).
    Reads,
    /// Changes files (`acceptEdits` mode allows it; protected paths ask).
    Edits,
    /// Runs commands (allowed without asking when they run in the sandbox).
    Runs,
}

/// One built-in tool as models and hooks see it.
#[derive(Debug, Clone, Copy)]
pub struct ToolDefinition {
    /// The name models call it by and hook matchers match.
    pub name: &'static str,
    /// The hooks vocabulary it appears under.
    pub vocabulary: Vocabulary,
    /// What it does to the environment.
    pub effect: Effect,
    /// What it does, for the model.
    pub description: &'static str,
    /// The JSON schema of its arguments (an `object` schema). Every model wire (Gemini,
    /// OpenAI-compatible, Anthropic) takes this same schema.
    pub parameters: fn() -> Value,
    /// The argument names its parser accepts; any other argument is an error.
    pub arguments: &'static [&'static str],
    /// How it runs.
    pub(crate) run: Run,
}

impl ToolDefinition {
    /// Whether it acts on a `path` that is resolved before hooks see it (the sandbox file
    /// tools); hooks then also get the model's own arguments as `raw_args`.
    pub fn resolves_paths(&self) -> bool {
        matches!(self.run, Run::File(_))
    }
}

/// How a built-in tool runs, by the tools it belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Run {
    /// `code_execution`, in the environment's sandbox ([`crate::BuiltinTools`]).
    Code,
    /// A sandbox file tool ([`FileTools`]).
    File(FileTool),
    /// A coding tool of an SDK session ([`CodingTools`]).
    Coding(fn(&CodingTools, &Value) -> Result<CodingOutcome, Failure>),
    /// `Bash`, the one coding tool that waits for a process.
    Bash,
}

/// A sandbox file tool: the `path` it acts on, and what it does there.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileTool {
    /// What the `path` argument names, for argument errors ("the file to read").
    pub(crate) path_names: &'static str,
    /// The path when the model gives none; `None` when `path` is required.
    pub(crate) default_path: Option<&'static str>,
    /// Whether a final symbolic link is followed, or acted on itself.
    pub(crate) last: Final,
    /// Acts on the path [`FileTools::resolve`] resolved, exactly, and on what it named then.
    pub(crate) run: fn(&FileTools, &Value, &Judged) -> Result<Value, ToolError>,
}

/// Every built-in tool: the sandbox tools, then the SDK coding tools, each in the order models
/// are shown them.
pub const BUILTIN_TOOLS: [&ToolDefinition; 11] = [
    &code::DEFINITION,
    &read::DEFINITION,
    &write::DEFINITION,
    &list::DEFINITION,
    &delete::DEFINITION,
    &coding::bash::DEFINITION,
    &coding::read::DEFINITION,
    &coding::write::DEFINITION,
    &coding::edit::DEFINITION,
    &coding::glob::DEFINITION,
    &coding::grep::DEFINITION,
];

/// The built-in tools of `vocabulary`, in the order models are shown them.
pub fn builtin_tools(vocabulary: Vocabulary) -> impl Iterator<Item = &'static ToolDefinition> {
    BUILTIN_TOOLS
        .into_iter()
        .filter(move |definition| definition.vocabulary == vocabulary)
}

/// The built-in tool of `vocabulary` named `name`, if there is one.
pub fn builtin_tool(vocabulary: Vocabulary, name: &str) -> Option<&'static ToolDefinition> {
    builtin_tools(vocabulary).find(|definition| definition.name == name)
}

/// The schema of a sandbox tool's `path` argument.
pub(crate) fn sandbox_path_schema() -> Value {
    json!({"type": "string", "description": "A path in the sandbox; relative paths are relative to /workspace."})
}

/// The schema of a coding tool's path argument (`file_path`, `path`).
pub(crate) fn session_path_schema() -> Value {
    json!({"type": "string", "description": "An absolute path, or one relative to the working directory."})
}

/// The names of the built-in tools of `vocabulary`, joined with `, ` (for error messages).
pub(crate) fn names(vocabulary: Vocabulary) -> String {
    builtin_tools(vocabulary)
        .map(|definition| definition.name)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn names_are_unique_within_a_dialect() {
        for dialect in [Vocabulary::Sandbox, Vocabulary::Sdk] {
            let names: Vec<_> = builtin_tools(dialect).map(|d| d.name).collect();
            let unique: BTreeSet<_> = names.iter().collect();
            assert_eq!(names.len(), unique.len(), "{names:?}");
        }
    }

    #[test]
    fn each_schema_declares_exactly_the_arguments_its_parser_accepts() {
        for definition in BUILTIN_TOOLS {
            let schema = (definition.parameters)();
            assert_eq!(schema["type"], "object", "{}", definition.name);
            let declared: BTreeSet<&str> = schema["properties"]
                .as_object()
                .map(|properties| properties.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let accepted: BTreeSet<&str> = definition.arguments.iter().copied().collect();
            assert_eq!(declared, accepted, "{}", definition.name);
            for required in schema["required"].as_array().into_iter().flatten() {
                let required = required.as_str().unwrap_or_default();
                assert!(
                    accepted.contains(required),
                    "{}: {required}",
                    definition.name
                );
            }
            assert!(!definition.description.is_empty(), "{}", definition.name);
        }
    }

    #[test]
    fn lookups_respect_the_dialect() {
        assert_eq!(
            builtin_tool(Vocabulary::Sandbox, "code_execution").map(|d| d.name),
            Some("code_execution")
        );
        assert!(builtin_tool(Vocabulary::Sdk, "code_execution").is_none());
        assert!(builtin_tool(Vocabulary::Sandbox, "Bash").is_none());
        assert_eq!(
            names(Vocabulary::Sandbox),
            "code_execution, read_file, write_file, list_files, delete_file"
        );
        assert_eq!(
            names(Vocabulary::Sdk),
            "Bash, Read, Write, Edit, Glob, Grep"
        );
        assert!(
            builtin_tools(Vocabulary::Sdk)
                .map(|d| d.name)
                .eq(crate::CODING_TOOLS)
        );
    }
}
