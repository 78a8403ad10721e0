//! Claude Code's filesystem sub-agents: `.claude/agents/*.md` files whose front matter gives
//! `name`, `description`, `tools` (a comma list) and `model`, and whose body is the agent's
//! system prompt.
//!
//! A project's agent files are writable by the model the project's sessions run, so they are
//! read as untrusted input: a symlinked `.claude` or `agents` directory, a symlinked or
//! non-regular file and an oversized file are skipped with a warning (nothing is read through
//! a link out of the project), and what an agent may use is only ever narrowed by its file
//! (its `tools` filter the session's tools; permissions and hooks stay the session's).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest agent file read, in bytes.
const MAX_FILE_BYTES: u64 = 256 * 1024;

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
/// the project's (model-writable): it and its parent must not be symlinks, nor its files.
pub(crate) fn load(dir: &Path, confined: bool) -> (Vec<(String, AgentSpec)>, Vec<String>) {
    let mut agents = Vec::new();
    let mut warnings = Vec::new();
    if confined {
        let parent = dir.parent().unwrap_or(dir);
        for path in [parent, dir] {
            if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
                warnings.push(format!(
                    "ignoring the agents in {}: {} is a symbolic link, and project agents are \
                     read only from the project itself",
                    dir.display(),
                    path.display()
                ));
                return (agents, warnings);
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (agents, warnings);
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.sort();
    for file in files {
        match read(&file, confined).and_then(|text| parse(&text)) {
            Ok((name, spec)) => agents.push((name, spec)),
            Err(problem) => warnings.push(format!(
                "ignoring the agent file {}: {problem}",
                file.display()
            )),
        }
    }
    (agents, warnings)
}

/// The text of agent file `file`: a regular file (not a symlink when `confined`) of at most
/// [`MAX_FILE_BYTES`].
fn read(file: &Path, confined: bool) -> Result<String, String> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // O_NONBLOCK: a FIFO planted in the directory must not hang the session's start.
    let mut flags = libc::O_NONBLOCK;
    if confined {
        flags |= libc::O_NOFOLLOW;
    }
    options.custom_flags(flags);
    let handle = options.open(file).map_err(|err| {
        if err.raw_os_error() == Some(libc::ELOOP) {
            "it is a symbolic link; project agent files must be regular files in the project"
                .to_owned()
        } else {
            format!("cannot read it: {err}")
        }
    })?;
    let meta = handle
        .metadata()
        .map_err(|err| format!("cannot read it: {err}"))?;
    if !meta.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "it is {} bytes; agent files may have at most {MAX_FILE_BYTES}",
            meta.len()
        ));
    }
    let mut text = String::new();
    handle
        .take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(|err| format!("cannot read it as UTF-8 text: {err}"))?;
    Ok(text)
}

/// An agent file's text: `---` front matter of `key: value` lines, then the prompt.
fn parse(text: &str) -> Result<(String, AgentSpec), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let missing = "it does not start with a `---` front matter block (name, description, tools, \
                   model) followed by the agent's prompt";
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(missing.to_owned());
    }
    let mut name = None;
    let mut description = None;
    let mut tools = None;
    let mut model = None;
    let mut closed = false;
    let mut consumed = text.len() - lines.clone().map(str::len).sum::<usize>();
    for line in lines.by_ref() {
        consumed += line.len();
        let line = line.trim_end();
        if line == "---" {
            closed = true;
            break;
        }
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            return Err(format!(
                "front matter line {line:?} is not `key: value` (the values must fit on one line)"
            ));
        };
        let value = unquote(value.trim());
        match key.trim() {
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
    if !closed {
        return Err("its front matter has no closing `---` line".to_owned());
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
    let prompt = text.get(consumed..).unwrap_or_default().trim();
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

/// `value` without one pair of surrounding quotes.
fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner.to_owned();
        }
    }
    value.to_owned()
}

/// A `tools:` value: `Read, Grep` or `[Read, Grep]`.
fn list(value: &str) -> Vec<String> {
    let value = value
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(value);
    value
        .split(',')
        .map(|item| unquote(item.trim()))
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
