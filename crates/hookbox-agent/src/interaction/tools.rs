//! The declarations of the five built-in sandbox tools, as models see them.

use serde_json::json;

use hookbox_llm::ToolDeclaration;

/// The built-in tools, with exactly their names and argument schemas.
pub(crate) fn builtin_declarations() -> Vec<ToolDeclaration> {
    let path = json!({"type": "string", "description": "A path in the sandbox; relative paths are relative to /workspace."});
    vec![
        ToolDeclaration {
            name: "code_execution".into(),
            description: "Run a bash or python program in the sandbox (cwd /workspace) and return its stdout, stderr and exit code.".into(),
            parameters: json!({"type": "object", "properties": {
                "code": {"type": "string", "description": "The program."},
                "language": {"type": "string", "enum": ["bash", "python"], "description": "Defaults to bash."}
            }, "required": ["code"]}),
        },
        ToolDeclaration {
            name: "read_file".into(),
            description: "Read a file of the sandbox.".into(),
            parameters: json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
        },
        ToolDeclaration {
            name: "write_file".into(),
            description: "Create or replace a file under /workspace.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": path,
                "content": {"type": "string"},
                "encoding": {"type": "string", "enum": ["base64"], "description": "Set when content is base64."}
            }, "required": ["path", "content"]}),
        },
        ToolDeclaration {
            name: "list_files".into(),
            description: "List a directory of the sandbox (default /workspace).".into(),
            parameters: json!({"type": "object", "properties": {
                "path": path,
                "recursive": {"type": "boolean"}
            }}),
        },
        ToolDeclaration {
            name: "delete_file".into(),
            description: "Delete a file under /workspace.".into(),
            parameters: json!({"type": "object", "properties": {"path": path}, "required": ["path"]}),
        },
    ]
}
