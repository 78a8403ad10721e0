//! What the test server saw: one recorded request.

/// One HTTP request as a [`TestHttpServer`](crate::TestHttpServer) received it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedRequest {
    /// The request method, e.g. `"POST"`.
    pub method: String,
    /// The request target as sent: path plus query string, e.g. `"/hook?x=1"`.
    pub path: String,
    /// Header `(name, value)` pairs in arrival order. Names are lowercase; values that are not UTF-8
    /// are converted lossily.
    pub headers: Vec<(String, String)>,
    /// The complete request body.
    pub body: Vec<u8>,
    /// The TCP connection the request arrived on, numbered from 0 in accept order. Two requests with
    /// the same number shared one keep-alive connection.
    pub connection: u64,
}

impl RecordedRequest {
    /// The value of the first header called `name` (compared case-insensitively), if any.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(candidate, _)| candidate.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// The body parsed as JSON.
    ///
    /// # Panics
    ///
    /// If the body is not valid JSON; the message shows the request and the parse error. This is a
    /// test helper, so a panic is the assertion failure.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|error| {
            panic!(
                "body of {} {} is not JSON ({error}): {:?}",
                self.method,
                self.path,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::RecordedRequest;

    fn request(body: &[u8]) -> RecordedRequest {
        RecordedRequest {
            method: "POST".to_owned(),
            path: "/hook".to_owned(),
            headers: vec![
                ("x-one".to_owned(), "1".to_owned()),
                ("x-one".to_owned(), "2".to_owned()),
            ],
            body: body.to_vec(),
            connection: 0,
        }
    }

    #[test]
    fn header_lookup_is_case_insensitive_and_returns_the_first() {
        let request = request(b"");
        assert_eq!(request.header("X-One"), Some("1"));
        assert_eq!(request.header("x-two"), None);
    }

    #[test]
    fn json_parses_the_body() {
        assert_eq!(request(br#"{"a":1}"#).json(), serde_json::json!({"a": 1}));
    }

    #[test]
    #[should_panic(expected = "body of POST /hook is not JSON")]
    fn json_panics_on_a_non_json_body() {
        request(b"plain text").json();
    }
}
