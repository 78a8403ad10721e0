//! Reading untyped JSON with errors that name the JSON path of the bad value.

use hookbox_store::json_kind;
use serde_json::{Map, Value};

/// A spec value that is not what hookbox accepts: where it is and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid environment at `{path}`: {problem}")]
pub struct SpecError {
    /// JSON path of the offending value, e.g. `$.sources[2].encoding`.
    pub path: String,
    /// What is wrong and what to do about it.
    pub problem: String,
}

impl SpecError {
    /// An error at `path` saying `problem`.
    pub(crate) fn new(path: impl Into<String>, problem: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            problem: problem.into(),
        }
    }
}

/// The JSON path of a member of the object at `parent`.
pub(crate) fn member(parent: &str, key: &str) -> String {
    format!("{parent}.{key}")
}

/// The JSON path of an element of the array at `parent`.
pub(crate) fn element(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

/// `value` as an object, or an error at `path` saying it should be `what`.
pub(crate) fn object<'a>(
    value: &'a Value,
    path: &str,
    what: &str,
) -> Result<&'a Map<String, Value>, SpecError> {
    value
        .as_object()
        .ok_or_else(|| SpecError::new(path, format!("expected {what}, got {}", json_kind(value))))
}

/// `value` as a string, or an error at `path` saying it should be `what`.
pub(crate) fn string<'a>(value: &'a Value, path: &str, what: &str) -> Result<&'a str, SpecError> {
    value
        .as_str()
        .ok_or_else(|| SpecError::new(path, format!("expected {what}, got {}", json_kind(value))))
}

/// Rejects any key of `map` (at `path`) that is not in `allowed`.
pub(crate) fn known_keys(
    map: &Map<String, Value>,
    path: &str,
    allowed: &[&str],
) -> Result<(), SpecError> {
    match map.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(SpecError::new(
            member(path, key),
            format!(
                "unknown field `{key}`; the fields allowed here are: {}",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// The member `key` of `map` (at `path`), or an error saying it is required and what it holds.
pub(crate) fn required<'a>(
    map: &'a Map<String, Value>,
    path: &str,
    key: &str,
    what: &str,
) -> Result<&'a Value, SpecError> {
    map.get(key).ok_or_else(|| {
        SpecError::new(
            member(path, key),
            format!("missing required field `{key}` ({what})"),
        )
    })
}

/// Rejects a string containing a NUL byte, which no path, name or argument may hold.
pub(crate) fn no_nul(text: &str, path: &str) -> Result<(), SpecError> {
    if text.contains('\0') {
        return Err(SpecError::new(path, "contains a NUL byte; remove it"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_keys_name_the_key_and_the_allowed_ones() {
        let value = json!({"a": 1, "zzz": 2});
        let map = object(&value, "$", "an object").unwrap();
        let err = known_keys(map, "$.x", &["a", "b"]).unwrap_err();
        assert_eq!(err.path, "$.x.zzz");
        assert!(err.problem.contains("a, b"), "{err}");
    }

    #[test]
    fn wrong_types_say_what_was_expected_and_what_came() {
        let err = string(&json!(3), "$.s", "a path").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid environment at `$.s`: expected a path, got a number"
        );
    }
}
