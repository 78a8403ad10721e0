//! Shared helpers; one module per concern.

use std::time::Duration;

use hookbox_net::{ClientOptions, GuardedClient, PostRequest};

/// The request bodies, replies and headers reach both ends intact.
mod exchange;
/// Build-time and request-time validation errors, and transport failures.
mod failures;
/// The timeout and the response body cap.
mod limits;
/// HTTPS: the ring-backed TLS stack, platform roots and extra roots.
mod tls;

/// A client with default options.
#[expect(
    clippy::unwrap_used,
    reason = "test helper: a client that fails to build fails the test"
)]
fn client() -> GuardedClient {
    GuardedClient::new(&ClientOptions::default()).unwrap()
}

/// A small JSON POST to `url` with `headers`, a 10 s timeout and a 1 MiB body limit.
fn post<'a>(url: &'a str, headers: &'a [(String, String)]) -> PostRequest<'a> {
    PostRequest {
        url,
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
