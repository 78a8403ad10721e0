//! `Grep {pattern, path?, glob?, output_mode?, -i?, -n?, head_limit?}`: a regex search over
//! the text files beneath a path.

use std::fs::File;
use std::io::Read as _;

use crate::Vocabulary;
use regex::RegexBuilder;
use rustix::fs::{FileType, Mode, OFlags};
use serde_json::{Value, json};

use crate::coding::glob::join;
use crate::coding::paths::{Located, MAX_FILE};
use crate::coding::pattern::Glob;
use crate::coding::read::cut;
use crate::coding::walk::{self, Found, nanos};
use crate::coding::{CodingOutcome, CodingTools, Failure, invalid};
use crate::tools::args::Args;
use crate::tools::definition::{Effect, Run, ToolDefinition, session_path_schema};

/// The tool's name.
const TOOL: &str = "Grep";

/// Its arguments.
const ARGS: &[&str] = &[
    "pattern",
    "path",
    "glob",
    "output_mode",
    "-i",
    "-n",
    "head_limit",
];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sdk,
    effect: Effect::Reads,
    description: "Search file contents with a regular expression.",
    parameters,
    arguments: ARGS,
    run: Run::Coding(run),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = session_path_schema();
    json!({"type": "object", "properties": {
        "pattern": {"type": "string"},
        "path": path,
        "glob": {"type": "string", "description": "Only files matching this glob."},
        "output_mode": {"type": "string", "enum": ["files_with_matches", "content", "count"]},
        "-i": {"type": "boolean", "description": "Case-insensitive."},
        "-n": {"type": "boolean", "description": "Show line numbers (content mode)."},
        "head_limit": {"type": "integer"}
    }, "required": ["pattern"]})
}
/// Bytes looked at to tell a binary file (one holding a NUL byte).
const SNIFF: usize = 8192;
/// Most lines of `content` output when no `head_limit` is given.
const MAX_LINES: usize = 10_000;

/// What `output_mode` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OutputMode {
    /// The names of the files with a match (the default).
    Files,
    /// The matching lines.
    Content,
    /// How many matching lines each file has.
    Count,
}

/// Searches the files beneath `path` (the working directory by default).
pub(crate) fn run(tools: &CodingTools, input: &Value) -> Result<CodingOutcome, Failure> {
    let args = Args::new(TOOL, input, ARGS).map_err(|e| invalid(&e))?;
    let pattern = args
        .required_string("pattern", "the regular expression to search for")
        .map_err(|e| invalid(&e))?;
    let mode = match args
        .string(
            "output_mode",
            "\"files_with_matches\", \"content\" or \"count\"",
        )
        .map_err(|e| invalid(&e))?
    {
        None | Some("files_with_matches") => OutputMode::Files,
        Some("content") => OutputMode::Content,
        Some("count") => OutputMode::Count,
        Some(other) => {
            return Err(format!(
                "Grep: argument `output_mode` must be \"files_with_matches\", \"content\" or \
                 \"count\", got \"{other}\""
            ));
        }
    };
    let insensitive = args.bool("-i").map_err(|e| invalid(&e))?.unwrap_or(false);
    let numbers = args.bool("-n").map_err(|e| invalid(&e))?.unwrap_or(true);
    let head_limit = args
        .integer("head_limit", "how many entries to return")
        .map_err(|e| invalid(&e))?
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    let filter = args
        .string("glob", "a glob the files must match, e.g. \"*.rs\"")
        .map_err(|e| invalid(&e))?
        .map(Glob::new)
        .transpose()?;
    let regex = RegexBuilder::new(pattern)
        .case_insensitive(insensitive)
        .build()
        .map_err(|error| {
            format!("Grep: argument `pattern` is not a valid regular expression: {error}")
        })?;
    let base = tools.locate(
        "path",
        args.string("path", "the file or directory to search")
            .map_err(|e| invalid(&e))?
            .unwrap_or(&tools.cwd().display().to_string()),
    )?;

    let (mut files, single, unsearched) = candidates(tools, &base)?;
    if let Some(filter) = &filter {
        files.retain(|file| {
            let rel = if single {
                base.components.last().map_or("", String::as_str)
            } else {
                file.rel.as_str()
            };
            filter.matches_file(rel)
        });
    }
    files.sort_by(|a, b| b.mtime.cmp(&a.mtime).then_with(|| a.rel.cmp(&b.rel)));

    let limit = head_limit.unwrap_or(usize::MAX);
    let mut filenames = Vec::new();
    let mut lines = Vec::new();
    let mut total = 0_usize;
    for file in &files {
        if filenames.len() >= limit || lines.len() >= limit.min(MAX_LINES) {
            break;
        }
        let shown = join(&base, &file.rel);
        let rel = if file.rel.is_empty() {
            base.relative()
        } else if base.components.is_empty() {
            file.rel.clone()
        } else {
            format!("{}/{}", base.relative(), file.rel)
        };
        let Some(text) = text_of(tools, &rel) else {
            continue;
        };
        let matching: Vec<(usize, &str)> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| regex.is_match(line))
            .collect();
        if matching.is_empty() {
            continue;
        }
        match mode {
            OutputMode::Files => filenames.push(shown),
            OutputMode::Count => {
                total += matching.len();
                lines.push(format!("{shown}:{}", matching.len()));
                filenames.push(shown);
            }
            OutputMode::Content => {
                for (index, line) in matching {
                    if lines.len() >= limit.min(MAX_LINES) {
                        break;
                    }
                    lines.push(if numbers {
                        format!("{shown}:{}:{}", index + 1, cut(line))
                    } else {
                        format!("{shown}:{}", cut(line))
                    });
                }
            }
        }
    }
    let mut outcome = outcome(mode, &filenames, &lines, total);
    if let Some(unsearched) = unsearched {
        outcome.text.push_str(&format!(
            "\n(Not every directory was searched: {unsearched}.)"
        ));
    }
    Ok(outcome)
}

/// The outcome for what was found.
fn outcome(
    mode: OutputMode,
    filenames: &[String],
    lines: &[String],
    total: usize,
) -> CodingOutcome {
    match mode {
        OutputMode::Files => CodingOutcome::ok(
            json!({"mode": "files_with_matches", "filenames": filenames, "numFiles": filenames.len()}),
            if filenames.is_empty() {
                "No files found".to_owned()
            } else {
                format!("Found {} files\n{}", filenames.len(), filenames.join("\n"))
            },
        ),
        OutputMode::Content => {
            let content = lines.join("\n");
            CodingOutcome::ok(
                json!({"mode": "content", "filenames": [], "numFiles": 0, "content": content, "numLines": lines.len()}),
                if lines.is_empty() {
                    "No matches found".to_owned()
                } else {
                    content
                },
            )
        }
        OutputMode::Count => {
            let content = lines.join("\n");
            CodingOutcome::ok(
                json!({"mode": "count", "filenames": filenames, "numFiles": filenames.len(), "content": content, "numMatches": total}),
                if lines.is_empty() {
                    "No matches found".to_owned()
                } else {
                    format!(
                        "{content}\n\nFound {total} total occurrences across {} files.",
                        filenames.len()
                    )
                },
            )
        }
    }
}

/// The files to search below `base` (or `base` itself, a file: then `true`), and why the
/// search of a directory is incomplete if it is.
fn candidates(
    tools: &CodingTools,
    base: &Located,
) -> Result<(Vec<Found>, bool, Option<String>), Failure> {
    let fd = tools
        .root()
        .open(
            &base.relative(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY,
            Mode::empty(),
        )
        .map_err(|errno| match errno {
            rustix::io::Errno::NOENT => format!("Path does not exist: {}", base.shown),
            errno => tools.errno_message("open", base, errno),
        })?;
    let stat =
        rustix::fs::fstat(&fd).map_err(|errno| tools.errno_message("inspect", base, errno))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::Directory => {
            let (found, cut) = walk::files(fd);
            Ok((found, false, cut))
        }
        FileType::RegularFile => Ok((
            vec![Found {
                rel: String::new(),
                mtime: nanos(&stat),
            }],
            true,
            None,
        )),
        _ => Err(format!("{} is neither a file nor a directory", base.shown)),
    }
}

/// The text of the file at `rel` (relative to the working directory), or `None` for a
/// binary, oversized, vanished or unreadable file.
fn text_of(tools: &CodingTools, rel: &str) -> Option<String> {
    let fd = tools
        .root()
        .open(
            rel,
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW,
            Mode::empty(),
        )
        .ok()?;
    let stat = rustix::fs::fstat(&fd).ok()?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return None;
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_FILE || bytes[..bytes.len().min(SNIFF)].contains(&0) {
        return None;
    }
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_have_claude_codes_shapes() {
        let files = outcome(OutputMode::Files, &["/p/a".to_owned()], &[], 0);
        assert_eq!(files.text, "Found 1 files\n/p/a");
        assert_eq!(files.response["numFiles"], 1);
        let none = outcome(OutputMode::Content, &[], &[], 0);
        assert_eq!(none.text, "No matches found");
        let count = outcome(
            OutputMode::Count,
            &["/p/a".to_owned()],
            &["/p/a:3".to_owned()],
            3,
        );
        assert!(
            count
                .text
                .ends_with("Found 3 total occurrences across 1 files.")
        );
    }
}
