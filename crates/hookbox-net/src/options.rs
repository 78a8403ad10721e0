//! How a [`GuardedClient`](crate::GuardedClient) is configured.

use std::time::Duration;

/// Settings fixed when a [`GuardedClient`](crate::GuardedClient) is built.
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
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            extra_root_certs_pem: Vec::new(),
            connect_timeout: Duration::from_secs(10),
            user_agent: concat!("hookbox/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}
