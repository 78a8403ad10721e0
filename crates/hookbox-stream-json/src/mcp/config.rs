//! `--mcp-config`: the MCP servers an SDK passes on the command line (its `mcp_servers`
//! option), each value a JSON object or the path of a file holding one, `{"mcpServers":
//! {NAME: {...}}}` as Claude Code reads it.
//!
//! `${VAR}` in a value is expanded from hookbox's environment (which holds the provider's API
//! key) only in a configuration the model cannot change: inline JSON, or a file out of its
//! reach. A file where the model writes ([`Writable`]) that uses one is refused.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Map, Value};

use super::writable::{Place, Writable};

/// One configured server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ServerConfig {
    /// Its name (the `NAME` of its tools' `mcp__NAME__TOOL`).
    pub(crate) name: String,
    /// Its `type`: `sdk` (hosted by the SDK in its own process), `stdio`, `http`, `sse`.
    pub(crate) kind: String,
    /// Where it came from, for messages: `--mcp-config <file>` or `--mcp-config (JSON)`.
    pub(crate) source: String,
    /// How to reach it, for the kinds hookbox connects itself.
    pub(crate) transport: Transport,
}

/// How hookbox reaches a configured server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transport {
    /// `stdio`: a program started in the session's sandbox, speaking JSON-RPC lines.
    Stdio {
        /// `command`: the program (looked up on the sandbox's `PATH` when it has no slash).
        command: String,
        /// `args`.
        args: Vec<String>,
        /// `env`: the only variables it gets besides the sandbox's own.
        env: Vec<(String, String)>,
    },
    /// `http`: streamable HTTP at `url`, each request carrying `headers`.
    Http {
        /// `url`.
        url: String,
        /// `headers`, sent as given.
        headers: Vec<(String, String)>,
    },
    /// `sdk`, and kinds hookbox does not connect (`sse`, unknown ones).
    Other,
    /// A stdio server hookbox will not start, and why ([`super::trust`]).
    Refused(String),
}

/// Where a configuration came from, for messages and for whether it may expand variables.
struct Source {
    /// `--mcp-config <file>` or `--mcp-config (JSON)`.
    label: String,
    /// For a file the model can change, the entry of its route where it writes.
    writable: Option<PathBuf>,
}

/// The servers of every `--mcp-config` value, in order; a later server of the same name
/// replaces an earlier one. A value that is neither a readable JSON file nor JSON, or whose
/// shape is wrong, is an error naming it and the JSON path; so is a `${VAR}` in a file that
/// lies where the model writes (`writable`).
pub(crate) fn parse(values: &[String], writable: &Writable) -> anyhow::Result<Vec<ServerConfig>> {
    let mut servers: Vec<ServerConfig> = Vec::new();
    for value in values {
        let (source, text) = if value.trim_start().starts_with('{') {
            let label = "--mcp-config (JSON)".to_owned();
            let source = Source {
                label,
                writable: None,
            };
            (source, value.clone())
        } else {
            let label = format!("--mcp-config {value}");
            let text = std::fs::read_to_string(Path::new(value))
                .with_context(|| format!("cannot read {label}"))?;
            let absolute =
                std::path::absolute(value).with_context(|| format!("cannot resolve {label}"))?;
            let writable = match writable.place(&absolute) {
                Place::Safe => None,
                Place::Inside(entry) | Place::Through(entry) => Some(entry),
            };
            (Source { label, writable }, text)
        };
        let label = &source.label;
        let config: Value = serde_json::from_str(&text)
            .with_context(|| format!("{label} is not JSON; pass {{\"mcpServers\": {{…}}}}"))?;
        let Some(entries) = config.get("mcpServers").and_then(Value::as_object) else {
            bail!("{label}: $.mcpServers must be an object of servers by name");
        };
        for (name, entry) in entries {
            let server = server(name, entry, &source)?;
            servers.retain(|known| known.name != server.name);
            servers.push(server);
        }
    }
    Ok(servers)
}

fn server(name: &str, entry: &Value, from: &Source) -> anyhow::Result<ServerConfig> {
    let source = &from.label;
    let path = format!("$.mcpServers.{name}");
    let Some(entry): Option<&Map<String, Value>> = entry.as_object() else {
        bail!("{source}: {path} must be an object, not {entry}");
    };
    if name.is_empty() {
        bail!("{source}: a server in $.mcpServers has an empty name");
    }
    let kind = match entry.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        // Claude Code's default: a server with a `command` is a stdio one.
        None if entry.contains_key("command") => "stdio".to_owned(),
        Some(other) => bail!("{source}: {path}.type must be a string, not {other}"),
        None => bail!(
            "{source}: {path} has neither `type` nor `command`; give `type` (\"sdk\", \
             \"stdio\", \"http\") or a `command`"
        ),
    };
    let field = |key: &str| (entry.get(key), format!("{source}: {path}.{key}"));
    let expand = |text: &str, at: &str| expand(text, at, from);
    let transport = match kind.as_str() {
        "stdio" => Transport::Stdio {
            command: match field("command") {
                (Some(Value::String(command)), at) if !command.is_empty() => expand(command, &at)?,
                (other, at) => bail!("{at} must be the program to run, not {}", shown(other)),
            },
            args: match field("args") {
                (None, _) => Vec::new(),
                (Some(Value::Array(args)), at) => args
                    .iter()
                    .enumerate()
                    .map(|(index, arg)| match arg {
                        Value::String(arg) => expand(arg, &format!("{at}[{index}]")),
                        other => bail!("{at} must hold strings only, not {other}"),
                    })
                    .collect::<anyhow::Result<_>>()?,
                (Some(other), at) => bail!("{at} must be an array of strings, not {other}"),
            },
            env: strings(field("env"), expand)?,
        },
        "http" => Transport::Http {
            url: match field("url") {
                (Some(Value::String(url)), at) if !url.is_empty() => expand(url, &at)?,
                (other, at) => bail!("{at} must be the server's URL, not {}", shown(other)),
            },
            headers: strings(field("headers"), expand)?,
        },
        _ => Transport::Other,
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        kind,
        source: source.to_owned(),
        transport,
    })
}

/// An object of strings (`env`, `headers`) at `at`, absent meaning none, each `expand`ed.
fn strings(
    (value, at): (Option<&Value>, String),
    expand: impl Fn(&str, &str) -> anyhow::Result<String>,
) -> anyhow::Result<Vec<(String, String)>> {
    match value {
        None => Ok(Vec::new()),
        Some(Value::Object(entries)) => entries
            .iter()
            .map(|(key, value)| match value {
                Value::String(text) => Ok((key.clone(), expand(text, &format!("{at}.{key}"))?)),
                other => bail!("{at}.{key} must be a string, not {other}"),
            })
            .collect(),
        Some(other) => bail!("{at} must be an object of strings, not {other}"),
    }
}

/// `text` with each `${VAR}` and `${VAR:-default}` replaced from hookbox's own environment
/// (the one the SDK started it with), as Claude Code expands its MCP configurations; an unset
/// `VAR` without a default is an error naming `at`. Only a configuration the model cannot
/// change is expanded: in a file where it writes, any `${VAR}` is an error naming the file, the
/// JSON path (so the server) and the variable, and saying where to put the file instead.
fn expand(text: &str, at: &str, from: &Source) -> anyhow::Result<String> {
    expand_with(text, at, |name| match &from.writable {
        None => Ok(std::env::var(name).ok()),
        Some(entry) => bail!(
            "{at} uses ${{{name}}}, but the file lies where the model can write ({} is in the \
             session's working directory or an --add-dir), so hookbox does not expand \
             variables from it: the model could make it hand a secret of hookbox's environment \
             (the provider's API key) to a server it controls. Move the file out of the \
             project and its added directories, or pass the configuration inline (the SDK's \
             mcp_servers as a dict), where ${{VAR}} is expanded",
            entry.display()
        ),
    })
}

/// [`expand`] reading variables through `lookup`, which may refuse one.
fn expand_with(
    text: &str,
    at: &str,
    lookup: impl Fn(&str) -> anyhow::Result<Option<String>>,
) -> anyhow::Result<String> {
    let mut expanded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(length) = rest[start + 2..].find('}') else {
            // An unclosed `${` is kept as written, as Claude Code does.
            break;
        };
        expanded.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + 2 + length];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        match (lookup(name)?, default) {
            (Some(value), _) => expanded.push_str(&value),
            (None, Some(default)) => expanded.push_str(default),
            (None, None) => bail!(
                "{at} uses ${{{name}}}, which is not set in hookbox's environment; set it \
                 (the SDK's `env` option) or give a default as ${{{name}:-default}}"
            ),
        }
        rest = &rest[start + 3 + length..];
    }
    expanded.push_str(rest);
    Ok(expanded)
}

/// A value for an error message; `nothing` when absent.
fn shown(value: Option<&Value>) -> String {
    value.map_or_else(|| "nothing".to_owned(), Value::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`parse`] with no directory the model writes in.
    fn parse_anywhere(values: &[String]) -> anyhow::Result<Vec<ServerConfig>> {
        parse(values, &Writable::default())
    }

    #[test]
    fn reads_json_and_files_later_names_winning() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"calc": {"command": "calc-server"}, "web": {"type": "http", "url": "http://x"}}}"#,
        )
        .unwrap();
        let servers = parse_anywhere(&[
            file.display().to_string(),
            r#"{"mcpServers": {"calc": {"type": "sdk", "name": "calc"}}}"#.to_owned(),
        ])
        .unwrap();
        let kinds: Vec<(&str, &str)> = servers
            .iter()
            .map(|server| (server.name.as_str(), server.kind.as_str()))
            .collect();
        assert_eq!(kinds, [("web", "http"), ("calc", "sdk")]);
    }

    #[test]
    fn bad_values_name_the_flag_and_the_path() {
        let error = |value: &str| format!("{:#}", parse_anywhere(&[value.to_owned()]).unwrap_err());
        assert!(error("{nope").contains("--mcp-config (JSON) is not JSON"));
        assert!(error(r#"{"servers": {}}"#).contains("$.mcpServers must be an object"));
        assert!(error(r#"{"mcpServers": {"a": 1}}"#).contains("$.mcpServers.a must be an object"));
        assert!(error(r#"{"mcpServers": {"a": {}}}"#).contains("neither `type` nor `command`"));
        assert!(error("/nonexistent/mcp.json").contains("cannot read --mcp-config /nonexistent"));
        let bad = error(r#"{"mcpServers": {"s": {"type": "stdio"}}}"#);
        assert!(bad.contains("$.mcpServers.s.command must be the program to run, not nothing"));
        let bad = error(r#"{"mcpServers": {"s": {"command": "x", "args": ["a", 1]}}}"#);
        assert!(
            bad.contains("$.mcpServers.s.args must hold strings only, not 1"),
            "{bad}"
        );
        let bad = error(r#"{"mcpServers": {"s": {"command": "x", "env": {"A": 1}}}}"#);
        assert!(
            bad.contains("$.mcpServers.s.env.A must be a string, not 1"),
            "{bad}"
        );
        let bad = error(r#"{"mcpServers": {"s": {"type": "http", "headers": {}}}}"#);
        assert!(
            bad.contains("$.mcpServers.s.url must be the server's URL"),
            "{bad}"
        );
        let bad = error(r#"{"mcpServers": {"s": {"type": "http", "url": "u", "headers": []}}}"#);
        assert!(
            bad.contains("$.mcpServers.s.headers must be an object of strings"),
            "{bad}"
        );
    }

    #[test]
    fn variables_expand_with_defaults_and_unset_ones_name_the_path() {
        let lookup = |name: &str| Ok((name == "HOME_DIR").then(|| "/home/u".to_owned()));
        let expanded = |text: &str| expand_with(text, "$.x", lookup);
        assert_eq!(expanded("${HOME_DIR}/bin").unwrap(), "/home/u/bin");
        assert_eq!(expanded("a${NOPE:-d/e}b").unwrap(), "ad/eb");
        assert_eq!(
            expanded("${HOME_DIR:-x}${HOME_DIR}").unwrap(),
            "/home/u/home/u"
        );
        assert_eq!(
            expanded("$HOME_DIR ${unclosed").unwrap(),
            "$HOME_DIR ${unclosed"
        );
        // An expanded value is not expanded again.
        let nested = |name: &str| Ok((name == "A").then(|| "${B}".to_owned()));
        assert_eq!(expand_with("${A}", "$.x", nested).unwrap(), "${B}");
        let error = expanded("x${NOPE}").unwrap_err().to_string();
        assert!(
            error.contains("$.x uses ${NOPE}, which is not set"),
            "{error}"
        );
    }

    #[test]
    fn every_field_claude_code_expands_is_expanded() {
        let v = std::env::var("PATH").expect("tests run with a PATH");
        let servers = parse_anywhere(&[r#"{"mcpServers": {
            "local": {"command": "${PATH}", "args": ["${PATH}"],
                      "env": {"A": "${PATH}"}},
            "web": {"type": "http", "url": "https://${PATH}",
                    "headers": {"H": "${PATH}"}}
        }}"#
        .to_owned()])
        .unwrap();
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: v.clone(),
                args: vec![v.clone()],
                env: vec![("A".to_owned(), v.clone())],
            }
        );
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: format!("https://{v}"),
                headers: vec![("H".to_owned(), v)],
            }
        );
        let bad = format!(
            "{:#}",
            parse_anywhere(&[
                r#"{"mcpServers": {"s": {"command": "x", "args": ["${HOOKBOX_TEST_UNSET_VAR}"]}}}"#
                    .to_owned()
            ])
            .unwrap_err()
        );
        assert!(
            bad.contains("$.mcpServers.s.args[0] uses ${HOOKBOX_TEST_UNSET_VAR}"),
            "{bad}"
        );
    }

    /// A file where the model writes expands no variable, whatever field holds it; the same
    /// file elsewhere, and inline JSON, do.
    #[test]
    fn a_file_the_model_can_write_expands_no_variable() {
        let scratch = tempfile::tempdir().unwrap();
        let project = scratch.path().join("project");
        std::fs::create_dir_all(project.join("conf")).unwrap();
        let writable = Writable::new([project.clone()]);
        let fields = [
            r#"{"command": "${PATH}"}"#,
            r#"{"command": "x", "args": ["${PATH}"]}"#,
            r#"{"command": "x", "env": {"KEY": "${PATH}"}}"#,
            r#"{"command": "x", "env": {"KEY": "${PATH:-none}"}}"#,
            r#"{"type": "http", "url": "https://${PATH}"}"#,
            r#"{"type": "http", "url": "https://x", "headers": {"H": "${PATH}"}}"#,
        ];
        for field in fields {
            let config = format!(r#"{{"mcpServers": {{"srv": {field}}}}}"#);
            for place in ["mcp.json", "conf/mcp.json"] {
                let file = project.join(place);
                std::fs::write(&file, &config).unwrap();
                let error = format!(
                    "{:#}",
                    parse(&[file.display().to_string()], &writable).unwrap_err()
                );
                let named = format!("--mcp-config {}: $.mcpServers.srv.", file.display());
                assert!(
                    error.contains(&named) && error.contains("uses ${PATH}, but the file lies"),
                    "{field} in {place}: {error}"
                );
            }
            let outside = scratch.path().join("mcp.json");
            std::fs::write(&outside, &config).unwrap();
            parse(&[outside.display().to_string()], &writable).unwrap();
            parse(&[config], &writable).unwrap();
        }
    }

    #[test]
    fn stdio_and_http_servers_are_read_whole() {
        let servers = parse_anywhere(&[r#"{"mcpServers": {
            "local": {"command": "python3", "args": ["s.py", "-v"], "env": {"A": "1"}},
            "web": {"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer t"}}
        }}"#
            .to_owned()])
        .unwrap();
        assert_eq!(
            servers[0].transport,
            Transport::Stdio {
                command: "python3".to_owned(),
                args: vec!["s.py".to_owned(), "-v".to_owned()],
                env: vec![("A".to_owned(), "1".to_owned())],
            }
        );
        assert_eq!(
            servers[1].transport,
            Transport::Http {
                url: "https://x/mcp".to_owned(),
                headers: vec![("Authorization".to_owned(), "Bearer t".to_owned())],
            }
        );
    }
}
