//! The guarded client: one keep-alive connection pool and one request entry point.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use reqwest::redirect;

use crate::address::AddressRules;
use crate::resolve::GuardedResolver;
use crate::{ClientOptions, EgressPolicy, NetError, SharedCredentials, body, guard, tls};

/// hookbox's HTTP client. Cloning is cheap and clones share one keep-alive connection pool.
#[derive(Debug, Clone)]
pub struct GuardedClient {
    pub(crate) http: reqwest::Client,
    pub(crate) https_only: bool,
    pub(crate) addresses: Arc<AddressRules>,
    pub(crate) credentials: Option<SharedCredentials>,
}

/// One JSON `POST` to make with [`GuardedClient::post_json`]. Its `Debug` output shows header
/// names only, never their values.
#[derive(Clone)]
pub struct PostRequest<'a> {
    /// The target URL (`https://`, or `http://` when the client is not HTTPS-only).
    pub url: &'a str,
    /// The egress policy of the environment the request is made for;
    /// [`EgressPolicy::PUBLIC`] for requests outside any environment's policy.
    pub policy: &'a EgressPolicy,
    /// Configured headers, sent after validation. `Content-Type`, `Content-Length`, `Host` and
    /// `Transfer-Encoding` are set by hookbox and refused here; headers the policy's
    /// `transform` and `credential` inject replace configured ones of the same name.
    pub headers: &'a [(String, String)],
    /// The JSON body, already serialized.
    pub body: Vec<u8>,
    /// The deadline for the whole exchange: connect, send and reading the entire response body.
    pub timeout: Duration,
    /// How many response body bytes to keep; the rest is read and discarded.
    pub body_limit: usize,
}

impl fmt::Debug for PostRequest<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        formatter
            .debug_struct("PostRequest")
            .field("url", &self.url)
            .field("policy", &self.policy)
            .field("header_names", &header_names)
            .field("body_len", &self.body.len())
            .field("timeout", &self.timeout)
            .field("body_limit", &self.body_limit)
            .finish()
    }
}

/// The response to a [`PostRequest`]. Any status counts, including 3xx (redirects are not
/// followed) and 4xx/5xx.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpReply {
    /// The HTTP status code.
    pub status: u16,
    /// The first [`PostRequest::body_limit`] bytes of the body.
    pub body: Vec<u8>,
    /// How many body bytes arrived past the limit and were discarded (0 if the body fit). The body
    /// is read to its end within the timeout, so this is exact.
    pub body_dropped: u64,
    /// How long the reply's `Retry-After` header asks to wait (delta seconds, or an HTTP date
    /// from now; zero for a date past), when it has a valid one.
    pub retry_after: Option<Duration>,
}

impl GuardedClient {
    /// Builds the client: rustls with ring, platform roots plus
    /// [`ClientOptions::extra_root_certs_pem`], no redirects, no proxy from the environment, and
    /// the guarded resolver applying the options' address rules and static overrides.
    pub fn new(options: &ClientOptions) -> Result<Self, NetError> {
        let addresses = Arc::new(AddressRules {
            permit_loopback: options.permit_loopback,
            allowed: options.allow_private_cidrs.clone(),
        });
        let resolver = GuardedResolver::new(Arc::clone(&addresses), &options.resolve)?
            .with_ports(&options.connect_to)?;
        Ok(Self {
            http: build_http(options, resolver)?,
            https_only: options.https_only,
            addresses,
            credentials: options.credentials.clone(),
        })
    }

    /// POSTs `request.body` as `application/json` and returns the reply, whatever its status.
    /// Nothing is sent unless the scheme, the egress policy and the address rules all allow it.
    pub async fn post_json(&self, request: PostRequest<'_>) -> Result<HttpReply, NetError> {
        let checked = request.check(self)?;
        let exchange = async {
            let response = self
                .http
                .post(checked.url)
                .headers(checked.headers)
                .body(request.body)
                .send()
                .await
                .map_err(|error| NetError::from_transport(request.url, &error))?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(retry_after);
            let body = body::read_capped(request.url, response, request.body_limit).await?;
            Ok(HttpReply {
                status,
                body: body.kept,
                body_dropped: body.dropped,
                retry_after,
            })
        };
        tokio::time::timeout(request.timeout, exchange)
            .await
            .map_err(|_elapsed| NetError::Timeout {
                url: request.url.to_owned(),
                after: request.timeout,
            })?
    }
}

/// A checked endpoint for a protocol client that makes its own requests
/// ([`GuardedClient::endpoint`]).
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The guarded client's connection pool: its resolver admits only allowed addresses for
    /// every connection, it follows no redirects and ignores `HTTP(S)_PROXY`.
    pub http: reqwest::Client,
    /// The checked configured headers, with those the policy injects.
    pub headers: reqwest::header::HeaderMap,
}

impl GuardedClient {
    /// For a protocol client that sends every request to `url` itself (rmcp's streamable HTTP
    /// MCP client): runs the pre-send checks of [`post_json`](Self::post_json) once, on `url`
    /// and `headers` (the scheme, `policy`, an IP-literal host's address, the headers), and
    /// returns this client's pool and the checked headers. The caller must send only to `url`
    /// (the host's addresses are still checked at every connection) and bound its requests.
    pub fn endpoint(
        &self,
        url: &str,
        policy: &EgressPolicy,
        headers: &[(String, String)],
    ) -> Result<Endpoint, NetError> {
        let checked = guard::check(
            self,
            &guard::Outgoing {
                url,
                policy,
                headers,
            },
        )?;
        Ok(Endpoint {
            http: self.http.clone(),
            headers: checked.headers,
        })
    }
}

/// The wait a `Retry-After` value asks for: delta seconds, or an HTTP date from now.
fn retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(
        date.duration_since(std::time::SystemTime::now())
            .unwrap_or_default(),
    )
}

impl PostRequest<'_> {
    /// The pre-send checks, then `Content-Type: application/json`.
    pub(crate) fn check(&self, client: &GuardedClient) -> Result<guard::Checked, NetError> {
        let mut checked = guard::check(
            client,
            &guard::Outgoing {
                url: self.url,
                policy: self.policy,
                headers: self.headers,
            },
        )?;
        checked
            .headers
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(checked)
    }
}

#[expect(clippy::disallowed_methods, reason = "this is the one client factory")]
fn build_http(
    options: &ClientOptions,
    resolver: GuardedResolver,
) -> Result<reqwest::Client, NetError> {
    reqwest::Client::builder()
        .dns_resolver(resolver)
        .tls_backend_preconfigured(tls::client_config(&options.extra_root_certs_pem)?)
        .redirect(redirect::Policy::none())
        .no_proxy()
        .connect_timeout(options.connect_timeout)
        .user_agent(options.user_agent.as_str())
        .build()
        .map_err(|error| NetError::from_builder(&error))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::PostRequest;
    use crate::EgressPolicy;

    #[test]
    fn debug_output_hides_header_values() {
        let headers = vec![("x-api-key".to_owned(), "secret-value".to_owned())];
        let request = PostRequest {
            url: "https://example.com/hook",
            policy: &EgressPolicy::PUBLIC,
            headers: &headers,
            body: b"{}".to_vec(),
            timeout: Duration::from_secs(1),
            body_limit: 10,
        };
        let debug = format!("{request:?}");
        assert!(debug.contains("x-api-key"), "{debug}");
        assert!(!debug.contains("secret-value"), "{debug}");
    }
}
