use std::net::{Ipv4Addr, TcpListener};
use std::time::Duration;

use hookbox_net::{ClientOptions, EgressPolicy, GetRequest, GuardedClient, NetError};
use hookbox_test_support::{Reply, TestCertificates, TestHttpServer};

use super::{client, headers, local_options};

/// A name served by the fake HTTPS server; it is never looked up in DNS.
const HOST: &str = "storage.example.test";

/// An HTTPS server presenting a certificate for [`HOST`], and the CA to trust for it.
#[expect(
    clippy::unwrap_used,
    reason = "test helper: a server that fails to start fails the test"
)]
fn https_server(
    responder: impl Fn(&hookbox_test_support::RecordedRequest) -> Reply + Send + Sync + 'static,
) -> (TestHttpServer, TestCertificates) {
    let certificates = TestCertificates::for_names(&[HOST]).unwrap();
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let server = TestHttpServer::start_https_on(listener, &certificates, responder).unwrap();
    (server, certificates)
}

/// Options pointing `https://HOST/` (no port) at `server`.
fn connect_to(server: &TestHttpServer, certificates: &TestCertificates) -> ClientOptions {
    ClientOptions {
        permit_loopback: true,
        extra_root_certs_pem: vec![certificates.ca_pem().as_bytes().to_vec()],
        connect_to: vec![(HOST.to_owned(), server.addr())],
        ..ClientOptions::default()
    }
}

fn get<'a>(url: &'a str, headers: &'a [(String, String)]) -> GetRequest<'a> {
    GetRequest {
        url,
        policy: &EgressPolicy::PUBLIC,
        headers,
        timeout: Duration::from_secs(10),
        body_limit: 1 << 20,
    }
}

#[tokio::test]
async fn get_sends_headers_and_streams_the_reply_through_a_connect_to_override() {
    let (server, certificates) = https_server(|request| {
        let mut reply = Reply::text(200, &format!("{} {}", request.method, request.path));
        reply.headers.push(("x-page".to_owned(), "2".to_owned()));
        reply
    });
    let client = GuardedClient::new(&connect_to(&server, &certificates)).unwrap();
    let sent = headers(&[("Authorization", "Bearer token-1")]);
    let url = format!("https://{HOST}/storage/v1/b/bkt/o?prefix=a%2Fb");

    let reply = client.get(get(&url, &sent)).await.unwrap();

    assert_eq!(reply.status(), 200);
    assert_eq!(reply.header("X-Page"), Some("2"));
    assert_eq!(
        reply.read_to_end().await.unwrap(),
        b"GET /storage/v1/b/bkt/o?prefix=a%2Fb"
    );
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer token-1"));
    assert_eq!(requests[0].header("content-type"), None);
    assert_eq!(requests[0].header("host"), Some(HOST));
}

#[tokio::test]
async fn a_connect_to_address_is_still_checked() {
    let (server, certificates) = https_server(|_| Reply::text(200, "no"));
    let strict = ClientOptions {
        permit_loopback: false,
        ..connect_to(&server, &certificates)
    };
    let client = GuardedClient::new(&strict).unwrap();
    let url = format!("https://{HOST}/x");

    let error = client.get(get(&url, &[])).await.unwrap_err();

    assert!(matches!(error, NetError::AddressRefused { .. }), "{error}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn get_follows_no_redirect_and_enforces_the_body_limit() {
    let server = TestHttpServer::start(|request| match request.path.as_str() {
        "/moved" => Reply::redirect(302, "https://elsewhere.example/"),
        _ => Reply::text(200, &"x".repeat(100)),
    })
    .await
    .unwrap();
    let client = client();

    let moved = server.url("/moved");
    let reply = client.get(get(&moved, &[])).await.unwrap();
    assert_eq!(reply.status(), 302);
    assert_eq!(reply.header("location"), Some("https://elsewhere.example/"));

    let big = server.url("/big");
    let request = GetRequest {
        body_limit: 10,
        ..get(&big, &[])
    };
    let error = client
        .get(request)
        .await
        .unwrap()
        .read_to_end()
        .await
        .unwrap_err();
    assert!(error.to_string().contains("limit of 10 bytes"), "{error}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn get_applies_the_same_pre_send_checks() {
    let strict = GuardedClient::new(&ClientOptions::default()).unwrap();
    let error = strict
        .get(get("http://example.com/", &[]))
        .await
        .unwrap_err();
    assert!(matches!(error, NetError::InsecureScheme { .. }), "{error}");

    let error = strict
        .get(get("https://127.0.0.1/", &[]))
        .await
        .unwrap_err();
    assert!(matches!(error, NetError::AddressRefused { .. }), "{error}");

    let framing = headers(&[("Content-Type", "text/plain")]);
    let error = GuardedClient::new(&local_options())
        .unwrap()
        .get(get("http://127.0.0.1:9/", &framing))
        .await
        .unwrap_err();
    assert!(matches!(error, NetError::InvalidHeader { .. }), "{error}");
}
