//! Claude Code's output styles: the settings' `outputStyle` names one, whose prompt is added to
//! the end of the session's system prompt. Built in, in Claude Code's order: `default` (adds
//! nothing), `Proactive`, `Concise`, `Explanatory` and `Learning` (hookbox's own wording of what
//! Claude Code documents for them); custom ones
//! are `.claude/output-styles/*.md` files (the user's, under Claude Code's configuration
//! directory, then the project's, a later one replacing an earlier one of the same name) whose
//! front matter gives `name` (else the file's name), `description` and
//! `keep-coding-instructions`, and whose body is the prompt. Project files are read under the
//! rules of [`md_files`] (no symbolic links, a size cap).

use std::path::{Path, PathBuf};

use crate::md_files;

/// The style that adds nothing.
pub(crate) const DEFAULT: &str = "default";

/// One output style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputStyle {
    /// Its name, as `outputStyle` names it.
    pub(crate) name: String,
    /// What it does, for people.
    pub(crate) description: String,
    /// What it adds to the system prompt (empty for `default`).
    pub(crate) prompt: String,
    /// The front matter's `keep-coding-instructions`. hookbox's system prompt has no coding
    /// instructions of its own to drop, so it changes nothing (README "Deviations").
    pub(crate) keep_coding_instructions: bool,
}

/// The built-in styles, `default` first.
fn builtins() -> Vec<OutputStyle> {
    let style = |name: &str, description: &str, prompt: &str| OutputStyle {
        name: name.to_owned(),
        description: description.to_owned(),
        prompt: prompt.to_owned(),
        keep_coding_instructions: true,
    };
    vec![
        style(DEFAULT, "The session's own system prompt, unchanged", ""),
        style(
            "Proactive",
            "Acts at once, keeping interruptions for what only the user can decide",
            "# Output style: Proactive\n\nGet on with the work. When a request is clear enough \
             to act on, act: make reasonable assumptions, say in a line which ones you made, \
             and carry the task through to the end rather than stopping to propose a plan or \
             to ask whether to go on. Keep questions for what only the user can decide and for \
             what cannot be undone.",
        ),
        style(
            "Concise",
            "Short answers: the outcome first, no preamble or narration",
            "# Output style: Concise\n\nWork as thoroughly as ever, but say less about it. \
             Open with the outcome; leave out preambles, restatements of the request and a \
             running account of each step; keep only what the user needs to act on or to \
             check the work.",
        ),
        style(
            "Explanatory",
            "Explains the choices made while doing the work",
            "# Output style: Explanatory\n\nDo the task as asked, and teach along the way: when \
             a choice is worth understanding (why this approach, what the surrounding code \
             expects, what a pattern in this codebase is for), add a short note headed \
             \"Insight\" of two or three points next to the work it explains. Keep the notes \
             about this task and this code, not general advice.",
        ),
        style(
            "Learning",
            "Works with the user, who writes some of the code",
            "# Output style: Learning\n\nWork with the user as a pair rather than alone. Explain \
             your reasoning in short \"Insight\" notes. When a piece of the work is small and \
             instructive (a decision, a condition, a few lines of logic), do not write it: \
             leave a `TODO(human)` marker where it goes, say exactly what it must do and why, \
             and ask the user to write it before you go on.",
        ),
    ]
}

/// The styles there are: the built-in ones, then those of the `*.md` files in `dirs` (each
/// with whether it is the project's, so confined), a later style replacing an earlier one of
/// the same name; with a warning for each file that could not be used.
pub(crate) fn available(dirs: &[(PathBuf, bool)]) -> (Vec<OutputStyle>, Vec<String>) {
    let mut styles = builtins();
    let mut warnings = Vec::new();
    for (dir, confined) in dirs {
        let (files, problems) = md_files::read_dir(dir, *confined, "output style");
        warnings.extend(problems);
        for (file, text) in files {
            match parse(&file, &text) {
                Ok(style) => {
                    styles.retain(|known| known.name != style.name);
                    styles.push(style);
                }
                Err(problem) => warnings.push(format!(
                    "ignoring the output style file {}: {problem}",
                    file.display()
                )),
            }
        }
    }
    (styles, warnings)
}

/// The style `wanted` names (set by `source`, for the warning), matched without regard to
/// case as Claude Code's own names are written either way; `default` when none is wanted, and
/// with a warning when no style has that name.
pub(crate) fn choose(
    styles: &[OutputStyle],
    wanted: Option<(&str, &str)>,
) -> (OutputStyle, Option<String>) {
    let find = |name: &str| {
        styles
            .iter()
            .find(|style| style.name == name)
            .or_else(|| {
                styles
                    .iter()
                    .find(|style| style.name.eq_ignore_ascii_case(name))
            })
            .cloned()
    };
    let default = || find(DEFAULT).unwrap_or_else(|| builtins().swap_remove(0));
    let Some((name, source)) = wanted else {
        return (default(), None);
    };
    match find(name) {
        Some(style) => (style, None),
        None => {
            let known: Vec<&str> = styles.iter().map(|style| style.name.as_str()).collect();
            let warning = format!(
                "{source}: no output style is named `{name}`; using `default`. The styles there \
                 are: {} (add .claude/output-styles/{name}.md to define it)",
                known.join(", ")
            );
            (default(), Some(warning))
        }
    }
}

/// An output style file `file`'s text.
fn parse(file: &Path, text: &str) -> Result<OutputStyle, String> {
    let (pairs, prompt) =
        md_files::front_matter(text, "name, description, keep-coding-instructions")?;
    let mut style = OutputStyle {
        name: file
            .file_stem()
            .map(|stem| stem.to_string_lossy().into_owned())
            .unwrap_or_default(),
        description: String::new(),
        prompt: prompt.to_owned(),
        keep_coding_instructions: false,
    };
    for (key, value) in pairs {
        match key.as_str() {
            "name" if !value.is_empty() => style.name = value,
            "description" => style.description = value,
            "keep-coding-instructions" => {
                style.keep_coding_instructions = match value.as_str() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(format!(
                            "`keep-coding-instructions` must be true or false, not {other:?}"
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if style.prompt.is_empty() {
        return Err("it has no text after its front matter: the instructions it adds".to_owned());
    }
    Ok(style)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_add_styles_and_unknown_names_fall_back_to_default() {
        let user = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let dir = project.path().join(".claude/output-styles");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            user.path().join("pirate.md"),
            "---\ndescription: user's\n---\nuser pirate",
        )
        .unwrap();
        std::fs::write(
            dir.join("pirate.md"),
            "---\ndescription: Talks like a pirate\nkeep-coding-instructions: true\n---\nArr.",
        )
        .unwrap();
        std::fs::write(
            dir.join("terse.md"),
            "---\nname: Terse\n---\nOne line answers.",
        )
        .unwrap();
        std::fs::write(
            dir.join("bad.md"),
            "---\nkeep-coding-instructions: yes\n---\nx",
        )
        .unwrap();
        std::fs::write(dir.join("empty.md"), "---\nname: e\n---\n").unwrap();
        let (styles, warnings) = available(&[(user.path().to_path_buf(), false), (dir, true)]);
        let names: Vec<&str> = styles.iter().map(|style| style.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "default",
                "Proactive",
                "Concise",
                "Explanatory",
                "Learning",
                "pirate",
                "Terse"
            ]
        );
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].contains("bad.md") && warnings[0].contains("true or false"));
        assert!(warnings[1].contains("empty.md") && warnings[1].contains("no text"));
        let (pirate, warning) = choose(&styles, Some(("pirate", "settings.json")));
        assert_eq!(warning, None);
        assert_eq!(pirate.prompt, "Arr.");
        assert!(pirate.keep_coding_instructions);
        assert_eq!(
            choose(&styles, Some(("explanatory", "s"))).0.name,
            "Explanatory"
        );
        let (default, warning) = choose(&styles, Some(("Nope", "/p/settings.json")));
        assert_eq!(default.name, DEFAULT);
        assert!(default.prompt.is_empty());
        let warning = warning.unwrap();
        assert!(
            warning.starts_with("/p/settings.json: no output style is named `Nope`")
                && warning.contains("Terse"),
            "{warning}"
        );
        assert_eq!(choose(&styles, None), (default, None));
    }
}
