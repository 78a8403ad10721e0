//! The files of a project that its policy's command hooks name, found in their command lines:
//! every word that, once the project variables are replaced by the project's root, names a
//! path inside the project (an interpreter's script, `./x`, an absolute path, a data file a
//! gate is handed). A word that holds any other expansion (`$HOME/x`, `$(…)`) cannot be
//! known before the shell runs and names nothing here.

use std::path::{Component, Path, PathBuf};

/// The variables a hook command may name the project's root by (Claude Code's, and Gemini
/// CLI's, which also sets Claude Code's).
pub(crate) const PROJECT_VARIABLES: [&str; 2] = ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"];

/// The paths, relative to `root` and lexically normalised, that the words of `command` name
/// inside the project at `root` (its canonical path); a word may also name one after an `=`
/// (`--rules=x.txt`, `VAR=x`), and a word with blanks is read as a command line too.
pub(crate) fn named_paths(command: &str, root: &Path) -> Vec<PathBuf> {
    let root_text = root.display().to_string();
    let mut paths = Vec::new();
    for word in words(command, &root_text) {
        // A word with blanks may be a command line itself (`bash -c '. lib.sh; gate'`).
        if word.contains(char::is_whitespace) {
            paths.extend(named_paths(&word, root));
        }
        let after_equals = word.split_once('=').map(|(_, value)| value);
        paths.extend(
            std::iter::once(word.as_str())
                .chain(after_equals)
                .filter_map(|candidate| inside(root, candidate)),
        );
    }
    paths
}

/// `candidate` relative to `root` when it lands inside it: an absolute path below `root`, or
/// a relative one (the hooks' working directory is the root), `.` and `..` resolved lexically.
fn inside(root: &Path, candidate: &str) -> Option<PathBuf> {
    let path = Path::new(candidate);
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let mut normal = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(part) => normal.push(part),
            Component::CurDir => {}
            Component::ParentDir if normal.pop() => {}
            _ => return None,
        }
    }
    (!normal.as_os_str().is_empty()).then_some(normal)
}

/// The words of a shell command line, their quotes and escapes removed and the project
/// variables (`$NAME`, `${NAME}`) replaced by `root`, split at blanks and control operators;
/// a word with any other expansion is left out.
fn words(command: &str, root: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut opaque = false;
    let mut quote: Option<char> = None;
    let mut chars = command.chars().peekable();
    let mut finish = |word: &mut String, started: &mut bool, opaque: &mut bool| {
        if *started && !*opaque {
            words.push(std::mem::take(word));
        }
        word.clear();
        *started = false;
        *opaque = false;
    };
    while let Some(character) = chars.next() {
        match (quote, character) {
            (Some('\''), '\'') | (Some('"'), '"') => quote = None,
            (Some('\''), c) => word.push(c),
            (_, '\\') => {
                started = true;
                if let Some(next) = chars.next() {
                    word.push(next);
                }
            }
            (_, '$') => {
                started = true;
                match variable(&mut chars) {
                    Some(name) if PROJECT_VARIABLES.contains(&name.as_str()) => {
                        word.push_str(root);
                    }
                    _ => opaque = true,
                }
            }
            (_, '`') => opaque = true,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                started = true;
                quote = Some(character);
            }
            (None, c) if c.is_whitespace() || ";|&()<>".contains(c) => {
                finish(&mut word, &mut started, &mut opaque);
            }
            (None, c) => {
                started = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut started, &mut opaque);
    words
}

/// The name of the variable after a `$` (`NAME` or `{NAME}`); `None` for anything else
/// (`$(…)`, `$1`, `${NAME:-x}`), whose value cannot be known here.
fn variable(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Option<String> {
    let braced = chars.next_if_eq(&'{').is_some();
    let mut name = String::new();
    while let Some(c) = chars.next_if(|c| c.is_ascii_alphanumeric() || *c == '_') {
        name.push(c);
    }
    if braced && chars.next_if_eq(&'}').is_none() {
        return None;
    }
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_drop_quotes_replace_the_project_and_leave_out_other_expansions() {
        assert_eq!(
            words(
                r#"python3 "$CLAUDE_PROJECT_DIR"/a/x.py|jq -r '.a $b'; ./run.sh>out $HOME/y ${GEMINI_PROJECT_DIR}/z a\ b `w` $(v)"#,
                "/p"
            ),
            [
                "python3",
                "/p/a/x.py",
                "jq",
                "-r",
                ".a $b",
                "./run.sh",
                "out",
                "/p/z",
                "a b",
                // The words inside a command substitution are words too.
                "v"
            ]
        );
    }

    #[test]
    fn paths_inside_the_root_only() {
        let root = Path::new("/p");
        assert_eq!(
            named_paths("x /p/a/../b.py ../c /q/d --f=e ./ /p", root),
            [
                PathBuf::from("x"),
                PathBuf::from("b.py"),
                PathBuf::from("--f=e"),
                PathBuf::from("e")
            ]
        );
    }
}
