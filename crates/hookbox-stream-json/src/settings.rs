//! What SDK mode reads from Claude-style settings files besides their hooks (those go to the
//! hook engine): `sandbox.autoAllowBashIfSandboxed`.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

/// The `sandbox.autoAllowBashIfSandboxed` of the first of `files` (highest precedence first)
/// that sets it; `None` when none does. A file that is not JSON is skipped here (loading its
/// hooks reports it); a value that is not `true` or `false` is an error naming the file.
pub(crate) fn auto_allow_bash<'a>(
    files: impl IntoIterator<Item = &'a Path>,
) -> anyhow::Result<Option<bool>> {
    for file in files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read the settings file {}", file.display()))?;
        let Ok(settings) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        match settings.pointer("/sandbox/autoAllowBashIfSandboxed") {
            None => {}
            Some(Value::Bool(allow)) => return Ok(Some(*allow)),
            Some(other) => bail!(
                "{}: `sandbox.autoAllowBashIfSandboxed` must be true or false, not {other}",
                file.display()
            ),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_file_that_sets_it_wins_and_bad_values_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let silent = write("silent.json", r#"{"hooks": {}}"#);
        let off = write(
            "off.json",
            r#"{"sandbox": {"autoAllowBashIfSandboxed": false}}"#,
        );
        let on = write(
            "on.json",
            r#"{"sandbox": {"autoAllowBashIfSandboxed": true}}"#,
        );
        let broken = write("broken.json", "{");
        let bad = write(
            "bad.json",
            r#"{"sandbox": {"autoAllowBashIfSandboxed": "no"}}"#,
        );
        let paths = |list: &[&std::path::PathBuf]| {
            list.iter()
                .map(|path| path.to_path_buf())
                .collect::<Vec<_>>()
        };
        let find = |list: Vec<std::path::PathBuf>| {
            auto_allow_bash(list.iter().map(std::path::PathBuf::as_path))
        };
        assert_eq!(find(paths(&[&silent, &broken])).unwrap(), None);
        assert_eq!(find(paths(&[&silent, &off, &on])).unwrap(), Some(false));
        assert_eq!(find(paths(&[&on, &off])).unwrap(), Some(true));
        let error = find(paths(&[&bad])).unwrap_err().to_string();
        assert!(
            error.contains("bad.json") && error.contains("autoAllowBashIfSandboxed"),
            "{error}"
        );
    }
}
