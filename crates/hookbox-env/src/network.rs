//! Shape validation of an environment's `network` policy (interpreted by hookbox-net).

use hookbox_store::json_kind;
use serde_json::Value;

use crate::json::{self, SpecError, element, member};

/// Checks that `value` (at `path`) is `null` or `{}` (public egress), `"disabled"` or
/// `{"allowlist": "disabled" | [rule…]}`,
/// each rule `{"domain", "transform"?: {…} | [{…}], "credential"?}`.
pub(crate) fn validate(value: &Value, path: &str) -> Result<(), SpecError> {
    // `null` means public egress, as omitting `network` does.
    if value.is_null() {
        return Ok(());
    }
    if let Value::String(text) = value {
        return match text.as_str() {
            "disabled" => Ok(()),
            other => Err(SpecError::new(
                path,
                format!(
                    "unknown network mode `{other}`; use \"disabled\", an object \
                     {{\"allowlist\": [...]}}, or omit `network` to allow public egress"
                ),
            )),
        };
    }
    let map = json::object(
        value,
        path,
        "\"disabled\" or an object {\"allowlist\": ...}",
    )?;
    json::known_keys(map, path, &["allowlist"])?;
    let list_path = member(path, "allowlist");
    match map.get("allowlist") {
        // `{}` means public egress, as omitting `network` does.
        None => Ok(()),
        Some(Value::String(text)) if text == "disabled" => Ok(()),
        Some(Value::Array(rules)) => rules
            .iter()
            .enumerate()
            .try_for_each(|(index, rule)| validate_rule(rule, &element(&list_path, index))),
        Some(other) => Err(SpecError::new(
            list_path,
            format!(
                "expected \"disabled\" or a list of {{\"domain\": ...}} rules, got {}",
                json_kind(other)
            ),
        )),
    }
}

/// One allowlist rule.
fn validate_rule(rule: &Value, path: &str) -> Result<(), SpecError> {
    let map = json::object(rule, path, "an allowlist rule {\"domain\": ...}")?;
    json::known_keys(map, path, &["domain", "transform", "credential"])?;
    let domain_path = member(path, "domain");
    let domain = json::required(map, path, "domain", "e.g. \"*.example.com\" or \"*\"")?;
    let domain = json::string(domain, &domain_path, "a domain string")?;
    if domain.is_empty() {
        return Err(SpecError::new(
            domain_path,
            "is empty; write a domain such as \"api.example.com\", \"*.example.com\" or \"*\"",
        ));
    }
    json::no_nul(domain, &domain_path)?;
    if let Some(credential) = map.get("credential") {
        json::string(
            credential,
            &member(path, "credential"),
            "a credential id string",
        )?;
    }
    match map.get("transform") {
        None => Ok(()),
        Some(Value::Array(items)) => {
            let transform_path = member(path, "transform");
            items.iter().enumerate().try_for_each(|(index, headers)| {
                validate_headers(headers, &element(&transform_path, index))
            })
        }
        Some(headers) => validate_headers(headers, &member(path, "transform")),
    }
}

/// A `transform` object: header name to header value, both strings.
fn validate_headers(value: &Value, path: &str) -> Result<(), SpecError> {
    let map = json::object(value, path, "an object of header names to values")?;
    for (name, header) in map {
        let header_path = member(path, name);
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
            return Err(SpecError::new(
                header_path,
                format!("`{name}` is not a valid HTTP header name"),
            ));
        }
        let text = json::string(header, &header_path, "a header value string")?;
        if text.contains(['\r', '\n', '\0']) {
            return Err(SpecError::new(
                header_path,
                "header values may not contain CR, LF or NUL",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn accepts_the_documented_shapes() {
        for ok in [
            json!("disabled"),
            json!({"allowlist": "disabled"}),
            json!({"allowlist": [{"domain": "*"}]}),
            json!({"allowlist": [
                {"domain": "telemetry.example.com", "transform": {"Authorization": "Bearer x"}},
                {"domain": "*.googleapis.com", "transform": [{"X-A": "b"}], "credential": "c1"}
            ]}),
        ] {
            validate(&ok, "$.network").unwrap();
        }
    }

    #[test]
    fn reports_the_path_of_the_bad_part() {
        for (bad, at) in [
            (json!("open"), "$.network"),
            (json!({"allow": []}), "$.network.allow"),
            (
                json!({"allowlist": [{"domain": "a"}, {}]}),
                "$.network.allowlist[1].domain",
            ),
            (
                json!({"allowlist": [{"domain": "a", "transform": [{"X": 1}]}]}),
                "$.network.allowlist[0].transform[0].X",
            ),
            (
                json!({"allowlist": [{"domain": "a", "headers": {}}]}),
                "$.network.allowlist[0].headers",
            ),
        ] {
            assert_eq!(validate(&bad, "$.network").unwrap_err().path, at);
        }
    }
}
