//! The name of a JSON value's type, for error messages; the one copy every crate uses.

use serde_json::Value;

/// The kind of JSON value, with its article: `null`, `a boolean`, `a number`, `a string`,
/// `an array` or `an object`.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::json_kind;

    #[test]
    fn every_kind_has_its_article() {
        let kinds: Vec<_> = [
            json!(null),
            json!(true),
            json!(1),
            json!("x"),
            json!([]),
            json!({}),
        ]
        .iter()
        .map(json_kind)
        .collect();
        assert_eq!(
            kinds,
            [
                "null",
                "a boolean",
                "a number",
                "a string",
                "an array",
                "an object"
            ]
        );
    }
}
