//! Server-side secrets that `network.allowlist` entries name with `"credential": "NAME"`.
//!
//! hookbox-net does not store credentials: it asks a [`CredentialSource`] (hookbox's on-disk
//! store, a map in tests) for the one an entry names, and injects it as a header on requests that
//! entry admits. A credential's value is never part of a decision, a reason, an error or `Debug`
//! output.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// One credential: the header it is sent as and its value. `Debug` output redacts the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    header: String,
    value: String,
}

impl Credential {
    /// A credential sent as header `header` with value `value` (the whole header value, any
    /// prefix such as `Bearer ` included).
    pub fn new(header: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            header: header.into(),
            value: value.into(),
        }
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
            .finish()
    }
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
        let credential = Credential::new("Authorization", "Bearer top-secret");
        let debug = format!("{credential:?}");
        assert!(debug.contains("Authorization"), "{debug}");
        assert!(!debug.contains("top-secret"), "{debug}");
    }

    #[test]
    fn maps_closures_and_shared_handles_are_sources() {
        let mut map = BTreeMap::new();
        map.insert("a".to_owned(), Credential::new("X-Key", "1"));
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
