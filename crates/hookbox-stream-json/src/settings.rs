//! What SDK mode reads from Claude-style settings files besides their hooks (those go to the
//! hook engine): `sandbox.autoAllowBashIfSandboxed`, `sandbox.network.allowedDomains` /
//! `deniedDomains` and `outputStyle`.

use std::path::Path;

use anyhow::{Context, bail};
use hookbox_hooks::{Links, read_policy_text};
use hookbox_net::DomainList;
use serde_json::Value;

/// The JSON of the settings file `file`; `None` when it is gone or is not JSON (loading its
/// hooks reports that). A FIFO, device or oversized file at its path is an error, at once.
fn settings_json(file: &Path) -> anyhow::Result<Option<Value>> {
    let text = read_policy_text(file, Links::Follow)
        .with_context(|| format!("cannot read the settings file {}", file.display()))?;
    Ok(text.and_then(|text| serde_json::from_str(&text).ok()))
}

/// The settings' `sandbox.network` domain lists, each merged across the files as Claude Code
/// merges arrays (concatenated).
pub(crate) struct NetworkDomains {
    /// `allowedDomains`; `None` when no file sets it (an empty list set somewhere allows
    /// nothing).
    pub(crate) allowed: Option<DomainList>,
    /// `deniedDomains`.
    pub(crate) denied: DomainList,
}

/// Reads `sandbox.network.allowedDomains` and `deniedDomains` from `files`, each with the
/// name reasons give it (`label`). A file that is not JSON is skipped here (loading its hooks
/// reports it); a value that is not a list of domain patterns is an error naming the file, the
/// key and the entry.
pub(crate) fn network_domains<'a>(
    files: impl IntoIterator<Item = (&'a Path, String)>,
) -> anyhow::Result<NetworkDomains> {
    let mut allowed: Option<DomainList> = None;
    let mut denied = DomainList::new("the settings' `sandbox.network.deniedDomains`");
    for (file, label) in files {
        let Some(settings) = settings_json(file)? else {
            continue;
        };
        for key in ["allowedDomains", "deniedDomains"] {
            let Some(value) = settings.pointer(&format!("/sandbox/network/{key}")) else {
                continue;
            };
            let list = if key == "allowedDomains" {
                allowed.get_or_insert_with(|| {
                    DomainList::new("the settings' `sandbox.network.allowedDomains`")
                })
            } else {
                &mut denied
            };
            let Some(entries) = value.as_array() else {
                bail!(
                    "{label}: `sandbox.network.{key}` must be a list of domains such as \
                     [\"api.example.com\", \"*.example.com\"], not {value}"
                );
            };
            let domains = entries
                .iter()
                .enumerate()
                .map(|(index, entry)| {
                    entry.as_str().ok_or_else(|| {
                        anyhow::anyhow!(
                            "{label}: `sandbox.network.{key}[{index}]` must be a domain string \
                             such as \"api.example.com\", not {entry}"
                        )
                    })
                })
                .collect::<anyhow::Result<Vec<&str>>>()?;
            list.add(&label, &domains).map_err(|error| {
                anyhow::anyhow!(
                    "{label}: `sandbox.network.{key}[{}]`: {:?} is not a domain pattern: {}; {}",
                    error.index,
                    error.entry,
                    error.problem,
                    hookbox_net::DomainError::HINT
                )
            })?;
        }
    }
    Ok(NetworkDomains { allowed, denied })
}

/// The `sandbox.autoAllowBashIfSandboxed` of the first of `files` (highest precedence first)
/// that sets it; `None` when none does. A file that is not JSON is skipped here (loading its
/// hooks reports it); a value that is not `true` or `false` is an error naming the file.
pub(crate) fn auto_allow_bash<'a>(
    files: impl IntoIterator<Item = &'a Path>,
) -> anyhow::Result<Option<bool>> {
    for file in files {
        let Some(settings) = settings_json(file)? else {
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

/// The `outputStyle` of the first of `files` (highest precedence first, each with the name
/// reasons give it) that sets it, with that name; `None` when none does. A file that is not
/// JSON is skipped here (loading its hooks reports it); a value that is not a string is an
/// error naming the file.
pub(crate) fn output_style<'a>(
    files: impl IntoIterator<Item = (&'a Path, String)>,
) -> anyhow::Result<Option<(String, String)>> {
    for (file, label) in files {
        let Some(settings) = settings_json(file)? else {
            continue;
        };
        match settings.get("outputStyle") {
            None => {}
            Some(Value::String(name)) => return Ok(Some((name.clone(), label))),
            Some(other) => bail!(
                "{label}: `outputStyle` must be the name of an output style such as \
                 \"Explanatory\", not {other}"
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

    #[test]
    fn the_first_output_style_wins_and_a_bad_one_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let silent = write("silent.json", "{}");
        let local = write("local.json", r#"{"outputStyle": "Learning"}"#);
        let user = write("user.json", r#"{"outputStyle": "Explanatory"}"#);
        let bad = write("bad.json", r#"{"outputStyle": 3}"#);
        let read = |paths: &[&std::path::PathBuf]| {
            output_style(
                paths
                    .iter()
                    .map(|path| (path.as_path(), path.display().to_string())),
            )
        };
        assert_eq!(read(&[&silent]).unwrap(), None);
        assert_eq!(
            read(&[&silent, &local, &user]).unwrap(),
            Some(("Learning".to_owned(), local.display().to_string()))
        );
        let error = read(&[&bad]).unwrap_err().to_string();
        assert!(
            error.starts_with(&bad.display().to_string()) && error.contains("`outputStyle`"),
            "{error}"
        );
    }

    #[test]
    fn network_domains_merge_across_files_and_bad_entries_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path
        };
        let silent = write("silent.json", r#"{"sandbox": {"network": {}}}"#);
        let user = write(
            "user.json",
            r#"{"sandbox": {"network": {"allowedDomains": ["a.test"], "deniedDomains": ["x.test"]}}}"#,
        );
        let project = write(
            "project.json",
            r#"{"sandbox": {"network": {"allowedDomains": ["*.b.test"]}}}"#,
        );
        let empty = write(
            "empty.json",
            r#"{"sandbox": {"network": {"allowedDomains": []}}}"#,
        );
        let read = |paths: &[&std::path::PathBuf]| {
            network_domains(
                paths
                    .iter()
                    .map(|path| (path.as_path(), path.display().to_string())),
            )
        };
        let none = read(&[&silent]).unwrap();
        assert!(none.allowed.is_none() && none.denied.is_empty());
        let merged = read(&[&user, &silent, &project]).unwrap();
        assert_eq!(merged.allowed.unwrap().to_string(), "`a.test`, `*.b.test`");
        assert_eq!(merged.denied.to_string(), "`x.test`");
        // Set, but empty: allows nothing (rather than being absent).
        assert!(read(&[&empty]).unwrap().allowed.unwrap().is_empty());
        for (text, wanted) in [
            (
                r#"{"sandbox": {"network": {"allowedDomains": "a.test"}}}"#,
                "`sandbox.network.allowedDomains` must be a list of domains",
            ),
            (
                r#"{"sandbox": {"network": {"deniedDomains": ["ok.test", 7]}}}"#,
                "`sandbox.network.deniedDomains[1]` must be a domain string",
            ),
            (
                r#"{"sandbox": {"network": {"allowedDomains": ["a.test:443"]}}}"#,
                "`sandbox.network.allowedDomains[0]`: \"a.test:443\" is not a domain pattern",
            ),
        ] {
            let bad = write("bad.json", text);
            let error = read(&[&bad]).err().unwrap().to_string();
            assert!(
                error.starts_with(&bad.display().to_string()) && error.contains(wanted),
                "{error}"
            );
        }
    }
}
