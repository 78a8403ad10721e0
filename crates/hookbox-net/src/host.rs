//! The canonical form of a host name, the only form policy rules are matched against.

use std::net::IpAddr;

use idna::AsciiDenyList;

/// Why a host has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("host `{host}` is not a valid domain name: {reason}")]
pub(crate) struct HostError {
    /// The host as given.
    pub(crate) host: String,
    /// What is wrong with it.
    pub(crate) reason: String,
}

/// The canonical form of `host`: an IP literal (optionally in brackets) in its standard text
/// form without brackets; a domain name in lowercase ASCII (IDNA `domain to ASCII`, so Unicode
/// labels become punycode), with one trailing dot removed. Names that fail IDNA, are empty or
/// contain an empty label are refused.
pub(crate) fn canonical(host: &str) -> Result<String, HostError> {
    let bracketless = host
        .strip_prefix('[')
        .and_then(|inner| inner.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bracketless.parse::<IpAddr>() {
        return Ok(ip.to_string());
    }
    let error = |reason: &str| HostError {
        host: host.to_owned(),
        reason: reason.to_owned(),
    };
    let name = host.strip_suffix('.').unwrap_or(host);
    if name.is_empty() {
        return Err(error("it is empty"));
    }
    let ascii = idna::domain_to_ascii_cow(name.as_bytes(), AsciiDenyList::URL)
        .map_err(|failure| error(&format!("IDNA conversion failed ({failure})")))?;
    if ascii.split('.').any(str::is_empty) {
        return Err(error("it has an empty label"));
    }
    Ok(ascii.into_owned())
}

/// Whether `name` is a domain name (or an IP literal) that hookbox can match and resolve: one
/// with a canonical form (see `canonical`).
pub fn is_host_name(name: &str) -> bool {
    canonical(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::canonical;

    #[test]
    fn lowercases_strips_one_trailing_dot_and_converts_to_punycode() {
        for (host, expected) in [
            ("Example.COM", "example.com"),
            ("EXAMPLE.COM.", "example.com"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("XN--BCHER-KVA.example", "xn--bcher-kva.example"),
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]", "::1"),
            ("[0:0:0:0:0:0:0:1]", "::1"),
            ("localhost.", "localhost"),
        ] {
            assert_eq!(canonical(host).unwrap(), expected, "{host}");
        }
    }

    #[test]
    fn refuses_names_without_a_canonical_form() {
        for host in [
            "",
            ".",
            "a..b",
            "example.com..",
            "exa mple.com",
            "a/b",
            "xn--a.com",
        ] {
            let error = canonical(host).unwrap_err();
            assert_eq!(error.host, host);
            assert!(error.to_string().contains(host), "{error}");
        }
    }
}
