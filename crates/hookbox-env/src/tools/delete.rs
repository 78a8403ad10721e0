//! `delete_file {path}` → `{path, deleted: true}`.

use crate::Vocabulary;
use rustix::fs::{self, AtFlags, RenameFlags};
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
/// entry unlinked is the one the path named when judged, in the directory judged: it is moved
/// aside in one step first, so what is checked is what is unlinked, and anything else is put
/// back.
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
    let aside = format!(
        ".hookbox-delete-{}",
        hookbox_store::random_token().map_err(|source| ToolError::Io {
            tool: TOOL,
            action: "name a temporary entry for",
            path: path.to_string(),
            source,
        })?
    );
    let aside = aside.as_str();
    fs::renameat_with(&parent, target.name, &parent, aside, RenameFlags::NOREPLACE)
        .map_err(|errno| target.error(TOOL, "delete", errno))?;
    let moved = fs::statat(&parent, aside, AtFlags::SYMLINK_NOFOLLOW);
    let refusal = match &moved {
        Ok(stat) if crate::confined::kind(stat) == fs::FileType::Directory => {
            Some(ToolError::IsDirectory {
                tool: TOOL,
                path: path.to_string(),
                hint: "delete_file removes files and symbolic links only; remove directories \
                       with code_execution",
            })
        }
        Ok(stat)
            if judged.at(depth) == Some(Identity::from_stat(stat))
                && tools
                    .still_judged(TOOL, &path, depth - 1, &parent, judged)
                    .is_ok() =>
        {
            None
        }
        Ok(_) => Some(ToolError::Changed {
            tool: TOOL,
            path: path.to_string(),
        }),
        Err(errno) => Some(target.error(TOOL, "inspect", *errno)),
    };
    let unlinked = match refusal {
        None => fs::unlinkat(&parent, aside, AtFlags::empty())
            .map_err(|errno| target.error(TOOL, "delete", errno)),
        Some(refusal) => Err(refusal),
    };
    if unlinked.is_err() {
        // Put back what was moved aside: only the judged entry may go.
        fs::renameat_with(&parent, aside, &parent, target.name, RenameFlags::NOREPLACE).map_err(
            |errno| ToolError::InvalidPath {
                tool: TOOL,
                problem: format!(
                    "`{path}` changed while it was being deleted and a new entry took its name \
                     ({errno}); nothing was deleted, and what was there is now `{aside}` beside it"
                ),
            },
        )?;
    }
    unlinked.map(|()| json!({ "path": path.to_string(), "deleted": true }))
}
