//! `delete_file {path}` → `{path, deleted: true}`.

use crate::Vocabulary;
use rustix::fs::{self, AtFlags};
use rustix::io::Errno;
use serde_json::{Value, json};

use crate::tools::args::Args;
use crate::tools::definition::{Effect, FileTool, Run, ToolDefinition, sandbox_path_schema};
use crate::tools::error::ToolError;
use crate::tools::files::{FileTools, sandbox_path};
use crate::tools::resolve::{Final, Identity, Judged};

/// The tool's name.
pub(crate) const TOOL: &str = "delete_file";

/// Its arguments.
pub(crate) const ARGS: &[&str] = &["path"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sandbox,
    effect: Effect::Edits,
    description: "Delete a file under /workspace.",
    parameters,
    arguments: ARGS,
    run: Run::File(FileTool {
        path_names: "the file to delete",
        default_path: None,
        last: Final::Keep,
        run,
    }),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = sandbox_path_schema();
    json!({"type": "object", "properties": {"path": path}, "required": ["path"]})
}

/// Unlinks a file or a symlink (the link itself, never its target); refuses directories. The
/// entry unlinked is the one the path named when judged, in the directory judged.
pub(crate) fn run(tools: &FileTools, args: &Value, judged: &Judged) -> Result<Value, ToolError> {
    let args = Args::new(TOOL, args, ARGS)?;
    let path = sandbox_path(TOOL, args.required_string("path", "the file to delete")?)?;
    let target = tools.writable(TOOL, &path)?;
    let parent = target
        .area
        .open_dir(target.parent)
        .map_err(|errno| target.error(TOOL, "open the directory of", errno))?;
    tools.refuse_protected(TOOL, &target, &parent, Some(target.name))?;
    let depth = path.components().len();
    tools.still_judged(TOOL, &path, depth - 1, &parent, judged)?;
    let entry = fs::statat(&parent, target.name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|stat| Identity::from_stat(&stat))
        .map_err(|errno| target.error(TOOL, "inspect", errno))?;
    if judged.at(depth) != Some(entry) {
        return Err(ToolError::Changed {
            tool: TOOL,
            path: path.to_string(),
        });
    }
    match fs::unlinkat(&parent, target.name, AtFlags::empty()) {
        Ok(()) => Ok(json!({ "path": path.to_string(), "deleted": true })),
        Err(Errno::ISDIR | Errno::PERM) if is_dir(&parent, target.name) => {
            Err(ToolError::IsDirectory {
                tool: TOOL,
                path: path.to_string(),
                hint: "delete_file removes files and symbolic links only; remove directories \
                       with code_execution",
            })
        }
        Err(errno) => Err(target.error(TOOL, "delete", errno)),
    }
}

/// Whether `name` in `parent` is a directory (not following a link).
fn is_dir(parent: &impl std::os::fd::AsFd, name: &str) -> bool {
    crate::confined::entry(parent, name)
        .ok()
        .flatten()
        .is_some_and(|stat| crate::confined::kind(&stat) == fs::FileType::Directory)
}
