//! What the test server answers: a scripted reply.

use std::time::Duration;

/// The response a [`TestHttpServer`](crate::TestHttpServer) responder returns for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code. An invalid code (outside 100..=999) makes the server answer 500 with
    /// an explanation instead.
    pub status: u16,
    /// Extra response headers, `(name, value)`. `content-length` is computed by the server.
    pub headers: Vec<(String, String)>,
    /// The response body.
    pub body: Vec<u8>,
    /// How long the server waits before sending the response. Only this request's connection
    /// waits; other connections are served meanwhile.
    pub delay: Duration,
}

impl Reply {
    /// A reply with a JSON body and `content-type: application/json`.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Self::with_body(status, "application/json", body.to_string().into_bytes())
    }

    /// A reply with a plain-text body and `content-type: text/plain; charset=utf-8`.
    pub fn text(status: u16, body: &str) -> Self {
        Self::with_body(
            status,
            "text/plain; charset=utf-8",
            body.as_bytes().to_vec(),
        )
    }

    /// A redirect (`status` is usually 301, 302, 303, 307 or 308) to `location`, with an empty body.
    pub fn redirect(status: u16, location: &str) -> Self {
        Self {
            status,
            headers: vec![("location".to_owned(), location.to_owned())],
            body: Vec::new(),
            delay: Duration::ZERO,
        }
    }

    /// The same reply, sent only after `delay`.
    #[must_use]
    pub fn after(self, delay: Duration) -> Self {
        Self { delay, ..self }
    }

    fn with_body(status: u16, content_type: &str, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), content_type.to_owned())],
            body,
            delay: Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::Reply;

    #[test]
    fn constructors_set_content_type_location_and_delay() {
        let json = Reply::json(201, &serde_json::json!({"ok": true}));
        assert_eq!(json.status, 201);
        assert_eq!(json.body, br#"{"ok":true}"#);
        assert_eq!(
            json.headers,
            [("content-type".to_owned(), "application/json".to_owned())]
        );

        let redirect = Reply::redirect(302, "/elsewhere").after(Duration::from_secs(1));
        assert_eq!(
            redirect.headers,
            [("location".to_owned(), "/elsewhere".to_owned())]
        );
        assert_eq!(redirect.delay, Duration::from_secs(1));
        assert!(redirect.body.is_empty());
    }
}
