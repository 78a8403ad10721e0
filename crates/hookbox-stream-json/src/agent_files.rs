//! Claude Code's filesystem sub-agents: `.claude/agents/*.md` files whose front matter gives
//! `name`, `description`, `tools` (a comma list) and `model`, and whose body is the agent's
//! system prompt.
//!
//! A project's agent files are writable by the model the project's sessions run, so they are
//! read as untrusted input: a symlinked `.claude` or `agents` directory, a symlinked or
//! non-regular file and an oversized file are skipped with a warning (nothing is read through
//! a link out of the project), and what an agent may use is only ever narrowed by its file
//! (its `tools` filter the session's tools; permissions and hooks stay the session's).

use std::path::Path;

use crate::md_files;

/// A sub-agent as the SDK or a file defines it, before its model is resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AgentSpec {
    /// When to use it (shown to the model).
    pub(crate) description: String,
    /// Its system prompt.
    pub(crate) prompt: String,
    /// The tools it may use (`None`: all of the session's).
    pub(crate) tools: Option<Vec<String>>,
    /// Its model as written (`None` or `inherit`: the parent's).
    pub(crate) model: Option<String>,
}

/// The agents of the `*.md` files directly in `dir`, by name (sorted by file name), and a
/// warning for each file or directory that could not be used. `confined`: the directory is
/// the project's (model-writable; see [`md_files`]).
pub(crate) fn load(dir: &Path, confined: bool) -> (Vec<(String, AgentSpec)>, Vec<String>) {
    let (files, mut warnings) = md_files::read_dir(dir, confined, "agent");
    let mut agents = Vec::new();
    for (file, text) in files {
        match parse(&text) {
            Ok((name, spec)) => agents.push((name, spec)),
            Err(problem) => warnings.push(format!(
                "ignoring the agent file {}: {problem}",
                file.display()
            )),
        }
    }
    (agents, warnings)
}

/// An agent file's text: `---` front matter of `key: value` lines, then the prompt.
fn parse(text: &str) -> Result<(String, AgentSpec), String> {
    let (pairs, prompt) = md_files::front_matter(text, "name, description, tools, model")?;
    let mut name = None;
    let mut description = None;
    let mut tools = None;
    let mut model = None;
    for (key, value) in pairs {
        match key.as_str() {
            "name" => name = Some(value),
            "description" => description = Some(value),
            // `tools:` alone is YAML's null: all of the session's tools, as in Claude Code.
            "tools" => tools = (!value.is_empty()).then(|| list(&value)),
            "model" => model = Some(value).filter(|model| !model.is_empty()),
            // Claude Code's other keys (color, permissionMode…) would only widen or decorate:
            // hookbox keeps the session's permissions.
            _ => {}
        }
    }
    let name = name
        .filter(|name| !name.is_empty())
        .ok_or("its front matter has no `name:`")?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "its name {name:?} may have only letters, digits, `-` and `_`"
        ));
    }
    let description = description
        .filter(|description| !description.is_empty())
        .ok_or("its front matter has no `description:` (when the agent should be used)")?;
    Ok((
        name,
        AgentSpec {
            description,
            prompt: prompt.to_owned(),
            tools,
            model,
        },
    ))
}

/// A `tools:` value: `Read, Grep` or `[Read, Grep]`.
fn list(value: &str) -> Vec<String> {
    let value = value
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(value);
    value
        .split(',')
        .map(|item| md_files::unquote(item.trim()))
        .filter(|item| !item.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_front_matter_and_prompt() {
        let (name, spec) = parse(
            "---\nname: reviewer\ndescription: \"Reviews code\"\ntools: Read, Grep\nmodel: haiku\ncolor: red\n---\n\nYou review code.\nCarefully.\n",
        )
        .unwrap();
        assert_eq!(name, "reviewer");
        assert_eq!(spec.description, "Reviews code");
        assert_eq!(spec.tools, Some(vec!["Read".to_owned(), "Grep".to_owned()]));
        assert_eq!(spec.model.as_deref(), Some("haiku"));
        assert_eq!(spec.prompt, "You review code.\nCarefully.");
        let (_, spec) = parse("---\nname: a\ndescription: d\ntools: [Read]\n---\np").unwrap();
        assert_eq!(spec.tools, Some(vec!["Read".to_owned()]));
        assert_eq!(spec.model, None);
        let (_, spec) = parse("---\nname: a\ndescription: d\ntools: []\n---\np").unwrap();
        assert_eq!(spec.tools, Some(Vec::new()));
        let (_, spec) = parse("---\nname: a\ndescription: d\ntools:\n---\np").unwrap();
        assert_eq!(spec.tools, None);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        for (text, needle) in [
            ("no front matter", "front matter"),
            ("---\nname: a\ndescription: d\n", "closing"),
            ("---\ndescription: d\n---\n", "`name:`"),
            ("---\nname: a\n---\n", "`description:`"),
            ("---\nname: ../x\ndescription: d\n---\n", "letters"),
            ("---\nname: a\ndescription: |\n  more\n---\n", "one line"),
        ] {
            let error = parse(text).unwrap_err();
            assert!(error.contains(needle), "{text:?}: {error}");
        }
    }

    #[test]
    fn project_agents_are_not_read_through_symlinks() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.md");
        std::fs::write(&secret, "---\nname: leak\ndescription: d\n---\nsecret").unwrap();
        let project = tempfile::tempdir().unwrap();
        let agents = project.path().join(".claude/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("ok.md"),
            "---\nname: ok\ndescription: d\n---\nfine",
        )
        .unwrap();
        std::os::unix::fs::symlink(&secret, agents.join("leak.md")).unwrap();
        let (found, warnings) = load(&agents, true);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "ok");
        assert!(
            warnings.len() == 1 && warnings[0].contains("leak.md"),
            "{warnings:?}"
        );
        // The user's own directory may link its files.
        let (found, _) = load(&agents, false);
        assert_eq!(found.len(), 2);
        // A linked agents directory is refused as a whole.
        let linked = tempfile::tempdir().unwrap();
        std::fs::create_dir(linked.path().join(".claude")).unwrap();
        std::os::unix::fs::symlink(&agents, linked.path().join(".claude/agents")).unwrap();
        let (found, warnings) = load(&linked.path().join(".claude/agents"), true);
        assert!(found.is_empty());
        assert!(warnings[0].contains("symbolic link"), "{warnings:?}");
    }
}
