//! Which URLs a client accepts as request targets: `https://`, and `http://` unless the client
//! is HTTPS-only.

use reqwest::Url;

use crate::NetError;

/// Parses `url` and checks its scheme.
pub(crate) fn check(url: &str, https_only: bool) -> Result<Url, NetError> {
    let parsed = Url::parse(url).map_err(|error| NetError::InvalidUrl {
        url: url.to_owned(),
        reason: error.to_string(),
    })?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if !https_only => Ok(parsed),
        "http" => Err(NetError::InsecureScheme {
            url: url.to_owned(),
        }),
        _ => Err(NetError::UnsupportedScheme {
            url: url.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use crate::NetError;

    #[test]
    fn accepts_https_and_http_unless_https_only() {
        assert_eq!(
            check("https://example.com/a?b", true).unwrap().as_str(),
            "https://example.com/a?b"
        );
        assert!(check("http://127.0.0.1:8080/", false).is_ok());
        assert!(matches!(
            check("http://example.com/", true),
            Err(NetError::InsecureScheme { .. })
        ));
    }

    #[test]
    fn rejects_unparsable_urls_and_other_schemes() {
        assert!(matches!(
            check("example.com/hook", false),
            Err(NetError::InvalidUrl { .. })
        ));
        assert!(matches!(
            check("ftp://example.com/", false),
            Err(NetError::UnsupportedScheme { .. })
        ));
        assert!(matches!(
            check("file:///etc/passwd", true),
            Err(NetError::UnsupportedScheme { .. })
        ));
    }
}
