//! `Read {file_path, offset?, limit?}`: a text file in `cat -n` style.

use crate::Vocabulary;
use serde_json::{Value, json};

use crate::coding::{CodingOutcome, CodingTools, Failure, invalid};
use crate::tools::args::Args;
use crate::tools::definition::{Effect, Run, ToolDefinition, session_path_schema};

/// The tool's name.
const TOOL: &str = "Read";

/// Its arguments.
const ARGS: &[&str] = &["file_path", "offset", "limit"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sdk,
    effect: Effect::Reads,
    description: "Read a text file, with line numbers.",
    parameters,
    arguments: ARGS,
    run: Run::Coding(run),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = session_path_schema();
    json!({"type": "object", "properties": {
        "file_path": path,
        "offset": {"type": "integer", "description": "The first line to read (1-based)."},
        "limit": {"type": "integer", "description": "How many lines to read (default 2000)."}
    }, "required": ["file_path"]})
}
/// Lines returned when `limit` is not given.
pub(crate) const DEFAULT_LIMIT: u64 = 2000;
/// Longest line shown, in characters; longer ones are cut.
pub(crate) const MAX_LINE: usize = 2000;

/// Reads lines `offset..offset+limit` (1-based) of a file.
pub(crate) fn run(tools: &CodingTools, input: &Value) -> Result<CodingOutcome, Failure> {
    let args = Args::new(TOOL, input, ARGS).map_err(|e| invalid(&e))?;
    let file_path = args
        .required_string("file_path", "the absolute path of the file to read")
        .map_err(|e| invalid(&e))?;
    let offset = args
        .integer("offset", "the 1-based line to start at")
        .map_err(|e| invalid(&e))?
        .unwrap_or(1)
        .max(1);
    let limit = args
        .integer("limit", "how many lines to read")
        .map_err(|e| invalid(&e))?
        .unwrap_or(DEFAULT_LIMIT);
    let path = tools.locate("file_path", file_path)?;
    let (bytes, _) = tools.read_file(&path)?;
    let content = String::from_utf8_lossy(&bytes);
    let page = page(&content, offset, limit);
    let text = if page.total == 0 {
        format!("(the file {} is empty)", path.shown)
    } else if page.lines.is_empty() {
        format!(
            "(the file {} has {} lines; offset {offset} is past its end)",
            path.shown, page.total
        )
    } else {
        numbered(&page.lines, offset)
    };
    let shown_content: Vec<String> = page.lines.iter().map(|line| cut(line)).collect();
    Ok(CodingOutcome::ok(
        json!({
            "type": "text",
            "file": {
                "filePath": path.shown,
                "content": shown_content.join("\n"),
                "numLines": page.lines.len(),
                "startLine": offset,
                "totalLines": page.total,
            }
        }),
        text,
    ))
}

/// The selected lines of a file and how many it has.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Page<'a> {
    /// The lines selected (without their line ends).
    pub(crate) lines: Vec<&'a str>,
    /// Lines in the whole file.
    pub(crate) total: usize,
}

/// Lines `offset..offset+limit` (1-based) of `content`.
pub(crate) fn page(content: &str, offset: u64, limit: u64) -> Page<'_> {
    let all: Vec<&str> = content.lines().collect();
    let start = usize::try_from(offset.saturating_sub(1)).unwrap_or(usize::MAX);
    let take = usize::try_from(limit).unwrap_or(usize::MAX);
    Page {
        lines: all.iter().skip(start).take(take).copied().collect(),
        total: all.len(),
    }
}

/// `line` cut to [`MAX_LINE`] characters.
pub(crate) fn cut(line: &str) -> String {
    match line.char_indices().nth(MAX_LINE) {
        Some((at, _)) => format!("{}… [line truncated]", &line[..at]),
        None => line.to_owned(),
    }
}

/// `lines` numbered from `first` like `cat -n`: the number right-aligned in six columns, a
/// tab, the (cut) line.
pub(crate) fn numbered(lines: &[&str], first: u64) -> String {
    let mut out = String::new();
    for (n, line) in (first..).zip(lines) {
        out.push_str(&format!("{n:>6}\t{}\n", cut(line)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_and_numbers_lines() {
        let content = "a\nb\r\nc\nd";
        let page = page(content, 2, 2);
        assert_eq!(page.lines, ["b", "c"]);
        assert_eq!(page.total, 4);
        assert_eq!(numbered(&page.lines, 2), "     2\tb\n     3\tc\n");
        assert_eq!(super::page(content, 9, 5).lines, Vec::<&str>::new());
    }

    #[test]
    fn long_lines_are_cut() {
        let line = "é".repeat(MAX_LINE + 5);
        let cut = cut(&line);
        assert!(cut.starts_with(&"é".repeat(MAX_LINE)));
        assert!(cut.ends_with("[line truncated]"));
        assert_eq!(super::cut("short"), "short");
    }
}
