//! `hookbox api-keys …`: the keys `hookbox serve` accepts, stored hashed.

use std::process::ExitCode;

use anyhow::Context;
use hookbox_env::Environments;
use hookbox_server::ApiKeys;
use serde_json::{Value, json};

use crate::cli::ApiKeysCommand;
use crate::render;

pub(crate) fn run(command: &ApiKeysCommand) -> anyhow::Result<ExitCode> {
    let home = Environments::default_home()?;
    let keys = ApiKeys::open(&home)
        .with_context(|| format!("cannot open the key store in {}", home.display()))?;
    match command {
        ApiKeysCommand::Create { name } => {
            let (record, key) = keys
                .create(name)
                .with_context(|| format!("cannot create API key `{name}`"))?;
            render::print_text(&format!(
                "created API key `{}` (id {}); it is shown only now, store it safely:\n{key}\n",
                record.name, record.id
            ))?;
        }
        ApiKeysCommand::List { json } => {
            let all = keys.list()?;
            if *json {
                let all: Vec<Value> = all
                    .iter()
                    .map(|key| {
                        json!({"name": key.name, "id": key.id, "created": key.created.to_string(),
                            "last_used": key.last_used.map(|time| time.to_string())})
                    })
                    .collect();
                render::print_json(&Value::Array(all))?;
            } else {
                let lines: String = all
                    .iter()
                    .map(|key| {
                        format!(
                            "{}  id {}  created {}  last used {}\n",
                            key.name,
                            key.id,
                            key.created,
                            key.last_used
                                .map_or_else(|| "never".to_owned(), |time| time.to_string())
                        )
                    })
                    .collect();
                render::print_text(&lines)?;
            }
        }
        ApiKeysCommand::Revoke { name } => {
            keys.revoke(name).with_context(|| {
                format!("cannot revoke API key `{name}` (`hookbox api-keys list` shows the keys)")
            })?;
            render::print_text(&format!("revoked API key `{name}`\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
