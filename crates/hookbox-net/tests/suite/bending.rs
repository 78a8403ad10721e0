//! Issue 11, egress that cannot be bent: attacks on the egress proxy through a test host in a
//! network namespace of its own (a real HTTPS server presenting a certificate for both
//! `allowed.test` and `fronted.test`, like a CDN), reached through `allow_private_cidrs` and
//! static names. Needs root (for the namespace); skipped with a printed reason otherwise.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup or exchange fails the test"
)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookbox_net::{
    Credential, DecisionLog, EgressPolicy, EgressProxy, ProxyCa, ProxyDecision, ProxyOptions,
};
use hookbox_test_support::{RecordedRequest, Reply, TestCertificates, TestHttpServer, TestNetns};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// The allowlisted name of the test host.
pub(super) const ALLOWED: &str = "allowed.test";
/// Another name the same host serves, not in the allowlist.
pub(super) const FRONTED: &str = "fronted.test";

/// A proxy serving one policy on a TCP listener, the test host behind it, and the decisions.
pub(super) struct Fixture {
    pub(super) netns: TestNetns,
    pub(super) certificates: TestCertificates,
    pub(super) server: TestHttpServer,
    pub(super) proxy: SocketAddr,
    pub(super) ca: Arc<ProxyCa>,
    decisions: Arc<Mutex<Vec<ProxyDecision>>>,
    task: JoinHandle<()>,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Fixture {
    /// The fixture for `network` (credentials resolved from `credentials`), the host answering
    /// with `responder`, `options` adjusted by `adjust` (after the test subnet and names are
    /// set); `None` (with the reason printed) when no namespace can be made here.
    pub(super) async fn start(
        test: &str,
        network: &Value,
        credentials: &BTreeMap<String, Credential>,
        responder: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
        adjust: impl FnOnce(&TestNetns, &mut ProxyOptions),
    ) -> Option<Self> {
        let netns = match TestNetns::create() {
            Ok(netns) => netns,
            Err(reason) => {
                hookbox_test_support::skip(
                    test,
                    format_args!("cannot create a test network namespace: {reason}"),
                );
                return None;
            }
        };
        let certificates = TestCertificates::for_names(&[ALLOWED, FRONTED]).unwrap();
        let listener = netns.bind_inside(443).unwrap();
        let server = TestHttpServer::start_https_on(listener, &certificates, responder).unwrap();
        let inside = std::net::IpAddr::V4(netns.inside_address());
        let mut options = ProxyOptions {
            allow_private_cidrs: vec![netns.cidr().parse().unwrap()],
            resolve: vec![(ALLOWED.to_owned(), inside), (FRONTED.to_owned(), inside)],
            extra_root_certs_pem: vec![certificates.ca_pem().as_bytes().to_vec()],
            ..ProxyOptions::default()
        };
        adjust(&netns, &mut options);
        let policy =
            EgressPolicy::from_network_with_credentials(Some(network), credentials).unwrap();
        let proxy = EgressProxy::new(options).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let ca = Arc::new(ProxyCa::generate("bending").unwrap());
        let decisions = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&decisions);
        let log: DecisionLog = Arc::new(move |decision| {
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
        Some(Self {
            netns,
            certificates,
            server,
            proxy: address,
            ca,
            decisions,
            task,
        })
    }

    /// Waits until `count` decisions have been logged, and returns them all.
    pub(super) async fn decisions(&self, count: usize) -> Vec<ProxyDecision> {
        for _ in 0..500 {
            let decisions = self
                .decisions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if decisions.len() >= count {
                return decisions;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!(
            "fewer than {count} decisions: {:?}",
            self.decisions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        );
    }
}

/// How the sandbox side speaks TLS through its tunnel.
#[derive(Clone, Copy)]
pub(super) enum Hello<'a> {
    /// A ClientHello whose SNI is this name, sent as rustls writes it.
    Sni(&'a str),
    /// The same, re-framed as TLS records of 40 bytes each and written 16 bytes at a time in
    /// separate TCP segments.
    SplitSni(&'a str),
    /// A ClientHello without SNI (the certificate is still checked for this name).
    NoSni(&'a str),
}

/// `CONNECT connect_host:443` through `proxy`, then TLS (trusting `ca_pem`) as `hello` says and
/// a `GET /` for `connect_host`; the response, or what failed. Blocking: run it off the runtime.
pub(super) fn fetch(
    proxy: SocketAddr,
    connect_host: &str,
    hello: Hello<'_>,
    ca_pem: &str,
) -> Result<String, String> {
    let mut socket = std::net::TcpStream::connect(proxy).map_err(|e| e.to_string())?;
    socket.set_nodelay(true).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let connect =
        format!("CONNECT {connect_host}:443 HTTP/1.1\r\nHost: {connect_host}:443\r\n\r\n");
    socket.write_all(connect.as_bytes()).unwrap();
    let mut head = Vec::new();
    let mut byte = [0_u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if socket.read(&mut byte).map_err(|e| e.to_string())? == 0 {
            return Err(format!("closed: {}", String::from_utf8_lossy(&head)));
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    if !head.starts_with("HTTP/1.1 200") {
        return Err(head);
    }
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let mut config =
        ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
    let name = match hello {
        Hello::Sni(name) | Hello::SplitSni(name) => name,
        Hello::NoSni(name) => {
            config.enable_sni = false;
            name
        }
    };
    let mut connection = ClientConnection::new(
        Arc::new(config),
        ServerName::try_from(name.to_owned()).unwrap(),
    )
    .unwrap();
    let mut first = Vec::new();
    connection.write_tls(&mut first).unwrap();
    let first = match hello {
        Hello::SplitSni(_) => fragmented(&first, 40),
        Hello::Sni(_) | Hello::NoSni(_) => first,
    };
    let segment = match hello {
        Hello::SplitSni(_) => 16,
        Hello::Sni(_) | Hello::NoSni(_) => first.len(),
    };
    for piece in first.chunks(segment) {
        socket.write_all(piece).map_err(|e| e.to_string())?;
        socket.flush().unwrap();
        if segment < first.len() {
            // Pacing, so the pieces leave as separate segments (nothing is asserted on time).
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    let mut tls = StreamOwned::new(connection, socket);
    let request = format!("GET / HTTP/1.1\r\nHost: {connect_host}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .map_err(|e| format!("TLS failed: {e}"))?;
    let mut response = Vec::new();
    match tls.read_to_end(&mut response) {
        Ok(_) => Ok(String::from_utf8_lossy(&response).into_owned()),
        Err(error) if !response.is_empty() => {
            Ok(format!("{} ({error})", String::from_utf8_lossy(&response)))
        }
        Err(error) => Err(format!("TLS failed: {error}")),
    }
}

/// One TLS handshake record re-framed as records carrying `size` bytes of it each.
fn fragmented(record: &[u8], size: usize) -> Vec<u8> {
    let length = usize::from(u16::from_be_bytes([record[3], record[4]]));
    assert_eq!(record.len(), 5 + length, "one record");
    let mut out = Vec::new();
    for piece in record[5..].chunks(size) {
        out.extend_from_slice(&record[..3]);
        out.extend_from_slice(&u16::try_from(piece.len()).unwrap().to_be_bytes());
        out.extend_from_slice(piece);
    }
    out
}

async fn fetch_async(
    fixture: &Fixture,
    connect_host: &str,
    hello: Hello<'static>,
) -> Result<String, String> {
    let proxy = fixture.proxy;
    let ca = fixture.certificates.ca_pem().to_owned();
    let connect_host = connect_host.to_owned();
    tokio::task::spawn_blocking(move || fetch(proxy, &connect_host, hello, &ca))
        .await
        .unwrap()
}

fn hello_reply(_request: &RecordedRequest) -> Reply {
    Reply::text(200, "hello from the test host")
}

/// Domain fronting through a blind tunnel: `CONNECT allowed.test:443` carrying TLS whose SNI
/// is `fronted.test` (served by the same host) is closed before anything reaches the host, and
/// the refusal records the SNI; the same tunnel with the right SNI, also when the ClientHello is
/// split over many TLS records and TCP segments, works and records it too.
#[tokio::test]
async fn a_blind_tunnel_only_carries_tls_for_its_connect_host() {
    let network = serde_json::json!({"allowlist": [{"domain": ALLOWED}]});
    let Some(fixture) = Fixture::start(
        "bending::a_blind_tunnel_only_carries_tls_for_its_connect_host",
        &network,
        &BTreeMap::new(),
        hello_reply,
        |_, _| {},
    )
    .await
    else {
        return;
    };
    let fronted = fetch_async(&fixture, ALLOWED, Hello::Sni(FRONTED)).await;
    assert!(fronted.is_err(), "{fronted:?}");
    assert!(fixture.server.requests().is_empty());
    let decisions = fixture.decisions(1).await;
    assert!(!decisions[0].allowed, "{decisions:?}");
    assert!(
        decisions[0].reason.contains("SNI (`fronted.test`)"),
        "{decisions:?}"
    );
    assert_eq!(decisions[0].sni.as_deref(), Some(FRONTED));

    for hello in [Hello::Sni(ALLOWED), Hello::SplitSni(ALLOWED)] {
        let response = fetch_async(&fixture, ALLOWED, hello).await.unwrap();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(response.contains("hello from the test host"), "{response}");
    }
    let decisions = fixture.decisions(3).await;
    for decision in &decisions[1..] {
        assert!(decision.allowed, "{decision:?}");
        assert_eq!(decision.sni.as_deref(), Some(ALLOWED), "{decision:?}");
    }
    assert_eq!(fixture.server.requests().len(), 2);
}

/// A blind tunnel whose ClientHello has no SNI, or whose first bytes are not TLS at all, is
/// closed with "SNI absent" and nothing reaches the host.
#[tokio::test]
async fn a_blind_tunnel_without_sni_or_without_tls_is_closed() {
    let network = serde_json::json!({"allowlist": [{"domain": ALLOWED}]});
    let Some(fixture) = Fixture::start(
        "bending::a_blind_tunnel_without_sni_or_without_tls_is_closed",
        &network,
        &BTreeMap::new(),
        hello_reply,
        |_, _| {},
    )
    .await
    else {
        return;
    };
    let no_sni = fetch_async(&fixture, ALLOWED, Hello::NoSni(ALLOWED)).await;
    assert!(no_sni.is_err(), "{no_sni:?}");

    let proxy = fixture.proxy;
    let plain = tokio::task::spawn_blocking(move || {
        let mut socket = std::net::TcpStream::connect(proxy).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        socket
            .write_all(
                format!(
                    "CONNECT {ALLOWED}:443 HTTP/1.1\r\nHost: {ALLOWED}:443\r\n\r\n\
                     GET / HTTP/1.1\r\nHost: {ALLOWED}\r\n\r\n"
                )
                .as_bytes(),
            )
            .unwrap();
        let mut seen = Vec::new();
        let _ = socket.read_to_end(&mut seen);
        String::from_utf8_lossy(&seen).into_owned()
    })
    .await
    .unwrap();
    assert!(plain.starts_with("HTTP/1.1 200"), "{plain}");
    assert!(!plain.contains("hello from the test host"), "{plain}");

    let decisions = fixture.decisions(2).await;
    for decision in &decisions {
        assert!(!decision.allowed, "{decision:?}");
        assert!(decision.reason.starts_with("SNI absent"), "{decision:?}");
        assert_eq!(decision.sni, None);
    }
    assert!(fixture.server.requests().is_empty());
}

/// The `transform` value injected as `Authorization`.
const SECRET: &str = "Bearer s3cret/value+0123?";
/// The `credential` injected as `X-Api-Key`.
const KEY: &str = "k3y-value_4567~ab";

/// Every common encoding of `value` an echoing upstream could send back: base64 (standard and
/// URL-safe, padded and not) of the value behind 0 to 3 other bytes, hex in both cases,
/// percent-encoding (upper and lower case), and JSON `\u` escapes of every character.
fn encodings(value: &str) -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE, URL_SAFE_NO_PAD};
    let mut all = Vec::new();
    for prefix in ["", "a", "ab", "abc"] {
        let whole = format!("{prefix}{value}");
        all.push(STANDARD.encode(&whole));
        all.push(URL_SAFE.encode(&whole));
        all.push(URL_SAFE_NO_PAD.encode(&whole));
    }
    let hex: String = value.bytes().map(|byte| format!("{byte:02x}")).collect();
    all.push(hex.to_uppercase());
    all.push(hex);
    for upper in [true, false] {
        let percent: String = value
            .bytes()
            .map(|byte| match (byte.is_ascii_alphanumeric(), upper) {
                (true, _) => char::from(byte).to_string(),
                (false, true) => format!("%{byte:02X}"),
                (false, false) => format!("%{byte:02x}"),
            })
            .collect();
        all.push(percent);
    }
    all.push(value.bytes().map(|byte| format!("\\u{byte:04x}")).collect());
    all
}

/// The echo: both injected headers it received, in every encoding of [`encodings`], one per
/// body line, and base64 and hex of each in response headers.
fn encoding_echo(request: &RecordedRequest) -> Reply {
    use base64::Engine as _;
    let mut body = String::new();
    let mut headers = Vec::new();
    for name in ["authorization", "x-api-key"] {
        let value = request.header(name).unwrap_or_default();
        for encoded in encodings(value) {
            body.push_str(&format!("{name}: {encoded}\n"));
        }
        headers.push((
            format!("x-b64-{name}"),
            base64::engine::general_purpose::STANDARD.encode(value),
        ));
        headers.push((
            format!("x-hex-{name}"),
            value.bytes().map(|byte| format!("{byte:02x}")).collect(),
        ));
    }
    let mut reply = Reply::text(200, &body);
    reply.headers.extend(headers);
    reply
}

/// Encoded secrets: an upstream echoing the injected `transform` and `credential` values
/// base64-, hex-, percent- or `\u`-encoded gets every one of them redacted, in the response
/// headers and the body, on their way to the sandbox.
#[tokio::test]
async fn injected_values_are_redacted_in_their_common_encodings() {
    let network = serde_json::json!({"allowlist": [{
        "domain": ALLOWED,
        "transform": {"Authorization": SECRET},
        "credential": "key",
    }]});
    let credentials = BTreeMap::from([(
        "key".to_owned(),
        Credential::new("X-Api-Key", KEY, [ALLOWED]),
    )]);
    let Some(fixture) = Fixture::start(
        "bending::injected_values_are_redacted_in_their_common_encodings",
        &network,
        &credentials,
        encoding_echo,
        |_, _| {},
    )
    .await
    else {
        return;
    };
    let mut tunnel = tokio::net::TcpStream::connect(fixture.proxy).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(
        &mut tunnel,
        format!("CONNECT {ALLOWED}:443 HTTP/1.1\r\nHost: {ALLOWED}:443\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        head.push(tokio::io::AsyncReadExt::read_u8(&mut tunnel).await.unwrap());
    }
    assert!(head.starts_with(b"HTTP/1.1 200"), "{head:?}");
    let mut stream =
        super::proxy_tls::tls(tunnel, ALLOWED, fixture.ca.certificate_pem().as_bytes())
            .await
            .unwrap();
    let response = super::proxy_tls::exchange(
        &mut stream,
        &format!("GET /echo HTTP/1.1\r\nHost: {ALLOWED}\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    // The upstream did get the values (so it really echoed them).
    let seen = fixture.server.requests();
    assert_eq!(seen[0].header("authorization"), Some(SECRET));
    assert_eq!(seen[0].header("x-api-key"), Some(KEY));
    for value in [SECRET, KEY] {
        for encoded in encodings(value) {
            assert!(!response.contains(&encoded), "{encoded} in {response}");
        }
    }
    let lines = 2 * encodings(SECRET).len();
    let redacted = response.matches("[REDACTED]").count();
    assert_eq!(redacted, lines + 4, "{response}");
    let decisions = fixture.decisions(2).await;
    let get = decisions
        .iter()
        .find(|decision| decision.method == "GET")
        .unwrap();
    assert_eq!(get.redactions, lines + 4, "{get:?}");
}

/// `GET url` as a plain proxy request through `proxy`; the whole response.
async fn plain_get(proxy: SocketAddr, authority: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(proxy).await.unwrap();
    let request = format!(
        "GET http://{authority}/ HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    );
    tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes())
        .await
        .unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(
        Duration::from_secs(20),
        tokio::io::AsyncReadExt::read_to_end(&mut stream, &mut response),
    )
    .await
    .unwrap()
    .unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

/// The sandbox never reaches this host's own listeners (hookbox's REST API, the proxy's own
/// sockets, anything else listening here), whatever `allow_private_cidrs` says: with the host's
/// side of the test link (10.77.S.1) and 127.0.0.0/8 listed, a listener on each is refused,
/// while the test host on the same link is still reached.
#[tokio::test]
async fn the_hosts_own_addresses_are_never_dialed_whatever_the_private_ranges_say() {
    let Some(fixture) = Fixture::start(
        "bending::the_hosts_own_addresses_are_never_dialed_whatever_the_private_ranges_say",
        &Value::Null,
        &BTreeMap::new(),
        hello_reply,
        |_, options| {
            options
                .allow_private_cidrs
                .push("127.0.0.0/8".parse().unwrap());
        },
    )
    .await
    else {
        return;
    };
    let host_side = std::net::TcpListener::bind((fixture.netns.host_address(), 0)).unwrap();
    let on_link = TestHttpServer::start_on(host_side, |_| Reply::text(200, "hookbox api")).unwrap();
    let loopback = TestHttpServer::start(|_| Reply::text(200, "hookbox api"))
        .await
        .unwrap();
    for listener in [&on_link, &loopback] {
        let response = plain_get(fixture.proxy, &listener.addr().to_string()).await;
        assert!(response.starts_with("HTTP/1.1 403"), "{response}");
        assert!(response.contains("this host"), "{response}");
        assert!(listener.requests().is_empty());
    }
    // The proxy's own listener, by its loopback address, too.
    let response = plain_get(fixture.proxy, &fixture.proxy.to_string()).await;
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");

    let inside = format!("{}:443", fixture.netns.inside_address());
    let response = plain_get(fixture.proxy, &inside).await;
    // The test host speaks TLS: a plain request reaches it and gets an error, not a refusal.
    assert!(!response.starts_with("HTTP/1.1 403"), "{response}");
}
