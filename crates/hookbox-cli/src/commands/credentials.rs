//! `hookbox credentials …`: the server-side secrets `network.allowlist` entries name with
//! `"credential": "NAME"`. Values are read from stdin and never printed.

use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use hookbox_env::{CredentialStore, Environments};
use hookbox_net::{Credential, CredentialSource, SharedCredentials};
use serde_json::{Value, json};

use crate::cli::CredentialsCommand;
use crate::render;

pub(crate) fn run(command: &CredentialsCommand) -> anyhow::Result<ExitCode> {
    let home = Environments::default_home()?;
    let store = open(&home)?;
    match command {
        CredentialsCommand::Add {
            name,
            header,
            prefix,
        } => {
            let mut secret = String::new();
            std::io::stdin()
                .read_to_string(&mut secret)
                .context("cannot read the credential's value from standard input")?;
            let value = value_from_stdin(&secret, prefix.as_deref().unwrap_or_default())?;
            let info = store.add(name, Some(header), &value)?;
            render::print_text(&format!(
                "added credential `{}` (sent as header `{}`)\n",
                info.name, info.header
            ))?;
        }
        CredentialsCommand::List { json } => {
            let all = store.list()?;
            if *json {
                let all: Vec<Value> = all
                    .iter()
                    .map(|info| {
                        json!({"name": info.name, "header": info.header, "created": info.created})
                    })
                    .collect();
                render::print_json(&Value::Array(all))?;
            } else {
                let lines: String = all
                    .iter()
                    .map(|info| {
                        format!(
                            "{}  header {}  created {}\n",
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

/// The header value to store: `prefix` then what was read from stdin, less one trailing newline
/// (`\n` or `\r\n`). An empty secret is an error.
fn value_from_stdin(read: &str, prefix: &str) -> anyhow::Result<String> {
    let secret = read
        .strip_suffix("\r\n")
        .or_else(|| read.strip_suffix('\n'))
        .unwrap_or(read);
    if secret.is_empty() {
        bail!(
            "no credential value on standard input; pipe it in, e.g. `printf %s \"$TOKEN\" | \
             hookbox credentials add NAME`"
        );
    }
    Ok(format!("{prefix}{secret}"))
}

/// hookbox home `home`'s credential store as the source the hook client resolves allowlist
/// `credential`s from (each lookup reads the store, so credentials added later are seen).
pub(crate) fn source(home: &Path) -> anyhow::Result<SharedCredentials> {
    Ok(SharedCredentials::new(StoreSource(open(home)?)))
}

/// [`CredentialStore`] as a [`CredentialSource`].
struct StoreSource(CredentialStore);

impl CredentialSource for StoreSource {
    fn credential(&self, id: &str) -> Result<Option<Credential>, String> {
        match self.0.get(id) {
            Ok(found) => {
                Ok(found.map(|stored| Credential::new(stored.header.clone(), stored.value())))
            }
            Err(error) => Err(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use hookbox_net::CredentialSource;

    use super::{StoreSource, value_from_stdin};

    #[test]
    fn one_trailing_newline_is_stripped_and_the_prefix_prepended() {
        assert_eq!(value_from_stdin("abc\n", "").unwrap(), "abc");
        assert_eq!(value_from_stdin("abc\r\n", "").unwrap(), "abc");
        assert_eq!(value_from_stdin("abc\n\n", "").unwrap(), "abc\n");
        assert_eq!(value_from_stdin("abc", "Bearer ").unwrap(), "Bearer abc");
        assert!(value_from_stdin("\n", "Bearer ").is_err());
        assert!(value_from_stdin("", "").is_err());
    }

    #[test]
    fn the_store_resolves_credentials_for_the_policy() {
        let home = tempfile::tempdir().unwrap();
        let store = hookbox_env::CredentialStore::open(home.path()).unwrap();
        store.add("tok", Some("X-Key"), "v4lue").unwrap();
        let source = StoreSource(store);
        let credential = source.credential("tok").unwrap().unwrap();
        assert_eq!(
            (credential.header(), credential.value()),
            ("X-Key", "v4lue")
        );
        assert_eq!(source.credential("missing").unwrap(), None);
        assert!(
            source
                .credential("bad/name")
                .unwrap_err()
                .contains("bad/name")
        );
    }
}
