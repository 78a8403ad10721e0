//! TLS interception by the egress proxy, end to end on loopback: a raw client `CONNECT`s through
//! the proxy, speaks TLS trusting only the environment's [`ProxyCa`], and the HTTPS test server
//! (certificate for `localhost`, signed by `TEST_CA_PEM`, the proxy's only extra root) records
//! what arrives.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup or exchange fails the test"
)]

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookbox_net::{EgressPolicy, EgressProxy, ProxyCa, ProxyDecision, ProxyOptions};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

const SECRET: &str = "Bearer s3cret-value";

/// A proxy intercepting `localhost` (whose entry has a `transform`) with its own CA.
pub(super) struct Running {
    proxy: SocketAddr,
    pub(super) ca: Arc<ProxyCa>,
    pub(super) upstream: TestHttpServer,
    decisions: Arc<Mutex<Vec<ProxyDecision>>>,
    task: JoinHandle<()>,
}

impl Running {
    fn decisions(&self) -> Vec<ProxyDecision> {
        self.decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Where the proxy listens.
    pub(super) fn proxy_address(&self) -> SocketAddr {
        self.proxy
    }

    /// `localhost:PORT` of the HTTPS upstream.
    pub(super) fn authority(&self) -> String {
        format!("localhost:{}", self.upstream.addr().port())
    }

    /// A `CONNECT` to the upstream, answered 200.
    pub(super) async fn tunnel(&self) -> TcpStream {
        let mut stream = TcpStream::connect(self.proxy).await.unwrap();
        let authority = self.authority();
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

    /// Waits until the decision log holds `count` entries (the log is written on the proxy's
    /// tasks, possibly after the client saw the outcome).
    pub(super) async fn wait_for_decisions(&self, count: usize) -> Vec<ProxyDecision> {
        for _ in 0..200 {
            let decisions = self.decisions();
            if decisions.len() >= count {
                return decisions;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.decisions()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves with interception; `extra_roots` are the proxy's extra roots for upstreams.
async fn start(extra_roots: Vec<Vec<u8>>) -> Running {
    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "localhost", "transform": {"Authorization": SECRET}},
    ]})))
    .unwrap();
    start_with(policy, extra_roots).await
}

/// Serves `policy` with interception; `extra_roots` are the proxy's extra roots for upstreams.
pub(super) async fn start_with(policy: EgressPolicy, extra_roots: Vec<Vec<u8>>) -> Running {
    let upstream = TestHttpServer::start_https(|request| {
        Reply::text(200, &format!("reached {}", request.path))
    })
    .await
    .unwrap();
    let port = upstream.addr().port();
    let options = ProxyOptions {
        permit_loopback: true,
        connect_ports: vec![443, port],
        extra_root_certs_pem: extra_roots,
        ..ProxyOptions::default()
    };
    let proxy = EgressProxy::new(options).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let ca = Arc::new(ProxyCa::generate("test-env").unwrap());
    let decisions = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&decisions);
    let log: hookbox_net::DecisionLog = Arc::new(move |decision| {
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(decision);
    });
    let task = {
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
        upstream,
        decisions,
        task,
    }
}

/// TLS over `stream` with `sni`, trusting only the certificates in `roots_pem`.
pub(super) async fn tls(
    stream: TcpStream,
    sni: &str,
    roots_pem: &[u8],
) -> io::Result<TlsStream<TcpStream>> {
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(roots_pem) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let connector = TlsConnector::from(Arc::new(config));
    let name = ServerName::try_from(sni.to_owned()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), connector.connect(name, stream))
        .await
        .unwrap()
}

/// Writes `request` and reads until the peer closes (or the TLS stream ends without a
/// close_notify).
pub(super) async fn exchange(stream: &mut TlsStream<TcpStream>, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let mut buffer = [0_u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .unwrap()
        {
            Ok(0) | Err(_) => break,
            Ok(read) => response.extend_from_slice(&buffer[..read]),
        }
    }
    String::from_utf8_lossy(&response).into_owned()
}

async fn read_head(stream: &mut TcpStream) -> String {
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

/// A `GET` carrying the sandbox's own `Authorization` and a `Proxy-Authorization`.
pub(super) fn get(path: &str, host: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: sandbox-value\r\n\
         Proxy-Authorization: Basic cHJveHktc2VjcmV0\r\nConnection: close\r\n\r\n"
    )
}

fn assert_no_secret(decisions: &[ProxyDecision]) {
    for decision in decisions {
        let debug = format!("{decision:?}");
        for secret in ["s3cret-value", "sandbox-value", "cHJveHktc2VjcmV0"] {
            assert!(!debug.contains(secret), "{debug}");
        }
    }
}

#[tokio::test]
async fn transform_headers_overwrite_the_sandboxs_and_proxy_authorization_is_stripped() {
    let running = start(vec![TEST_CA_PEM.to_vec()]).await;
    let tunnel = running.tunnel().await;
    let mut client = tls(tunnel, "localhost", running.ca.certificate_pem().as_bytes())
        .await
        .unwrap();
    let response = exchange(&mut client, &get("/v1/events?x=1", &running.authority())).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // The body may be re-framed as chunked (redaction drops `Content-Length`).
    assert!(response.contains("reached /v1/events?x=1"), "{response}");

    let requests = running.upstream.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let request = &requests[0];
    assert_eq!(request.path, "/v1/events?x=1");
    let authorizations: Vec<&str> = request
        .headers
        .iter()
        .filter(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str())
        .collect();
    assert_eq!(authorizations, [SECRET]);
    assert_eq!(request.header("proxy-authorization"), None);
    assert_eq!(request.header("host"), Some(running.authority().as_str()));

    let decisions = running.wait_for_decisions(2).await;
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert!(
        decisions.iter().all(|decision| decision.allowed
            && decision.intercepted
            && decision.host == "localhost"),
        "{decisions:?}"
    );
    assert_eq!(decisions[0].method, "CONNECT");
    assert_eq!(decisions[1].method, "GET");
    assert_no_secret(&decisions);
}

#[tokio::test]
async fn keep_alive_requests_on_one_intercepted_connection_all_get_the_headers() {
    let running = start(vec![TEST_CA_PEM.to_vec()]).await;
    let tunnel = running.tunnel().await;
    let mut client = tls(tunnel, "localhost", running.ca.certificate_pem().as_bytes())
        .await
        .unwrap();
    let first = get("/one", &running.authority()).replace("Connection: close\r\n", "");
    client.write_all(first.as_bytes()).await.unwrap();
    let mut buffer = vec![0_u8; 4096];
    let mut seen = String::new();
    while !seen.contains("reached /one") {
        let read = tokio::time::timeout(Duration::from_secs(10), client.read(&mut buffer))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(read, 0, "{seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
    let response = exchange(&mut client, &get("/two", &running.authority())).await;
    assert!(response.contains("reached /two"), "{response}");
    let requests = running.upstream.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for request in &requests {
        assert_eq!(request.header("authorization"), Some(SECRET));
    }
}

#[tokio::test]
async fn a_client_hello_for_another_name_is_refused() {
    let running = start(vec![TEST_CA_PEM.to_vec()]).await;
    for sni in ["evil.example.com", "localhost.evil.example.com"] {
        let tunnel = running.tunnel().await;
        let result = tls(tunnel, sni, running.ca.certificate_pem().as_bytes()).await;
        assert!(result.is_err(), "the handshake for {sni} succeeded");
    }
    assert!(running.upstream.requests().is_empty());
    let decisions = running.wait_for_decisions(4).await;
    let refusals: Vec<&ProxyDecision> = decisions
        .iter()
        .filter(|decision| !decision.allowed)
        .collect();
    assert_eq!(refusals.len(), 2, "{decisions:?}");
    for refusal in refusals {
        assert!(refusal.intercepted, "{refusal:?}");
        assert!(refusal.reason.contains("SNI"), "{refusal:?}");
    }
}

#[tokio::test]
async fn an_inner_host_other_than_the_connect_host_gets_421() {
    let running = start(vec![TEST_CA_PEM.to_vec()]).await;
    let port = running.upstream.addr().port();
    for host in [
        "evil.example.com".to_owned(),
        format!("evil.example.com:{port}"),
        "localhost".to_owned(),
    ] {
        let tunnel = running.tunnel().await;
        let mut client = tls(tunnel, "localhost", running.ca.certificate_pem().as_bytes())
            .await
            .unwrap();
        let response = exchange(&mut client, &get("/", &host)).await;
        assert!(response.starts_with("HTTP/1.1 421"), "{host}: {response}");
        assert!(!response.contains("s3cret-value"), "{response}");
    }
    let absolute = format!("https://evil.example.com:{port}/");
    let tunnel = running.tunnel().await;
    let mut client = tls(tunnel, "localhost", running.ca.certificate_pem().as_bytes())
        .await
        .unwrap();
    let response = exchange(&mut client, &get(&absolute, &running.authority())).await;
    assert!(response.starts_with("HTTP/1.1 421"), "{response}");
    assert!(running.upstream.requests().is_empty());
    assert_no_secret(&running.decisions());
}

#[tokio::test]
async fn clients_that_do_not_trust_the_environments_ca_fail_the_handshake() {
    let running = start(vec![TEST_CA_PEM.to_vec()]).await;
    let other = ProxyCa::generate("other-env").unwrap();
    // The upstream's own CA does not help either: the proxy presents its own leaf, not the
    // upstream's certificate.
    for roots in [TEST_CA_PEM, other.certificate_pem().as_bytes()] {
        let tunnel = running.tunnel().await;
        let error = tls(tunnel, "localhost", roots).await.unwrap_err();
        assert!(
            error.to_string().contains("certificate"),
            "unexpected error: {error}"
        );
    }
    assert!(running.upstream.requests().is_empty());
}

#[tokio::test]
async fn an_upstream_not_signed_by_a_trusted_root_gets_502() {
    let running = start(Vec::new()).await;
    let mut stream = TcpStream::connect(running.proxy).await.unwrap();
    let authority = running.authority();
    stream
        .write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 502"), "{head}");
    let decisions = running.wait_for_decisions(1).await;
    assert!(!decisions[0].allowed, "{decisions:?}");
    assert!(decisions[0].reason.contains("TLS"), "{decisions:?}");
    assert!(running.upstream.requests().is_empty());
}

#[tokio::test]
async fn plain_http_to_a_transform_host_stays_refused() {
    let running = start(vec![TEST_CA_PEM.to_vec()]).await;
    let mut stream = TcpStream::connect(running.proxy).await.unwrap();
    let authority = running.authority();
    let request = format!(
        "GET http://{authority}/ HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("`transform`"), "{response}");
    assert!(!response.contains("s3cret-value"), "{response}");
    assert!(running.upstream.requests().is_empty());
}
