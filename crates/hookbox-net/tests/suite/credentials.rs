//! Allowlist entries with a `credential`: resolution through a `CredentialSource`, injection by
//! the guarded client and the egress proxy, and refusals that never show the secret.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a failed setup or exchange fails the test"
)]

use std::collections::BTreeMap;

use hookbox_net::{
    ClientOptions, Credential, CredentialSource, EgressPolicy, NetError, PostRequest,
    SharedCredentials,
};
use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use serde_json::{Value, json};

use super::proxy_tls::{exchange, get, start_with, tls};
use super::{client_with, headers, local_options, post};

const VALUE: &str = "Bearer cr3dential-value";

/// Where `api-token` may be sent.
const TOKEN_DOMAINS: [&str; 4] = ["api.example.com", "a.example", "localhost", "127.0.0.1"];

/// A source holding `api-token` (sent as `Authorization`) and `key` (sent as `X-Api-Key`, to
/// `localhost` only).
fn store() -> BTreeMap<String, Credential> {
    BTreeMap::from([
        (
            "api-token".to_owned(),
            Credential::new("Authorization", VALUE, TOKEN_DOMAINS),
        ),
        (
            "key".to_owned(),
            Credential::new("X-Api-Key", "k3y-value", ["localhost"]),
        ),
    ])
}

fn resolved(network: &Value) -> EgressPolicy {
    EgressPolicy::from_network_with_credentials(Some(network), &store()).unwrap()
}

fn authorizations(request: &hookbox_test_support::RecordedRequest) -> Vec<&str> {
    request
        .headers
        .iter()
        .filter(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str())
        .collect()
}

#[test]
fn a_resolved_credential_is_injected_after_the_transform_and_replaces_its_header() {
    let policy = resolved(&json!({"allowlist": [
        {"domain": "api.example.com", "credential": "api-token",
         "transform": {"authorization": "Bearer transform", "X-Other": "1"}},
        {"domain": "*"},
    ]}));
    let decision = policy.decide("API.example.com.");
    assert!(decision.allowed, "{}", decision.reason);
    assert_eq!(
        decision.inject,
        [
            ("X-Other".to_owned(), "1".to_owned()),
            ("Authorization".to_owned(), VALUE.to_owned()),
        ]
    );
    assert!(decision.reason.contains("api-token"), "{}", decision.reason);
    assert!(
        decision.reason.contains("Authorization"),
        "{}",
        decision.reason
    );
    for text in [
        decision.reason.clone(),
        format!("{decision:?}"),
        format!("{policy:?}"),
    ] {
        assert!(!text.contains("cr3dential"), "{text}");
    }
    assert!(policy.decide("other.example.com").inject.is_empty());
}

#[test]
fn an_unknown_credential_fails_the_policy_naming_its_json_path() {
    let error = EgressPolicy::from_network_with_credentials(
        Some(&json!({"allowlist": [
            {"domain": "a.example", "credential": "api-token"},
            {"domain": "b.example", "credential": "missing-one"},
        ]})),
        &store(),
    )
    .unwrap_err();
    assert_eq!(error.path, "network.allowlist[1].credential");
    assert!(error.reason.contains("missing-one"), "{}", error.reason);
    assert!(
        error
            .to_string()
            .contains("hookbox credentials add missing-one --domain"),
        "{error}"
    );
}

/// Issue 11: a credential goes only to the domains it lists. An allowlist entry binding it to
/// any other domain (another host, a broader wildcard, `*`) fails the policy at the entry's
/// `credential`; one inside them is accepted.
#[test]
fn a_credential_bound_to_a_domain_it_does_not_list_fails_the_policy() {
    let wildcard = BTreeMap::from([(
        "token".to_owned(),
        Credential::new("Authorization", VALUE, ["api.example.com", "*.svc.example"]),
    )]);
    for domain in [
        "evil.example",
        "example.com",
        "*.example.com",
        "*",
        "svc.example",
    ] {
        let network = json!({"allowlist": [
            {"domain": "api.example.com", "credential": "token"},
            {"domain": domain, "credential": "token"},
        ]});
        let error =
            EgressPolicy::from_network_with_credentials(Some(&network), &wildcard).unwrap_err();
        assert_eq!(error.path, "network.allowlist[1].credential", "{domain}");
        assert!(
            error
                .reason
                .contains("may only be sent to `api.example.com`, `*.svc.example`"),
            "{domain}: {error}"
        );
        assert!(!error.to_string().contains("cr3dential"), "{error}");
    }
    for domain in [
        "API.example.com.",
        "a.svc.example",
        "*.svc.example",
        "*.b.svc.example",
    ] {
        let network = json!({"allowlist": [{"domain": domain, "credential": "token"}]});
        EgressPolicy::from_network_with_credentials(Some(&network), &wildcard)
            .unwrap_or_else(|error| panic!("{domain}: {error}"));
    }
}

/// A credential without domains (stored before they were required) is refused wherever it is
/// named, with a message saying how to re-add it; so is one resolved only at decision time for
/// a host it does not list.
#[test]
fn a_credential_without_domains_is_refused_and_late_lookups_check_domains_too() {
    let none: [&str; 0] = [];
    let old = BTreeMap::from([(
        "token".to_owned(),
        Credential::new("Authorization", VALUE, none),
    )]);
    let network = json!({"allowlist": [{"domain": "api.example.com", "credential": "token"}]});
    let error = EgressPolicy::from_network_with_credentials(Some(&network), &old).unwrap_err();
    assert_eq!(error.path, "network.allowlist[0].credential");
    assert!(
        error
            .reason
            .contains("hookbox credentials add NAME --domain HOST"),
        "{error}"
    );

    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "*.example.org", "credential": "api-token"},
    ]})))
    .unwrap();
    let decision = policy.decide_with_credentials("x.example.org", &store());
    assert!(!decision.allowed, "{decision:?}");
    assert!(
        decision.reason.contains("may not be sent there"),
        "{decision:?}"
    );
    assert!(decision.inject.is_empty());
    let decision = policy.decide_with_credentials("x.example.org", &old);
    assert!(!decision.allowed, "{decision:?}");
}

#[test]
fn an_unreadable_or_invalid_credential_fails_the_policy_without_its_value() {
    let failing = |id: &str| -> Result<Option<Credential>, String> {
        Err(format!("the file of `{id}` is unreadable"))
    };
    let network = json!({"allowlist": [{"domain": "*", "credential": "api-token"}]});
    let error = EgressPolicy::from_network_with_credentials(Some(&network), &failing).unwrap_err();
    assert_eq!(error.path, "network.allowlist[0].credential");
    assert!(error.reason.contains("unreadable"), "{}", error.reason);

    let bad = BTreeMap::from([(
        "api-token".to_owned(),
        Credential::new("Authorization", "line\nbr3ak-secret", ["*.example"]),
    )]);
    let error = EgressPolicy::from_network_with_credentials(Some(&network), &bad).unwrap_err();
    assert_eq!(error.path, "network.allowlist[0].credential");
    assert!(!error.to_string().contains("br3ak-secret"), "{error}");
}

#[test]
fn an_unresolved_credential_is_refused_at_decision_time_naming_it() {
    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "api.example.com", "credential": "api-token"},
        {"domain": "x.example.com", "credential": "nope"},
    ]})))
    .unwrap();
    let without = policy.decide("api.example.com");
    assert!(!without.allowed);
    assert!(without.reason.contains("api-token"), "{}", without.reason);

    let with = policy.decide_with_credentials("api.example.com", &store());
    assert!(with.allowed, "{}", with.reason);
    assert_eq!(with.inject[0].1, VALUE);

    let unknown = policy.decide_with_credentials("x.example.com", &store());
    assert!(!unknown.allowed);
    assert!(unknown.reason.contains("`nope`"), "{}", unknown.reason);
    assert!(
        unknown.reason.contains("does not have"),
        "{}",
        unknown.reason
    );
}

async fn https_server() -> TestHttpServer {
    TestHttpServer::start_https(|_| Reply::text(200, "reached"))
        .await
        .unwrap()
}

fn https_options() -> ClientOptions {
    ClientOptions {
        extra_root_certs_pem: vec![TEST_CA_PEM.to_vec()],
        permit_loopback: true,
        resolve: vec![("localhost".to_owned(), "127.0.0.1".parse().unwrap())],
        ..ClientOptions::default()
    }
}

#[tokio::test]
async fn the_guarded_client_injects_a_resolved_credential_over_the_configured_header() {
    let server = https_server().await;
    let url = format!("https://localhost:{}/hook", server.addr().port());
    let policy = resolved(&json!({"allowlist": [
        {"domain": "localhost", "credential": "api-token"},
    ]}));
    let configured = headers(&[("Authorization", "Bearer from-sandbox"), ("X-Keep", "1")]);
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
    assert_eq!(authorizations(&requests[0]), [VALUE]);
    assert_eq!(requests[0].header("x-keep"), Some("1"));
}

#[tokio::test]
async fn a_client_with_a_credential_source_resolves_unresolved_policies_per_request() {
    let server = https_server().await;
    let url = format!("https://localhost:{}/hook", server.addr().port());
    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "localhost", "credential": "key"},
    ]})))
    .unwrap();

    // Without a source the request is refused before anything is sent.
    let error = client_with(&https_options())
        .post_json(PostRequest {
            policy: &policy,
            ..post(&url, &[])
        })
        .await
        .unwrap_err();
    assert!(
        matches!(&error, NetError::PolicyRefused { reason, .. } if reason.contains("`key`")),
        "{error:?}"
    );
    assert!(server.requests().is_empty());

    let client = client_with(&ClientOptions {
        credentials: Some(SharedCredentials::new(store())),
        ..https_options()
    });
    let reply = client
        .post_json(PostRequest {
            policy: &policy,
            ..post(&url, &[])
        })
        .await
        .unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(server.requests()[0].header("x-api-key"), Some("k3y-value"));

    // An id the source does not know is refused naming it.
    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "localhost", "credential": "unknown-id"},
    ]})))
    .unwrap();
    let error = client
        .post_json(PostRequest {
            policy: &policy,
            ..post(&url, &[])
        })
        .await
        .unwrap_err();
    assert!(error.to_string().contains("unknown-id"), "{error}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn credentials_are_never_sent_over_plain_http() {
    let server = TestHttpServer::start(|_| Reply::text(200, "reached"))
        .await
        .unwrap();
    let url = server.url("/hook");
    let policy = resolved(&json!({"allowlist": [
        {"domain": "127.0.0.1", "credential": "api-token"},
    ]}));
    let error = client_with(&local_options())
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
    assert!(
        !format!("{error} {error:?}").contains("cr3dential"),
        "{error}"
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_proxy_injects_a_resolved_credential_on_intercepted_tls() {
    let policy = resolved(&json!({"allowlist": [
        {"domain": "localhost", "credential": "api-token"},
    ]}));
    let running = start_with(policy, vec![TEST_CA_PEM.to_vec()]).await;
    let tunnel = running.tunnel().await;
    let mut client = tls(tunnel, "localhost", running.ca.certificate_pem().as_bytes())
        .await
        .unwrap();
    let response = exchange(&mut client, &get("/v1/x", &running.authority())).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let requests = running.upstream.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(authorizations(&requests[0]), [VALUE]);

    let decisions = running.wait_for_decisions(2).await;
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    assert!(
        decisions
            .iter()
            .all(|decision| decision.allowed && decision.intercepted),
        "{decisions:?}"
    );
    assert!(decisions[0].reason.contains("api-token"), "{decisions:?}");
    for decision in &decisions {
        let debug = format!("{decision:?}");
        assert!(!debug.contains("cr3dential"), "{debug}");
    }
}

#[tokio::test]
async fn the_proxy_refuses_a_host_whose_credential_is_unresolved() {
    let policy = EgressPolicy::from_network(Some(&json!({"allowlist": [
        {"domain": "localhost", "credential": "api-token"},
    ]})))
    .unwrap();
    let source: &dyn CredentialSource = &store();
    assert!(policy.decide_with_credentials("localhost", source).allowed);
    let running = start_with(policy, vec![TEST_CA_PEM.to_vec()]).await;
    let mut stream = tokio::net::TcpStream::connect(running.proxy_address())
        .await
        .unwrap();
    let authority = running.authority();
    tokio::io::AsyncWriteExt::write_all(
        &mut stream,
        format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes(),
    )
    .await
    .unwrap();
    let mut response = Vec::new();
    let mut buffer = [0_u8; 4096];
    while !String::from_utf8_lossy(&response).contains("api-token") {
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            tokio::io::AsyncReadExt::read(&mut stream, &mut buffer),
        )
        .await
        .unwrap()
        .unwrap();
        if read == 0 {
            break;
        }
        response.extend_from_slice(&buffer[..read]);
    }
    let response = String::from_utf8_lossy(&response);
    assert!(response.starts_with("HTTP/1.1 403"), "{response}");
    assert!(response.contains("api-token"), "{response}");
    assert!(running.upstream.requests().is_empty());
}
