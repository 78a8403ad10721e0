//! `--mcp-config`: the MCP servers an SDK passes on the command line (its `mcp_servers`
//! option), each value a JSON object or the path of a file holding one, `{"mcpServers":
//! {NAME: {...}}}` as Claude Code reads it.

use std::path::Path;

use anyhow::{Context, bail};
use serde_json::{Map, Value};

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
}

/// The servers of every `--mcp-config` value, in order; a later server of the same name
/// replaces an earlier one. A value that is neither a readable JSON file nor JSON, or whose
/// shape is wrong, is an error naming it and the JSON path.
pub(crate) fn parse(values: &[String]) -> anyhow::Result<Vec<ServerConfig>> {
    let mut servers: Vec<ServerConfig> = Vec::new();
    for value in values {
        let (source, text) = if value.trim_start().starts_with('{') {
            ("--mcp-config (JSON)".to_owned(), value.clone())
        } else {
            let source = format!("--mcp-config {value}");
            let text = std::fs::read_to_string(Path::new(value))
                .with_context(|| format!("cannot read {source}"))?;
            (source, text)
        };
        let config: Value = serde_json::from_str(&text)
            .with_context(|| format!("{source} is not JSON; pass {{\"mcpServers\": {{…}}}}"))?;
        let Some(entries) = config.get("mcpServers").and_then(Value::as_object) else {
            bail!("{source}: $.mcpServers must be an object of servers by name");
        };
        for (name, entry) in entries {
            let server = server(name, entry, &source)?;
            servers.retain(|known| known.name != server.name);
            servers.push(server);
        }
    }
    Ok(servers)
}

fn server(name: &str, entry: &Value, source: &str) -> anyhow::Result<ServerConfig> {
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
            env: strings(field("env"))?,
        },
        "http" => Transport::Http {
            url: match field("url") {
                (Some(Value::String(url)), at) if !url.is_empty() => expand(url, &at)?,
                (other, at) => bail!("{at} must be the server's URL, not {}", shown(other)),
            },
            headers: strings(field("headers"))?,
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

/// An object of strings (`env`, `headers`) at `at`, absent meaning none.
fn strings((value, at): (Option<&Value>, String)) -> anyhow::Result<Vec<(String, String)>> {
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
/// `VAR` without a default is an error naming `at`. Only the SDK-given configuration is
/// expanded, never anything a server or the model produced.
fn expand(text: &str, at: &str) -> anyhow::Result<String> {
    expand_with(text, at, |name| std::env::var(name).ok())
}

/// [`expand`] reading variables through `lookup`.
fn expand_with(
    text: &str,
    at: &str,
    lookup: impl Fn(&str) -> Option<String>,
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
        match (lookup(name), default) {
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

    #[test]
    fn reads_json_and_files_later_names_winning() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mcp.json");
        std::fs::write(
            &file,
            r#"{"mcpServers": {"calc": {"command": "calc-server"}, "web": {"type": "http", "url": "http://x"}}}"#,
        )
        .unwrap();
        let servers = parse(&[
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
        let error = |value: &str| format!("{:#}", parse(&[value.to_owned()]).unwrap_err());
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
        let lookup = |name: &str| (name == "HOME_DIR").then(|| "/home/u".to_owned());
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
        let nested = |name: &str| (name == "A").then(|| "${B}".to_owned());
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
        let servers = parse(&[r#"{"mcpServers": {
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
            parse(&[
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

    #[test]
    fn stdio_and_http_servers_are_read_whole() {
        let servers = parse(&[r#"{"mcpServers": {
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
