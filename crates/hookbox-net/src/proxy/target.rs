//! The one canonical target of a proxied request, and the framing checks before it: anything
//! ambiguous is a 400, so the proxy and the upstream can never disagree about what was asked.

use hyper::header::{CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
use hyper::http::uri::Authority;
use hyper::{Method, Request};

use crate::host;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    /// The canonical host: lowercase ASCII name, or an IP literal without brackets.
    pub(super) host: String,
    /// The port, explicit or the scheme's default.
    pub(super) port: u16,
    /// The origin-form path and query to send upstream (`/` for `CONNECT`).
    pub(super) path: String,
}

impl Target {
    /// The `Host` header value for the upstream request.
    pub(super) fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// A request the proxy will not interpret, with what is wrong (never a header value), and the
/// target host and port as far as they are known, for the decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct BadRequest {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) reason: String,
}

/// Checks the framing headers and extracts the canonical target of `request`.
pub(super) fn parse<B>(request: &Request<B>) -> Result<Target, BadRequest> {
    let bad = |reason: &str| BadRequest {
        host: String::new(),
        port: 0,
        reason: reason.to_owned(),
    };
    let headers = request.headers();
    // hyper's parser already refuses differing Content-Lengths, collapses identical ones, and
    // when Transfer-Encoding is present drops Content-Length (the body is read as chunked, and
    // the connection is closed after the response, so nothing can be smuggled behind it). These
    // checks keep the proxy strict should a request ever reach it with both.
    if headers.get_all(HOST).iter().count() > 1 {
        return Err(bad("duplicate Host headers"));
    }
    if headers.get_all(CONTENT_LENGTH).iter().count() > 1 {
        return Err(bad("duplicate Content-Length headers"));
    }
    if headers.contains_key(CONTENT_LENGTH) && headers.contains_key(TRANSFER_ENCODING) {
        return Err(bad("both Content-Length and Transfer-Encoding"));
    }
    let uri = request.uri();
    let connect = request.method() == Method::CONNECT;
    let default_port = if connect {
        None
    } else {
        match uri.scheme_str() {
            Some("http") => Some(80),
            Some("https") => {
                return Err(bad(
                    "an https:// request target: send CONNECT host:443 and speak TLS through the tunnel",
                ));
            }
            Some(_) => return Err(bad("the request target's scheme is not http")),
            None => {
                return Err(bad(
                    "not a proxy request: the target must be an absolute http:// URL or CONNECT host:port",
                ));
            }
        }
    };
    let authority = uri
        .authority()
        .ok_or_else(|| bad("the request target has no host"))?;
    let (host, port) = split(authority, default_port).map_err(|reason| bad(&reason))?;
    let target = Target {
        host,
        port,
        path: uri
            .path_and_query()
            .map_or_else(|| "/".to_owned(), ToString::to_string),
    };
    if !connect && let Some(value) = headers.get(HOST) {
        let matches = value
            .to_str()
            .ok()
            .and_then(|text| text.parse::<Authority>().ok())
            .and_then(|authority| split(&authority, default_port).ok())
            .is_some_and(|(host, port)| host == target.host && port == target.port);
        if !matches {
            return Err(BadRequest {
                host: target.host,
                port: target.port,
                reason: "the Host header does not name the request target's host and port"
                    .to_owned(),
            });
        }
    }
    Ok(target)
}

/// The canonical host and the port of `authority`; `default_port` when it has none (a port is
/// required when there is no default). User info is refused.
pub(super) fn split(
    authority: &Authority,
    default_port: Option<u16>,
) -> Result<(String, u16), String> {
    if authority.as_str().contains('@') {
        return Err("user info in the request target is refused".to_owned());
    }
    let port = match (authority.port_u16(), default_port) {
        (Some(port), _) | (None, Some(port)) => port,
        (None, None) => return Err("the CONNECT target has no port".to_owned()),
    };
    if port == 0 {
        return Err("port 0 is not a valid target".to_owned());
    }
    let host = host::canonical(authority.host()).map_err(|error| error.to_string())?;
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use hyper::Request;

    use super::{Target, parse};

    fn request(method: &str, uri: &str, headers: &[(&str, &str)]) -> Request<()> {
        let mut builder = Request::builder().method(method).uri(uri);
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        builder.body(()).unwrap()
    }

    fn target(host: &str, port: u16, path: &str) -> Target {
        Target {
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        }
    }

    #[test]
    fn canonical_targets_from_absolute_urls_and_connect() {
        let cases = [
            (
                request("GET", "http://Example.COM./a?b=c", &[]),
                target("example.com", 80, "/a?b=c"),
            ),
            (
                request(
                    "GET",
                    "http://example.com:8080",
                    &[("host", "EXAMPLE.com:8080")],
                ),
                target("example.com", 8080, "/"),
            ),
            (
                request("CONNECT", "example.com:443", &[("host", "other")]),
                target("example.com", 443, "/"),
            ),
            (
                request("GET", "http://[::1]:81/", &[("host", "[0:0::1]:81")]),
                target("::1", 81, "/"),
            ),
        ];
        for (request, expected) in cases {
            assert_eq!(parse(&request).unwrap(), expected, "{request:?}");
        }
        assert_eq!(target("::1", 81, "/").host_header(), "[::1]:81");
        assert_eq!(target("example.com", 80, "/").host_header(), "example.com");
    }

    #[test]
    fn ambiguous_requests_are_refused() {
        for (request, reason) in [
            (request("GET", "/path", &[]), "not a proxy request"),
            (request("GET", "https://example.com/", &[]), "CONNECT"),
            (request("CONNECT", "example.com", &[]), "no port"),
            (request("GET", "http://u:p@example.com/", &[]), "user info"),
            (
                request("GET", "http://example.com/", &[("host", "evil.com")]),
                "Host header",
            ),
            (
                request("GET", "http://example.com/", &[("host", "example.com:81")]),
                "Host header",
            ),
            (
                request(
                    "GET",
                    "http://example.com/",
                    &[("host", "example.com"), ("host", "example.com")],
                ),
                "duplicate Host",
            ),
            (
                request(
                    "POST",
                    "http://example.com/",
                    &[("content-length", "1"), ("content-length", "1")],
                ),
                "duplicate Content-Length",
            ),
            (
                request(
                    "POST",
                    "http://example.com/",
                    &[("content-length", "1"), ("transfer-encoding", "chunked")],
                ),
                "both",
            ),
        ] {
            let refusal = parse(&request).unwrap_err();
            assert!(refusal.reason.contains(reason), "{request:?}: {refusal:?}");
        }
    }
}
