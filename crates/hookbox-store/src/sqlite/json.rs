//! JSON columns: compact text in, values out.

use serde_json::Value;

use crate::error::Error;

/// The compact JSON text of `value`.
pub(super) fn encode(value: &Value) -> String {
    value.to_string()
}

/// The compact JSON text of `value`, if any.
pub(super) fn encode_opt(value: Option<&Value>) -> Option<String> {
    value.map(encode)
}

/// Parses a stored JSON column; `what` names it in the error.
pub(super) fn decode(text: &str, what: impl FnOnce() -> String) -> Result<Value, Error> {
    serde_json::from_str(text).map_err(|error| Error::Corrupt {
        what: what(),
        problem: error.to_string(),
    })
}

/// Parses a nullable stored JSON column.
pub(super) fn decode_opt(
    text: Option<String>,
    what: impl FnOnce() -> String,
) -> Result<Option<Value>, Error> {
    text.map(|text| decode(&text, what)).transpose()
}
