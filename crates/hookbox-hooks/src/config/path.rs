//! JSON paths such as `$["security-gate"].pre_tool_execution[0].hooks[1].timeout`.

use std::fmt;

use serde_json::Value;

/// A path from the document root (`$`) to one element, built while walking the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct JsonPath(String);

impl JsonPath {
    /// The document root, `$`.
    pub(super) fn root() -> Self {
        Self("$".to_owned())
    }

    /// The member `key` of the object at this path: `.key` for identifier-like keys,
    /// `["key"]` (JSON-escaped) otherwise.
    pub(super) fn key(&self, key: &str) -> Self {
        if is_identifier(key) {
            Self(format!("{}.{key}", self.0))
        } else {
            Self(format!("{}[{}]", self.0, Value::String(key.to_owned())))
        }
    }

    /// The element `index` of the array at this path.
    pub(super) fn index(&self, index: usize) -> Self {
        Self(format!("{}[{index}]", self.0))
    }
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `key` can be written after a dot: an ASCII letter or `_`, then letters, digits, `_`.
fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_keys_use_dots_others_brackets() {
        let path = JsonPath::root()
            .key("security-gate")
            .key("pre_tool_execution")
            .index(0)
            .key("hooks")
            .index(1)
            .key("timeout");
        assert_eq!(
            path.to_string(),
            r#"$["security-gate"].pre_tool_execution[0].hooks[1].timeout"#
        );
    }

    #[test]
    fn odd_keys_are_escaped() {
        assert_eq!(JsonPath::root().key("").to_string(), r#"$[""]"#);
        assert_eq!(JsonPath::root().key("9lives").to_string(), r#"$["9lives"]"#);
        assert_eq!(JsonPath::root().key("a\"b\n").to_string(), r#"$["a\"b\n"]"#);
        assert_eq!(JsonPath::root().key("_x1").to_string(), "$._x1");
    }
}
