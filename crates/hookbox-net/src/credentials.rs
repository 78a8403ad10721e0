//! Server-side secrets that `network.allowlist` entries name with `"credential": "NAME"`.
//!
//! hookbox-net does not store credentials: it asks a [`CredentialSource`] (hookbox's on-disk
//! store, a map in tests) for the one an entry names, and injects it as a header on requests that
//! entry admits. Each credential lists the domains it may be sent to (exact hosts and
//! `*.example.com`, matched like allowlist domains); an allowlist entry binding it to any other
//! domain is refused, and so is every request to a host outside them. A credential's value is
//! never part of a decision, a reason, an error or `Debug` output.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use crate::host;
use crate::policy::Pattern;

/// One credential: the header it is sent as, its value, and the domains it may be sent to.
/// `Debug` output redacts the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    header: String,
    value: String,
    domains: Vec<String>,
}

impl Credential {
    /// A credential sent as header `header` with value `value` (the whole header value, any
    /// prefix such as `Bearer ` included), only ever to hosts `domains` match (exact hosts and
    /// `*.example.com`, see [`parse_credential_domain`]). A credential without domains, or
    /// with an invalid one, is refused wherever it is named.
    pub fn new<D: Into<String>>(
        header: impl Into<String>,
        value: impl Into<String>,
        domains: impl IntoIterator<Item = D>,
    ) -> Self {
        Self {
            header: header.into(),
            value: value.into(),
            domains: domains.into_iter().map(Into::into).collect(),
        }
    }

    /// The domains the credential may be sent to, as given.
    pub fn domains(&self) -> &[String] {
        &self.domains
    }

    /// Whether the credential may be sent to `host` (canonicalized first): one of its valid
    /// domains matches it.
    pub fn may_go_to(&self, host: &str) -> bool {
        let Ok(canonical) = host::canonical(host) else {
            return false;
        };
        self.patterns()
            .is_ok_and(|patterns| patterns.iter().any(|pattern| pattern.matches(&canonical)))
    }

    /// Whether the credential may be used for a request to `url`: its host is one of the
    /// credential's domains (`false` for a URL that does not parse or has no host).
    pub fn may_go_to_url(&self, url: &str) -> bool {
        reqwest::Url::parse(url).is_ok_and(|url| {
            url.host_str().is_some_and(|host| {
                self.may_go_to(host.trim_start_matches('[').trim_end_matches(']'))
            })
        })
    }

    /// The parsed domains; why they cannot be used when there are none or one is invalid.
    pub(crate) fn patterns(&self) -> Result<Vec<Pattern>, String> {
        if self.domains.is_empty() {
            return Err(
                "it names no domains it may be sent to (credentials added before hookbox \
                 required domains have none); re-add it with `hookbox credentials add NAME \
                 --domain HOST` (one --domain per host or `*.example.com`)"
                    .to_owned(),
            );
        }
        self.domains
            .iter()
            .map(|domain| Pattern::parse_credential_domain(domain))
            .collect()
    }

    /// The header the credential is sent as, e.g. `Authorization`.
    pub fn header(&self) -> &str {
        &self.header
    }

    /// The secret header value; never print or log it.
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Credential")
            .field("header", &self.header)
            .field("value", &"<redacted>")
            .field("domains", &self.domains)
            .finish()
    }
}

/// Checks one domain a credential may be sent to and returns its canonical form: an exact host
/// or IP literal, or `*.example.com` (strict subdomains), canonicalized like allowlist domains.
/// `*` alone is refused: a credential must say where it goes.
pub fn parse_credential_domain(text: &str) -> Result<String, String> {
    Pattern::parse_credential_domain(text).map(|pattern| pattern.to_string())
}

/// Where an egress policy looks up the credentials its allowlist entries name.
pub trait CredentialSource: Send + Sync {
    /// The credential named `id`: `Ok(None)` when there is no such credential, `Err(reason)`
    /// when it exists but cannot be read (the reason must not contain the value).
    fn credential(&self, id: &str) -> Result<Option<Credential>, String>;
}

impl<F> CredentialSource for F
where
    F: Fn(&str) -> Result<Option<Credential>, String> + Send + Sync,
{
    fn credential(&self, id: &str) -> Result<Option<Credential>, String> {
        self(id)
    }
}

impl CredentialSource for BTreeMap<String, Credential> {
    fn credential(&self, id: &str) -> Result<Option<Credential>, String> {
        Ok(self.get(id).cloned())
    }
}

/// A [`CredentialSource`] shared by clients (see [`ClientOptions::credentials`]). Two handles
/// are equal when they share one source; `Debug` shows nothing of it.
///
/// [`ClientOptions::credentials`]: crate::ClientOptions::credentials
#[derive(Clone)]
pub struct SharedCredentials(Arc<dyn CredentialSource>);

impl SharedCredentials {
    /// Shares `source`.
    pub fn new(source: impl CredentialSource + 'static) -> Self {
        Self(Arc::new(source))
    }

    /// The shared source.
    pub fn source(&self) -> &dyn CredentialSource {
        self.0.as_ref()
    }
}

impl fmt::Debug for SharedCredentials {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("SharedCredentials(..)")
    }
}

impl PartialEq for SharedCredentials {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SharedCredentials {}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{Credential, CredentialSource, SharedCredentials};

    #[test]
    fn debug_output_redacts_the_value() {
        let credential = Credential::new("Authorization", "Bearer top-secret", ["a.example"]);
        let debug = format!("{credential:?}");
        assert!(debug.contains("Authorization"), "{debug}");
        assert!(!debug.contains("top-secret"), "{debug}");
    }

    #[test]
    fn credentials_go_only_to_their_domains() {
        let credential = Credential::new("X-Key", "v", ["API.example.com.", "*.svc.example"]);
        assert!(credential.may_go_to("api.example.com"));
        assert!(credential.may_go_to("Api.Example.Com."));
        assert!(credential.may_go_to("a.b.svc.example"));
        assert!(!credential.may_go_to("svc.example"));
        assert!(!credential.may_go_to("evil.example.com"));
        assert!(!credential.may_go_to("api.example.com.evil"));
        assert!(credential.may_go_to_url("https://api.example.com:8443/events?x=1"));
        assert!(!credential.may_go_to_url("https://api.example.com@evil.example/events"));
        assert!(!credential.may_go_to_url("https://evil.example/api.example.com"));
        assert!(!credential.may_go_to_url("not a url"));
        let none: [&str; 0] = [];
        let old = Credential::new("X-Key", "v", none);
        assert!(!old.may_go_to("api.example.com"));
        assert!(old.patterns().unwrap_err().contains("--domain"));
        let any = Credential::new("X-Key", "v", ["*"]);
        assert!(!any.may_go_to("api.example.com"));
        assert_eq!(
            super::parse_credential_domain("*.Example.COM.").unwrap(),
            "*.example.com"
        );
        assert!(super::parse_credential_domain("*").is_err());
        assert!(super::parse_credential_domain("a.*.b").is_err());
    }

    #[test]
    fn maps_closures_and_shared_handles_are_sources() {
        let mut map = BTreeMap::new();
        map.insert("a".to_owned(), Credential::new("X-Key", "1", ["a.example"]));
        assert_eq!(map.credential("a").unwrap().unwrap().value(), "1");
        assert_eq!(map.credential("b").unwrap(), None);
        let closure =
            |id: &str| -> Result<Option<Credential>, String> { Err(format!("cannot read `{id}`")) };
        assert_eq!(closure.credential("z").unwrap_err(), "cannot read `z`");
        let shared = SharedCredentials::new(map);
        assert_eq!(shared, shared.clone());
        assert_ne!(shared, SharedCredentials::new(BTreeMap::new()));
        assert_eq!(format!("{shared:?}"), "SharedCredentials(..)");
        assert!(shared.source().credential("a").unwrap().is_some());
    }
}
