//! Sending a provider request through the guarded client: auth headers, retries with
//! exponential backoff on 429 and 5xx (honouring `Retry-After`), one overall deadline, and
//! error messages taken from the provider's error body.

use std::time::Duration;

use hookbox_net::{EgressPolicy, GuardedClient, NetError, PostRequest, StreamingReply};
use serde_json::Value;
use tokio::time::Instant;

use super::ModelError;

/// The most response body kept (a model answer is far smaller).
const BODY_LIMIT: usize = 32 * 1024 * 1024;

/// How often and how patiently to retry 429 and 5xx answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Requests made at most, the first included.
    pub(crate) max_attempts: u32,
    /// The wait before the second attempt; it doubles for each further one.
    pub(crate) initial_backoff: Duration,
    /// The longest computed wait (a server's `Retry-After` is honoured as given).
    pub(crate) max_backoff: Duration,
}

impl RetryPolicy {
    fn backoff(&self, failed_attempts: u32) -> Duration {
        let factor = 2_u32.saturating_pow(failed_attempts.saturating_sub(1));
        self.initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff)
    }
}

/// One provider endpoint's transport settings.
#[derive(Debug, Clone)]
pub(crate) struct Transport {
    pub(crate) provider: &'static str,
    pub(crate) client: GuardedClient,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) retry: RetryPolicy,
    pub(crate) timeout: Duration,
}

impl Transport {
    /// POSTs `body` to `url` until a 2xx answer arrives (whose body is then read by the caller
    /// before `deadline`), retrying 429 and 5xx.
    pub(crate) async fn send(
        &self,
        url: &str,
        body: &Value,
        deadline: Instant,
    ) -> Result<StreamingReply, ModelError> {
        let body = serde_json::to_vec(body).map_err(|error| ModelError::Config {
            field: "model",
            reason: format!("could not serialize the request: {error}"),
        })?;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(self.timeout_error(url));
            }
            let request = PostRequest {
                url,
                // Provider endpoints are operator configuration, outside any environment's
                // `network` policy; the client's address rules still apply.
                policy: &EgressPolicy::PUBLIC,
                headers: &self.headers,
                body: body.clone(),
                timeout: remaining,
                body_limit: BODY_LIMIT,
            };
            let reply = self
                .client
                .post_json_stream(request)
                .await
                .map_err(|error| self.net_error(url, error))?;
            let status = reply.status();
            if (200..300).contains(&status) {
                return Ok(reply);
            }
            let retry_after = reply
                .header("retry-after")
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            let error_body = reply.read_to_end().await.unwrap_or_default();
            let api_error = ModelError::Api {
                provider: self.provider,
                url: url.to_owned(),
                status,
                attempts,
                message: error_message(&error_body),
            };
            let retryable = status == 429 || (500..600).contains(&status);
            if !retryable || attempts >= self.retry.max_attempts {
                return Err(api_error);
            }
            let wait = retry_after.unwrap_or_else(|| self.retry.backoff(attempts));
            if Instant::now() + wait >= deadline {
                return Err(api_error);
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Maps a transport failure for `url` onto the model error users see.
    pub(crate) fn net_error(&self, url: &str, error: NetError) -> ModelError {
        match error {
            NetError::Connect { reason, .. } => ModelError::Unreachable {
                provider: self.provider,
                url: url.to_owned(),
                reason,
            },
            NetError::Timeout { .. } => self.timeout_error(url),
            source => ModelError::Transport {
                provider: self.provider,
                source,
            },
        }
    }

    fn timeout_error(&self, url: &str) -> ModelError {
        ModelError::Timeout {
            provider: self.provider,
            url: url.to_owned(),
            after: self.timeout,
        }
    }
}

/// The provider's error message from an error body: `error.message` (OpenAI, Gemini,
/// Anthropic, and the OpenAI-compatible servers), a string `error`, or the body itself.
pub(crate) fn error_message(body: &[u8]) -> String {
    if let Ok(json) = serde_json::from_slice::<Value>(body) {
        let error = json.get("error").unwrap_or(&json);
        if let Some(message) = error.get("message").and_then(Value::as_str) {
            return message.to_owned();
        }
        if let Some(message) = error.as_str() {
            return message.to_owned();
        }
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        return "(empty response body)".to_owned();
    }
    let mut cut: String = text.chars().take(500).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{RetryPolicy, error_message};

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
        };
        let waits: Vec<_> = (1..=4).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 350, 350]);
    }

    #[test]
    fn error_messages_come_from_the_provider_body() {
        assert_eq!(
            error_message(br#"{"error":{"code":400,"message":"API key not valid","status":"INVALID_ARGUMENT"}}"#),
            "API key not valid"
        );
        assert_eq!(
            error_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message(br#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message(b"Bad Gateway"), "Bad Gateway");
        assert_eq!(error_message(b""), "(empty response body)");
    }
}
