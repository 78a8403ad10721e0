use hookbox_net::{ClientOptions, GuardedClient, NetError};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use serde_json::json;

use super::{client, local_options, post};

#[tokio::test]
async fn https_works_with_an_extra_root_certificate() {
    let server = TestHttpServer::start_https(|_| Reply::json(200, &json!({"decision": "allow"})))
        .await
        .unwrap();
    let url = server.url("/hook");
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let client = GuardedClient::new(&ClientOptions {
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
        ..local_options()
    })
    .unwrap();

    let reply = client.post_json(post(&url, &[])).await.unwrap();

    assert_eq!(reply.status, 200);
    assert_eq!(reply.body, br#"{"decision":"allow"}"#);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].json(),
        json!({"tool_call": {"name": "read_file"}})
    );
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_connect_error() {
    let server = TestHttpServer::start_https(|_| Reply::text(200, ""))
        .await
        .unwrap();
    let url = server.url("/hook");

    let error = client().post_json(post(&url, &[])).await.unwrap_err();

    assert!(matches!(&error, NetError::Connect { .. }), "{error:?}");
    assert!(error.to_string().contains("certificate"), "{error}");
    assert!(server.requests().is_empty());
}
