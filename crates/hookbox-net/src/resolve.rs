//! The guarded DNS resolver: static overrides first, then `localhost` names (loopback, never
//! looked up), then the system resolver; every address is checked against the address rules and
//! only admitted ones are handed to the connector (the client's, or the egress proxy's dial), so
//! the connection goes to a checked address with no second lookup.

use std::collections::HashMap;
use std::error::Error;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::NetError;
use crate::address::{AddressRefusal, AddressRules};
use crate::host;

/// Resolves names for one client. reqwest does not call it for IP-literal URLs: those are
/// checked before sending (see `GuardedClient`).
#[derive(Debug)]
pub(crate) struct GuardedResolver {
    rules: Arc<AddressRules>,
    overrides: HashMap<String, Vec<IpAddr>>,
    /// Ports handed to the connector with the addresses of these names (test-only
    /// `ClientOptions::connect_to`); other names get port 0, i.e. the URL's port.
    ports: HashMap<String, u16>,
}

impl GuardedResolver {
    /// A resolver applying `rules`, answering the names in `overrides` (like curl's
    /// `--resolve`) without a lookup. Override names are canonicalized; an invalid one fails
    /// the client build.
    pub(crate) fn new(
        rules: Arc<AddressRules>,
        overrides: &[(String, IpAddr)],
    ) -> Result<Self, NetError> {
        let mut table: HashMap<String, Vec<IpAddr>> = HashMap::new();
        for (name, ip) in overrides {
            let canonical = host::canonical(name)
                .map_err(|error| NetError::Build(format!("static resolve override: {error}")))?;
            table.entry(canonical).or_default().push(*ip);
        }
        Ok(Self {
            rules,
            overrides: table,
            ports: HashMap::new(),
        })
    }

    /// Adds test-only overrides that pin a name to an address and a port (see
    /// `ClientOptions::connect_to`). A URL with an explicit port still uses its own.
    pub(crate) fn with_ports(mut self, pinned: &[(String, SocketAddr)]) -> Result<Self, NetError> {
        for (name, address) in pinned {
            let canonical = host::canonical(name)
                .map_err(|error| NetError::Build(format!("test connect-to override: {error}")))?;
            self.overrides
                .entry(canonical.clone())
                .or_default()
                .push(address.ip());
            self.ports.insert(canonical, address.port());
        }
        Ok(self)
    }
}

/// Why a name gave no address to dial.
#[derive(Debug)]
pub(crate) enum LookupError {
    /// The system resolver failed.
    Failed(std::io::Error),
    /// Every address the name resolved to is refused by the address rules.
    Refused(AddressRefusal),
}

impl GuardedResolver {
    /// The admitted addresses of `host` (a name, not an IP literal): static overrides first,
    /// then `localhost` names, then the system resolver; every candidate is checked against the
    /// address rules.
    pub(crate) fn lookup(
        &self,
        host: &str,
    ) -> impl Future<Output = Result<Vec<IpAddr>, LookupError>> + Send + 'static {
        let host = host.to_owned();
        let rules = Arc::clone(&self.rules);
        let pinned = host::canonical(&host).ok().and_then(|canonical| {
            self.overrides
                .get(&canonical)
                .cloned()
                .or_else(|| is_localhost(&canonical).then(loopback))
        });
        async move {
            let candidates = match pinned {
                Some(addresses) => addresses,
                None => tokio::net::lookup_host((host.as_str(), 0))
                    .await
                    .map_err(LookupError::Failed)?
                    .map(|address| address.ip())
                    .collect(),
            };
            rules.admit(&host, candidates).map_err(LookupError::Refused)
        }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let lookup = self.lookup(name.as_str());
        let port = host::canonical(name.as_str())
            .ok()
            .and_then(|canonical| self.ports.get(&canonical).copied())
            .unwrap_or(0);
        Box::pin(async move {
            // The refusal is boxed as itself so `NetError::from_transport` can find it.
            let admitted = lookup
                .await
                .map_err(|error| -> Box<dyn Error + Send + Sync> {
                    match error {
                        LookupError::Failed(error) => Box::new(error),
                        LookupError::Refused(refusal) => Box::new(refusal),
                    }
                })?;
            let addrs: Addrs = Box::new(
                admitted
                    .into_iter()
                    .map(move |ip| SocketAddr::new(ip, port)),
            );
            Ok(addrs)
        })
    }
}

/// RFC 6761 §6.3: `localhost` and every name under it are loopback and are never sent to DNS
/// (where `evil.localhost` could answer anything).
fn is_localhost(canonical: &str) -> bool {
    canonical == "localhost" || canonical.ends_with(".localhost")
}

fn loopback() -> Vec<IpAddr> {
    vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()]
}

#[cfg(test)]
mod tests {
    use super::is_localhost;

    #[test]
    fn localhost_names_are_recognized_on_label_boundaries() {
        assert!(is_localhost("localhost"));
        assert!(is_localhost("evil.localhost"));
        assert!(!is_localhost("notlocalhost"));
        assert!(!is_localhost("localhost.example.com"));
    }
}
