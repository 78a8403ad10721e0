//! Refusing hook files that would fail silently, at the owner's door: an environment's
//! `.agents/hooks.json` files (from sources at create and update, or an upload) must pass the
//! [`HookFileCheck`] the environments were opened with (the real one parses them as the sandbox
//! dialect and refuses any error: unknown keys, `http://` URLs, invalid regexes…), and the
//! `/.agents/…` and `/workspace/.agents/…` scripts their commands name, and a program a command
//! names by a path outside the system directories, must exist in the environment.
//!
//! hookbox-env knows nothing of the hooks configuration language: the check is given by its
//! caller (hookbox-agent's `OwnerHookFiles`), so the data flows one way.

use std::fmt;
use std::path::Path;

use crate::agents::{self, AGENTS_DIRS};
use crate::target;

/// The command of one command hook in a hook file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCommand {
    /// The JSON path of the hook's `command`, e.g. `$.gate.pre_tool_execution[0].hooks[0]`.
    pub json_path: String,
    /// The command line.
    pub command: String,
}

/// Validates the hook files an environment's owner supplies, before anything is written.
pub trait HookFileCheck: Send + Sync + fmt::Debug {
    /// The command hooks of the hook file `file` (a sandbox path, e.g. `/.agents/hooks.json`)
    /// holding `text`, or what is wrong with it (each problem at its JSON path, with the fix).
    fn commands(&self, file: &str, text: &str) -> Result<Vec<HookCommand>, String>;
}

/// Largest owner hook file read for checking.
const MAX_BYTES: u64 = 16 * 1024 * 1024;

/// Why a hook file is refused: the file (a sandbox path) and what is wrong, where, and what
/// to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    /// The hook file, e.g. `/.agents/hooks.json`.
    pub(crate) file: String,
    /// The problem, with its JSON path and the fix.
    pub(crate) problem: String,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "hook file `{}` {}", self.file, self.problem)
    }
}

/// Checks the hook files present in `root` (an environment root, or the staged files of an
/// update); scripts are looked up in `root` outside its `.agents` directories `not_owners`,
/// then in `fallback` (the current root of an environment being updated) outside its own
/// such directories: the owner did not supply them, and what the model put there never
/// counts.
pub(crate) fn check_root(
    check: &dyn HookFileCheck,
    root: &Path,
    not_owners: &[String],
    fallback: Option<(&Path, &[String])>,
) -> Result<(), Refused> {
    for dir in AGENTS_DIRS {
        let file = root.join(dir).join("hooks.json");
        let shown = format!("/{dir}/hooks.json");
        let refuse = |problem: String| Refused {
            file: shown.clone(),
            problem,
        };
        let meta = match std::fs::symlink_metadata(&file) {
            Ok(meta) => meta,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(refuse(format!("cannot be read: {err}"))),
        };
        if !meta.file_type().is_file() {
            return Err(refuse(
                "is not a regular file; supply the file itself".to_owned(),
            ));
        }
        if meta.len() > MAX_BYTES {
            return Err(refuse(format!(
                "is {} bytes, over the {MAX_BYTES}-byte limit; split the configuration",
                meta.len()
            )));
        }
        let text = std::fs::read(&file).map_err(|err| refuse(format!("cannot be read: {err}")))?;
        check_text(check, &shown, &text, |script| {
            (!agents::lies_in(script, not_owners) && exists(root, script))
                || fallback.is_some_and(|(fallback, not_owners)| {
                    !agents::lies_in(script, not_owners) && exists(fallback, script)
                })
        })?;
    }
    Ok(())
}

/// Checks the hook file `file` (a sandbox path) holding `text`; `script_exists` says whether a
/// sandbox path its commands name exists in the environment.
pub(crate) fn check_text(
    check: &dyn HookFileCheck,
    file: &str,
    text: &[u8],
    script_exists: impl Fn(&str) -> bool,
) -> Result<(), Refused> {
    let refuse = |problem: String| Refused {
        file: file.to_owned(),
        problem,
    };
    let text = std::str::from_utf8(text)
        .map_err(|_| refuse("is not UTF-8 text; save it as UTF-8 JSON".to_owned()))?;
    for hook in check.commands(file, text).map_err(refuse)? {
        let mut needed =
            scripts(&hook.command).chain(program_in_environment(&hook.command).map(str::to_owned));
        if let Some(missing) = needed.find(|script| !script_exists(script)) {
            return Err(refuse(format!(
                "at `{}.command`: the command names `{missing}`, which does not exist in the \
                 environment; supply it (a source or an upload) before the hook file, or fix \
                 the path",
                hook.json_path
            )));
        }
    }
    Ok(())
}

/// The owner-directory paths (`/.agents/…`, `/workspace/.agents/…`) a command line names
/// literally (see [`named_path`]), normalised.
fn scripts(command: &str) -> impl Iterator<Item = String> {
    literal_words(command)
        .filter_map(|word| named_path(word).map(|(_, path)| path))
        .filter(|path| {
            AGENTS_DIRS
                .iter()
                .any(|dir| path.starts_with(&format!("/{dir}/")))
        })
}

/// The absolute path a literal word names, as `(where it starts in the word, the path with
/// `//`, `.` and `..` resolved by name)`: the word itself when it starts with `/`, else what
/// follows its first `=/` (`--require=/…`, `NODE_OPTIONS=--require=/…`). Every way of
/// spelling a path the owner's door checks is a way the hook view maps (`hook_view`).
pub(crate) fn named_path(word: &str) -> Option<(usize, String)> {
    let start = if word.starts_with('/') {
        0
    } else {
        word.find("=/")? + 1
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in word[start..].split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    Some((start, format!("/{}", parts.join("/"))))
}

/// The words of a command line (split at blanks, quotes and shell operators) that hold no
/// shell expansion, as slices of it.
pub(crate) fn literal_words(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(|c: char| c.is_whitespace() || "'\";|&()<>`".contains(c))
        .filter(|word| !word.is_empty() && !word.contains(['$', '*', '?', '[', '{']))
}

/// The program of a command line when it names it literally by a path in the environment's
/// files (outside the system directories, whose files are the host's).
fn program_in_environment(command: &str) -> Option<&str> {
    let program = command.split_whitespace().next()?;
    let top = program.strip_prefix('/')?.split('/').next()?;
    let literal = !program.contains(|c: char| "$*?[{'\"\\;|&()<>`~".contains(c));
    (literal && !top.is_empty() && !target::is_system(top)).then_some(program)
}

/// Whether the sandbox path `script` exists below `root` (not following a final link).
fn exists(root: &Path, script: &str) -> bool {
    let relative = script.trim_start_matches('/');
    !relative.split('/').any(|part| part == "..")
        && std::fs::symlink_metadata(root.join(relative)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_are_the_literal_owner_paths_of_a_command() {
        let found: Vec<String> = scripts(
            "python3 /.agents/hooks-scripts/gate.py && \"/workspace/.agents/x.sh\" arg; \
             cat /workspace/other /.agents/$NAME /.agentsfoo; \
             node --require=/workspace/.agents/loader.js /workspace//.agents/a.js \
             /workspace/./.agents/b.js /workspace/x/../.agents/c.js /workspace/.agents/../d.js",
        )
        .collect();
        assert_eq!(
            found,
            [
                "/.agents/hooks-scripts/gate.py",
                "/workspace/.agents/x.sh",
                "/workspace/.agents/loader.js",
                "/workspace/.agents/a.js",
                "/workspace/.agents/b.js",
                "/workspace/.agents/c.js",
            ]
        );
    }

    #[test]
    fn a_program_named_by_a_path_in_the_environment_is_needed_there() {
        for (command, needed) in [
            (
                "/workspace/tools/gate.sh --check",
                Some("/workspace/tools/gate.sh"),
            ),
            ("/opt2/gate", Some("/opt2/gate")),
            ("/usr/bin/env true", None),
            ("/lib64/ld.so /x", None),
            ("/tmp/gate", None),
            ("gate.sh", None),
            ("./gate.sh", None),
            ("\"/workspace/gate.sh\"", None),
            ("/workspace/$GATE", None),
            ("/workspace/gate.sh;", None),
            ("/ x", None),
        ] {
            assert_eq!(program_in_environment(command), needed, "{command}");
        }
    }
}
