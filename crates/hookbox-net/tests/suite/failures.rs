use hookbox_net::{ClientOptions, GuardedClient, NetError};
use hookbox_test_support::{Reply, TestHttpServer};

use super::{client, headers, post};

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/hook");

    let error = client().post_json(post(&url, &[])).await.unwrap_err();

    assert!(
        matches!(&error, NetError::Connect { url: u, .. } if *u == url),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains(&url), "{message}");
    assert!(message.to_lowercase().contains("refused"), "{message}");
}

#[tokio::test]
async fn invalid_urls_and_schemes_are_refused() {
    let client = client();
    for url in ["not a url", "127.0.0.1:8080/hook", "http://"] {
        let error = client.post_json(post(url, &[])).await.unwrap_err();
        assert!(
            matches!(&error, NetError::InvalidUrl { url: u, .. } if u == url),
            "{error:?}"
        );
    }
    for url in [
        "ftp://example.com/hook",
        "file:///etc/passwd",
        "unix:/run/x.sock",
    ] {
        let error = client.post_json(post(url, &[])).await.unwrap_err();
        assert!(
            matches!(&error, NetError::UnsupportedScheme { url: u } if u == url),
            "{error:?}"
        );
    }
}

#[tokio::test]
async fn invalid_or_reserved_headers_are_refused_before_anything_is_sent() {
    let server = TestHttpServer::start(|_| Reply::text(200, ""))
        .await
        .unwrap();
    let url = server.url("/hook");
    let client = client();

    for (name, value) in [
        ("bad header", "v"),
        ("x-ok", "two\r\nlines"),
        ("Content-Type", "text/plain"),
        ("Host", "elsewhere.example"),
        ("content-length", "1"),
    ] {
        let configured = headers(&[("x-fine", "1"), (name, value)]);
        let error = client.post_json(post(&url, &configured)).await.unwrap_err();
        assert!(
            matches!(&error, NetError::InvalidHeader { name: n, .. } if n == name),
            "{error:?}"
        );
        assert!(error.to_string().contains(name), "{error}");
    }
    assert!(server.requests().is_empty());
}

#[test]
fn invalid_options_fail_to_build() {
    let bad_agent = ClientOptions {
        user_agent: "line\nbreak".to_owned(),
        ..ClientOptions::default()
    };
    assert!(matches!(
        GuardedClient::new(&bad_agent),
        Err(NetError::Build(_))
    ));

    let bad_root = ClientOptions {
        extra_root_certs_pem: vec![b"-----BEGIN CERTIFICATE-----\nAAAA\n".to_vec()],
        ..ClientOptions::default()
    };
    let error = GuardedClient::new(&bad_root).unwrap_err();
    assert!(
        error.to_string().contains("extra root certificate #1"),
        "{error}"
    );
}
