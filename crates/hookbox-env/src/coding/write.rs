//! `Write {file_path, content}`: creates or replaces a file beneath the working directory.

use crate::Vocabulary;
use rustix::fs::{FileType, Mode};
use serde_json::{Value, json};

use crate::coding::paths::Located;
use crate::coding::{CodingOutcome, CodingTools, Failure, invalid};
use crate::confined;
use crate::tools::args::Args;
use crate::tools::definition::{Effect, Run, ToolDefinition, session_path_schema};
use crate::tools::write::{Replacement, replace_named};

/// The tool's name.
const TOOL: &str = "Write";

/// Its arguments.
const ARGS: &[&str] = &["file_path", "content"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sdk,
    effect: Effect::Edits,
    description: "Create or overwrite a file.",
    parameters,
    arguments: ARGS,
    run: Run::Coding(run),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = session_path_schema();
    json!({"type": "object", "properties": {
        "file_path": path,
        "content": {"type": "string", "description": "The whole new content."}
    }, "required": ["file_path", "content"]})
}

/// Writes `content` to `file_path`, creating missing parent directories.
pub(crate) fn run(tools: &CodingTools, input: &Value) -> Result<CodingOutcome, Failure> {
    let args = Args::new(TOOL, input, ARGS).map_err(|e| invalid(&e))?;
    let file_path = args
        .required_string("file_path", "the absolute path of the file to write")
        .map_err(|e| invalid(&e))?;
    let content = args
        .required_string("content", "the file's new content")
        .map_err(|e| invalid(&e))?;
    let path = tools.locate("file_path", file_path)?;
    let existed = store(tools, &path, content.as_bytes(), None)?;
    let (kind, text) = if existed {
        (
            "update",
            format!("The file {} has been updated.", path.shown),
        )
    } else {
        (
            "create",
            format!("File created successfully at: {}", path.shown),
        )
    };
    Ok(CodingOutcome::ok(
        json!({ "type": kind, "filePath": path.shown, "content": content }),
        text,
    ))
}

/// Replaces the file at `path` with `bytes` through a temporary file renamed over it (an
/// existing symlink there is replaced, never followed), creating missing parent directories.
/// An existing file keeps its permission bits (or gets `mode`). Returns whether a file was
/// there.
pub(crate) fn store(
    tools: &CodingTools,
    path: &Located,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<bool, Failure> {
    let Some((name, parent)) = path.components.split_last() else {
        return Err(format!(
            "{} is a directory (the working directory); name a file inside it",
            path.shown
        ));
    };
    let error = |action: &'static str, errno| tools.errno_message(action, path, errno);
    let dir = tools
        .root()
        .make_dirs(parent)
        .map_err(|errno| error("create the parent directories of", errno))?;
    let (existed, kept) = match confined::entry(&dir, name) {
        Ok(Some(stat)) if confined::kind(&stat) == FileType::Directory => {
            return Err(format!("{} is a directory, not a file", path.shown));
        }
        Ok(Some(stat)) if confined::kind(&stat) == FileType::RegularFile => {
            (true, stat.st_mode & 0o777)
        }
        Ok(Some(_)) => (true, 0o644),
        Ok(None) => (false, 0o644),
        Err(errno) => return Err(error("inspect", errno)),
    };
    let mode = mode.unwrap_or(kept);
    replace_named(
        &Replacement {
            tool: TOOL,
            name,
            shown: &path.shown,
            error: &|action, errno| crate::tools::ToolError::InvalidPath {
                tool: TOOL,
                problem: error(action, errno),
            },
            unchanged: &|_| true,
        },
        &dir,
        &mut &bytes[..],
        Mode::from_raw_mode(mode),
    )
    .map_err(|e| e.to_string())?;
    Ok(existed)
}
