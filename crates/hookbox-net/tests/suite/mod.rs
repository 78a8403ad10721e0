//! Shared helpers; one module per concern.

use std::time::Duration;

use hookbox_net::{ClientOptions, EgressPolicy, GuardedClient, PostRequest};

/// Issue 11's attacks on the egress proxy, through a test host in a network namespace.
mod bending;
/// Allowlist `credential`s: resolution, injection by the client and the proxy, no leaks.
mod credentials;
/// Address rules, static overrides and policy refusals, end to end through `post_json`.
mod egress;
/// The request bodies, replies and headers reach both ends intact.
mod exchange;
/// Build-time and request-time validation errors, and transport failures.
mod failures;
/// `GuardedClient::get`: headers, streamed replies, checks, and `connect_to`.
mod get;
/// The timeout and the response body cap.
mod limits;
/// Parsing `network` policies and deciding hosts: JSON paths, domain matching, entry order.
mod policy;
/// The egress proxy: forwarding, tunnels, refusals, limits and the decision log.
mod proxy;
/// N12: injected values are overwritten only on intercepted TLS to the matching host, and
/// redacted from responses.
mod proxy_redact;
/// The egress proxy's TLS interception for `transform` hosts: the per-environment CA, SNI and
/// `Host` checks, header injection and upstream verification.
mod proxy_tls;
/// HTTPS: the ring-backed TLS stack, platform roots and extra roots.
mod tls;

/// Options for the local test servers: plain HTTP and loopback allowed, nothing else relaxed.
fn local_options() -> ClientOptions {
    ClientOptions {
        https_only: false,
        permit_loopback: true,
        ..ClientOptions::default()
    }
}

/// A client built from `options`.
#[expect(
    clippy::unwrap_used,
    reason = "test helper: a client that fails to build fails the test"
)]
fn client_with(options: &ClientOptions) -> GuardedClient {
    GuardedClient::new(options).unwrap()
}

/// A client for the local test servers ([`local_options`]).
fn client() -> GuardedClient {
    client_with(&local_options())
}

/// A small JSON POST to `url` with `headers`, public egress, a 10 s timeout and a 1 MiB body
/// limit.
fn post<'a>(url: &'a str, headers: &'a [(String, String)]) -> PostRequest<'a> {
    PostRequest {
        url,
        policy: &EgressPolicy::PUBLIC,
        headers,
        body: br#"{"tool_call":{"name":"read_file"}}"#.to_vec(),
        timeout: Duration::from_secs(10),
        body_limit: 1 << 20,
    }
}

/// Owned header pairs from string literals.
fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}
