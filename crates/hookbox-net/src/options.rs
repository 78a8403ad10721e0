//! How a [`GuardedClient`](crate::GuardedClient) is configured.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ipnet::IpNet;

use crate::SharedCredentials;

/// Settings fixed when a [`GuardedClient`](crate::GuardedClient) is built. The defaults are the
/// strict ones HTTP hooks use: HTTPS only, no loopback, no private ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOptions {
    /// Extra trusted root certificates, each a PEM document holding one or more `CERTIFICATE`
    /// blocks. They are trusted in addition to the platform's roots.
    pub extra_root_certs_pem: Vec<Vec<u8>>,
    /// The longest a TCP connect may take (default 10 s). Each request's own timeout still bounds
    /// the whole exchange.
    pub connect_timeout: Duration,
    /// The `User-Agent` header sent with every request (default `hookbox/<version>`).
    pub user_agent: String,
    /// Refuse plain `http://` URLs (default `true`). Even when `false`, headers injected by an
    /// egress policy's `transform` are only ever sent over HTTPS.
    pub https_only: bool,
    /// Allow dialing loopback addresses (`127.0.0.0/8`, `::1`; default `false`). For clients
    /// that talk to operator-configured endpoints such as a local model server, or to a
    /// self-hosted hook receiver when the operator explicitly permits it.
    pub permit_loopback: bool,
    /// Non-public ranges that may be dialed anyway (default none), e.g. `10.77.0.0/16` for an
    /// internal receiver. Unspecified, multicast, broadcast and cloud metadata addresses stay
    /// refused even inside a listed range.
    pub allow_private_cidrs: Vec<IpNet>,
    /// Static name overrides, like curl's `--resolve`: a name listed here resolves to its
    /// addresses (several entries for one name add up) without a DNS lookup. The addresses are
    /// still checked like resolved ones.
    pub resolve: Vec<(String, IpAddr)>,
    /// Names answered with an address *and a port*, like curl's `--connect-to` (default none;
    /// not read from hookbox.toml). A URL naming such a host without an explicit port
    /// (`https://storage.googleapis.com/…`) is dialed at the given port, so tests and the demo
    /// can point a fixed public URL at a local server on an ephemeral port; a URL with an
    /// explicit port keeps its own. The address is still checked like a resolved one (loopback
    /// needs [`permit_loopback`](Self::permit_loopback)) and TLS still verifies the URL's host.
    pub connect_to: Vec<(String, SocketAddr)>,
    /// Where the `credential`s of a request's egress policy are looked up when the policy was
    /// parsed without resolving them (default none: such requests are refused rather than sent
    /// without their secret). See [`EgressPolicy::decide_with_credentials`].
    ///
    /// [`EgressPolicy::decide_with_credentials`]: crate::EgressPolicy::decide_with_credentials
    pub credentials: Option<SharedCredentials>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            extra_root_certs_pem: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            user_agent: concat!("hookbox/", env!("CARGO_PKG_VERSION")).to_owned(),
            https_only: true,
            permit_loopback: false,
            allow_private_cidrs: Vec::new(),
            resolve: Vec::new(),
            connect_to: Vec::new(),
            credentials: None,
        }
    }
}
