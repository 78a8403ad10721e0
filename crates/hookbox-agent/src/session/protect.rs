//! The files a session's settings make the host run: the settings files themselves and the
//! scripts their command hooks name. The coding tools keep them read-only to the model
//! (`hookbox_env::CodingTools::protect_files`).

use std::path::{Path, PathBuf};

use hookbox_hooks::{Handler, HookSet};

/// The variable Claude Code hook commands use for the project directory.
pub(crate) const PROJECT_DIR_VARIABLE: &str = "CLAUDE_PROJECT_DIR";

/// The paths the command hooks of `hooks` name as scripts: every word of a command that
/// contains a `/` or has a file extension, with `$CLAUDE_PROJECT_DIR` / `${CLAUDE_PROJECT_DIR}`
/// replaced by `project_dir` (relative ones are relative to it, the hooks' working
/// directory). Words that are not files are harmless: only existing files, and missing ones
/// that look like scripts, are protected.
pub(crate) fn hook_scripts(hooks: &HookSet, project_dir: &Path) -> Vec<PathBuf> {
    let dir = project_dir.display().to_string();
    hooks
        .bindings()
        .filter_map(|binding| match &binding.handler {
            Handler::Command(command) => Some(command.command.as_str()),
            _ => None,
        })
        .flat_map(words)
        .map(|word| {
            word.replace(&format!("${{{PROJECT_DIR_VARIABLE}}}"), &dir)
                .replace(&format!("${PROJECT_DIR_VARIABLE}"), &dir)
        })
        .filter(|word| {
            !word.contains('$') && (word.contains('/') || Path::new(word).extension().is_some())
        })
        .map(PathBuf::from)
        .collect()
}

/// The words of a shell command line, roughly: split at blanks and control operators, with
/// quotes removed (enough to find the paths in `python3 "$CLAUDE_PROJECT_DIR"/x.py | jq`).
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    for character in command.chars() {
        match (quote, character) {
            (Some(open), c) if c == open => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => quote = Some(character),
            (None, c) if c.is_whitespace() || ";|&()<>`".contains(c) => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            (None, c) => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_drop_quotes_and_split_at_operators() {
        assert_eq!(
            words(r#"python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/x.py|jq -r '.a b'; ./run.sh>out"#),
            [
                "python3",
                "$CLAUDE_PROJECT_DIR/.claude/hooks/x.py",
                "jq",
                "-r",
                ".a b",
                "./run.sh",
                "out"
            ]
        );
    }
}
