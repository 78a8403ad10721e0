//! `Edit {file_path, old_string, new_string, replace_all?}`: exact string replacement.

use crate::Vocabulary;
use serde_json::{Value, json};

use crate::coding::write::store;
use crate::coding::{CodingOutcome, CodingTools, Failure, invalid};
use crate::tools::args::Args;
use crate::tools::definition::{Effect, Run, ToolDefinition, session_path_schema};

/// The tool's name.
const TOOL: &str = "Edit";

/// Its arguments.
const ARGS: &[&str] = &["file_path", "old_string", "new_string", "replace_all"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sdk,
    effect: Effect::Edits,
    description: "Replace an exact string in a file (it must occur once unless replace_all is set).",
    parameters,
    arguments: ARGS,
    run: Run::Coding(run),
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    let path = session_path_schema();
    json!({"type": "object", "properties": {
        "file_path": path,
        "old_string": {"type": "string"},
        "new_string": {"type": "string"},
        "replace_all": {"type": "boolean"}
    }, "required": ["file_path", "old_string", "new_string"]})
}

/// Replaces `old_string` by `new_string` in a file: exactly one occurrence, or all of them with
/// `replace_all`. An empty `old_string` creates a file that does not exist yet.
pub(crate) fn run(tools: &CodingTools, input: &Value) -> Result<CodingOutcome, Failure> {
    let args = Args::new(TOOL, input, ARGS).map_err(|e| invalid(&e))?;
    let file_path = args
        .required_string("file_path", "the absolute path of the file to edit")
        .map_err(|e| invalid(&e))?;
    let old = args
        .required_string("old_string", "the text to replace")
        .map_err(|e| invalid(&e))?;
    let new = args
        .required_string("new_string", "the text to replace it with")
        .map_err(|e| invalid(&e))?;
    let replace_all = args
        .bool("replace_all")
        .map_err(|e| invalid(&e))?
        .unwrap_or(false);
    if old == new {
        return Err(
            "No changes to make: old_string and new_string are exactly the same.".to_owned(),
        );
    }
    let path = tools.locate("file_path", file_path)?;
    let updated = if old.is_empty() {
        match tools.read_file(&path) {
            Err(_) if !exists(tools, &path) => new.to_owned(),
            Ok((bytes, _)) if bytes.is_empty() => new.to_owned(),
            Ok(_) => {
                return Err(format!(
                    "Cannot create {}: the file already exists and is not empty; give the text \
                     to replace in old_string",
                    path.shown
                ));
            }
            Err(error) => return Err(error),
        }
    } else {
        let (bytes, _) = tools.read_file(&path)?;
        let content = String::from_utf8(bytes).map_err(|_| {
            format!(
                "{} is not UTF-8 text; Edit changes text files only",
                path.shown
            )
        })?;
        apply(&content, old, new, replace_all)?
    };
    store(tools, &path, updated.as_bytes(), None)?;
    Ok(CodingOutcome::ok(
        json!({
            "filePath": path.shown,
            "oldString": old,
            "newString": new,
            "replaceAll": replace_all,
        }),
        format!("The file {} has been updated successfully.", path.shown),
    ))
}

/// Whether something is at `path` (a dangling link counts).
fn exists(tools: &CodingTools, path: &crate::coding::paths::Located) -> bool {
    let Some((name, parent)) = path.components.split_last() else {
        return true;
    };
    match tools.root().open_dir(parent) {
        Ok(dir) => !matches!(crate::confined::entry(&dir, name), Ok(None)),
        Err(_) => false,
    }
}

/// `content` with `old` replaced by `new`: the one occurrence, or every one with `all`.
pub(crate) fn apply(content: &str, old: &str, new: &str, all: bool) -> Result<String, Failure> {
    let count = content.matches(old).count();
    match count {
        0 => Err(format!(
            "String to replace not found in file.\nString: {old}"
        )),
        1 => Ok(content.replacen(old, new, 1)),
        _ if all => Ok(content.replace(old, new)),
        n => Err(format!(
            "Found {n} matches of the string to replace, but replace_all is false. To replace \
             all occurrences, set replace_all to true. To replace only one occurrence, please \
             provide more context to uniquely identify the instance.\nString: {old}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_one_or_all_and_counts_ambiguity() {
        assert_eq!(apply("a b a", "b", "c", false).unwrap(), "a c a");
        assert_eq!(apply("a b a", "a", "x", true).unwrap(), "x b x");
        let error = apply("a b a", "a", "x", false).unwrap_err();
        assert!(error.starts_with("Found 2 matches"), "{error}");
        let error = apply("a b a", "z", "x", false).unwrap_err();
        assert!(error.starts_with("String to replace not found"), "{error}");
    }
}
