//! `hookbox credentials …`: the server-side secrets `network.allowlist` entries name with
//! `"credential": "NAME"`. Values are read from stdin (on a terminal, typed at a prompt that
//! does not echo them) and never printed.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hookbox_env::{CredentialStore, Environments};
use serde_json::{Value, json};

use crate::cli::CredentialsCommand;
use crate::render;

pub(crate) fn run(command: &CredentialsCommand) -> anyhow::Result<ExitCode> {
    let home = Environments::default_home()?;
    let store = open(&home)?;
    match command {
        CredentialsCommand::Add {
            name,
            domains,
            header,
            prefix,
        } => {
            // On a terminal: a prompt, and the typed value is not echoed.
            let secret = if std::io::stdin().is_terminal() {
                rpassword::prompt_password(format!(
                    "value of credential `{name}` (not shown as you type): "
                ))
                .context("cannot read the credential's value from the terminal")?
            } else {
                let mut secret = String::new();
                std::io::stdin()
                    .read_to_string(&mut secret)
                    .context("cannot read the credential's value from standard input")?;
                secret
            };
            let value = header_value(&secret, prefix.as_deref().unwrap_or_default())?;
            let domains: Vec<&str> = domains.iter().map(String::as_str).collect();
            let info = store.add(name, Some(header), &value, &domains)?;
            render::print_text(&format!(
                "added credential `{}` (sent as header `{}`, only to {})\n",
                info.name,
                info.header,
                info.domains.join(", ")
            ))?;
        }
        CredentialsCommand::List { json } => {
            let all = store.list()?;
            if *json {
                let all: Vec<Value> = all
                    .iter()
                    .map(|info| {
                        json!({"name": info.name, "header": info.header,
                               "domains": info.domains, "created": info.created})
                    })
                    .collect();
                render::print_json(&Value::Array(all))?;
            } else {
                let lines: String = all
                    .iter()
                    .map(|info| {
                        let domains = if info.domains.is_empty() {
                            format!(
                                "NONE (re-add it: hookbox credentials add {} --domain HOST)",
                                info.name
                            )
                        } else {
                            info.domains.join(",")
                        };
                        format!(
                            "{}  header {}  domains {domains}  created {}\n",
                            info.name, info.header, info.created
                        )
                    })
                    .collect();
                render::print_text(&lines)?;
            }
        }
        CredentialsCommand::Rm { name } => {
            store.remove(name)?;
            render::print_text(&format!("removed credential `{name}`\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The credential store of hookbox home `home`.
fn open(home: &Path) -> anyhow::Result<CredentialStore> {
    CredentialStore::open(home)
        .with_context(|| format!("cannot open the credentials in {}", home.display()))
}

/// The header value to store: `prefix` then the secret that was read, less one trailing
/// newline (`\n` or `\r\n`). An empty secret is an error.
fn header_value(read: &str, prefix: &str) -> anyhow::Result<String> {
    let secret = read
        .strip_suffix("\r\n")
        .or_else(|| read.strip_suffix('\n'))
        .unwrap_or(read);
    if secret.is_empty() {
        bail!(
            "no credential value given; type it at the prompt, or pipe it in, e.g. `printf %s \
             \"$TOKEN\" | hookbox credentials add NAME`"
        );
    }
    Ok(format!("{prefix}{secret}"))
}

#[cfg(test)]
mod tests {
    use super::header_value;

    #[test]
    fn one_trailing_newline_is_stripped_and_the_prefix_prepended() {
        assert_eq!(header_value("abc\n", "").unwrap(), "abc");
        assert_eq!(header_value("abc\r\n", "").unwrap(), "abc");
        assert_eq!(header_value("abc\n\n", "").unwrap(), "abc\n");
        assert_eq!(header_value("abc", "Bearer ").unwrap(), "Bearer abc");
        assert!(header_value("\n", "Bearer ").is_err());
        assert!(header_value("", "").is_err());
    }
}
