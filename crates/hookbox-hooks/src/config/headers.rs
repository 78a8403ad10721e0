//! HTTP handler `headers`: an object of header names to string values.
//!
//! Names must be HTTP tokens and values must not contain control characters; a bad entry is
//! reported and left out. Headers are for non-sensitive values (the seed says so): a header
//! that looks like a credential is kept, with a warning pointing at the egress proxy's
//! `transform`, which injects secrets without them ever being in the sandbox.

use serde_json::Value;

use super::path::JsonPath;
use super::report::Report;

/// Header names that carry credentials.
const CREDENTIAL_NAMES: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
];
/// Fragments of header names that suggest a credential.
const CREDENTIAL_FRAGMENTS: [&str; 5] = ["token", "secret", "password", "api-key", "apikey"];

/// The valid headers of the `headers` value at `path`, in file order.
pub(super) fn read(report: &mut Report, value: &Value, path: &JsonPath) -> Vec<(String, String)> {
    let Some(headers) = report.object(value, path) else {
        return Vec::new();
    };
    let mut valid = Vec::new();
    for (name, value) in headers {
        let at = path.key(name);
        let Some(value) = report.string(value, &at) else {
            continue;
        };
        if !is_token(name) {
            report.error(
                &at,
                format!("`{name}` is not a valid HTTP header name; the header is left out"),
                Some(
                    "header names are letters, digits and !#$%&'*+-.^_`|~, with no spaces or \
                     colons"
                        .to_owned(),
                ),
            );
            continue;
        }
        if value.chars().any(|c| c.is_control() && c != '\t') {
            report.error(
                &at,
                format!(
                    "the value of header `{name}` contains control characters; the header is \
                     left out"
                ),
                Some("header values are a single line of text".to_owned()),
            );
            continue;
        }
        if looks_like_credential(name) {
            report.warning(
                &at,
                format!(
                    "header `{name}` looks like a credential; hook headers are for \
                     non-sensitive values"
                ),
                Some(
                    "hooks.json is readable inside the sandbox: keep the secret out of it and \
                     declare it in the environment's `network.allowlist[].transform`, which the \
                     egress proxy injects into requests to that domain"
                        .to_owned(),
                ),
            );
        }
        valid.push((name.clone(), value.to_owned()));
    }
    valid
}

/// Whether `name` is an RFC 9110 token.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Whether the header `name` usually carries a secret.
fn looks_like_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase().replace('_', "-");
    CREDENTIAL_NAMES.contains(&name.as_str())
        || CREDENTIAL_FRAGMENTS
            .iter()
            .any(|fragment| name.contains(fragment))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::diagnostic::Severity;

    #[test]
    fn good_and_bad_headers() {
        let mut report = Report::new("test");
        let path = JsonPath::root().key("headers");
        let headers = read(
            &mut report,
            &json!({
                "X-Event-Source": "agent-sandbox",
                "Bad Name": "x",
                "X-Count": 3,
                "X-Split": "a\r\nInjected: 1",
                "Authorization": "Bearer abc",
                "X_Api_Key": "k",
            }),
            &path,
        );
        assert_eq!(
            headers,
            [
                ("X-Event-Source".to_owned(), "agent-sandbox".to_owned()),
                ("Authorization".to_owned(), "Bearer abc".to_owned()),
                ("X_Api_Key".to_owned(), "k".to_owned()),
            ]
        );
        let found: Vec<_> = report
            .into_diagnostics()
            .into_iter()
            .map(|d| (d.severity, d.json_path))
            .collect();
        assert_eq!(
            found,
            [
                (Severity::Error, r#"$.headers["Bad Name"]"#.to_owned()),
                (Severity::Error, r#"$.headers["X-Count"]"#.to_owned()),
                (Severity::Error, r#"$.headers["X-Split"]"#.to_owned()),
                (Severity::Warning, "$.headers.Authorization".to_owned()),
                (Severity::Warning, "$.headers.X_Api_Key".to_owned()),
            ]
        );
    }

    #[test]
    fn credential_names() {
        for name in [
            "Cookie",
            "x-api-key",
            "X-Auth-Token",
            "client_secret",
            "Proxy-Authorization",
        ] {
            assert!(looks_like_credential(name), "{name}");
        }
        for name in ["X-Event-Source", "Content-Type", "X-Request-Id"] {
            assert!(!looks_like_credential(name), "{name}");
        }
    }
}
