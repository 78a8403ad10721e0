//! Turning configured headers into a validated header map.

use reqwest::header::{
    CONTENT_LENGTH, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue, TRANSFER_ENCODING,
};

use crate::NetError;

/// Headers hookbox sets itself; configuration may not override them.
const RESERVED: [HeaderName; 4] = [CONTENT_TYPE, CONTENT_LENGTH, HOST, TRANSFER_ENCODING];

/// Validates configured `(name, value)` pairs into a header map. Values are marked sensitive so
/// they never show in `Debug` output.
pub(crate) fn configured(headers: &[(String, String)]) -> Result<HeaderMap, NetError> {
    let mut map = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let invalid = |reason: &str| NetError::InvalidHeader {
            name: name.clone(),
            reason: reason.to_owned(),
        };
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            invalid("not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)")
        })?;
        if RESERVED.contains(&header) {
            return Err(invalid(
                "hookbox sets this header itself; remove it from the configuration",
            ));
        }
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| invalid("the value must not contain control characters or line breaks"))?;
        value.set_sensitive(true);
        map.append(header, value);
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::configured;
    use crate::NetError;

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect()
    }

    #[test]
    fn keeps_valid_headers_in_order() {
        let map = configured(&pairs(&[
            ("X-Token", "a b"),
            ("x-token", "c"),
            ("Accept", "*/*"),
        ]))
        .unwrap();
        let tokens: Vec<_> = map.get_all("x-token").iter().collect();
        assert_eq!(tokens, ["a b", "c"]);
        assert_eq!(map["accept"], "*/*");
        assert!(map["x-token"].is_sensitive());
    }

    #[test]
    fn rejects_bad_names_bad_values_and_reserved_headers() {
        for (name, value) in [
            ("bad header", "secret-1"),
            ("", "secret-2"),
            ("x-ok", "secret\n3"),
            ("Content-Type", "secret/plain"),
            ("host", "secret.example"),
            ("Content-Length", "secret-7"),
            ("transfer-encoding", "secret-8"),
        ] {
            let error = configured(&pairs(&[(name, value)])).unwrap_err();
            assert!(
                matches!(&error, NetError::InvalidHeader { name: n, .. } if n == name),
                "{name}: {error}"
            );
            assert!(
                !error.to_string().contains(value),
                "{error} leaks the value"
            );
        }
    }
}
