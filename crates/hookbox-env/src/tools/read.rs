//! `read_file {path}` → `{content, encoding?}`.

use std::fs::File;
use std::io::Read;

use crate::Vocabulary;
use base64::prelude::{BASE64_STANDARD, Engine as _};
use rustix::fs::{FileType, Mode, OFlags};
use serde_json::{Value, json};

use crate::tools::args::Args;
use crate::tools::definition::{Effect, FileTool, Run, ToolDefinition, sandbox_path_schema};
use crate::tools::error::ToolError;
use crate::tools::files::{FileTools, exact_errno, sandbox_path};
use crate::tools::resolve::{Final, Judged};

/// The tool's name.
pub(crate) const TOOL: &str = "read_file";

/// Its arguments.
pub(crate) const ARGS: &[&str] = &["path"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sandbox,
    effect: Effect::Reads,
    description: "Read a file of the sandbox.",
    parameters,
    arguments: ARGS,
    run: Run::File(FileTool {
        path_names: "the file to read",
        default_path: None,
        last: Final::Follow,
        run,
    }),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = sandbox_path_schema();
    json!({"type": "object", "properties": {"path": path}, "required": ["path"]})
}

/// Largest file returned: 10 MiB.
const LIMIT: u64 = 10 * 1024 * 1024;

/// Reads a regular file; UTF-8 text as is, anything else as base64 with `encoding:"base64"`.
/// A file with more than one name (hard links) is refused: hooks judged only this name. The
/// file read is the one the path named when judged (read through the descriptor checked).
pub(crate) fn run(tools: &FileTools, args: &Value, judged: &Judged) -> Result<Value, ToolError> {
    let args = Args::new(TOOL, args, ARGS)?;
    let path = sandbox_path(TOOL, args.required_string("path", "the file to read")?)?;
    let shown = path.to_string();
    let error = |action, errno| exact_errno(TOOL, action, &shown, errno);
    // O_NONBLOCK: opening a FIFO the sandbox made must not hang the host.
    let fd = tools
        .root()
        .open_exact(
            &path.relative(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|errno| error("open", errno))?;
    tools.still_judged(TOOL, &path, path.components().len(), &fd, judged)?;
    let stat = rustix::fs::fstat(&fd).map_err(|errno| error("inspect", errno))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => {}
        FileType::Directory => {
            return Err(ToolError::IsDirectory {
                tool: TOOL,
                path: shown,
                hint: "use list_files to see what it holds",
            });
        }
        _ => {
            return Err(ToolError::WrongType {
                tool: TOOL,
                path: shown,
                expected: "a regular file",
            });
        }
    }
    // A file with other names passed the hooks under this one only.
    if stat.st_nlink > 1 {
        return Err(ToolError::HardLinked {
            tool: TOOL,
            path: shown,
        });
    }
    let too_large = |size| ToolError::TooLarge {
        tool: TOOL,
        path: shown.clone(),
        size,
        limit: LIMIT,
    };
    let size = u64::try_from(stat.st_size).unwrap_or_default();
    if size > LIMIT {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| ToolError::Io {
            tool: TOOL,
            action: "read",
            path: shown.clone(),
            source,
        })?;
    if bytes.len() as u64 > LIMIT {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(match String::from_utf8(bytes) {
        Ok(text) => json!({ "content": text }),
        Err(err) => json!({
            "content": BASE64_STANDARD.encode(err.as_bytes()),
            "encoding": "base64",
        }),
    })
}
