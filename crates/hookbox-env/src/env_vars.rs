//! The `env` map of an environment spec: variables set inside the sandbox.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json::{self, SpecError, member};

/// One environment variable of the sandbox.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvVar {
    /// The variable's name (`[A-Za-z_][A-Za-z0-9_]*`).
    pub name: String,
    /// Its value, or the credential that supplies it.
    pub value: EnvValue,
}

/// Where an environment variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EnvValue {
    /// A literal value (`"value"` or `{"value": "value"}` in the spec).
    Literal(String),
    /// A server-side secret, by id (`{"credential": "id"}`); only the id is ever stored.
    Credential {
        /// The credential's id.
        credential: String,
    },
}

/// Parses the `env` object at `path`, keeping its order.
pub(crate) fn parse(value: &Value, path: &str) -> Result<Vec<EnvVar>, SpecError> {
    let map = json::object(value, path, "an object of variable names to values")?;
    map.iter()
        .map(|(name, value)| {
            let var_path = member(path, name);
            if !is_name(name) {
                return Err(SpecError::new(
                    var_path,
                    format!(
                        "`{name}` is not a valid variable name; use letters, digits and `_`, \
                         not starting with a digit"
                    ),
                ));
            }
            Ok(EnvVar {
                name: name.clone(),
                value: parse_value(value, &var_path)?,
            })
        })
        .collect()
}

/// `"v"`, `{"value": "v"}` or `{"credential": "id"}`.
fn parse_value(value: &Value, path: &str) -> Result<EnvValue, SpecError> {
    const WHAT: &str = "a string, {\"value\": \"...\"} or {\"credential\": \"id\"}";
    if let Value::String(text) = value {
        json::no_nul(text, path)?;
        return Ok(EnvValue::Literal(text.clone()));
    }
    let map = json::object(value, path, WHAT)?;
    json::known_keys(map, path, &["value", "credential"])?;
    match (map.get("value"), map.get("credential")) {
        (Some(literal), None) => {
            let literal_path = member(path, "value");
            let text = json::string(literal, &literal_path, "a string value")?;
            json::no_nul(text, &literal_path)?;
            Ok(EnvValue::Literal(text.to_owned()))
        }
        (None, Some(credential)) => Ok(EnvValue::Credential {
            credential: json::string(credential, &member(path, "credential"), "a credential id")?
                .to_owned(),
        }),
        _ => Err(SpecError::new(
            path,
            format!("expected exactly one of `value` and `credential`: {WHAT}"),
        )),
    }
}

/// Whether `name` is a portable environment variable name.
fn is_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|first| first == b'_' || first.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn three_spellings() {
        let vars = parse(
            &json!({"A": "1", "B": {"value": "2"}, "C": {"credential": "k"}}),
            "$.env",
        )
        .unwrap();
        let values: Vec<_> = vars.into_iter().map(|v| v.value).collect();
        assert_eq!(
            values,
            [
                EnvValue::Literal("1".into()),
                EnvValue::Literal("2".into()),
                EnvValue::Credential {
                    credential: "k".into()
                }
            ]
        );
    }

    #[test]
    fn bad_names_and_values_are_located() {
        for (bad, at) in [
            (json!({"1A": "x"}), "$.env.1A"),
            (json!({"A": 3}), "$.env.A"),
            (json!({"A": {"value": "1", "credential": "k"}}), "$.env.A"),
            (json!({"A": {"secret": "k"}}), "$.env.A.secret"),
        ] {
            assert_eq!(parse(&bad, "$.env").unwrap_err().path, at);
        }
    }
}
