//! Every refusal here must happen before any connection: only loopback test servers ever
//! receive traffic, and each test asserts they saw nothing when a request was refused.

use std::net::IpAddr;

use hookbox_net::{ClientOptions, EgressPolicy, GuardedClient, NetError, PostRequest};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use serde_json::json;

use super::{client, client_with, headers, local_options, post};

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure here fails the test"
)]
async fn server() -> TestHttpServer {
    TestHttpServer::start(|_| Reply::text(200, "reached"))
        .await
        .unwrap()
}

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure here fails the test"
)]
async fn https_server() -> TestHttpServer {
    TestHttpServer::start_https(|request| {
        if request.path == "/redirect" {
            Reply::redirect(302, "http://127.0.0.1:1/elsewhere")
        } else {
            Reply::text(200, "reached")
        }
    })
    .await
    .unwrap()
}

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure here fails the test"
)]
fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// Plain HTTP allowed (so the scheme is never the reason) but the default address rules.
fn strict_addresses() -> ClientOptions {
    ClientOptions {
        https_only: false,
        ..ClientOptions::default()
    }
}

/// HTTPS-only with loopback permitted and the test CA trusted.
fn https_options() -> ClientOptions {
    ClientOptions {
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
        permit_loopback: true,
        resolve: vec![("localhost".to_owned(), ip("127.0.0.1"))],
        ..ClientOptions::default()
    }
}

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure here fails the test"
)]
fn policy(network: serde_json::Value) -> EgressPolicy {
    EgressPolicy::from_network(Some(&network)).unwrap()
}

#[tokio::test]
async fn loopback_and_metadata_literals_in_every_spelling_are_refused_before_connecting() {
    let server = server().await;
    let port = server.addr().port();
    let client = client_with(&ClientOptions {
        resolve: vec![("metadata.google.internal".to_owned(), ip("169.254.169.254"))],
        ..strict_addresses()
    });
    for (host, refused_address) in [
        ("127.0.0.1", "127.0.0.1"),
        ("0.0.0.0", "0.0.0.0"),
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("[::1]", "::1"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("[::ffff:127.0.0.1]", "127.0.0.1"),
        ("[::ffff:7f00:1]", "127.0.0.1"),
        ("[::127.0.0.1]", "::7f00:1"),
        ("[64:ff9b::7f00:1]", "64:ff9b::7f00:1"),
        ("localhost", "127.0.0.1"),
        ("localhost.", "127.0.0.1"),
        ("LocalHost", "::1"),
        ("evil.localhost", "127.0.0.1"),
        ("169.254.169.254", "169.254.169.254"),
        ("[fd00:ec2::254]", "fd00:ec2::254"),
        ("100.100.100.200", "100.100.100.200"),
        ("metadata.google.internal", "169.254.169.254"),
    ] {
        let url = format!("http://{host}:{port}/hook");
        let error = client.post_json(post(&url, &[])).await.unwrap_err();
        let NetError::AddressRefused { url: u, reason } = &error else {
            panic!("{host}: expected an address refusal, got {error:?}");
        };
        assert_eq!(*u, url);
        assert!(
            reason.contains(&format!("{refused_address} is ")),
            "{host}: {reason}"
        );
    }
    // A zone id is not valid in a URL at all.
    let url = format!("http://[fe80::1%25lo]:{port}/hook");
    let error = client.post_json(post(&url, &[])).await.unwrap_err();
    assert!(matches!(error, NetError::InvalidUrl { .. }), "{error:?}");
    assert!(
        server.requests().is_empty(),
        "a refused request reached the server"
    );
}

#[tokio::test]
async fn metadata_addresses_stay_refused_even_with_loopback_permitted() {
    let client = client();
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/",
        "http://100.100.100.200/",
        "http://0.0.0.0:9/",
    ] {
        let error = client.post_json(post(url, &[])).await.unwrap_err();
        assert!(
            matches!(&error, NetError::AddressRefused { reason, .. } if reason.contains("never dialed")),
            "{url}: {error:?}"
        );
    }
}

#[tokio::test]
async fn a_static_override_to_loopback_is_refused_unless_loopback_is_permitted() {
    let server = server().await;
    let url = format!("http://hooks.internal.test:{}/hook", server.addr().port());
    let pinned = vec![("Hooks.Internal.Test.".to_owned(), ip("127.0.0.1"))];

    let strict = client_with(&ClientOptions {
        resolve: pinned.clone(),
        ..strict_addresses()
    });
    let error = strict.post_json(post(&url, &[])).await.unwrap_err();
    let NetError::AddressRefused { reason, .. } = &error else {
        panic!("expected an address refusal, got {error:?}");
    };
    assert!(reason.contains("`hooks.internal.test`"), "{reason}");
    assert!(
        reason.contains("127.0.0.1 is loopback (127.0.0.0/8)"),
        "{reason}"
    );
    assert!(server.requests().is_empty());

    let permitted = client_with(&ClientOptions {
        resolve: pinned,
        ..local_options()
    });
    let reply = permitted.post_json(post(&url, &[])).await.unwrap();
    assert_eq!(reply.status, 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].header("host"),
        Some(format!("hooks.internal.test:{}", server.addr().port()).as_str())
    );
}

#[tokio::test]
async fn allow_private_cidrs_admits_exactly_its_range() {
    let server = server().await;
    let port = server.addr().port();
    let client = client_with(&ClientOptions {
        allow_private_cidrs: vec!["127.0.0.1/32".parse().unwrap()],
        resolve: vec![
            ("receiver.test".to_owned(), ip("127.0.0.1")),
            ("neighbour.test".to_owned(), ip("127.0.0.2")),
            ("internal.test".to_owned(), ip("10.77.0.2")),
        ],
        ..strict_addresses()
    });

    // `localhost` resolves to 127.0.0.1 and ::1: only the admitted address is dialed.
    for admitted in [
        "127.0.0.1",
        "receiver.test",
        "[::ffff:127.0.0.1]",
        "localhost",
    ] {
        let url = format!("http://{admitted}:{port}/in");
        let reply = client.post_json(post(&url, &[])).await.unwrap();
        assert_eq!(reply.status, 200, "{admitted}");
    }
    assert_eq!(server.requests().len(), 4);

    for refused in ["127.0.0.2", "[::1]", "neighbour.test", "internal.test"] {
        let url = format!("http://{refused}:{port}/out");
        let error = client.post_json(post(&url, &[])).await.unwrap_err();
        assert!(
            matches!(error, NetError::AddressRefused { .. }),
            "{refused}: {error:?}"
        );
    }
    assert_eq!(
        server.requests().len(),
        4,
        "a refused request reached the server"
    );
}

#[tokio::test]
async fn transform_headers_are_injected_over_https_replacing_configured_ones() {
    let server = https_server().await;
    let url = format!("https://localhost:{}/hook", server.addr().port());
    let policy = policy(json!({"allowlist": [
        {"domain": "localhost",
         "transform": [{"Authorization": "Bearer real-secret"}, {"X-Injected": "yes"}]},
        {"domain": "*"},
    ]}));
    let configured = headers(&[
        ("authorization", "Bearer from-config"),
        ("X-Event-Source", "agent-sandbox"),
    ]);

    let reply = client_with(&https_options())
        .post_json(PostRequest {
            policy: &policy,
            ..post(&url, &configured)
        })
        .await
        .unwrap();

    assert_eq!(reply.status, 200);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let authorization: Vec<_> = requests[0]
        .headers
        .iter()
        .filter(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str())
        .collect();
    assert_eq!(authorization, ["Bearer real-secret"]);
    assert_eq!(requests[0].header("x-injected"), Some("yes"));
    assert_eq!(requests[0].header("x-event-source"), Some("agent-sandbox"));
}

#[tokio::test]
async fn transform_headers_are_never_sent_over_plain_http() {
    let server = server().await;
    let url = server.url("/hook");
    let policy = policy(json!({"allowlist": [
        {"domain": "127.0.0.1", "transform": {"Authorization": "Bearer real-secret"}},
    ]}));

    let error = client()
        .post_json(PostRequest {
            policy: &policy,
            ..post(&url, &[])
        })
        .await
        .unwrap_err();

    assert!(
        matches!(&error, NetError::PolicyRefused { reason, .. } if reason.contains("only sent over HTTPS")),
        "{error:?}"
    );
    assert!(!error.to_string().contains("real-secret"), "{error}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn plain_http_is_refused_by_an_https_only_client() {
    let server = server().await;
    let url = server.url("/hook");
    let client = client_with(&ClientOptions {
        permit_loopback: true,
        ..ClientOptions::default()
    });

    let error = client.post_json(post(&url, &[])).await.unwrap_err();
    assert!(
        matches!(&error, NetError::InsecureScheme { url: u } if *u == url),
        "{error:?}"
    );
    let error = client.post_json_stream(post(&url, &[])).await.unwrap_err();
    assert!(
        matches!(error, NetError::InsecureScheme { .. }),
        "{error:?}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn redirects_are_still_not_followed() {
    let server = https_server().await;
    let url = format!("https://localhost:{}/redirect", server.addr().port());
    let policy = policy(json!({"allowlist": [{"domain": "localhost"}]}));

    let reply = client_with(&https_options())
        .post_json(PostRequest {
            policy: &policy,
            ..post(&url, &[])
        })
        .await
        .unwrap();

    assert_eq!(reply.status, 302);
    let paths: Vec<_> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/redirect"]);
}

#[tokio::test]
async fn the_policy_refuses_before_any_lookup_or_connection() {
    let server = server().await;
    let client = client();
    let local = server.url("/hook");
    let unmatched = policy(json!({"allowlist": [{"domain": "*.example.com"}]}));
    for (policy, url) in [
        (&EgressPolicy::DISABLED, local.as_str()),
        (&unmatched, local.as_str()),
        // Refused by name: a lookup would have failed with a DNS error instead.
        (&unmatched, "http://secret-data.attacker.invalid/"),
        (&unmatched, "http://example.com/"),
    ] {
        let request = PostRequest {
            policy,
            ..post(url, &[])
        };
        let error = client.post_json(request.clone()).await.unwrap_err();
        assert!(
            matches!(error, NetError::PolicyRefused { .. }),
            "{url}: {error:?}"
        );
        let error = client.post_json_stream(request).await.unwrap_err();
        assert!(
            matches!(error, NetError::PolicyRefused { .. }),
            "{url}: {error:?}"
        );
    }
    assert!(server.requests().is_empty());
}

#[test]
fn an_invalid_static_override_fails_the_build() {
    let error = GuardedClient::new(&ClientOptions {
        resolve: vec![("bad..name".to_owned(), ip("127.0.0.1"))],
        ..ClientOptions::default()
    })
    .unwrap_err();
    assert!(
        matches!(&error, NetError::Build(message) if message.contains("bad..name")),
        "{error:?}"
    );
}
