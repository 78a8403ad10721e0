//! Where a request may go: parse the URL and check it. Egress policy will be enforced here.

use reqwest::Url;

use crate::NetError;

/// Parses `url` and accepts it as a request target. For now any `http` or `https` URL is allowed.
pub(crate) fn check(url: &str) -> Result<Url, NetError> {
    let parsed = Url::parse(url).map_err(|error| NetError::InvalidUrl {
        url: url.to_owned(),
        reason: error.to_string(),
    })?;
    match parsed.scheme() {
        "http" | "https" => Ok(parsed),
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
    fn accepts_http_and_https() {
        assert_eq!(
            check("https://example.com/a?b").unwrap().as_str(),
            "https://example.com/a?b"
        );
        assert!(check("http://127.0.0.1:8080/").is_ok());
    }

    #[test]
    fn rejects_unparsable_urls_and_other_schemes() {
        assert!(matches!(
            check("example.com/hook"),
            Err(NetError::InvalidUrl { .. })
        ));
        assert!(matches!(
            check("ftp://example.com/"),
            Err(NetError::UnsupportedScheme { .. })
        ));
        assert!(matches!(
            check("file:///etc/passwd"),
            Err(NetError::UnsupportedScheme { .. })
        ));
    }
}
