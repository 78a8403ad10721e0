//! One proxied request: the target, the policy (before any DNS lookup), the checked addresses
//! and the dial, then either a `CONNECT` tunnel or a forwarded plain HTTP exchange.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{
    CONNECTION, CONTENT_TYPE, HOST, HeaderMap, HeaderName, HeaderValue, PROXY_AUTHENTICATE,
    PROXY_AUTHORIZATION, TE, TRAILER, TRANSFER_ENCODING, UPGRADE,
};
use hyper::upgrade::OnUpgrade;
use hyper::{Method, Request, Response, StatusCode, Uri, Version};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::target::{self, Target};
use super::{Connection, ProxyDecision, intercept, own, tunnel};
use crate::resolve::LookupError;

/// The body of every response the proxy sends: upstream bodies as they stream, or its own text.
pub(super) type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// Handles one request and reports its outcome to the connection's decision log.
pub(super) async fn handle(
    connection: Arc<Connection>,
    request: Request<Incoming>,
) -> Response<ProxyBody> {
    connection.note_caller(request.headers());
    let method = request.method().to_string();
    let (response, decision) = match target::parse(&request) {
        Err(bad) => (
            text(StatusCode::BAD_REQUEST, &bad.reason),
            ProxyDecision {
                host: bad.host,
                port: bad.port,
                method,
                allowed: false,
                reason: bad.reason,
                intercepted: false,
                redactions: 0,
                sni: None,
                caller: None,
            },
        ),
        Ok(target) => {
            let outcome = proceed(&connection, &target, request).await;
            let decision = ProxyDecision {
                host: target.host,
                port: target.port,
                method,
                allowed: outcome.allowed,
                reason: outcome.reason,
                intercepted: outcome.intercepted,
                redactions: 0,
                sni: None,
                caller: None,
            };
            match outcome.tunnel {
                Some(tunnel) => {
                    tokio::spawn(tunnel::relay(
                        tunnel.on_upgrade,
                        tunnel.upstream,
                        Arc::clone(&connection),
                        decision,
                    ));
                    return outcome.response;
                }
                None => (outcome.response, decision),
            }
        }
    };
    connection.record(decision);
    response
}

/// An admitted blind `CONNECT`: relayed (and its decision reported) once the client's
/// ClientHello has been checked.
struct BlindTunnel {
    on_upgrade: OnUpgrade,
    upstream: TcpStream,
}

/// What became of a request with a valid target.
struct Outcome {
    response: Response<ProxyBody>,
    allowed: bool,
    reason: String,
    intercepted: bool,
    /// A blind tunnel to open after the response, which reports the decision itself.
    tunnel: Option<BlindTunnel>,
}

/// A request that is not sent upstream: the status to answer and why.
pub(super) struct Refusal {
    pub(super) status: StatusCode,
    pub(super) reason: String,
}

impl Refusal {
    pub(super) fn bad_gateway(reason: String) -> Self {
        Self {
            status: StatusCode::BAD_GATEWAY,
            reason,
        }
    }

    pub(super) fn forbidden(reason: String) -> Self {
        Self {
            status: StatusCode::FORBIDDEN,
            reason,
        }
    }
}

impl From<Refusal> for Outcome {
    fn from(refusal: Refusal) -> Self {
        Self {
            response: text(refusal.status, &refusal.reason),
            allowed: false,
            reason: refusal.reason,
            intercepted: false,
            tunnel: None,
        }
    }
}

/// An admitted request's dialed upstream, the policy's reason and its `transform`/`credential`
/// headers.
struct Admitted {
    upstream: TcpStream,
    reason: String,
    inject: Vec<(String, String)>,
}

async fn proceed(
    connection: &Arc<Connection>,
    target: &Target,
    mut request: Request<Incoming>,
) -> Outcome {
    let connect = request.method() == Method::CONNECT;
    let Admitted {
        upstream,
        reason,
        inject,
    } = match admit_and_dial(connection, target, connect).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refusal.into(),
    };
    if connect && !inject.is_empty() {
        let intercept = match intercept::prepare(connection, target, upstream, inject).await {
            Ok(intercept) => intercept,
            Err(refusal) => return refusal.into(),
        };
        let on_upgrade = hyper::upgrade::on(&mut request);
        tokio::spawn(intercept::serve(
            on_upgrade,
            intercept,
            Arc::clone(connection),
        ));
        return Outcome {
            response: Response::new(empty()),
            allowed: true,
            reason: format!(
                "{reason}; TLS intercepted to inject its `transform`/`credential` headers"
            ),
            intercepted: true,
            tunnel: None,
        };
    }
    if connect {
        return Outcome {
            response: Response::new(empty()),
            allowed: true,
            reason,
            intercepted: false,
            tunnel: Some(BlindTunnel {
                on_upgrade: hyper::upgrade::on(&mut request),
                upstream,
            }),
        };
    }
    match forward(connection, target, request, upstream).await {
        Ok(response) => Outcome {
            response,
            allowed: true,
            reason,
            intercepted: false,
            tunnel: None,
        },
        Err(refusal) => refusal.into(),
    }
}

/// The policy, the port and address rules, then a connection to the first checked address that
/// answers, with the policy's reason for admitting the host and its `transform`/`credential`
/// headers (only ever non-empty for a `CONNECT` the connection can intercept).
async fn admit_and_dial(
    connection: &Connection,
    target: &Target,
    connect: bool,
) -> Result<Admitted, Refusal> {
    let shared = &connection.shared;
    let options = &shared.options;
    let decision = connection.policy.decide(&target.host);
    if !decision.allowed {
        return Err(Refusal::forbidden(decision.reason));
    }
    if !decision.inject.is_empty() && !connect {
        return Err(Refusal::forbidden(format!(
            "{}, whose `transform`/`credential` headers are only injected on TLS the proxy \
             terminates (never over plain HTTP); use https:// (CONNECT), so the request is not \
             sent without them",
            decision.reason
        )));
    }
    if !decision.inject.is_empty() && connection.ca.is_none() {
        return Err(Refusal::forbidden(format!(
            "{}, whose `transform`/`credential` headers are only injected on TLS the proxy \
             terminates (never over a blind tunnel); this environment has no interception CA, so \
             the request is refused rather than sent without them",
            decision.reason
        )));
    }
    if connect && !options.connect_ports.contains(&target.port) {
        return Err(Refusal::forbidden(format!(
            "CONNECT to port {} is not allowed (allowed ports: {:?})",
            target.port, options.connect_ports
        )));
    }
    let addresses = match target.host.parse::<IpAddr>() {
        Ok(ip) => shared.rules.admit(&target.host, [ip]),
        Err(_) => match shared.resolver.lookup(&target.host).await {
            Ok(addresses) => Ok(addresses),
            Err(LookupError::Refused(refusal)) => Err(refusal),
            Err(LookupError::Failed(error)) => {
                return Err(Refusal {
                    status: StatusCode::BAD_GATEWAY,
                    reason: format!("could not resolve `{}`: {error}", target.host),
                });
            }
        },
    }
    .map_err(|refusal| Refusal::forbidden(refusal.to_string()))?;
    let mut refused = None;
    let candidates: Vec<SocketAddr> = addresses
        .into_iter()
        .map(|ip| SocketAddr::new(ip, target.port))
        .filter(|address| {
            match own::refusal(address, &connection.own_addresses, options.permit_loopback) {
                Some(reason) => {
                    refused = Some(reason);
                    false
                }
                None => true,
            }
        })
        .collect();
    if candidates.is_empty() {
        let reason = refused.unwrap_or_else(|| "no address to dial".to_owned());
        return Err(Refusal::forbidden(format!(
            "`{}:{}`: {reason}",
            target.host, target.port
        )));
    }
    let mut last_error = String::new();
    for address in candidates {
        match tokio::time::timeout(options.connect_timeout, TcpStream::connect(address)).await {
            Ok(Ok(upstream)) => {
                return Ok(Admitted {
                    upstream,
                    reason: decision.reason,
                    inject: decision.inject,
                });
            }
            Ok(Err(error)) => last_error = format!("{address}: {error}"),
            Err(_elapsed) => last_error = format!("{address}: timed out"),
        }
    }
    Err(Refusal {
        status: StatusCode::BAD_GATEWAY,
        reason: format!(
            "could not connect to `{}:{}` ({last_error})",
            target.host, target.port
        ),
    })
}

/// Sends `request` in origin form on `upstream` and returns the response head with its body
/// streaming; hop-by-hop headers are dropped both ways and nothing is followed.
async fn forward(
    connection: &Connection,
    target: &Target,
    request: Request<Incoming>,
    upstream: TcpStream,
) -> Result<Response<ProxyBody>, Refusal> {
    let bad_gateway = Refusal::bad_gateway;
    let (mut parts, body) = request.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let host = HeaderValue::from_str(&target.host_header())
        .map_err(|error| bad_gateway(format!("invalid upstream Host: {error}")))?;
    parts.headers.insert(HOST, host);
    parts.uri = target
        .path
        .parse::<Uri>()
        .map_err(|error| bad_gateway(format!("invalid upstream path: {error}")))?;
    parts.version = Version::HTTP_11;
    let (mut sender, exchange) = hyper::client::conn::http1::handshake(TokioIo::new(upstream))
        .await
        .map_err(|error| bad_gateway(format!("upstream handshake failed: {error}")))?;
    let mut shutdown = connection.shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = exchange => {}
            _ = shutdown.changed() => {}
        }
    });
    let idle = connection.shared.options.idle_timeout;
    let response =
        tokio::time::timeout(idle, sender.send_request(Request::from_parts(parts, body)))
            .await
            .map_err(|_elapsed| Refusal {
                status: StatusCode::GATEWAY_TIMEOUT,
                reason: format!("the upstream sent no response within {idle:?}"),
            })?
            .map_err(|error| bad_gateway(format!("the upstream exchange failed: {error}")))?;
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Ok(Response::from_parts(parts, body.boxed()))
}

/// Removes the headers that describe one hop rather than the message: those named in
/// `Connection`, and the standard ones (`Proxy-Authorization` among them).
pub(super) fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let named: Vec<HeaderName> = headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|token| HeaderName::from_bytes(token.trim().as_bytes()).ok())
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        CONNECTION,
        PROXY_AUTHENTICATE,
        PROXY_AUTHORIZATION,
        TE,
        TRAILER,
        TRANSFER_ENCODING,
        UPGRADE,
        HeaderName::from_static("keep-alive"),
        HeaderName::from_static("proxy-connection"),
    ] {
        headers.remove(name);
    }
}

/// The proxy's own answer: `status` with `reason` as a short plain-text body. The connection
/// is closed after it, so bytes a client sent after a refused `CONNECT` (or a request body of
/// unclear framing) are never read as a next request.
pub(super) fn text(status: StatusCode, reason: &str) -> Response<ProxyBody> {
    let body = Full::new(Bytes::from(format!("{reason}\n")))
        .map_err(|never| match never {})
        .boxed();
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

pub(super) fn empty() -> ProxyBody {
    Full::new(Bytes::new())
        .map_err(|never| match never {})
        .boxed()
}

#[cfg(test)]
mod tests {
    use hyper::header::{HeaderMap, HeaderName};

    use super::strip_hop_by_hop;

    #[test]
    fn hop_by_hop_headers_and_those_named_in_connection_are_removed() {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("connection", "keep-alive, x-hop"),
            ("x-hop", "1"),
            ("keep-alive", "timeout=5"),
            ("proxy-authorization", "Basic c2VjcmV0"),
            ("proxy-connection", "keep-alive"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "websocket"),
            ("authorization", "Bearer kept"),
            ("accept", "*/*"),
        ] {
            headers.append(name, value.parse().unwrap());
        }
        strip_hop_by_hop(&mut headers);
        let mut left: Vec<&str> = headers.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["accept", "authorization"]);
    }
}
