//! The tools an SDK session offers the model, with the SDKs' names and argument schemas.

use serde_json::json;

use hookbox_llm::ToolDeclaration;

/// The sub-agent tool's name.
pub(crate) const TASK: &str = "Task";

/// The declarations of the coding tools named in `names` (in that order), plus `Task` when
/// `with_task`.
pub(crate) fn declarations(names: &[&str], with_task: bool) -> Vec<ToolDeclaration> {
    let mut declarations: Vec<ToolDeclaration> =
        names.iter().filter_map(|name| declaration(name)).collect();
    if with_task {
        declarations.push(ToolDeclaration {
            name: TASK.into(),
            description: "Start a sub-agent (one of the session's agents) on a task and return its final answer.".into(),
            parameters: json!({"type": "object", "properties": {
                "description": {"type": "string", "description": "A short (3-5 word) description of the task."},
                "prompt": {"type": "string", "description": "The task for the sub-agent."},
                "subagent_type": {"type": "string", "description": "The name of the agent to use."}
            }, "required": ["description", "prompt", "subagent_type"]}),
        });
    }
    declarations
}

/// One coding tool's declaration.
fn declaration(name: &str) -> Option<ToolDeclaration> {
    let path = json!({"type": "string", "description": "An absolute path, or one relative to the working directory."});
    let (description, parameters) = match name {
        "Bash" => (
            "Run a bash command in the working directory (inside the sandbox) and return its output.",
            json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "The command to run."},
                "timeout": {"type": "number", "description": "Time limit in milliseconds (default 120000, at most 600000)."},
                "description": {"type": "string", "description": "What the command does, in a few words."}
            }, "required": ["command"]}),
        ),
        "Read" => (
            "Read a text file, with line numbers.",
            json!({"type": "object", "properties": {
                "file_path": path,
                "offset": {"type": "integer", "description": "The first line to read (1-based)."},
                "limit": {"type": "integer", "description": "How many lines to read (default 2000)."}
            }, "required": ["file_path"]}),
        ),
        "Write" => (
            "Create or overwrite a file.",
            json!({"type": "object", "properties": {
                "file_path": path,
                "content": {"type": "string", "description": "The whole new content."}
            }, "required": ["file_path", "content"]}),
        ),
        "Edit" => (
            "Replace an exact string in a file (it must occur once unless replace_all is set).",
            json!({"type": "object", "properties": {
                "file_path": path,
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            }, "required": ["file_path", "old_string", "new_string"]}),
        ),
        "Glob" => (
            "Find files by glob pattern (`**` matches directories), newest first.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": path
            }, "required": ["pattern"]}),
        ),
        "Grep" => (
            "Search file contents with a regular expression.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string"},
                "path": path,
                "glob": {"type": "string", "description": "Only files matching this glob."},
                "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
                "-i": {"type": "boolean", "description": "Case-insensitive."},
                "-n": {"type": "boolean", "description": "Show line numbers (content mode)."},
                "head_limit": {"type": "integer"}
            }, "required": ["pattern"]}),
        ),
        _ => return None,
    };
    Some(ToolDeclaration {
        name: name.into(),
        description: description.into(),
        parameters,
    })
}
