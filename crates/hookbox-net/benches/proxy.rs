//! The egress proxy's cost per request, each path next to the same request sent directly to the
//! same local test host in the same run.
//!
//! - `http_*`: a plain `GET` in absolute form through the proxy (which dials the host afresh for
//!   every request) vs the same `GET` straight to the host;
//! - `https_connect_*`: HTTPS through a `CONNECT` tunnel (the client does TLS end to end with the
//!   host) vs HTTPS straight to the host;
//! - `https_intercept_*`: HTTPS to a host whose allowlist entry has a `transform`, so the proxy
//!   terminates the client's TLS with a leaf from the environment's [`ProxyCa`], injects the
//!   header and sends the request on over its own verified TLS connection, vs direct HTTPS.
//!
//! `*_fresh` opens a new connection (and, for HTTPS, does a full TLS handshake: the client keeps
//! no session cache, like a new process in the sandbox) for every request; `*_keepalive` sends
//! every request over one connection (one tunnel) opened before measuring.
//!
//! The client is hyper's low-level HTTP/1.1 connection over tokio (and tokio-rustls), the same
//! on both sides of each comparison; the decision log is a no-op.
//!
//! Run: `cargo bench -p hookbox-net --bench proxy -- --warm-up-time 1 --measurement-time 3`.
//! Results go to BENCHMARKS.md as ratios.

#![expect(
    clippy::expect_used,
    reason = "a benchmark whose setup fails has nothing to measure"
)]

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hookbox_net::{DecisionLog, EgressPolicy, EgressProxy, ProxyCa, ProxyOptions};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::HOST;
use hyper_util::rt::TokioIo;
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;
use tokio_rustls::TlsConnector;

/// What the bench measures against: two local hosts and two proxies, all on one runtime.
struct Setup {
    rt: Runtime,
    /// The plain HTTP host.
    http_host: TestHttpServer,
    /// The HTTPS host (certificate for `localhost`, signed by `TEST_CA_PEM`).
    https_host: TestHttpServer,
    /// `serve`: `localhost` allowed, no `transform` (plain HTTP and pass-through `CONNECT`).
    passing_proxy: SocketAddr,
    /// `serve_intercepting`: `localhost` allowed with a `transform`.
    intercepting_proxy: SocketAddr,
    /// Trusts `TEST_CA_PEM` (the host's CA), for direct HTTPS and pass-through tunnels.
    host_tls: TlsConnector,
    /// Trusts only the intercepting environment's CA.
    proxy_ca_tls: TlsConnector,
}

impl Setup {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let (http_host, https_host, passing_proxy, intercepting_proxy, ca) = rt.block_on(async {
            let http_host = TestHttpServer::start(|_| Reply::text(200, "reached"))
                .await
                .expect("http host");
            let https_host = TestHttpServer::start_https(|_| Reply::text(200, "reached"))
                .await
                .expect("https host");
            let proxy = EgressProxy::new(ProxyOptions {
                permit_loopback: true,
                extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
                connect_ports: vec![https_host.addr().port()],
                ..ProxyOptions::default()
            })
            .expect("proxy");
            let log: DecisionLog = Arc::new(|_decision| {});
            let passing = EgressPolicy::from_network(Some(&json!({"allowlist": [
                {"domain": "localhost"},
            ]})))
            .expect("policy");
            let intercepted = EgressPolicy::from_network(Some(&json!({"allowlist": [
                {"domain": "localhost", "transform": {"X-Injected": "v"}},
            ]})))
            .expect("policy");
            let ca = Arc::new(ProxyCa::generate("bench-env").expect("ca"));

            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let passing_proxy = listener.local_addr().expect("address");
            let (serving, log_1) = (proxy.clone(), Arc::clone(&log));
            tokio::spawn(async move {
                serving.serve(listener, Arc::new(passing), log_1).await;
            });

            let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
            let intercepting_proxy = listener.local_addr().expect("address");
            let serving_ca = Arc::clone(&ca);
            tokio::spawn(async move {
                proxy
                    .serve_intercepting(listener, Arc::new(intercepted), serving_ca, log)
                    .await;
            });
            (http_host, https_host, passing_proxy, intercepting_proxy, ca)
        });
        Self {
            rt,
            http_host,
            https_host,
            passing_proxy,
            intercepting_proxy,
            host_tls: connector(TEST_CA_PEM),
            proxy_ca_tls: connector(ca.certificate_pem().as_bytes()),
        }
    }

    /// `localhost:PORT` of the HTTPS host, the `CONNECT` target and `Host` through a tunnel.
    fn https_authority(&self) -> String {
        format!("localhost:{}", self.https_host.addr().port())
    }

    /// `localhost:PORT` of the plain HTTP host.
    fn http_authority(&self) -> String {
        format!("localhost:{}", self.http_host.addr().port())
    }

    /// A TLS connection straight to the HTTPS host.
    async fn direct_tls(&self) -> impl AsyncRead + AsyncWrite + Unpin + Send + 'static {
        let tcp = TcpStream::connect(self.https_host.addr())
            .await
            .expect("connect");
        tls(&self.host_tls, tcp).await
    }

    /// TLS with the HTTPS host through a pass-through `CONNECT` tunnel.
    async fn tunneled_tls(&self) -> impl AsyncRead + AsyncWrite + Unpin + Send + 'static {
        let tcp = connect_tunnel(self.passing_proxy, &self.https_authority()).await;
        tls(&self.host_tls, tcp).await
    }

    /// TLS with the intercepting proxy (a leaf for `localhost` from the environment's CA).
    async fn intercepted_tls(&self) -> impl AsyncRead + AsyncWrite + Unpin + Send + 'static {
        let tcp = connect_tunnel(self.intercepting_proxy, &self.https_authority()).await;
        tls(&self.proxy_ca_tls, tcp).await
    }
}

/// A TLS connector trusting only the certificates in `roots_pem`, without session resumption.
fn connector(roots_pem: &[u8]) -> TlsConnector {
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(roots_pem) {
        roots.add(certificate.expect("pem")).expect("root");
    }
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
    config.resumption = Resumption::disabled();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    TlsConnector::from(Arc::new(config))
}

async fn tls(
    connector: &TlsConnector,
    tcp: TcpStream,
) -> impl AsyncRead + AsyncWrite + Unpin + Send + 'static {
    let name = ServerName::try_from("localhost").expect("name");
    connector.connect(name, tcp).await.expect("tls handshake")
}

/// A `CONNECT` to `authority` through the proxy at `proxy`, answered 200.
async fn connect_tunnel(proxy: SocketAddr, authority: &str) -> TcpStream {
    let mut stream = TcpStream::connect(proxy).await.expect("connect to proxy");
    stream
        .write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await
        .expect("write CONNECT");
    // The proxy sends nothing after its answer until the client speaks, so reading whole chunks
    // cannot swallow tunneled bytes.
    let mut head = Vec::with_capacity(128);
    let mut buffer = [0_u8; 256];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.expect("read CONNECT answer");
        assert_ne!(read, 0, "EOF inside the CONNECT answer");
        head.extend_from_slice(&buffer[..read]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}

/// An HTTP/1.1 client connection over `stream`, driven on its own task.
async fn client<S>(stream: S) -> SendRequest<Empty<Bytes>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (send, connection) = http1::handshake(TokioIo::new(stream))
        .await
        .expect("http handshake");
    tokio::spawn(async move {
        // The connection ends when the client is dropped or the peer closes.
        let _ = connection.await;
    });
    send
}

/// `GET target` with `Host: host`; returns the body's length.
async fn get(send: &mut SendRequest<Empty<Bytes>>, target: &str, host: &str) -> usize {
    let request = Request::get(target)
        .header(HOST, host)
        .body(Empty::new())
        .expect("request");
    // The previous response's end may not have reached the connection task yet.
    send.ready().await.expect("connection ready");
    let response = send.send_request(request).await.expect("response");
    assert_eq!(response.status(), 200, "{response:?}");
    let body = response.into_body().collect().await.expect("body");
    body.to_bytes().len()
}

/// A `GET /` over a new connection `stream`, which is closed afterwards.
async fn get_once<S>(stream: S, host: &str) -> usize
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let mut send = client(stream).await;
    get(&mut send, "/", host).await
}

/// Plain HTTP: absolute form through the proxy vs origin form straight to the host.
fn plain_http(c: &mut Criterion) {
    let setup = Setup::new();
    let rt = &setup.rt;
    let host = setup.http_authority();
    let absolute = format!("http://{host}/");
    let direct_address = setup.http_host.addr();
    let proxy_address = setup.passing_proxy;

    let mut group = c.benchmark_group("http_fresh");
    group.throughput(Throughput::Elements(1));
    group.bench_function("proxy", |b| {
        b.iter(|| {
            rt.block_on(async {
                let stream = TcpStream::connect(proxy_address).await.expect("connect");
                let mut send = client(stream).await;
                get(&mut send, black_box(&absolute), &host).await
            })
        })
    });
    group.bench_function("direct", |b| {
        b.iter(|| {
            rt.block_on(async {
                let stream = TcpStream::connect(direct_address).await.expect("connect");
                get_once(stream, black_box(&host)).await
            })
        })
    });
    group.finish();

    let mut group = c.benchmark_group("http_keepalive");
    group.throughput(Throughput::Elements(1));
    let mut through = rt.block_on(async {
        client(TcpStream::connect(proxy_address).await.expect("connect")).await
    });
    group.bench_function("proxy", |b| {
        b.iter(|| rt.block_on(get(&mut through, black_box(&absolute), &host)))
    });
    let mut direct = rt.block_on(async {
        client(TcpStream::connect(direct_address).await.expect("connect")).await
    });
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(get(&mut direct, black_box("/"), &host)))
    });
    group.finish();
}

/// HTTPS through a pass-through `CONNECT` tunnel vs straight to the host.
fn connect_tunnel_https(c: &mut Criterion) {
    let setup = Setup::new();
    let rt = &setup.rt;
    let host = setup.https_authority();

    let mut group = c.benchmark_group("https_connect_fresh");
    group.throughput(Throughput::Elements(1));
    group.bench_function("proxy", |b| {
        b.iter(|| {
            rt.block_on(async { get_once(setup.tunneled_tls().await, black_box(&host)).await })
        })
    });
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(async { get_once(setup.direct_tls().await, black_box(&host)).await }))
    });
    group.finish();

    let mut group = c.benchmark_group("https_connect_keepalive");
    group.throughput(Throughput::Elements(1));
    let mut through = rt.block_on(async { client(setup.tunneled_tls().await).await });
    group.bench_function("proxy", |b| {
        b.iter(|| rt.block_on(get(&mut through, black_box("/"), &host)))
    });
    let mut direct = rt.block_on(async { client(setup.direct_tls().await).await });
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(get(&mut direct, black_box("/"), &host)))
    });
    group.finish();
}

/// HTTPS intercepted by the proxy (its own TLS both ways, one header injected) vs straight to
/// the host.
fn intercepted_https(c: &mut Criterion) {
    let setup = Setup::new();
    let rt = &setup.rt;
    let host = setup.https_authority();

    // The header arrives, and only through the intercepting proxy.
    rt.block_on(async {
        get_once(setup.intercepted_tls().await, &host).await;
        get_once(setup.direct_tls().await, &host).await;
    });
    let seen = setup.https_host.requests();
    let injected: Vec<Option<&str>> = seen
        .iter()
        .map(|request| request.header("x-injected"))
        .collect();
    assert_eq!(injected, [Some("v"), None], "{seen:?}");

    let mut group = c.benchmark_group("https_intercept_fresh");
    group.throughput(Throughput::Elements(1));
    group.bench_function("proxy", |b| {
        b.iter(|| {
            rt.block_on(async { get_once(setup.intercepted_tls().await, black_box(&host)).await })
        })
    });
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(async { get_once(setup.direct_tls().await, black_box(&host)).await }))
    });
    group.finish();

    let mut group = c.benchmark_group("https_intercept_keepalive");
    group.throughput(Throughput::Elements(1));
    let mut through = rt.block_on(async { client(setup.intercepted_tls().await).await });
    group.bench_function("proxy", |b| {
        b.iter(|| rt.block_on(get(&mut through, black_box("/"), &host)))
    });
    let mut direct = rt.block_on(async { client(setup.direct_tls().await).await });
    group.bench_function("direct", |b| {
        b.iter(|| rt.block_on(get(&mut direct, black_box("/"), &host)))
    });
    group.finish();
}

criterion_group!(benches, plain_http, connect_tunnel_https, intercepted_https);
criterion_main!(benches);
