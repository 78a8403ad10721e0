//! hookbox's one guarded HTTP client.
//!
//! Every outbound HTTP request hookbox makes goes through a [`GuardedClient`] (clippy's
//! `disallowed-methods` bans building a `reqwest::Client` anywhere else). The client:
//!
//! * sends `POST` with `Content-Type: application/json` through one entry point,
//!   [`GuardedClient::post_json`], with configured headers validated and never allowed to override
//!   the framing headers (`Content-Type`, `Content-Length`, `Host`, `Transfer-Encoding`);
//!   [`GuardedClient::post_json_stream`] is the same request with the body read as it arrives
//!   ([`StreamingReply`]), for server-sent event streams;
//! * follows no redirects (a 3xx is returned as a reply) and ignores `HTTP(S)_PROXY`;
//! * bounds each request by one deadline covering connect, send and the whole response body, and
//!   caps how much of the body is kept;
//! * speaks TLS through rustls with the ring provider only, trusting the platform's roots plus any
//!   configured extra roots.
//!
//! Egress policy (allowlist, `transform`, address classification, HTTPS-only) is not enforced yet;
//! it will be checked where [`GuardedClient::post_json`] resolves its target.

mod body;
mod client;
mod error;
mod headers;
mod options;
mod stream;
mod target;
mod tls;

pub use client::{GuardedClient, HttpReply, PostRequest};
pub use error::NetError;
pub use options::ClientOptions;
pub use stream::StreamingReply;
