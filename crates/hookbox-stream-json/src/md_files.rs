//! Claude Code's Markdown definition files (`.claude/agents/*.md`, `.claude/output-styles/*.md`):
//! a `---` front matter of one-line `key: value` pairs, then a body (the prompt).
//!
//! A project's files are writable by the model the project's sessions run, so they are read as
//! untrusted input: a symlinked `.claude` or definitions directory, a symlinked or non-regular
//! file and an oversized file are skipped with a warning (nothing is read through a link out of
//! the project).

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The largest definition file read, in bytes.
const MAX_FILE_BYTES: u64 = 256 * 1024;

/// The `*.md` files directly in `dir` (sorted by name) with their text, and a warning for each
/// file or for the directory that could not be used. `what` names the files in warnings
/// (`agent`, `output style`). `confined`: the directory is the project's (model-writable): it
/// and its parent must not be symlinks, nor its files.
pub(crate) fn read_dir(
    dir: &Path,
    confined: bool,
    what: &str,
) -> (Vec<(PathBuf, String)>, Vec<String>) {
    let mut found = Vec::new();
    let mut warnings = Vec::new();
    if confined {
        let parent = dir.parent().unwrap_or(dir);
        for path in [parent, dir] {
            if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
                warnings.push(format!(
                    "ignoring the {what} files in {}: {} is a symbolic link, and project {what} \
                     files are read only from the project itself",
                    dir.display(),
                    path.display()
                ));
                return (found, warnings);
            }
        }
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (found, warnings);
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    files.sort();
    for file in files {
        match read(&file, confined, what) {
            Ok(text) => found.push((file, text)),
            Err(problem) => warnings.push(format!(
                "ignoring the {what} file {}: {problem}",
                file.display()
            )),
        }
    }
    (found, warnings)
}

/// The text of definition file `file`: a regular file (not a symlink when `confined`) of at
/// most [`MAX_FILE_BYTES`].
fn read(file: &Path, confined: bool, what: &str) -> Result<String, String> {
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
            format!(
                "it is a symbolic link; project {what} files must be regular files in the project"
            )
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
            "it is {} bytes; {what} files may have at most {MAX_FILE_BYTES}",
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

/// A front matter's `key: value` pairs, in order.
pub(crate) type Fields = Vec<(String, String)>;

/// A definition file's front matter (its `key: value` pairs in order, values unquoted) and its
/// body, trimmed. `keys` names the expected keys in the error for a missing block.
pub(crate) fn front_matter<'a>(text: &'a str, keys: &str) -> Result<(Fields, &'a str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(format!(
            "it does not start with a `---` front matter block ({keys}) followed by the prompt"
        ));
    }
    let mut pairs = Vec::new();
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
        pairs.push((key.trim().to_owned(), unquote(value.trim())));
    }
    if !closed {
        return Err("its front matter has no closing `---` line".to_owned());
    }
    Ok((pairs, text.get(consumed..).unwrap_or_default().trim()))
}

/// `value` without one pair of surrounding quotes.
pub(crate) fn unquote(value: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_pairs_and_body_or_says_what_is_wrong() {
        let (pairs, body) =
            front_matter("---\nname: \"a\"\n# note\n\nx: 'y'\n---\n\nbody\n", "name").unwrap();
        assert_eq!(
            pairs,
            [
                ("name".to_owned(), "a".to_owned()),
                ("x".to_owned(), "y".to_owned())
            ]
        );
        assert_eq!(body, "body");
        for (text, needle) in [
            ("no front matter", "(name) followed"),
            ("---\nname: a\n", "closing"),
            ("---\nname: |\n  more\n---\n", "one line"),
        ] {
            let error = front_matter(text, "name").unwrap_err();
            assert!(error.contains(needle), "{text:?}: {error}");
        }
    }

    #[test]
    fn project_files_are_not_read_through_symlinks_or_when_oversized() {
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("secret.md");
        std::fs::write(&secret, "secret").unwrap();
        let project = tempfile::tempdir().unwrap();
        let dir = project.path().join(".claude/defs");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ok.md"), "fine").unwrap();
        std::fs::write(dir.join("big.md"), "x".repeat(300 * 1024)).unwrap();
        std::os::unix::fs::symlink(&secret, dir.join("leak.md")).unwrap();
        let (found, warnings) = read_dir(&dir, true, "thing");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].1, "fine");
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        for (needle, why) in [("big.md", "bytes"), ("leak.md", "symbolic link")] {
            assert!(
                warnings
                    .iter()
                    .any(|warning| warning.contains(needle) && warning.contains(why)),
                "{warnings:?}"
            );
        }
        // The user's own directory may link its files.
        let (found, _) = read_dir(&dir, false, "thing");
        assert_eq!(found.len(), 2);
        // A linked directory is refused as a whole.
        let linked = tempfile::tempdir().unwrap();
        std::fs::create_dir(linked.path().join(".claude")).unwrap();
        std::os::unix::fs::symlink(&dir, linked.path().join(".claude/defs")).unwrap();
        let (found, warnings) = read_dir(&linked.path().join(".claude/defs"), true, "thing");
        assert!(found.is_empty());
        assert!(warnings[0].contains("symbolic link"), "{warnings:?}");
    }
}
