//! Collecting diagnostics while reading a document, and the checks every reader needs:
//! value types and unknown keys.

use hookbox_store::json_kind;
use serde_json::{Map, Value};

use super::path::JsonPath;
use super::suggest::did_you_mean;
use crate::diagnostic::{Diagnostic, Severity};

/// The diagnostics found so far in one source.
#[derive(Debug)]
pub(super) struct Report {
    /// The source every diagnostic is attributed to.
    source: String,
    /// Diagnostics in the order they were found.
    diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// An empty report for `source`.
    pub(super) fn new(source: &str) -> Self {
        Self {
            source: source.to_owned(),
            diagnostics: Vec::new(),
        }
    }

    /// The source being read.
    pub(super) fn source(&self) -> &str {
        &self.source
    }

    /// Records an error at `path`.
    pub(super) fn error(
        &mut self,
        path: &JsonPath,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.push(Severity::Error, path, message.into(), hint);
    }

    /// Records a warning at `path`.
    pub(super) fn warning(
        &mut self,
        path: &JsonPath,
        message: impl Into<String>,
        hint: Option<String>,
    ) {
        self.push(Severity::Warning, path, message.into(), hint);
    }

    /// Records an unknown key at `path` (the key's own path), hinting at the closest of `known`
    /// or, failing that, listing them.
    pub(super) fn unknown_key(&mut self, path: &JsonPath, key: &str, known: &[&str]) {
        let hint = match did_you_mean(key, known.iter().copied()) {
            Some(candidate) => format!("did you mean `{candidate}`?"),
            None => format!("the keys allowed here are {}", quoted_list(known)),
        };
        self.error(
            path,
            format!("unknown key `{key}`; it is ignored"),
            Some(hint),
        );
    }

    /// `value` as an object, or an error at `path`.
    pub(super) fn object<'v>(
        &mut self,
        value: &'v Value,
        path: &JsonPath,
    ) -> Option<&'v Map<String, Value>> {
        let object = value.as_object();
        if object.is_none() {
            self.wrong_type(value, path, "an object");
        }
        object
    }

    /// `value` as an array, or an error at `path`.
    pub(super) fn array<'v>(&mut self, value: &'v Value, path: &JsonPath) -> Option<&'v [Value]> {
        let array = value.as_array().map(Vec::as_slice);
        if array.is_none() {
            self.wrong_type(value, path, "an array");
        }
        array
    }

    /// `value` as a string, or an error at `path`.
    pub(super) fn string<'v>(&mut self, value: &'v Value, path: &JsonPath) -> Option<&'v str> {
        let string = value.as_str();
        if string.is_none() {
            self.wrong_type(value, path, "a string");
        }
        string
    }

    /// `value` as a boolean, or an error at `path`.
    pub(super) fn boolean(&mut self, value: &Value, path: &JsonPath) -> Option<bool> {
        let boolean = value.as_bool();
        if boolean.is_none() {
            self.wrong_type(value, path, "a boolean (true or false)");
        }
        boolean
    }

    /// Records "expected EXPECTED, found …" at `path`, with a hint when a string holds what
    /// was expected (`"10"` for 10, `"false"` for false).
    pub(super) fn wrong_type(&mut self, value: &Value, path: &JsonPath, expected: &str) {
        let hint = value
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .filter(|inner| !inner.is_string() && expected.starts_with(json_kind(inner)))
            .map(|inner| format!("write {inner} without quotes"));
        self.error(
            path,
            format!("expected {expected}, found {}", json_kind(value)),
            hint,
        );
    }

    /// Everything recorded, in order.
    pub(super) fn into_diagnostics(self) -> Vec<Diagnostic> {
        self.diagnostics
    }

    /// Records one diagnostic.
    fn push(&mut self, severity: Severity, path: &JsonPath, message: String, hint: Option<String>) {
        self.diagnostics.push(Diagnostic {
            severity,
            source: self.source.clone(),
            json_path: path.to_string(),
            message,
            hint,
        });
    }
}

/// `` `a`, `b` and `c` ``.
pub(super) fn quoted_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("`{item}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn only(report: Report) -> Diagnostic {
        let mut diagnostics = report.into_diagnostics();
        assert_eq!(diagnostics.len(), 1, "{diagnostics:#?}");
        diagnostics.remove(0)
    }

    #[test]
    fn wrong_types_say_what_was_found() {
        let mut report = Report::new("hooks.json");
        let path = JsonPath::root().key("timeout");
        assert_eq!(report.string(&json!(10), &path), None);
        let diagnostic = only(report);
        assert_eq!(diagnostic.message, "expected a string, found a number");
        assert_eq!(diagnostic.json_path, "$.timeout");
        assert_eq!(diagnostic.severity, Severity::Error);
    }

    #[test]
    fn quoted_values_get_a_hint() {
        let mut report = Report::new("hooks.json");
        assert_eq!(report.boolean(&json!("false"), &JsonPath::root()), None);
        assert_eq!(
            only(report).hint.as_deref(),
            Some("write false without quotes")
        );
    }

    #[test]
    fn unknown_keys_suggest_or_list() {
        let mut report = Report::new("hooks.json");
        report.unknown_key(
            &JsonPath::root().key("comand"),
            "comand",
            &["command", "timeout"],
        );
        report.unknown_key(
            &JsonPath::root().key("zzz"),
            "zzz",
            &["command", "timeout", "type"],
        );
        let diagnostics = report.into_diagnostics();
        assert_eq!(
            diagnostics[0].hint.as_deref(),
            Some("did you mean `command`?")
        );
        assert_eq!(
            diagnostics[1].hint.as_deref(),
            Some("the keys allowed here are `command`, `timeout` and `type`")
        );
    }

    #[test]
    fn lists_read_naturally() {
        assert_eq!(quoted_list(&[]), "");
        assert_eq!(quoted_list(&["a"]), "`a`");
        assert_eq!(quoted_list(&["a", "b"]), "`a` and `b`");
    }
}
