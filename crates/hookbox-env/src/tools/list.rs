//! `list_files {path?="/workspace", recursive?=false}` → `{entries:[…]}`.

use crate::Vocabulary;
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use serde_json::{Value, json};

use crate::confined;
use crate::tools::args::Args;
use crate::tools::definition::{Effect, FileTool, Run, ToolDefinition, sandbox_path_schema};
use crate::tools::error::{ToolError, from_errno};
use crate::tools::files::{FileTools, exact_errno, sandbox_path};
use crate::tools::resolve::{Final, Judged};
use crate::tree::{NotEntered, Walk, limits_note};

/// The tool's name.
pub(crate) const TOOL: &str = "list_files";

/// Its arguments.
pub(crate) const ARGS: &[&str] = &["path", "recursive"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sandbox,
    effect: Effect::Reads,
    description: "List a directory of the sandbox (default /workspace).",
    parameters,
    arguments: ARGS,
    run: Run::File(FileTool {
        path_names: "the directory to list",
        default_path: Some(DEFAULT_PATH),
        last: Final::Follow,
        run,
    }),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = sandbox_path_schema();
    json!({"type": "object", "properties": {
        "path": path,
        "recursive": {"type": "boolean"}
    }})
}

/// The directory listed when no path is given.
pub(crate) const DEFAULT_PATH: &str = "/workspace";

/// Most entries returned; past it the listing stops and says `"truncated": true`.
const MAX_ENTRIES: usize = 10_000;

/// Lists a directory (recursively on request) without following symlinks, sorted by path:
/// the directory the path named when judged, walked through descriptors from it.
pub(crate) fn run(tools: &FileTools, args: &Value, judged: &Judged) -> Result<Value, ToolError> {
    let args = Args::new(TOOL, args, ARGS)?;
    let path = sandbox_path(
        TOOL,
        args.string("path", "the directory to list")?
            .unwrap_or(DEFAULT_PATH),
    )?;
    let recursive = args.bool("recursive")?.unwrap_or(false);
    let dir = tools
        .root()
        .open_exact(
            &path.relative(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .map_err(|errno| match errno {
            Errno::NOTDIR => ToolError::WrongType {
                tool: TOOL,
                path: path.to_string(),
                expected: "a directory (use read_file for files)",
            },
            errno => exact_errno(TOOL, "open", &path.to_string(), errno),
        })?;
    tools.still_judged(TOOL, &path, path.components().len(), &dir, judged)?;
    let mut walk = Walk::new(dir, path.clone())
        .map_err(|errno| from_errno(TOOL, "list", &path.to_string(), errno))?;
    let mut entries = Vec::new();
    let (mut truncated, mut too_deep) = (false, false);
    while let Some((name, path)) = walk.next() {
        if entries.len() >= MAX_ENTRIES {
            truncated = true;
            break;
        }
        let fail = |errno| from_errno(TOOL, "list", &path.to_string(), errno);
        // Gone since the directory was read: skip it.
        let Some(stat) = confined::entry(walk.dir(), &name).map_err(fail)? else {
            continue;
        };
        let kind = confined::kind(&stat);
        let type_name = match kind {
            FileType::Directory => "directory",
            FileType::Symlink => "symlink",
            _ => "file",
        };
        entries.push(json!({
            "path": path.to_string(),
            "name": name,
            "type": type_name,
            "size_bytes": if kind == FileType::Directory { 0 } else { stat.st_size.max(0) },
        }));
        if recursive && kind == FileType::Directory {
            match walk.enter(&name, path.clone()) {
                Ok(()) => {}
                Err(NotEntered::TooDeep) => too_deep = true,
                Err(NotEntered::Failed(errno)) => return Err(fail(errno)),
            }
        }
    }
    truncated |= walk.cut_short();
    entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let mut result = json!({ "entries": entries });
    if truncated || too_deep {
        result["truncated"] = Value::Bool(true);
    }
    if too_deep {
        result["note"] = format!(
            "the listing is cut: {}; list a deeper directory by its path to see below",
            limits_note()
        )
        .into();
    }
    Ok(result)
}
