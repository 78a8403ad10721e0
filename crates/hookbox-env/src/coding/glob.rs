//! `Glob {pattern, path?}`: files matching a glob, newest first.

use std::time::Instant;

use crate::Vocabulary;
use rustix::io::Errno;
use serde_json::{Value, json};

use crate::coding::paths::Located;
use crate::coding::pattern::Glob;
use crate::coding::{CodingOutcome, CodingTools, Failure, invalid, walk};
use crate::tools::args::Args;
use crate::tools::definition::{Effect, Run, ToolDefinition, session_path_schema};

/// The tool's name.
const TOOL: &str = "Glob";

/// Its arguments.
const ARGS: &[&str] = &["pattern", "path"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sdk,
    effect: Effect::Reads,
    description: "Find files by glob pattern (`**` matches directories), newest first.",
    parameters,
    arguments: ARGS,
    run: Run::Coding(run),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = session_path_schema();
    json!({"type": "object", "properties": {
        "pattern": {"type": "string"},
        "path": path
    }, "required": ["pattern"]})
}
/// Most file names returned.
pub(crate) const MAX_FILES: usize = 100;

/// Lists the regular files below `path` (the working directory by default) whose path
/// relative to it matches `pattern`, newest modification first.
pub(crate) fn run(tools: &CodingTools, input: &Value) -> Result<CodingOutcome, Failure> {
    let started = Instant::now();
    let args = Args::new(TOOL, input, ARGS).map_err(|e| invalid(&e))?;
    let pattern = args
        .required_string("pattern", "the glob to match, e.g. \"**/*.rs\"")
        .map_err(|e| invalid(&e))?;
    let base = tools.locate(
        "path",
        args.string("path", "the directory to search")
            .map_err(|e| invalid(&e))?
            .unwrap_or(&tools.cwd().display().to_string()),
    )?;
    let pattern = relative_pattern(pattern, &base)?;
    let glob = Glob::new(&pattern)?;
    let (mut found, cut) = walk::files(open_dir(tools, &base)?);
    found.retain(|file| glob.matches_path(&file.rel));
    found.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.rel.cmp(&b.rel)));
    let truncated = cut.is_some() || found.len() > MAX_FILES;
    let filenames: Vec<String> = found
        .iter()
        .take(MAX_FILES)
        .map(|file| join(&base, &file.rel))
        .collect();
    let mut text = if filenames.is_empty() {
        "No files found".to_owned()
    } else {
        filenames.join("\n")
    };
    if truncated {
        text.push_str("\n(Results are truncated. Consider using a more specific path or pattern.)");
    }
    if let Some(cut) = cut {
        text.push_str(&format!("\n(Not every directory was searched: {cut}.)"));
    }
    Ok(CodingOutcome::ok(
        json!({
            "filenames": filenames,
            "numFiles": filenames.len(),
            "truncated": truncated,
            "durationMs": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        }),
        text,
    ))
}

/// `pattern` relative to `base`: an absolute pattern must start with it.
fn relative_pattern(pattern: &str, base: &Located) -> Result<String, Failure> {
    if !pattern.starts_with('/') {
        return Ok(pattern.to_owned());
    }
    pattern
        .strip_prefix(&base.shown)
        .and_then(|rest| rest.strip_prefix('/'))
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the absolute pattern {pattern} is not below {}; give a pattern relative to `path`",
                base.shown
            )
        })
}

/// `base`'s path joined with `rel`.
pub(crate) fn join(base: &Located, rel: &str) -> String {
    if rel.is_empty() {
        base.shown.clone()
    } else {
        format!("{}/{rel}", base.shown.trim_end_matches('/'))
    }
}

/// Opens the directory `base` for listing.
pub(crate) fn open_dir(
    tools: &CodingTools,
    base: &Located,
) -> Result<std::os::fd::OwnedFd, Failure> {
    tools
        .root()
        .open_dir(&base.components)
        .map_err(|errno| match errno {
            Errno::NOTDIR => format!("{} is not a directory", base.shown),
            Errno::NOENT => format!("Directory does not exist: {}", base.shown),
            errno => tools.errno_message("open", base, errno),
        })
}
