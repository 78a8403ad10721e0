//! `list_files {path?="/workspace", recursive?=false}` → `{entries:[…]}`.

use std::os::fd::{AsFd, OwnedFd};

use crate::Vocabulary;
use rustix::fs::{self, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use serde_json::{Value, json};

use crate::confined;
use crate::sandbox_path::SandboxPath;
use crate::tools::args::Args;
use crate::tools::definition::{Effect, FileTool, Run, ToolDefinition, sandbox_path_schema};
use crate::tools::error::{ToolError, from_errno};
use crate::tools::files::{FileTools, exact_errno, sandbox_path};
use crate::tools::resolve::Final;

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

/// Lists a directory (recursively on request) without following symlinks, sorted by path.
pub(crate) fn run(tools: &FileTools, args: &Value) -> Result<Value, ToolError> {
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
    let mut listing = Listing {
        entries: Vec::new(),
        truncated: false,
        recursive,
    };
    listing
        .walk(&dir, &path)
        .map_err(|(at, errno)| from_errno(TOOL, "list", &at.to_string(), errno))?;
    listing
        .entries
        .sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
    let mut result = json!({ "entries": listing.entries });
    if listing.truncated {
        result["truncated"] = Value::Bool(true);
    }
    Ok(result)
}

/// Entries gathered so far.
struct Listing {
    entries: Vec<Value>,
    truncated: bool,
    recursive: bool,
}

impl Listing {
    /// Adds the entries of `dir` (sandbox path `at`), descending into real directories only.
    fn walk(&mut self, dir: &impl AsFd, at: &SandboxPath) -> Result<(), (SandboxPath, Errno)> {
        let fail = |errno| (at.clone(), errno);
        for name in confined::sorted_names(dir).map_err(fail)? {
            if self.entries.len() >= MAX_ENTRIES {
                self.truncated = true;
                return Ok(());
            }
            // Gone since the directory was read: skip it.
            let Some(stat) = confined::entry(dir, &name).map_err(fail)? else {
                continue;
            };
            let kind = confined::kind(&stat);
            let path = at.join(&name);
            let type_name = match kind {
                FileType::Directory => "directory",
                FileType::Symlink => "symlink",
                _ => "file",
            };
            self.entries.push(json!({
                "path": path.to_string(),
                "name": name,
                "type": type_name,
                "size_bytes": if kind == FileType::Directory { 0 } else { stat.st_size.max(0) },
            }));
            if self.recursive && kind == FileType::Directory {
                let sub = open_subdir(dir, &name).map_err(|errno| (path.clone(), errno))?;
                self.walk(&sub, &path)?;
            }
        }
        Ok(())
    }
}

/// Opens the subdirectory `name` of `dir`, refusing a symlink put there since it was listed.
pub(crate) fn open_subdir(dir: &impl AsFd, name: &str) -> Result<OwnedFd, Errno> {
    fs::openat2(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )
}
