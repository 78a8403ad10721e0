//! A tiny raw HTTP/1.1 client over `std::net::TcpStream`: the attacks need to send exactly the
//! bytes a browser or a hostile local process would (any `Host`, any content type, half a request).

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::Value;

/// A reply: status, raw header block and body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: String,
    pub(crate) body: String,
}

impl Reply {
    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {} {}", self.status, self.body))
    }

    /// The API error code, checking the error shape (`{"error":{"code","message"}}`).
    pub(crate) fn error_code(&self) -> String {
        let body = self.json();
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|message| !message.is_empty()),
            "{body}"
        );
        assert!(
            self.headers
                .to_ascii_lowercase()
                .contains("content-type: application/json"),
            "{}",
            self.headers
        );
        body["error"]["code"]
            .as_str()
            .expect("string code")
            .to_owned()
    }
}

/// `host:port` of a `http://host:port` base URL.
pub(crate) fn authority(base_url: &str) -> &str {
    base_url.trim_start_matches("http://")
}

/// Sends one request (`Connection: close`) and reads the whole reply. `headers` may replace the
/// default `Host` (the listen address).
pub(crate) fn send(
    base_url: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let authority = authority(base_url);
    let mut stream = TcpStream::connect(authority).expect("connect");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("host"))
    {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).expect("send");
    read_reply(&mut stream)
}

/// Reads a reply up to the end of the stream.
pub(crate) fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read reply");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Reply {
        status,
        headers: head.to_owned(),
        body,
    }
}

/// The payload of a chunked body.
fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// A request with key `key` in the `x-goog-api-key` header and a JSON body.
pub(crate) fn json(base_url: &str, key: &str, method: &str, path: &str, body: &Value) -> Reply {
    let text = if body.is_null() {
        String::new()
    } else {
        body.to_string()
    };
    send(
        base_url,
        method,
        path,
        &[
            ("x-goog-api-key", key),
            ("content-type", "application/json"),
        ],
        &text,
    )
}
