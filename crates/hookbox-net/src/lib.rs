//! hookbox's one guarded HTTP client, the egress policy, and the egress proxy
//! ([`EgressProxy`]) that applies the same policy and address rules to the traffic of sandboxes.
//!
//! Every outbound HTTP request hookbox makes goes through a [`GuardedClient`] (clippy's
//! `disallowed-methods` bans building a `reqwest::Client` anywhere else). The client:
//!
//! * sends `POST` with `Content-Type: application/json` through one entry point,
//!   [`GuardedClient::post_json`], with configured headers validated and never allowed to override
//!   the framing headers (`Content-Type`, `Content-Length`, `Host`, `Transfer-Encoding`);
//!   [`GuardedClient::post_json_stream`] is the same request with the body read as it arrives
//!   ([`StreamingReply`]), for server-sent event streams; [`GuardedClient::get`] sends a `GET`
//!   with configured headers and streams its reply the same way (downloads);
//!   [`GuardedClient::endpoint`] runs the same checks once for a protocol client that makes
//!   its own requests to one URL (rmcp's streamable HTTP MCP client), handing it the pool;
//! * follows no redirects (a 3xx is returned as a reply) and ignores `HTTP(S)_PROXY`;
//! * bounds each request by one deadline covering connect, send and the whole response body, and
//!   caps how much of the body is kept;
//! * speaks TLS through rustls with the ring provider only, trusting the platform's roots plus any
//!   configured extra roots.
//!
//! Every request also passes the egress checks, in this order, before anything is sent:
//!
//! 1. the scheme: `https://` only, unless the client was built with `https_only: false`;
//! 2. the request's [`EgressPolicy`] (an environment's `network`), decided on the canonical host
//!    before any DNS lookup; its `transform` headers, and the [`Credential`] its `credential`
//!    names (resolved through a [`CredentialSource`]), replace configured ones of the same name
//!    and are only ever sent over HTTPS;
//! 3. the address rules on every address the request would connect to: an IP-literal host is
//!    checked directly, a name is resolved by the client's guarded resolver (static overrides
//!    first), which hands the connector only admitted addresses, so the dial goes to a checked
//!    address and nothing is looked up twice. Loopback, private, link-local, CGNAT,
//!    unique-local, multicast, unspecified, documentation, NAT64/6to4/Teredo and metadata
//!    addresses are refused unless [`ClientOptions`] admits them.

mod address;
mod body;
mod client;
mod credentials;
mod error;
mod get;
mod guard;
mod headers;
mod host;
mod options;
mod policy;
mod proxy;
mod resolve;
mod stream;
mod target;
mod tls;

pub use client::{Endpoint, GuardedClient, HttpReply, PostRequest};
pub use credentials::{Credential, CredentialSource, SharedCredentials, parse_credential_domain};
pub use error::NetError;
pub use get::GetRequest;
pub use host::is_host_name;
pub use ipnet::IpNet;
pub use options::ClientOptions;
pub use policy::{DomainError, DomainList, EgressDecision, EgressPolicy, PolicyError};
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub use proxy::fuzzing;
pub use proxy::{DecisionLog, EgressProxy, ProxyCa, ProxyDecision, ProxyListener, ProxyOptions};
pub use stream::StreamingReply;
