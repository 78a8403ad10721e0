//! Allowlist domain patterns: `*`, `*.example.com` (strict subdomains) and exact hosts.

use std::fmt;

use crate::host;

/// One `network.allowlist[].domain`, canonicalized when parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// `*`: every host.
    Any,
    /// `*.example.com`: hosts with at least one more label before `example.com`, not the apex.
    Subdomains(String),
    /// A host that must equal the canonical request host (a domain or an IP literal).
    Exact(String),
}

impl Pattern {
    /// Parses a domain pattern. `*` may only appear alone or as the whole first label; the rest
    /// is canonicalized like a request host (lowercase, one trailing dot dropped, IDNA).
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        if text == "*" {
            return Ok(Self::Any);
        }
        let (wildcard, name) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if name.contains('*') {
            return Err(format!(
                "`{text}`: `*` is only allowed alone or as the whole first label (`*.example.com`)"
            ));
        }
        let canonical = host::canonical(name).map_err(|error| error.to_string())?;
        if !wildcard {
            return Ok(Self::Exact(canonical));
        }
        if canonical.parse::<std::net::IpAddr>().is_ok() {
            return Err(format!(
                "`{text}`: a wildcard needs a domain name, not an IP address"
            ));
        }
        Ok(Self::Subdomains(canonical))
    }

    /// Parses a domain a credential may be sent to: like [`parse`](Self::parse), but `*` alone
    /// is refused.
    pub(crate) fn parse_credential_domain(text: &str) -> Result<Self, String> {
        match Self::parse(text)? {
            Self::Any => Err(format!(
                "`{text}`: a credential must name the hosts it may be sent to (`api.example.com`, \
                 `*.example.com`); `*` would send it anywhere"
            )),
            pattern => Ok(pattern),
        }
    }

    /// Whether every host `other` matches is matched by this pattern too.
    pub(crate) fn covers(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Any, _) => true,
            (_, Self::Any) => false,
            (_, Self::Exact(host)) => self.matches(host),
            (Self::Exact(_), Self::Subdomains(_)) => false,
            (Self::Subdomains(parent), Self::Subdomains(child)) => {
                parent == child || self.matches(child)
            }
        }
    }

    /// Whether the canonical host `host` matches, on whole labels.
    pub(crate) fn matches(&self, host: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Exact(exact) => host == exact,
            Self::Subdomains(parent) => host
                .strip_suffix(parent.as_str())
                .and_then(|prefix| prefix.strip_suffix('.'))
                .is_some_and(|labels| !labels.is_empty()),
        }
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => formatter.write_str("*"),
            Self::Subdomains(parent) => write!(formatter, "*.{parent}"),
            Self::Exact(exact) => formatter.write_str(exact),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Pattern;

    #[test]
    fn parses_and_canonicalizes_patterns() {
        assert_eq!(Pattern::parse("*").unwrap(), Pattern::Any);
        assert_eq!(
            Pattern::parse("*.Example.COM.").unwrap(),
            Pattern::Subdomains("example.com".to_owned())
        );
        assert_eq!(
            Pattern::parse("Bücher.example").unwrap(),
            Pattern::Exact("xn--bcher-kva.example".to_owned())
        );
        assert_eq!(
            Pattern::parse("[::1]").unwrap(),
            Pattern::Exact("::1".to_owned())
        );
        assert_eq!(Pattern::parse("*.a.b").unwrap().to_string(), "*.a.b");
    }

    #[test]
    fn refuses_misplaced_wildcards_and_invalid_names() {
        for text in [
            "",
            "*.",
            "a.*.com",
            "*example.com",
            "**.example.com",
            "*.*",
            "*.10.0.0.1",
            "a b",
        ] {
            assert!(Pattern::parse(text).is_err(), "{text}");
        }
    }

    #[test]
    fn coverage_is_by_the_hosts_matched() {
        let parse = |text| Pattern::parse(text).unwrap();
        assert!(parse("*.example.com").covers(&parse("a.example.com")));
        assert!(parse("*.example.com").covers(&parse("*.example.com")));
        assert!(parse("*.example.com").covers(&parse("*.a.example.com")));
        assert!(!parse("*.example.com").covers(&parse("example.com")));
        assert!(!parse("*.example.com").covers(&parse("*")));
        assert!(!parse("a.example.com").covers(&parse("*.example.com")));
        assert!(parse("a.example.com").covers(&parse("A.example.com.")));
        assert!(!parse("a.example.com").covers(&parse("b.example.com")));
        assert!(parse("*").covers(&parse("*")));
    }

    #[test]
    fn subdomain_patterns_respect_label_boundaries() {
        let pattern = Pattern::parse("*.example.com").unwrap();
        assert!(pattern.matches("a.example.com"));
        assert!(pattern.matches("a.b.example.com"));
        assert!(!pattern.matches("example.com"));
        assert!(!pattern.matches("evilexample.com"));
        assert!(!pattern.matches("example.com.evil.com"));
    }
}
