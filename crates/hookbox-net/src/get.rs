//! `GET` requests: the same checks as every other request, the reply streamed.

use std::fmt;
use std::time::Duration;

use tokio::time::Instant;

use crate::{EgressPolicy, GuardedClient, NetError, StreamingReply, guard};

/// One `GET` to make with [`GuardedClient::get`]. Its `Debug` output shows header names only,
/// never their values.
#[derive(Clone)]
pub struct GetRequest<'a> {
    /// The target URL (`https://`, or `http://` when the client is not HTTPS-only).
    pub url: &'a str,
    /// The egress policy of the environment the request is made for;
    /// [`EgressPolicy::PUBLIC`] for requests outside any environment's policy.
    pub policy: &'a EgressPolicy,
    /// Configured headers (e.g. `Authorization`), sent after validation. `Content-Type`,
    /// `Content-Length`, `Host` and `Transfer-Encoding` are refused; headers the policy's
    /// `transform` and `credential` inject replace configured ones of the same name.
    pub headers: &'a [(String, String)],
    /// The deadline for the whole exchange: connect, send and reading the entire response body.
    pub timeout: Duration,
    /// The most body bytes the reply may have; reading past it is an error.
    pub body_limit: usize,
}

impl fmt::Debug for GetRequest<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        formatter
            .debug_struct("GetRequest")
            .field("url", &self.url)
            .field("policy", &self.policy)
            .field("header_names", &header_names)
            .field("timeout", &self.timeout)
            .field("body_limit", &self.body_limit)
            .finish()
    }
}

impl GuardedClient {
    /// GETs `request.url` and returns as soon as the response head has arrived, whatever its
    /// status (redirects are not followed); the body is then read with
    /// [`StreamingReply::next_chunk`] (to a file, say) or [`StreamingReply::read_to_end`].
    /// `request.timeout` bounds the whole exchange including the body, and a body longer than
    /// `request.body_limit` is an error. The scheme, egress policy and address checks of
    /// [`GuardedClient::post_json`] apply before anything is sent.
    pub async fn get(&self, request: GetRequest<'_>) -> Result<StreamingReply, NetError> {
        let deadline = Instant::now() + request.timeout;
        let checked = guard::check(
            self,
            &guard::Outgoing {
                url: request.url,
                policy: request.policy,
                headers: request.headers,
            },
        )?;
        let send = self.http.get(checked.url).headers(checked.headers);
        StreamingReply::start(
            send,
            request.url,
            deadline,
            request.timeout,
            request.body_limit,
        )
        .await
    }
}
