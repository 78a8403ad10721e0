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
        let (header, value) = checked(name, value)?;
        map.append(header, value);
    }
    Ok(map)
}

/// Replaces every header of `map` that `injected` names with the injected values (all of them,
/// in order, when a name is injected more than once).
pub(crate) fn overwrite(
    map: &mut HeaderMap,
    injected: &[(String, String)],
) -> Result<(), NetError> {
    let mut pairs = Vec::with_capacity(injected.len());
    for (name, value) in injected {
        pairs.push(checked(name, value)?);
    }
    for (header, _) in &pairs {
        map.remove(header);
    }
    for (header, value) in pairs {
        map.append(header, value);
    }
    Ok(())
}

/// Checks one header: a valid name that hookbox does not set itself, and a value without
/// control characters. The error says what is wrong, never quoting the value.
pub(crate) fn validate(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), &'static str> {
    let header = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| "not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)")?;
    if RESERVED.contains(&header) {
        return Err("hookbox sets this header itself; remove it from the configuration");
    }
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| "the value must not contain control characters or line breaks")?;
    value.set_sensitive(true);
    Ok((header, value))
}

fn checked(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), NetError> {
    validate(name, value).map_err(|reason| NetError::InvalidHeader {
        name: name.to_owned(),
        reason: reason.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::{configured, overwrite};
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

    #[test]
    fn overwrite_replaces_same_named_headers_and_keeps_the_others() {
        let mut map = configured(&pairs(&[
            ("Authorization", "Bearer from-sandbox"),
            ("authorization", "Basic other"),
            ("X-Keep", "1"),
        ]))
        .unwrap();
        overwrite(
            &mut map,
            &pairs(&[
                ("AUTHORIZATION", "Bearer real"),
                ("X-New", "a"),
                ("x-new", "b"),
            ]),
        )
        .unwrap();
        let authorization: Vec<_> = map.get_all("authorization").iter().collect();
        assert_eq!(authorization, ["Bearer real"]);
        let new: Vec<_> = map.get_all("x-new").iter().collect();
        assert_eq!(new, ["a", "b"]);
        assert_eq!(map["x-keep"], "1");
        assert!(map["authorization"].is_sensitive());
    }
}
