//! The egress proxy, driven by a raw client writing HTTP by hand over a Unix socket or TCP.
//! Upstreams are loopback test servers admitted through `permit_loopback`; names resolve through
//! static overrides, so nothing leaves the machine. Blind tunnels carry TLS for `localhost` (the
//! HTTPS test server's name), as they only carry TLS whose SNI names the `CONNECT` host.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup or exchange fails the test"
)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookbox_net::{EgressPolicy, EgressProxy, ProxyDecision, ProxyOptions};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_rustls::client::TlsStream;

use super::proxy_tls::tls;

/// A running proxy and what it logged.
struct Running {
    socket: PathBuf,
    tcp: SocketAddr,
    decisions: Arc<Mutex<Vec<ProxyDecision>>>,
    tasks: Vec<JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl Running {
    fn decisions(&self) -> Vec<ProxyDecision> {
        self.decisions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Serves `policy` with `options` on a temporary Unix socket and on 127.0.0.1:0.
async fn start(policy: EgressPolicy, options: ProxyOptions) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("proxy.sock");
    let unix = UnixListener::bind(&socket).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let tcp_address = tcp.local_addr().unwrap();
    let proxy = EgressProxy::new(options).unwrap();
    let policy = Arc::new(policy);
    let decisions = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&decisions);
    let log: hookbox_net::DecisionLog = Arc::new(move |decision| {
        sink.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(decision);
    });
    let unix_task = {
        let (proxy, policy, log) = (proxy.clone(), Arc::clone(&policy), Arc::clone(&log));
        tokio::spawn(async move { proxy.serve(unix, policy, log).await })
    };
    let tcp_task = tokio::spawn(async move { proxy.serve(tcp, policy, log).await });
    Running {
        socket,
        tcp: tcp_address,
        decisions,
        tasks: vec![unix_task, tcp_task],
        _dir: dir,
    }
}

/// Loopback admitted, `upstream.test` and `secret.test` pinned to 127.0.0.1, `CONNECT` allowed
/// to `connect_port` as well as 443.
fn loopback_options(connect_port: u16) -> ProxyOptions {
    ProxyOptions {
        permit_loopback: true,
        resolve: vec![
            ("upstream.test".to_owned(), [127, 0, 0, 1].into()),
            ("secret.test".to_owned(), [127, 0, 0, 1].into()),
            ("localhost".to_owned(), [127, 0, 0, 1].into()),
        ],
        connect_ports: vec![443, connect_port],
        ..ProxyOptions::default()
    }
}

/// Only `upstream.test`, `localhost`, and `secret.test` with a `transform`.
fn allowlist() -> EgressPolicy {
    EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "upstream.test"},
        {"domain": "localhost"},
        {"domain": "secret.test", "transform": {"Authorization": "Bearer s3cret-value"}},
    ]})))
    .unwrap()
}

fn reply(request: &hookbox_test_support::RecordedRequest) -> Reply {
    if request.path == "/redirect" {
        Reply::redirect(302, "http://127.0.0.1:1/elsewhere")
    } else {
        Reply::text(200, "reached")
    }
}

async fn upstream() -> TestHttpServer {
    TestHttpServer::start(reply).await.unwrap()
}

/// The same upstream over HTTPS, for blind tunnels (a certificate for `localhost`).
async fn tls_upstream() -> TestHttpServer {
    TestHttpServer::start_https(reply).await.unwrap()
}

/// Writes `request` and reads until the peer closes (every test request asks for
/// `Connection: close`, and every refusal of the proxy's own closes or is followed by EOF).
async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, request: &str) -> String {
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response))
        .await
        .unwrap()
        .unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

async fn over_unix(running: &Running, request: &str) -> String {
    exchange(UnixStream::connect(&running.socket).await.unwrap(), request).await
}

async fn over_tcp(running: &Running, request: &str) -> String {
    exchange(TcpStream::connect(running.tcp).await.unwrap(), request).await
}

/// Reads a response head (up to the blank line) and returns it.
async fn read_head<S: AsyncRead + Unpin>(stream: &mut S) -> String {
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(
            read,
            0,
            "EOF inside the head: {}",
            String::from_utf8_lossy(&head)
        );
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

fn get(target: &str, host: &str, extra: &str) -> String {
    format!("GET {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n")
}

#[tokio::test]
async fn an_allowed_get_is_forwarded_over_unix_and_tcp_without_proxy_authorization() {
    let server = upstream().await;
    let port = server.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    let authority = format!("upstream.test:{port}");
    let request = get(
        &format!("http://{authority}/hello?x=1"),
        &authority,
        "Proxy-Authorization: Basic cHJveHktc2VjcmV0\r\nAuthorization: Bearer sandbox-own\r\n",
    );
    for response in [
        over_unix(&running, &request).await,
        over_tcp(&running, &request).await,
    ] {
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.ends_with("reached"), "{response}");
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for seen in &requests {
        assert_eq!(seen.path, "/hello?x=1");
        assert_eq!(seen.header("host"), Some(authority.as_str()));
        assert_eq!(seen.header("proxy-authorization"), None);
        assert_eq!(seen.header("authorization"), Some("Bearer sandbox-own"));
    }
    let decisions = running.decisions();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    for decision in decisions {
        assert_eq!(
            (
                decision.host.as_str(),
                decision.port,
                decision.method.as_str()
            ),
            ("upstream.test", port, "GET")
        );
        assert!(decision.allowed, "{decision:?}");
        assert!(
            decision.reason.contains("network.allowlist[0]"),
            "{decision:?}"
        );
        for secret in ["cHJveHktc2VjcmV0", "sandbox-own", "s3cret-value"] {
            assert!(!decision.reason.contains(secret), "{decision:?}");
        }
    }
}

#[tokio::test]
async fn serving_ends_when_the_listener_is_shut_down() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let handle = listener.try_clone().unwrap();
    listener.set_nonblocking(true).unwrap();
    let listener = TcpListener::from_std(listener).unwrap();
    let proxy = EgressProxy::new(loopback_options(443)).unwrap();
    let log: hookbox_net::DecisionLog = Arc::new(|_| {});
    let serving =
        tokio::spawn(async move { proxy.serve(listener, Arc::new(allowlist()), log).await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!serving.is_finished());
    rustix::net::shutdown(&handle, rustix::net::Shutdown::Both).unwrap();
    tokio::time::timeout(Duration::from_secs(10), serving)
        .await
        .expect("serving ended")
        .unwrap();
}

#[tokio::test]
async fn a_redirect_is_passed_back_unchanged_and_not_followed() {
    let server = upstream().await;
    let port = server.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    let authority = format!("upstream.test:{port}");
    let response = over_tcp(
        &running,
        &get(&format!("http://{authority}/redirect"), &authority, ""),
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 302"), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("location: http://127.0.0.1:1/elsewhere\r\n"),
        "{response}"
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_host_outside_the_allowlist_gets_the_policys_403_without_a_lookup() {
    let running = start(allowlist(), loopback_options(443)).await;
    // `.invalid` never resolves: a lookup would answer 502, not the policy's 403.
    for request in [
        get("http://leak.secret-data.invalid/", "leak.secret-data.invalid", ""),
        "CONNECT leak.secret-data.invalid:443 HTTP/1.1\r\nHost: leak.secret-data.invalid:443\r\n\r\n"
            .to_owned(),
    ] {
        let response = over_unix(&running, &request).await;
        assert!(response.starts_with("HTTP/1.1 403"), "{response}");
        assert!(response.contains("matches no entry of `network.allowlist`"), "{response}");
    }
    let decisions = running.decisions();
    assert_eq!(decisions.len(), 2);
    assert!(decisions.iter().all(|decision| !decision.allowed));
    assert!(decisions.iter().all(|decision| decision.caller.is_none()));
    assert_eq!(decisions[1].method, "CONNECT");
}

#[tokio::test]
async fn connect_opens_a_tunnel_to_an_allowed_port() {
    let server = tls_upstream().await;
    let port = server.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    let mut stream = TcpStream::connect(running.tcp).await.unwrap();
    // The caller names itself as a proxy URL's user would (`http://call-7:x@…`):
    // base64("call-7:x").
    let connect = format!(
        "CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\
         Proxy-Authorization: Basic Y2FsbC03Ong=\r\n\r\n"
    );
    stream.write_all(connect.as_bytes()).await.unwrap();
    let head = read_head(&mut stream).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let stream = tls(stream, "localhost", TEST_CA_PEM).await.unwrap();
    let inner = get("/through-the-tunnel", &format!("localhost:{port}"), "");
    let response = exchange(stream, &inner).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("reached"), "{response}");
    assert_eq!(server.requests()[0].path, "/through-the-tunnel");
    let decisions = running.decisions();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert!(decisions[0].allowed);
    assert_eq!(decisions[0].method, "CONNECT");
    assert_eq!(decisions[0].sni.as_deref(), Some("localhost"));
    assert_eq!(decisions[0].caller.as_deref(), Some("call-7"));
}

#[tokio::test]
async fn connect_to_a_port_not_listed_is_refused() {
    let running = start(allowlist(), loopback_options(443)).await;
    let response = over_tcp(
        &running,
        "CONNECT upstream.test:22 HTTP/1.1\r\nHost: upstream.test:22\r\n\r\n",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("port 22 is not allowed"), "{response}");
}

#[tokio::test]
async fn transform_hosts_are_refused_without_an_interception_ca() {
    let server = upstream().await;
    let port = server.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    let authority = format!("secret.test:{port}");
    for request in [
        get(&format!("http://{authority}/"), &authority, ""),
        format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"),
    ] {
        let response = over_tcp(&running, &request).await;
        assert!(response.starts_with("HTTP/1.1 403"), "{response}");
        assert!(response.contains("`transform`"), "{response}");
        assert!(!response.contains("s3cret-value"), "{response}");
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn loopback_targets_are_refused_unless_permitted() {
    let server = upstream().await;
    let port = server.addr().port();
    let running = start(EgressPolicy::PUBLIC, ProxyOptions::default()).await;
    for host in [
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        format!("localhost:{port}"),
        format!("2130706433:{port}"),
    ] {
        let response = over_unix(&running, &get(&format!("http://{host}/"), &host, "")).await;
        assert!(response.starts_with("HTTP/1.1 403"), "{host}: {response}");
        assert!(response.contains("loopback"), "{host}: {response}");
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_proxy_does_not_connect_to_itself() {
    let running = start(EgressPolicy::PUBLIC, loopback_options(443)).await;
    let own = running.tcp;
    let response = over_tcp(
        &running,
        &get(&format!("http://{own}/"), &own.to_string(), ""),
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("own listener"), "{response}");
}

#[tokio::test]
async fn ambiguous_requests_get_400() {
    let server = upstream().await;
    let port = server.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    let target = format!("http://upstream.test:{port}/");
    for (request, reason) in [
        (get(&target, "evil.test", ""), "Host header"),
        (
            format!(
                "GET {target} HTTP/1.1\r\nHost: upstream.test:{port}\r\nHost: upstream.test:{port}\r\n\r\n"
            ),
            "duplicate Host",
        ),
        (
            get("/origin-form", "upstream.test", ""),
            "not a proxy request",
        ),
    ] {
        let response = over_tcp(&running, &request).await;
        assert!(
            response.starts_with("HTTP/1.1 400"),
            "{request}: {response}"
        );
        assert!(response.contains(reason), "{request}: {response}");
    }
    // CR in the CONNECT target is refused by the parser itself.
    let response = over_tcp(&running, "CONNECT upstream.test\r:443 HTTP/1.1\r\n\r\n").await;
    assert!(response.starts_with("HTTP/1.1 400"), "{response}");
    assert!(server.requests().is_empty());
    let decisions = running.decisions();
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    assert!(decisions.iter().all(|decision| !decision.allowed));
    assert!(
        decisions
            .iter()
            .all(|decision| !decision.reason.contains("evil.test")),
        "{decisions:?}"
    );
}

#[tokio::test]
async fn content_length_with_transfer_encoding_is_reframed_and_the_connection_closed() {
    let server = upstream().await;
    let port = server.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    // A front end trusting Content-Length would see `GET /smuggled …` as this request's body.
    let smuggle = format!(
        "POST http://upstream.test:{port}/first HTTP/1.1\r\nHost: upstream.test:{port}\r\n\
         Content-Length: 44\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\
         GET http://upstream.test:{port}/smuggled HTTP/1.1\r\n\r\n"
    );
    let response = over_tcp(&running, &smuggle).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert_eq!(response.matches("HTTP/1.1").count(), 1, "{response}");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].path, "/first");
    assert!(requests[0].body.is_empty());
    assert_ne!(requests[0].header("content-length"), Some("44"));
}

#[tokio::test]
async fn oversized_request_heads_get_431() {
    let running = start(allowlist(), loopback_options(443)).await;
    let filler = "a".repeat(20_000);
    let response = over_tcp(
        &running,
        &get(
            "http://upstream.test/",
            "upstream.test",
            &format!("X-Filler: {filler}\r\n"),
        ),
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 431"), "{response}");
}

#[tokio::test]
async fn connections_over_the_limit_get_503_until_one_closes() {
    let server = upstream().await;
    let port = server.addr().port();
    let options = ProxyOptions {
        max_connections: 1,
        ..loopback_options(port)
    };
    let running = start(allowlist(), options).await;
    // An open tunnel holds the only slot.
    let mut tunnel = TcpStream::connect(running.tcp).await.unwrap();
    let connect =
        format!("CONNECT upstream.test:{port} HTTP/1.1\r\nHost: upstream.test:{port}\r\n\r\n");
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    assert!(read_head(&mut tunnel).await.starts_with("HTTP/1.1 200"));
    let authority = format!("upstream.test:{port}");
    let request = get(&format!("http://{authority}/"), &authority, "");
    let busy = over_tcp(&running, &request).await;
    assert!(busy.starts_with("HTTP/1.1 503"), "{busy}");
    drop(tunnel);
    let mut response = String::new();
    for _ in 0..50 {
        response = over_tcp(&running, &request).await;
        if response.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        running
            .decisions()
            .iter()
            .any(|decision| decision.reason.contains("too many connections"))
    );
}

#[tokio::test]
async fn idle_tunnels_are_closed() {
    let server = upstream().await;
    let port = server.addr().port();
    let options = ProxyOptions {
        idle_timeout: Duration::from_millis(200),
        ..loopback_options(port)
    };
    let running = start(allowlist(), options).await;
    let mut tunnel = UnixStream::connect(&running.socket).await.unwrap();
    let connect =
        format!("CONNECT upstream.test:{port} HTTP/1.1\r\nHost: upstream.test:{port}\r\n\r\n");
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    assert!(read_head(&mut tunnel).await.starts_with("HTTP/1.1 200"));
    let mut rest = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), tunnel.read_to_end(&mut rest)).await;
    assert!(matches!(read, Ok(Ok(0))), "{read:?}");
}

/// `CONNECT localhost:port` on a new TCP connection to `running`, answered 200, with TLS for
/// `localhost` through it.
async fn open_tunnel(running: &Running, port: u16) -> TlsStream<TcpStream> {
    let mut tunnel = TcpStream::connect(running.tcp).await.unwrap();
    let connect = format!("CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    tunnel.write_all(connect.as_bytes()).await.unwrap();
    let head = read_head(&mut tunnel).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    tls(tunnel, "localhost", TEST_CA_PEM).await.unwrap()
}

/// Sends a keep-alive `GET path` through an open tunnel and reads until its body arrived.
async fn through_tunnel(tunnel: &mut TlsStream<TcpStream>, port: u16, path: &str) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    tunnel.write_all(request.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 1024];
    while !String::from_utf8_lossy(&seen).contains("reached") {
        let read = tokio::time::timeout(Duration::from_secs(10), tunnel.read(&mut buffer))
            .await
            .unwrap()
            .unwrap();
        assert_ne!(read, 0, "{}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buffer[..read]);
    }
}

/// Reads until EOF or an error (a reset after the peer closed), within `limit`; what was read.
async fn read_until_closed<S: AsyncRead + Unpin>(stream: &mut S, limit: Duration) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 1024];
    tokio::time::timeout(limit, async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => seen.extend_from_slice(&buffer[..read]),
            }
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!(
            "still open after {limit:?}: {}",
            String::from_utf8_lossy(&seen)
        )
    });
    seen
}

/// N14: a flood of `CONNECT`s far beyond `max_connections` is answered 503 without disturbing
/// the tunnels already open, and the proxy serves normally once they close.
#[tokio::test]
async fn a_flood_of_tunnels_over_the_limit_gets_503_and_the_proxy_keeps_serving() {
    const LIMIT: usize = 4;
    const FLOOD: usize = 200;
    let server = tls_upstream().await;
    let port = server.addr().port();
    let options = ProxyOptions {
        max_connections: LIMIT,
        ..loopback_options(port)
    };
    let running = start(allowlist(), options).await;
    let mut tunnels = Vec::new();
    for _ in 0..LIMIT {
        tunnels.push(open_tunnel(&running, port).await);
    }
    let mut flood = tokio::task::JoinSet::new();
    for _ in 0..FLOOD {
        let proxy = running.tcp;
        flood.spawn(async move {
            let mut stream = TcpStream::connect(proxy).await.unwrap();
            let connect = format!(
                "CONNECT upstream.test:{port} HTTP/1.1\r\nHost: upstream.test:{port}\r\n\r\n"
            );
            // The proxy may answer and close before the request is written.
            let _ = stream.write_all(connect.as_bytes()).await;
            read_until_closed(&mut stream, Duration::from_secs(10)).await
        });
    }
    let mut busy = 0;
    while let Some(response) = flood.join_next().await {
        let response = String::from_utf8(response.unwrap()).unwrap();
        assert!(response.starts_with("HTTP/1.1 503"), "{response}");
        busy += 1;
    }
    assert_eq!(busy, FLOOD);
    // The tunnels opened before the flood still carry traffic.
    for (index, tunnel) in tunnels.iter_mut().enumerate() {
        through_tunnel(tunnel, port, &format!("/tunnel-{index}")).await;
    }
    drop(tunnels);
    let plain = upstream().await;
    let authority = format!("upstream.test:{}", plain.addr().port());
    let request = get(&format!("http://{authority}/after"), &authority, "");
    let mut response = String::new();
    for _ in 0..50 {
        response = over_tcp(&running, &request).await;
        if response.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let refused = running
        .decisions()
        .iter()
        .filter(|decision| decision.reason.contains("too many connections"))
        .count();
    assert!(refused >= FLOOD, "{refused}");
}

/// N14: a client that never finishes its request head (slowloris: one header line at a time)
/// is cut off after `header_read_timeout`, freeing its slot; so is one that sends nothing.
#[tokio::test]
async fn a_slowloris_client_is_cut_off_after_the_header_read_timeout() {
    let server = upstream().await;
    let port = server.addr().port();
    let timeout = Duration::from_millis(300);
    let options = ProxyOptions {
        max_connections: 1,
        header_read_timeout: timeout,
        ..loopback_options(port)
    };
    let running = start(allowlist(), options).await;
    let stream = TcpStream::connect(running.tcp).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let started = tokio::time::Instant::now();
    let trickle = tokio::spawn(async move {
        let head = format!("GET http://upstream.test:{port}/ HTTP/1.1\r\n");
        writer.write_all(head.as_bytes()).await?;
        for index in 0..200 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            writer
                .write_all(format!("X-Slow-{index}: a\r\n").as_bytes())
                .await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let answer = read_until_closed(&mut reader, Duration::from_secs(5)).await;
    let elapsed = started.elapsed();
    assert!(
        elapsed >= timeout - Duration::from_millis(50),
        "{elapsed:?}"
    );
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "{answer}"
    );
    trickle.abort();

    // A client that connects and sends nothing is cut off too.
    let mut silent = TcpStream::connect(running.tcp).await.unwrap();
    let started = tokio::time::Instant::now();
    read_until_closed(&mut silent, Duration::from_secs(5)).await;
    assert!(started.elapsed() < Duration::from_secs(3));

    // The only slot is free again: a normal request goes through.
    let authority = format!("upstream.test:{port}");
    let request = get(&format!("http://{authority}/"), &authority, "");
    let mut response = String::new();
    for _ in 0..50 {
        response = over_tcp(&running, &request).await;
        if response.starts_with("HTTP/1.1 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert_eq!(server.requests().len(), 1);
}

/// N15: stopping the proxy (dropping its serve future, as a restart does) closes the tunnels it
/// opened — nothing keeps flowing unchecked — and a new proxy on a new listener serves.
#[tokio::test]
async fn stopping_the_proxy_mid_tunnel_closes_its_tunnels_and_a_restart_serves() {
    let server = tls_upstream().await;
    let port = server.addr().port();
    let plain = upstream().await;
    let plain_port = plain.addr().port();
    let running = start(allowlist(), loopback_options(port)).await;
    let mut tunnel = open_tunnel(&running, port).await;
    through_tunnel(&mut tunnel, port, "/before").await;
    let old = running.tcp;
    drop(running);
    let leftover = read_until_closed(&mut tunnel, Duration::from_secs(5)).await;
    assert!(
        leftover.is_empty(),
        "{}",
        String::from_utf8_lossy(&leftover)
    );
    // Whatever the client still writes goes nowhere.
    let late = format!("GET /after HTTP/1.1\r\nHost: localhost:{port}\r\n\r\n");
    let _ = tunnel.write_all(late.as_bytes()).await;
    // The old listener is gone (its task may take a moment to be dropped).
    let mut refused = false;
    for _ in 0..50 {
        if TcpStream::connect(old).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(refused, "the old listener still accepts");

    let restarted = start(allowlist(), loopback_options(port)).await;
    let authority = format!("upstream.test:{plain_port}");
    let response = over_tcp(
        &restarted,
        &get(&format!("http://{authority}/restarted"), &authority, ""),
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let paths: Vec<String> = [server.requests(), plain.requests()]
        .concat()
        .into_iter()
        .map(|request| request.path)
        .collect();
    assert_eq!(paths, ["/before", "/restarted"]);
}
