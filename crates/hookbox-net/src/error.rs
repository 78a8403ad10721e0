//! The crate's error type, and how transport failures map onto it.

use std::error::Error as _;
use std::time::Duration;

use crate::address::AddressRefusal;

/// Why an outbound request could not be made or completed. Messages never contain header values,
/// which may be secrets.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The URL does not parse.
    #[error("invalid URL `{url}`: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The URL's scheme is neither `http` nor `https`.
    #[error("unsupported URL scheme in `{url}`: only http:// and https:// URLs are allowed")]
    UnsupportedScheme {
        /// The URL as given.
        url: String,
    },
    /// The URL is plain `http://` and the client only sends over HTTPS.
    #[error(
        "plain http:// is refused for `{url}`: this client only sends over HTTPS (use an https:// URL)"
    )]
    InsecureScheme {
        /// The URL as given.
        url: String,
    },
    /// The egress policy refuses the URL's host (checked before any DNS lookup).
    #[error("request to `{url}` refused by the egress policy: {reason}")]
    PolicyRefused {
        /// The URL as given.
        url: String,
        /// The rule that refused it.
        reason: String,
    },
    /// Every address the host resolves to (or the IP literal itself) is one this client may not
    /// dial: loopback, private, link-local, metadata and other non-public ranges. Nothing was
    /// sent.
    #[error("request to `{url}` refused: {reason}")]
    AddressRefused {
        /// The URL as given.
        url: String,
        /// The host, each address and the range that refuses it.
        reason: String,
    },
    /// A configured header has an invalid name or value, or names a header hookbox sets itself.
    #[error("invalid header `{name}`: {reason}")]
    InvalidHeader {
        /// The header name as configured.
        name: String,
        /// What is wrong with it (never the value itself).
        reason: String,
    },
    /// The request did not complete (connect, send and the whole response body) within its timeout.
    #[error("request to `{url}` timed out after {after:?}")]
    Timeout {
        /// The URL as given.
        url: String,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// No connection could be established (DNS failure, refused, unreachable, TLS handshake or
    /// certificate failure, connect timeout).
    #[error("could not connect to `{url}`: {reason}")]
    Connect {
        /// The URL as given.
        url: String,
        /// The underlying cause.
        reason: String,
    },
    /// The connection failed while sending the request or reading the response.
    #[error("request to `{url}` failed: {reason}")]
    Request {
        /// The URL as given.
        url: String,
        /// The underlying cause.
        reason: String,
    },
    /// The client could not be built from its [`ClientOptions`](crate::ClientOptions).
    #[error("could not build the HTTP client: {0}")]
    Build(String),
}

impl NetError {
    /// Classifies a reqwest failure for a request to `url`.
    pub(crate) fn from_transport(url: &str, error: &reqwest::Error) -> Self {
        let url = url.to_owned();
        if let Some(refusal) = address_refusal(error) {
            return Self::AddressRefused {
                url,
                reason: refusal.to_string(),
            };
        }
        let reason = causes(error);
        if error.is_connect() {
            Self::Connect { url, reason }
        } else {
            Self::Request { url, reason }
        }
    }

    /// Wraps a failure of reqwest's client builder.
    pub(crate) fn from_builder(error: &reqwest::Error) -> Self {
        Self::Build(causes(error))
    }
}

/// The guarded resolver's refusal, if that is why the connection failed.
fn address_refusal(error: &reqwest::Error) -> Option<&AddressRefusal> {
    let mut next = error.source();
    while let Some(cause) = next {
        if let Some(refusal) = cause.downcast_ref::<AddressRefusal>() {
            return Some(refusal);
        }
        next = cause.source();
    }
    None
}

/// The error's sources joined with `: `, most general first, without the URL reqwest adds (the
/// variants already carry the URL as given).
fn causes(error: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut next = error.source();
    while let Some(cause) = next {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    if text.is_empty() {
        error.to_string()
    } else {
        text
    }
}
