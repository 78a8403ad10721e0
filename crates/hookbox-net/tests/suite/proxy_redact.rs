//! N12, secret injection abuse: on intercepted TLS the proxy overwrites the sandbox's own
//! `Authorization` (and adds the `credential`) only for the matching host, never on plain HTTP
//! or blind tunnels, strips `Proxy-Authorization`, and scans upstream responses for every
//! injected value, replacing each with `[REDACTED]` in headers and bodies (also when a value
//! straddles two body chunks). The sandbox side is a hyper client speaking through a `CONNECT`
//! tunnel, trusting only the environment's CA.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup or exchange fails the test"
)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use hookbox_net::{Credential, EgressPolicy, EgressProxy, ProxyCa, ProxyDecision, ProxyOptions};
use hookbox_test_support::{RecordedRequest, Reply, TEST_CA_PEM, TestCertificates, TestHttpServer};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use super::proxy_tls::tls;

/// The `transform` value injected as `Authorization`.
const SECRET: &str = "Bearer s3cret-value-0123";
/// The resolved `credential` injected as `X-Api-Key`.
const KEY: &str = "k3y-value-4567";
/// What the sandbox sends as its own `Authorization`.
const SANDBOX: &str = "Bearer sandbox-own-value";

/// The echo upstream's answer: every request header as `name: value` lines in the body, and
/// the `authorization` and `x-api-key` it saw in `x-echo-*` response headers. `/gzip` claims a
/// gzip body (it is not really compressed) holding the same lines.
fn echo_reply(request: &RecordedRequest) -> Reply {
    let lines: String = request
        .headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\n"))
        .collect();
    let mut reply = Reply::text(200, &lines);
    for (name, echoed) in [
        ("authorization", "x-echo-authorization"),
        ("x-api-key", "x-echo-api-key"),
    ] {
        if let Some(value) = request.header(name) {
            reply.headers.push((echoed.to_owned(), value.to_owned()));
        }
    }
    if request.path == "/gzip" {
        reply
            .headers
            .push(("content-encoding".to_owned(), "gzip".to_owned()));
    }
    reply
}

/// A proxy intercepting `localhost` (a `transform` and a `credential`), admitting
/// `other.test` (pinned to 127.0.0.1) without either; an HTTPS echo upstream (signed by
/// `TEST_CA_PEM`), a plain HTTP one, and a raw HTTPS upstream writing bodies in two pieces.
struct Running {
    proxy: SocketAddr,
    ca: Arc<ProxyCa>,
    echo: TestHttpServer,
    /// The HTTPS echo under the name `other.test` (its own CA), for blind tunnels.
    other: TestHttpServer,
    other_ca: String,
    plain: TestHttpServer,
    raw: SocketAddr,
    decisions: Arc<Mutex<Vec<ProxyDecision>>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Running {
    fn decisions(&self) -> Vec<ProxyDecision> {
        self.decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until a decision for `method` (inside an intercepted connection) is logged.
    async fn decision_for(&self, method: &str) -> ProxyDecision {
        for _ in 0..300 {
            if let Some(decision) = self
                .decisions()
                .into_iter()
                .find(|decision| decision.method == method)
            {
                return decision;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no {method} decision: {:?}", self.decisions());
    }

    /// A `CONNECT` to `host:port`, answered 200.
    async fn tunnel(&self, host: &str, port: u16) -> TcpStream {
        let mut stream = TcpStream::connect(self.proxy).await.unwrap();
        let authority = format!("{host}:{port}");
        stream
            .write_all(
                format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes(),
            )
            .await
            .unwrap();
        let head = read_head(&mut stream).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        stream
    }

    /// An HTTP/1.1 client on an intercepted connection to `localhost:port`.
    async fn intercepted(&self, port: u16) -> SendRequest<Empty<Bytes>> {
        let tunnel = self.tunnel("localhost", port).await;
        let stream = tls(tunnel, "localhost", self.ca.certificate_pem().as_bytes())
            .await
            .unwrap();
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(connection);
        sender
    }
}

/// A GET for `path` on `authority` carrying the sandbox's own `Authorization`, a
/// `Proxy-Authorization` and a compressed `Accept-Encoding`.
fn request(path: &str, authority: &str) -> Request<Empty<Bytes>> {
    Request::get(path)
        .header("host", authority)
        .header("authorization", SANDBOX)
        .header("proxy-authorization", "Basic cHJveHktc2VjcmV0")
        .header("accept-encoding", "gzip, br")
        .body(Empty::new())
        .unwrap()
}

/// Sends `request` and returns the response head and its whole body.
async fn send(
    sender: &mut SendRequest<Empty<Bytes>>,
    request: Request<Empty<Bytes>>,
) -> (hyper::http::response::Parts, String) {
    sender.ready().await.unwrap();
    let response = tokio::time::timeout(Duration::from_secs(10), sender.send_request(request))
        .await
        .unwrap()
        .unwrap();
    let (parts, body) = response.into_parts();
    let body = tokio::time::timeout(Duration::from_secs(10), body.collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    (parts, String::from_utf8_lossy(&body).into_owned())
}

/// Neither injected value, in any form the sandbox could read.
fn assert_clean(text: &str) {
    for secret in ["s3cret-value-0123", KEY] {
        assert!(!text.contains(secret), "{text}");
    }
}

async fn start() -> Running {
    let (raw, raw_ca, raw_task) = raw_upstream().await;
    let echo = TestHttpServer::start_https(echo_reply).await.unwrap();
    let plain = TestHttpServer::start(echo_reply).await.unwrap();
    let other_certificates = TestCertificates::for_names(&["other.test"]).unwrap();
    let other = TestHttpServer::start_https_on(
        std::net::TcpListener::bind("127.0.0.1:0").unwrap(),
        &other_certificates,
        echo_reply,
    )
    .unwrap();
    let credentials = BTreeMap::from([(
        "key".to_owned(),
        Credential::new("X-Api-Key", KEY, ["localhost"]),
    )]);
    let policy = EgressPolicy::from_network_with_credentials(
        Some(&json!({"allowlist": [
            {"domain": "localhost", "credential": "key",
             "transform": {"Authorization": SECRET, "X-Flag": "1"}},
            {"domain": "other.test"},
        ]})),
        &credentials,
    )
    .unwrap();
    let options = ProxyOptions {
        permit_loopback: true,
        resolve: vec![("other.test".to_owned(), [127, 0, 0, 1].into())],
        connect_ports: vec![echo.addr().port(), raw.port(), other.addr().port()],
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec(), raw_ca.into_bytes()],
        ..ProxyOptions::default()
    };
    let proxy = EgressProxy::new(options).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let ca = Arc::new(ProxyCa::generate("redact-env").unwrap());
    let decisions = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&decisions);
    let log: hookbox_net::DecisionLog = Arc::new(move |decision| {
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(decision);
    });
    let serve = {
        let ca = Arc::clone(&ca);
        tokio::spawn(async move {
            proxy
                .serve_intercepting(listener, Arc::new(policy), ca, log)
                .await;
        })
    };
    Running {
        proxy: address,
        ca,
        echo,
        other,
        other_ca: other_certificates.ca_pem().to_owned(),
        plain,
        raw,
        decisions,
        tasks: vec![serve, raw_task],
    }
}

/// A CA made for this test and a `localhost` server certificate it signed: `(acceptor, CA PEM)`.
fn raw_identity() -> (TlsAcceptor, String) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::default();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let mut config =
        ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)
            .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (TlsAcceptor::from(Arc::new(config)), ca.pem())
}

/// An HTTPS upstream written by hand, one request per connection: it answers
/// `before <authorization> | <x-api-key> after` in two writes 50 ms apart, cut in the middle
/// of the `Authorization` value, chunked for `/chunked` and with a `Content-Length` otherwise,
/// and echoes the `Authorization` in `x-echo`.
async fn raw_upstream() -> (SocketAddr, String, JoinHandle<()>) {
    let (acceptor, ca_pem) = raw_identity();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut stream) = acceptor.accept(stream).await else {
                    return;
                };
                let head = read_head(&mut stream).await;
                let header = |name: &str| {
                    head.lines()
                        .find_map(|line| {
                            let (key, value) = line.split_once(':')?;
                            key.eq_ignore_ascii_case(name)
                                .then(|| value.trim().to_owned())
                        })
                        .unwrap_or_default()
                };
                let authorization = header("authorization");
                let body = format!("before {authorization} | {} after", header("x-api-key"));
                let cut = "before ".len() + authorization.len() / 2;
                let (first, second) = body.split_at(cut);
                let chunked = head.starts_with("GET /chunked ");
                let framing = if chunked {
                    "transfer-encoding: chunked".to_owned()
                } else {
                    format!("content-length: {}", body.len())
                };
                let response_head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nconnection: close\r\n\
                     x-echo: {authorization}\r\n{framing}\r\n\r\n"
                );
                stream.write_all(response_head.as_bytes()).await.unwrap();
                for piece in [first, second] {
                    let bytes = if chunked {
                        format!("{:x}\r\n{piece}\r\n", piece.len())
                    } else {
                        piece.to_owned()
                    };
                    stream.write_all(bytes.as_bytes()).await.unwrap();
                    stream.flush().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                if chunked {
                    stream.write_all(b"0\r\n\r\n").await.unwrap();
                }
                let _ = stream.shutdown().await;
            });
        }
    });
    (address, ca_pem, task)
}

async fn read_head<S: tokio::io::AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(read, 0, "EOF inside the head");
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[tokio::test]
async fn reflected_injected_values_are_redacted_in_headers_and_bodies() {
    let running = start().await;
    let port = running.echo.addr().port();
    let authority = format!("localhost:{port}");
    let mut sender = running.intercepted(port).await;
    // Two requests on one connection: the chunked re-framing keeps keep-alive intact.
    for path in ["/one", "/two"] {
        let (parts, body) = send(&mut sender, request(path, &authority)).await;
        assert_eq!(parts.status, StatusCode::OK, "{body}");
        assert_eq!(parts.headers["x-echo-authorization"], "[REDACTED]");
        assert_eq!(parts.headers["x-echo-api-key"], "[REDACTED]");
        assert_clean(&format!("{parts:?}"));
        assert_clean(&body);
        // The sandbox's own value was overwritten, not sent alongside; short values stay.
        assert!(body.contains("authorization: [REDACTED]\n"), "{body}");
        assert!(body.contains("x-api-key: [REDACTED]\n"), "{body}");
        assert!(body.contains("x-flag: 1\n"), "{body}");
        assert!(body.contains("accept-encoding: identity\n"), "{body}");
        assert!(!body.contains("sandbox-own-value"), "{body}");
        assert!(!body.contains("proxy-authorization"), "{body}");
        // The length changed: no stale Content-Length reaches the client.
        if let Some(length) = parts.headers.get("content-length") {
            assert_eq!(length.to_str().unwrap(), body.len().to_string());
        }
    }
    let requests = running.echo.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for seen in &requests {
        let authorizations: Vec<&str> = seen
            .headers
            .iter()
            .filter(|(name, _)| name == "authorization")
            .map(|(_, value)| value.as_str())
            .collect();
        assert_eq!(authorizations, [SECRET]);
        assert_eq!(seen.header("x-api-key"), Some(KEY));
        assert_eq!(seen.header("proxy-authorization"), None);
        assert_eq!(seen.header("accept-encoding"), Some("identity"));
    }
    let decision = running.decision_for("GET").await;
    assert!(decision.allowed && decision.intercepted, "{decision:?}");
    // Two headers, and two lines of the body.
    assert_eq!(decision.redactions, 4, "{decision:?}");
    for decision in running.decisions() {
        assert_clean(&format!("{decision:?}"));
        assert!(
            !format!("{decision:?}").contains("sandbox-own"),
            "{decision:?}"
        );
    }
}

#[tokio::test]
async fn a_value_split_across_body_chunks_is_still_redacted() {
    let running = start().await;
    let port = running.raw.port();
    let authority = format!("localhost:{port}");
    for path in ["/chunked", "/length"] {
        let mut sender = running.intercepted(port).await;
        let (parts, body) = send(&mut sender, request(path, &authority)).await;
        assert_eq!(parts.status, StatusCode::OK, "{path}: {body}");
        assert_eq!(
            body, "before [REDACTED] | [REDACTED] after",
            "{path}: {parts:?}"
        );
        assert_eq!(parts.headers["x-echo"], "[REDACTED]");
        if let Some(length) = parts.headers.get("content-length") {
            assert_eq!(length.to_str().unwrap(), body.len().to_string(), "{path}");
        }
    }
    let decisions: Vec<ProxyDecision> = running
        .decisions()
        .into_iter()
        .filter(|decision| decision.method == "GET")
        .collect();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    for decision in &decisions {
        assert_eq!(decision.redactions, 3, "{decision:?}");
    }
}

#[tokio::test]
async fn a_compressed_response_is_withheld_rather_than_relayed_unscanned() {
    let running = start().await;
    let port = running.echo.addr().port();
    let mut sender = running.intercepted(port).await;
    let (parts, body) = send(&mut sender, request("/gzip", &format!("localhost:{port}"))).await;
    assert_eq!(parts.status, StatusCode::BAD_GATEWAY, "{body}");
    assert!(body.contains("Content-Encoding: gzip"), "{body}");
    assert_clean(&format!("{parts:?}"));
    assert_clean(&body);
    let decision = running.decision_for("GET").await;
    assert!(!decision.allowed, "{decision:?}");
}

#[tokio::test]
async fn other_hosts_plain_http_and_blind_tunnels_never_get_the_injected_values() {
    let running = start().await;
    // Plain HTTP to another allowed host: the sandbox's own Authorization goes as it is.
    let port = running.plain.addr().port();
    let authority = format!("other.test:{port}");
    let mut stream = TcpStream::connect(running.proxy).await.unwrap();
    let plain = format!(
        "GET http://{authority}/ HTTP/1.1\r\nHost: {authority}\r\nAuthorization: {SANDBOX}\r\n\
         Proxy-Authorization: Basic cHJveHktc2VjcmV0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(plain.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert_clean(&response);
    // Plain HTTP to the injecting host is refused outright.
    let mut stream = TcpStream::connect(running.proxy).await.unwrap();
    let to_localhost = plain.replace("other.test", "localhost");
    stream.write_all(to_localhost.as_bytes()).await.unwrap();
    let mut refused = String::new();
    stream.read_to_string(&mut refused).await.unwrap();
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert_clean(&refused);

    // A blind tunnel to another host (an HTTPS echo named `other.test`): the proxy does not
    // terminate its TLS, so it adds nothing.
    let port = running.other.addr().port();
    let tunnel = running.tunnel("other.test", port).await;
    let stream = tls(tunnel, "other.test", running.other_ca.as_bytes())
        .await
        .unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let (parts, body) = send(
        &mut sender,
        request("/blind", &format!("other.test:{port}")),
    )
    .await;
    assert_eq!(parts.status, StatusCode::OK, "{body}");
    assert_eq!(parts.headers["x-echo-authorization"], SANDBOX);
    assert_clean(&body);

    let plain_seen = running.plain.requests();
    assert_eq!(plain_seen.len(), 1, "{plain_seen:?}");
    assert_eq!(plain_seen[0].header("authorization"), Some(SANDBOX));
    assert_eq!(plain_seen[0].header("proxy-authorization"), None);
    assert_eq!(plain_seen[0].header("x-api-key"), None);
    assert!(running.echo.requests().is_empty());
    let echo_seen = running.other.requests();
    assert_eq!(echo_seen.len(), 1, "{echo_seen:?}");
    assert_eq!(echo_seen[0].path, "/blind");
    assert_eq!(echo_seen[0].header("authorization"), Some(SANDBOX));
    assert_eq!(echo_seen[0].header("x-api-key"), None);
    for decision in running.decisions() {
        assert!(!decision.intercepted, "{decision:?}");
        assert_eq!(decision.redactions, 0, "{decision:?}");
    }
}

/// N15 for intercepted connections: stopping the proxy closes the decrypted connection too, so
/// no request leaves after the stop, with or without its injected headers.
#[tokio::test]
async fn stopping_the_proxy_closes_intercepted_connections() {
    let mut running = start().await;
    let port = running.echo.addr().port();
    let authority = format!("localhost:{port}");
    let mut sender = running.intercepted(port).await;
    let (parts, _) = send(&mut sender, request("/before", &authority)).await;
    assert_eq!(parts.status, StatusCode::OK);
    let serve = running.tasks.remove(0);
    serve.abort();
    let _ = serve.await;
    let mut closed = false;
    for _ in 0..100 {
        if sender.is_closed() {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(closed, "the intercepted connection is still open");
    let late = sender.send_request(request("/after", &authority)).await;
    assert!(late.is_err(), "{late:?}");
    let paths: Vec<String> = running
        .echo
        .requests()
        .into_iter()
        .map(|request| request.path)
        .collect();
    assert_eq!(paths, ["/before"]);
}
