//! Reading an [`EgressPolicy`] from the `network` member of an environment, with errors that
//! name the JSON path of the offending value.

use serde_json::{Map, Value};

use super::pattern::Pattern;
use super::{CredentialRef, EgressPolicy, Entry, Mode, PolicyError};
use crate::headers;

/// Parses `network`: absent or `null` ⇒ public egress; `"disabled"` ⇒ no egress;
/// `{"allowlist": "disabled"}` ⇒ no egress; `{"allowlist": [entry, …]}` ⇒ only matching hosts;
/// `{}` ⇒ public egress. Unknown members are refused so a typo cannot widen egress silently.
pub(super) fn network(network: Option<&Value>) -> Result<EgressPolicy, PolicyError> {
    let path = "network";
    let mode = match network {
        None | Some(Value::Null) => Mode::Public,
        Some(Value::String(text)) if text == "disabled" => Mode::Disabled,
        Some(Value::Object(members)) => object(path, members)?,
        Some(_) => {
            return Err(error(
                path,
                "must be \"disabled\" or an object like {\"allowlist\": [...]}",
            ));
        }
    };
    Ok(EgressPolicy { mode })
}

fn object(path: &str, members: &Map<String, Value>) -> Result<Mode, PolicyError> {
    known_members(path, members, &["allowlist"])?;
    let path = format!("{path}.allowlist");
    match members.get("allowlist") {
        None => Ok(Mode::Public),
        Some(Value::String(text)) if text == "disabled" => Ok(Mode::Disabled),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(index, item)| entry(&format!("{path}[{index}]"), item))
            .collect::<Result<_, _>>()
            .map(Mode::Allowlist),
        Some(_) => Err(error(
            &path,
            "must be \"disabled\" or a list of {\"domain\": ...} entries",
        )),
    }
}

fn entry(path: &str, item: &Value) -> Result<Entry, PolicyError> {
    let Value::Object(members) = item else {
        return Err(error(
            path,
            "must be an object like {\"domain\": \"example.com\"}",
        ));
    };
    known_members(path, members, &["domain", "transform", "credential"])?;
    let domain_path = format!("{path}.domain");
    let pattern = match members.get("domain") {
        Some(Value::String(text)) => {
            Pattern::parse(text).map_err(|reason| error(&domain_path, &reason))?
        }
        Some(_) => return Err(error(&domain_path, "must be a string")),
        None => return Err(error(&domain_path, "is required")),
    };
    let transform = match members.get("transform") {
        None => Vec::new(),
        Some(value) => transform(&format!("{path}.transform"), value)?,
    };
    let credential_path = format!("{path}.credential");
    let credential = match members.get("credential") {
        None => None,
        Some(Value::String(id)) if !id.trim().is_empty() => Some(CredentialRef {
            id: id.clone(),
            resolved: None,
        }),
        Some(_) => return Err(error(&credential_path, "must be a non-empty credential id")),
    };
    Ok(Entry {
        pattern,
        transform,
        credential,
    })
}

/// A dict of headers, or a list of dicts applied in order.
fn transform(path: &str, value: &Value) -> Result<Vec<(String, String)>, PolicyError> {
    match value {
        Value::Object(members) => header_dict(path, members),
        Value::Array(dicts) => {
            let mut headers = Vec::new();
            for (index, dict) in dicts.iter().enumerate() {
                let path = format!("{path}[{index}]");
                let Value::Object(members) = dict else {
                    return Err(error(&path, "must be an object of header names to values"));
                };
                headers.extend(header_dict(&path, members)?);
            }
            Ok(headers)
        }
        _ => Err(error(
            path,
            "must be an object of header names to values, or a list of such objects",
        )),
    }
}

/// Header errors never quote the value: transforms carry secrets.
fn header_dict(
    path: &str,
    members: &Map<String, Value>,
) -> Result<Vec<(String, String)>, PolicyError> {
    members
        .iter()
        .map(|(name, value)| {
            let path = format!("{path}.{name}");
            let Value::String(value) = value else {
                return Err(error(&path, "the header value must be a string"));
            };
            headers::validate(name, value).map_err(|reason| error(&path, reason))?;
            Ok((name.clone(), value.clone()))
        })
        .collect()
}

fn known_members(
    path: &str,
    members: &Map<String, Value>,
    known: &[&str],
) -> Result<(), PolicyError> {
    match members.keys().find(|key| !known.contains(&key.as_str())) {
        Some(unknown) => Err(error(
            &format!("{path}.{unknown}"),
            &format!("unknown member (expected one of: {})", known.join(", ")),
        )),
        None => Ok(()),
    }
}

fn error(path: &str, reason: &str) -> PolicyError {
    PolicyError {
        path: path.to_owned(),
        reason: reason.to_owned(),
    }
}
