//! TLS interception of `CONNECT`s to hosts whose allowlist entry has a `transform` or a
//! `credential`: the upstream TLS connection (verified against the real roots) is opened first,
//! then the client's TLS is terminated with a leaf from the environment's CA and its HTTP/1.1
//! requests are checked, given the `transform`/`credential` headers and forwarded. Responses
//! are scanned for the injected values (see [`super::redact`]).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::ext::ReasonPhrase;
use hyper::header::{
    ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_LENGTH, HOST, HeaderMap, HeaderValue,
};
use hyper::http::uri::Authority;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::upgrade::OnUpgrade;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::{TokioIo, TokioTimer};
use rustls::pki_types::ServerName;
use rustls::server::Acceptor;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::{LazyConfigAcceptor, TlsConnector};

use super::handler::{ProxyBody, Refusal, strip_hop_by_hop, text};
use super::redact::{RedactedBody, Report, Secrets};
use super::target::{Target, split};
use super::tunnel::{Tracked, until_idle};
use super::{Connection, ProxyDecision};
use crate::{headers, host};

/// An intercepted `CONNECT`, ready for the client's TLS: the target, the headers to inject, and
/// the verified upstream connection.
pub(super) struct Intercept {
    target: Target,
    inject: Vec<(String, String)>,
    upstream: Upstream,
}

/// The upstream of an intercepted connection: one verified TLS connection at a time, re-dialed
/// to the same checked address when the upstream closed it.
struct Upstream {
    address: SocketAddr,
    server_name: ServerName<'static>,
    sender: SendRequest<Incoming>,
}

/// Checks that `target` can be intercepted and opens verified TLS to it over `tcp` (a checked
/// address), before the client is told the tunnel is open.
pub(super) async fn prepare(
    connection: &Connection,
    target: &Target,
    tcp: TcpStream,
    inject: Vec<(String, String)>,
) -> Result<Intercept, Refusal> {
    let server_name = match ServerName::try_from(target.host.clone()) {
        Ok(name @ ServerName::DnsName(_)) => name,
        _ => {
            return Err(Refusal {
                status: StatusCode::FORBIDDEN,
                reason: format!(
                    "`{}` has `transform`/`credential` headers, which are only injected on \
                     intercepted TLS, and interception needs a DNS name (an IP literal has no SNI to check)",
                    target.host
                ),
            });
        }
    };
    headers::overwrite(&mut HeaderMap::new(), &inject).map_err(|error| {
        Refusal::bad_gateway(format!("the `transform`/`credential` headers: {error}"))
    })?;
    let address = tcp
        .peer_addr()
        .map_err(|error| Refusal::bad_gateway(format!("upstream connection lost: {error}")))?;
    let sender = handshake(connection, &server_name, tcp).await?;
    Ok(Intercept {
        target: target.clone(),
        inject,
        upstream: Upstream {
            address,
            server_name,
            sender,
        },
    })
}

/// TLS (verified against the platform's roots and the configured extra roots) and an HTTP/1.1
/// handshake on `tcp`; the connection task ends when the proxy stops serving.
async fn handshake(
    connection: &Connection,
    server_name: &ServerName<'static>,
    tcp: TcpStream,
) -> Result<SendRequest<Incoming>, Refusal> {
    let options = &connection.shared.options;
    let connector = TlsConnector::from(Arc::clone(&connection.shared.upstream_tls));
    let name = server_name.to_str();
    let tls = tokio::time::timeout(
        options.connect_timeout,
        connector.connect(server_name.clone(), tcp),
    )
    .await
    .map_err(|_elapsed| Refusal::bad_gateway(format!("TLS to `{name}` timed out")))?
    .map_err(|error| Refusal::bad_gateway(format!("TLS to `{name}` failed: {error}")))?;
    let (sender, exchange) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|error| Refusal::bad_gateway(format!("upstream handshake failed: {error}")))?;
    let mut shutdown = connection.shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = exchange => {}
            _ = shutdown.changed() => {}
        }
    });
    Ok(sender)
}

impl Upstream {
    /// A sender ready for the next request, re-dialing the checked address if needed.
    async fn ready(
        &mut self,
        connection: &Connection,
    ) -> Result<&mut SendRequest<Incoming>, Refusal> {
        if self.sender.is_closed() || self.sender.ready().await.is_err() {
            let timeout = connection.shared.options.connect_timeout;
            let tcp = tokio::time::timeout(timeout, TcpStream::connect(self.address))
                .await
                .map_err(|_elapsed| {
                    Refusal::bad_gateway(format!("reconnecting to {} timed out", self.address))
                })?
                .map_err(|error| {
                    Refusal::bad_gateway(format!("reconnecting to {}: {error}", self.address))
                })?;
            self.sender = handshake(connection, &self.server_name, tcp).await?;
        }
        Ok(&mut self.sender)
    }
}

/// Waits for the client's side of the upgrade (after the 200), terminates its TLS and serves the
/// requests inside. `connection` is held throughout, so the connection counts against the limit.
pub(super) async fn serve(
    on_upgrade: OnUpgrade,
    intercept: Intercept,
    connection: Arc<Connection>,
) {
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    let activity = Arc::new(Mutex::new(Instant::now()));
    let client = Tracked::new(TokioIo::new(upgraded), &activity);
    until_idle(
        terminate(client, intercept, Arc::clone(&connection)),
        &activity,
        &connection,
    )
    .await;
}

/// The client's TLS (SNI checked against the `CONNECT` host), then HTTP/1.1 on the decrypted
/// stream.
async fn terminate<S>(client: S, intercept: Intercept, connection: Arc<Connection>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let options = &connection.shared.options;
    let Intercept {
        target,
        inject,
        upstream,
    } = intercept;
    let refuse = |reason: String| {
        connection.record(ProxyDecision {
            host: target.host.clone(),
            port: target.port,
            method: String::new(),
            allowed: false,
            reason,
            intercepted: true,
            redactions: 0,
            sni: None,
            caller: None,
        });
    };
    let acceptor = LazyConfigAcceptor::new(Acceptor::default(), client);
    let start = match tokio::time::timeout(options.header_read_timeout, acceptor).await {
        Ok(Ok(start)) => start,
        Ok(Err(error)) => return refuse(format!("no TLS ClientHello from the client: {error}")),
        Err(_elapsed) => return refuse("the client sent no TLS ClientHello in time".to_owned()),
    };
    let sni = start
        .client_hello()
        .server_name()
        .map(|name| host::canonical(name).unwrap_or_else(|_| name.to_owned()));
    if sni.as_deref() != Some(target.host.as_str()) {
        // Dropping `start` closes the connection: domain fronting is refused (N9).
        let sni = sni.map_or_else(|| "none".to_owned(), |sni| format!("`{sni}`"));
        return refuse(format!(
            "the TLS SNI ({sni}) does not name the CONNECT host `{}`; connection closed",
            target.host
        ));
    }
    let config = match connection
        .ca
        .as_ref()
        .ok_or_else(|| "no interception CA".to_owned())
        .and_then(|ca| {
            ca.server_config(&target.host)
                .map_err(|error| error.to_string())
        }) {
        Ok(config) => config,
        Err(reason) => return refuse(reason),
    };
    let tls =
        match tokio::time::timeout(options.header_read_timeout, start.into_stream(config)).await {
            Ok(Ok(tls)) => tls,
            Ok(Err(error)) => return refuse(format!("TLS with the client failed: {error}")),
            Err(_elapsed) => return refuse("TLS with the client timed out".to_owned()),
        };
    let secrets = Arc::new(Secrets::new(&inject));
    let state = Arc::new(Inner {
        target,
        inject,
        secrets,
        upstream: tokio::sync::Mutex::new(upstream),
        connection: Arc::clone(&connection),
    });
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(options.max_header_bytes.max(8192))
        .keep_alive(true);
    let service = service_fn(move |request| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(state.handle(request).await) }
    });
    // Client hang-ups, timeouts and parse errors (already answered by hyper) end the connection.
    let _ = builder.serve_connection(TokioIo::new(tls), service).await;
}

/// What the requests of one intercepted connection share.
struct Inner {
    target: Target,
    inject: Vec<(String, String)>,
    /// The injected values responses are scanned for (see [`super::redact`]).
    secrets: Arc<Secrets>,
    upstream: tokio::sync::Mutex<Upstream>,
    connection: Arc<Connection>,
}

impl Inner {
    /// Handles one decrypted request and reports it to the decision log (never header values):
    /// at once when it is refused or its response has no body to scan, otherwise when the
    /// response body has been scanned (or dropped), with the number of values redacted.
    async fn handle(&self, request: Request<Incoming>) -> Response<ProxyBody> {
        let head_only = request.method() == Method::HEAD;
        let decision = ProxyDecision {
            host: self.target.host.clone(),
            port: self.target.port,
            method: request.method().to_string(),
            allowed: true,
            reason: format!(
                "intercepted request to `{}`: `transform`/`credential` headers injected",
                self.target.host
            ),
            intercepted: true,
            redactions: 0,
            sni: None,
            // Set here: a redacted response reports it later, not through `record`.
            caller: self.connection.caller(),
        };
        let refused = |refusal: Refusal| {
            self.connection.record(ProxyDecision {
                allowed: false,
                reason: refusal.reason.clone(),
                ..decision.clone()
            });
            text(refusal.status, &refusal.reason)
        };
        let response = match self.forward(request).await {
            Ok(response) => response,
            Err(refusal) => return refused(refusal),
        };
        let (mut parts, body) = response.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        if self.secrets.is_empty() {
            self.connection.record(decision);
            return Response::from_parts(parts, body.boxed());
        }
        let mut redactions = self.secrets.redact_headers(&mut parts.headers);
        if let Some(reason) = parts.extensions.get::<ReasonPhrase>() {
            let (redacted, count) = self.secrets.redact(reason.as_bytes());
            if count > 0 {
                redactions += count;
                parts.extensions.remove::<ReasonPhrase>();
                if let Ok(reason) = ReasonPhrase::try_from(redacted) {
                    parts.extensions.insert(reason);
                }
            }
        }
        let bodiless = head_only
            || parts.status.is_informational()
            || parts.status == StatusCode::NO_CONTENT
            || parts.status == StatusCode::NOT_MODIFIED;
        if bodiless {
            self.connection.record(ProxyDecision {
                redactions,
                ..decision
            });
            return Response::from_parts(parts, body.boxed());
        }
        if let Some(encoding) = encoded(&parts.headers) {
            return refused(Refusal::bad_gateway(format!(
                "the upstream answered with `Content-Encoding: {encoding}` although it was asked \
                 for identity; a compressed body cannot be scanned for the injected \
                 `transform`/`credential` values, so the response is withheld"
            )));
        }
        // The body's length changes with each replacement: it goes out chunked instead.
        parts.headers.remove(CONTENT_LENGTH);
        let report = Report {
            decision: ProxyDecision {
                redactions,
                ..decision
            },
            log: Arc::clone(&self.connection.log),
        };
        let body = RedactedBody::new(body, Arc::clone(&self.secrets), report);
        Response::from_parts(parts, body.boxed())
    }

    /// Sends `request` upstream with the injected headers (and `Accept-Encoding: identity`
    /// when the response will be scanned) and returns the response as it arrived.
    async fn forward(&self, request: Request<Incoming>) -> Result<Response<Incoming>, Refusal> {
        check_authority(&request, &self.target)?;
        let (mut parts, body) = request.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        headers::overwrite(&mut parts.headers, &self.inject).map_err(|error| {
            Refusal::bad_gateway(format!("the `transform`/`credential` headers: {error}"))
        })?;
        if !self.secrets.is_empty() {
            parts
                .headers
                .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        }
        let host = HeaderValue::from_str(&host_header(&self.target))
            .map_err(|error| Refusal::bad_gateway(format!("invalid upstream Host: {error}")))?;
        parts.headers.insert(HOST, host);
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |path| path.as_str())
            .to_owned();
        parts.uri = path
            .parse::<Uri>()
            .map_err(|error| Refusal::bad_gateway(format!("invalid upstream path: {error}")))?;
        parts.version = Version::HTTP_11;
        let idle = self.connection.shared.options.idle_timeout;
        let mut upstream = self.upstream.lock().await;
        let sender = upstream.ready(&self.connection).await?;
        tokio::time::timeout(idle, sender.send_request(Request::from_parts(parts, body)))
            .await
            .map_err(|_elapsed| Refusal {
                status: StatusCode::GATEWAY_TIMEOUT,
                reason: format!("the upstream sent no response within {idle:?}"),
            })?
            .map_err(|error| Refusal::bad_gateway(format!("the upstream exchange failed: {error}")))
    }
}

/// The response's `Content-Encoding` when it is anything but `identity` (names only, safe to
/// log: a value that is not a plain token list is reported as `(unreadable)`).
fn encoded(headers: &HeaderMap) -> Option<String> {
    let mut codings = Vec::new();
    for value in headers.get_all(CONTENT_ENCODING) {
        let Ok(text) = value.to_str() else {
            return Some("(unreadable)".to_owned());
        };
        for coding in text
            .split(',')
            .map(str::trim)
            .filter(|coding| !coding.is_empty())
        {
            if !coding.eq_ignore_ascii_case("identity") {
                if !coding
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"-_.".contains(&byte))
                {
                    return Some("(unreadable)".to_owned());
                }
                codings.push(coding.to_owned());
            }
        }
    }
    (!codings.is_empty()).then(|| codings.join(", "))
}

/// Every authority a decrypted request names (its `Host`, and its target when absolute-form)
/// must be the `CONNECT` host and port (421 otherwise: no domain fronting, N9); a request naming
/// none, or naming one twice, is a 400. Refusals never quote what the client sent.
fn check_authority<B>(request: &Request<B>, target: &Target) -> Result<(), Refusal> {
    let bad = |reason: &str| Refusal {
        status: StatusCode::BAD_REQUEST,
        reason: reason.to_owned(),
    };
    let headers = request.headers();
    if headers.get_all(HOST).iter().count() > 1 {
        return Err(bad("duplicate Host headers"));
    }
    let mut named = Vec::with_capacity(2);
    let uri = request.uri();
    if let Some(authority) = uri.authority() {
        if uri.scheme_str() != Some("https") {
            return Err(bad(
                "an absolute request target inside TLS must be https://",
            ));
        }
        named.push(Some(authority.clone()));
    }
    if let Some(value) = headers.get(HOST) {
        named.push(
            value
                .to_str()
                .ok()
                .and_then(|text| text.parse::<Authority>().ok()),
        );
    }
    if named.is_empty() {
        return Err(bad("the request has no Host header"));
    }
    let matches = |authority: &Option<Authority>| {
        authority
            .as_ref()
            .and_then(|authority| split(authority, Some(443)).ok())
            .is_some_and(|(host, port)| host == target.host && port == target.port)
    };
    if !named.iter().all(matches) {
        return Err(Refusal {
            status: StatusCode::MISDIRECTED_REQUEST,
            reason: format!(
                "the request's Host (or target) does not name `{}`, the host and port this \
                 connection was opened for with CONNECT",
                host_header(target)
            ),
        });
    }
    Ok(())
}

/// The `Host` header for an https upstream: the port is omitted when it is 443.
fn host_header(target: &Target) -> String {
    let host = if target.host.contains(':') {
        format!("[{}]", target.host)
    } else {
        target.host.clone()
    };
    if target.port == 443 {
        host
    } else {
        format!("{host}:{}", target.port)
    }
}

#[cfg(test)]
mod tests {
    use hyper::{Request, StatusCode};

    use super::{Target, check_authority, host_header};

    fn target(port: u16) -> Target {
        Target {
            host: "api.example.com".to_owned(),
            port,
            path: "/".to_owned(),
        }
    }

    fn request(uri: &str, hosts: &[&str]) -> Request<()> {
        let mut builder = Request::builder().uri(uri);
        for host in hosts {
            builder = builder.header("host", *host);
        }
        builder.body(()).unwrap()
    }

    #[test]
    fn only_the_connect_host_and_port_are_served() {
        let status = |request: Request<()>, port| {
            check_authority(&request, &target(port))
                .map_or_else(|refusal| refusal.status, |()| StatusCode::OK)
        };
        assert_eq!(
            status(request("/", &["API.example.com."]), 443),
            StatusCode::OK
        );
        assert_eq!(
            status(request("/", &["api.example.com:443"]), 443),
            StatusCode::OK
        );
        assert_eq!(
            status(request("/", &["api.example.com:8443"]), 8443),
            StatusCode::OK
        );
        assert_eq!(
            status(request("https://api.example.com/x", &[]), 443),
            StatusCode::OK
        );
        for (request, port) in [
            (request("/", &["evil.example.com"]), 443),
            (request("/", &["api.example.com"]), 8443),
            (request("/", &["api.example.com:444"]), 443),
            (
                request("https://evil.example.com/", &["api.example.com"]),
                443,
            ),
            (request("/", &["u@api.example.com"]), 443),
        ] {
            assert_eq!(status(request, port), StatusCode::MISDIRECTED_REQUEST);
        }
        for request in [
            request("/", &[]),
            request("/", &["api.example.com", "api.example.com"]),
            request("http://api.example.com/", &[]),
        ] {
            assert_eq!(status(request, 443), StatusCode::BAD_REQUEST);
        }
        assert_eq!(host_header(&target(443)), "api.example.com");
        assert_eq!(host_header(&target(8443)), "api.example.com:8443");
    }
}
