//! The server against a hand-written HTTP/1.1 client on plain sockets.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use super::TestHttpServer;
use crate::Reply;

/// Sends one request on `stream` and reads one response: `(status, body)`.
fn exchange(stream: &mut TcpStream, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
    let head = format!(
        "{method} {path} HTTP/1.1\r\nhost: test\r\nx-test: yes\r\ncontent-length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();

    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line.split(' ').nth(1).unwrap().parse().unwrap();
    let mut length = 0;
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (status, body)
}

fn connect(server: &TestHttpServer) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream
}

#[test]
fn records_the_request_and_sends_the_reply() {
    let server =
        TestHttpServer::start_blocking(|request| Reply::json(201, &json!({"saw": request.path})))
            .unwrap();

    let (status, body) = exchange(&mut connect(&server), "POST", "/hook?x=1", br#"{"a":1}"#);

    assert_eq!(status, 201);
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&body).unwrap(),
        json!({"saw": "/hook?x=1"})
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/hook?x=1");
    assert_eq!(requests[0].header("X-Test"), Some("yes"));
    assert_eq!(requests[0].json(), json!({"a": 1}));
}

#[test]
fn url_joins_the_address_and_the_path() {
    let server = TestHttpServer::start_blocking(|_| Reply::text(200, "")).unwrap();
    let base = format!("http://127.0.0.1:{}", server.addr().port());
    assert_eq!(server.url("/a?b=c"), format!("{base}/a?b=c"));
    assert_eq!(server.url("a"), format!("{base}/a"));
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let server = TestHttpServer::start_blocking(|_| Reply::text(200, "ok")).unwrap();

    let mut first = connect(&server);
    assert_eq!(
        exchange(&mut first, "GET", "/1", b""),
        (200, b"ok".to_vec())
    );
    assert_eq!(
        exchange(&mut first, "GET", "/2", b""),
        (200, b"ok".to_vec())
    );
    assert_eq!(exchange(&mut connect(&server), "GET", "/3", b"").0, 200);

    let connections: Vec<u64> = server.requests().iter().map(|r| r.connection).collect();
    assert_eq!(connections, [0, 0, 1]);
}

#[test]
fn a_delayed_reply_does_not_block_other_connections() {
    let server = TestHttpServer::start_blocking(|request| {
        if request.path == "/slow" {
            Reply::text(200, "slow").after(Duration::from_secs(30))
        } else {
            Reply::text(200, "fast")
        }
    })
    .unwrap();
    let mut slow = connect(&server);
    slow.write_all(b"GET /slow HTTP/1.1\r\nhost: test\r\n\r\n")
        .unwrap();
    while server.requests().is_empty() {
        std::thread::sleep(Duration::from_millis(10));
    }

    let started = Instant::now();
    let fast = exchange(&mut connect(&server), "GET", "/fast", b"");

    assert_eq!(fast, (200, b"fast".to_vec()));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the fast request waited for the slow one"
    );
    drop(server);
    let mut rest = Vec::new();
    slow.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the slow reply was sent before its delay");
}

#[test]
fn an_invalid_reply_becomes_a_500_that_says_why() {
    let server = TestHttpServer::start_blocking(|_| Reply::text(42, "")).unwrap();
    let (status, body) = exchange(&mut connect(&server), "GET", "/", b"");
    assert_eq!(status, 500);
    assert!(String::from_utf8(body).unwrap().contains("invalid Reply"));
}

#[test]
fn dropping_the_server_closes_the_port() {
    let server = TestHttpServer::start_blocking(|_| Reply::text(200, "")).unwrap();
    let addr = server.addr();
    drop(server);
    assert!(TcpStream::connect(addr).is_err());
}

#[tokio::test]
async fn start_serves_on_the_callers_runtime() {
    let server = TestHttpServer::start(|_| Reply::text(200, "async"))
        .await
        .unwrap();
    let addr = server.addr();

    let reply = tokio::task::spawn_blocking(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        exchange(&mut stream, "GET", "/", b"")
    })
    .await
    .unwrap();

    assert_eq!(reply, (200, b"async".to_vec()));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn start_https_serves_tls_with_a_certificate_signed_by_the_test_ca() {
    use std::sync::Arc;

    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, ServerName};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let server = TestHttpServer::start_https(|_| Reply::text(200, "secure"))
        .await
        .unwrap();
    assert!(server.url("/x").starts_with("https://127.0.0.1:"));
    let mut roots = rustls::RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(crate::TEST_CA_PEM) {
        roots.add(certificate.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();

    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = ServerName::try_from("127.0.0.1").unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    tls.write_all(b"GET /x HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = Vec::new();
    tls.read_to_end(&mut response).await.unwrap();

    let response = String::from_utf8(response).unwrap();
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.ends_with("\r\n\r\nsecure"), "{response}");
    assert_eq!(server.requests()[0].path, "/x");
}
