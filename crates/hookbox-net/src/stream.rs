//! Streamed responses: the status and headers first, then the body chunk by chunk, under the
//! same deadline and size limit as [`GuardedClient::post_json`](crate::GuardedClient::post_json).

use std::time::Duration;

use tokio::time::Instant;

use crate::{GuardedClient, NetError, PostRequest};

/// The response to [`GuardedClient::post_json_stream`]: status and headers are known, the body
/// is read on demand with [`next_chunk`](Self::next_chunk). The request's deadline keeps running
/// while the body is read, and the body may not exceed the request's `body_limit`.
#[derive(Debug)]
pub struct StreamingReply {
    status: u16,
    headers: Vec<(String, String)>,
    url: String,
    response: reqwest::Response,
    deadline: Instant,
    timeout: Duration,
    limit: usize,
    received: usize,
}

impl StreamingReply {
    /// The HTTP status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The value of the first response header called `name` (case-insensitive), if it is
    /// present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The next piece of the body as it arrives, or `None` at its end. Fails with
    /// [`NetError::Timeout`] once the request's deadline has passed, and with
    /// [`NetError::Request`] when the body grows past the request's `body_limit`.
    pub async fn next_chunk(&mut self) -> Result<Option<Vec<u8>>, NetError> {
        let chunk = tokio::time::timeout_at(self.deadline, self.response.chunk())
            .await
            .map_err(|_elapsed| NetError::Timeout {
                url: self.url.clone(),
                after: self.timeout,
            })?
            .map_err(|error| NetError::from_transport(&self.url, &error))?;
        let Some(chunk) = chunk else {
            return Ok(None);
        };
        self.received = self.received.saturating_add(chunk.len());
        if self.received > self.limit {
            return Err(NetError::Request {
                url: self.url.clone(),
                reason: format!(
                    "the response body is larger than the limit of {} bytes",
                    self.limit
                ),
            });
        }
        Ok(Some(chunk.to_vec()))
    }

    /// Reads the rest of the body (within the deadline and the limit).
    pub async fn read_to_end(mut self) -> Result<Vec<u8>, NetError> {
        let mut body = Vec::new();
        while let Some(chunk) = self.next_chunk().await? {
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

impl GuardedClient {
    /// POSTs `request.body` as `application/json` and returns as soon as the response head has
    /// arrived, whatever its status; the body is then read with
    /// [`StreamingReply::next_chunk`]. `request.timeout` bounds the whole exchange including
    /// reading the body; a body longer than `request.body_limit` is an error (not truncated),
    /// since a cut stream cannot be parsed. The same checks as [`GuardedClient::post_json`]
    /// apply before anything is sent.
    pub async fn post_json_stream(
        &self,
        request: PostRequest<'_>,
    ) -> Result<StreamingReply, NetError> {
        let deadline = Instant::now() + request.timeout;
        let checked = request.check(self)?;
        let send = self
            .http
            .post(checked.url)
            .headers(checked.headers)
            .body(request.body);
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

impl StreamingReply {
    /// Sends `request` and waits (until `deadline`) for the response head.
    pub(crate) async fn start(
        request: reqwest::RequestBuilder,
        url: &str,
        deadline: Instant,
        timeout: Duration,
        limit: usize,
    ) -> Result<Self, NetError> {
        let response = tokio::time::timeout_at(deadline, request.send())
            .await
            .map_err(|_elapsed| NetError::Timeout {
                url: url.to_owned(),
                after: timeout,
            })?
            .map_err(|error| NetError::from_transport(url, &error))?;
        let headers = response
            .headers()
            .iter()
            .filter_map(|(name, value)| {
                let value = value.to_str().ok()?;
                Some((name.as_str().to_owned(), value.to_owned()))
            })
            .collect();
        Ok(Self {
            status: response.status().as_u16(),
            headers,
            url: url.to_owned(),
            response,
            deadline,
            timeout,
            limit,
            received: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookbox_test_support::{Reply, TestHttpServer};

    use crate::{ClientOptions, EgressPolicy, GuardedClient, NetError, PostRequest};

    fn request(url: &str, timeout: Duration, body_limit: usize) -> PostRequest<'_> {
        PostRequest {
            url,
            policy: &EgressPolicy::PUBLIC,
            headers: &[],
            body: b"{}".to_vec(),
            timeout,
            body_limit,
        }
    }

    /// A client that may post to the plain-HTTP loopback test servers.
    fn local_client() -> GuardedClient {
        GuardedClient::new(&ClientOptions {
            https_only: false,
            permit_loopback: true,
            ..ClientOptions::default()
        })
        .unwrap()
    }

    #[tokio::test]
    async fn streams_the_body_with_status_and_headers() {
        let server = TestHttpServer::start(|_| {
            let mut reply = Reply::text(503, "data: one\n\ndata: two\n\n");
            reply
                .headers
                .push(("retry-after".to_owned(), "7".to_owned()));
            reply
        })
        .await
        .unwrap();
        let client = local_client();
        let url = server.url("/stream");
        let reply = client
            .post_json_stream(request(&url, Duration::from_secs(10), 1000))
            .await
            .unwrap();
        assert_eq!(reply.status(), 503);
        assert_eq!(reply.header("Retry-After"), Some("7"));
        assert_eq!(
            reply.read_to_end().await.unwrap(),
            b"data: one\n\ndata: two\n\n"
        );
        assert_eq!(server.requests()[0].json(), serde_json::json!({}));
    }

    #[tokio::test]
    async fn a_body_past_the_limit_is_an_error() {
        let server = TestHttpServer::start(|_| Reply::text(200, &"x".repeat(100)))
            .await
            .unwrap();
        let client = local_client();
        let url = server.url("/big");
        let reply = client
            .post_json_stream(request(&url, Duration::from_secs(10), 10))
            .await
            .unwrap();
        let error = reply.read_to_end().await.unwrap_err();
        assert!(
            matches!(&error, NetError::Request { reason, .. } if reason.contains("limit of 10 bytes")),
            "{error}"
        );
    }

    #[tokio::test]
    async fn the_deadline_covers_the_response_head() {
        let server =
            TestHttpServer::start(|_| Reply::text(200, "late").after(Duration::from_secs(5)))
                .await
                .unwrap();
        let client = local_client();
        let url = server.url("/slow");
        let error = client
            .post_json_stream(request(&url, Duration::from_millis(200), 10))
            .await
            .unwrap_err();
        assert!(matches!(error, NetError::Timeout { .. }), "{error}");
    }
}
