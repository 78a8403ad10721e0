use hookbox_net::{EgressPolicy, PolicyError};
use serde_json::{Value, json};

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure here fails the test"
)]
fn parse(network: &Value) -> EgressPolicy {
    EgressPolicy::from_network(Some(network)).unwrap()
}

#[expect(
    clippy::unwrap_used,
    reason = "test helper: a failure here fails the test"
)]
fn parse_error(network: &Value) -> PolicyError {
    EgressPolicy::from_network(Some(network)).unwrap_err()
}

#[test]
fn domain_matching_table() {
    let cases: &[(&str, &str, bool)] = &[
        // Exact entries match the canonical host only.
        ("example.com", "example.com", true),
        ("example.com", "EXAMPLE.COM.", true),
        ("example.com", "Example.Com", true),
        ("EXAMPLE.COM.", "example.com", true),
        ("example.com", "www.example.com", false),
        ("example.com", "evilexample.com", false),
        ("example.com", "example.com.evil.com", false),
        ("example.com", "example.co", false),
        // `*` matches every host, IP literals included.
        ("*", "anything.example", true),
        ("*", "127.0.0.1", true),
        ("*", "[::1]", true),
        // `*.example.com`: strict subdomains, on label boundaries.
        ("*.example.com", "api.example.com", true),
        ("*.example.com", "a.b.example.com", true),
        ("*.example.com", "API.EXAMPLE.COM.", true),
        ("*.example.com", "example.com", false),
        ("*.example.com", "evilexample.com", false),
        ("*.example.com", "xexample.com", false),
        ("*.example.com", "example.com.evil.com", false),
        ("*.example.com", "api.example.com.evil.com", false),
        ("*.example.com", "example.comx", false),
        // IDN: Unicode and punycode spellings are the same host; homographs are not.
        ("bücher.example", "xn--bcher-kva.example", true),
        ("xn--bcher-kva.example", "BÜCHER.example", true),
        ("*.bücher.example", "shop.xn--bcher-kva.example", true),
        ("example.com", "exаmple.com", false), // Cyrillic `а`
        ("exаmple.com", "xn--exmple-4nf.com", true),
        // IP literal entries match the literal in any spelling the URL parser normalized.
        ("127.0.0.1", "127.0.0.1", true),
        ("[::1]", "[0:0:0:0:0:0:0:1]", true),
        ("::1", "[::1]", true),
    ];
    for (domain, host, expected) in cases {
        let policy = parse(&json!({"allowlist": [{"domain": domain}]}));
        let decision = policy.decide(host);
        assert_eq!(
            decision.allowed, *expected,
            "{domain} vs {host}: {}",
            decision.reason
        );
    }
}

#[test]
fn hosts_without_a_canonical_form_are_refused() {
    let policy = parse(&json!({"allowlist": [{"domain": "*"}]}));
    for host in ["", "a..b", "xn--a.example", "exa mple.com"] {
        let decision = policy.decide(host);
        assert!(!decision.allowed, "{host}");
        assert!(
            decision.reason.contains("not a valid domain name"),
            "{decision:?}"
        );
    }
    assert!(!EgressPolicy::PUBLIC.decide("xn--a.example").allowed);
}

#[test]
fn absent_null_and_empty_mean_public_egress_with_nothing_injected() {
    assert_eq!(
        EgressPolicy::from_network(None).unwrap(),
        EgressPolicy::PUBLIC
    );
    assert_eq!(parse(&Value::Null), EgressPolicy::PUBLIC);
    assert_eq!(parse(&json!({})), EgressPolicy::PUBLIC);
    let decision = EgressPolicy::PUBLIC.decide("Anything.Example.");
    assert!(decision.allowed);
    assert!(decision.inject.is_empty());
}

#[test]
fn disabled_refuses_everything() {
    for network in [json!("disabled"), json!({"allowlist": "disabled"})] {
        let policy = parse(&network);
        assert_eq!(policy, EgressPolicy::DISABLED);
        for host in ["example.com", "127.0.0.1", "[::1]", "localhost"] {
            let decision = policy.decide(host);
            assert!(!decision.allowed, "{network} {host}");
            assert!(decision.reason.contains("disabled"), "{}", decision.reason);
        }
    }
    let empty = parse(&json!({"allowlist": []}));
    assert!(!empty.decide("example.com").allowed);
}

#[test]
fn the_first_matching_entry_decides_and_its_transform_is_injected() {
    let policy = parse(&json!({"allowlist": [
        {"domain": "telemetry.example.com",
         "transform": {"Authorization": "Bearer telemetry_secret_token_123"}},
        {"domain": "*.example.com", "transform": [{"X-One": "1"}, {"X-Two": "2", "X-One": "3"}]},
        {"domain": "*"},
    ]}));
    let telemetry = policy.decide("telemetry.example.com");
    assert!(telemetry.allowed);
    assert_eq!(
        telemetry.inject,
        [(
            "Authorization".to_owned(),
            "Bearer telemetry_secret_token_123".to_owned()
        )]
    );
    assert!(
        telemetry.reason.contains("allowlist[0]"),
        "{}",
        telemetry.reason
    );
    let other = policy.decide("api.example.com");
    assert_eq!(
        other.inject,
        [
            ("X-One".to_owned(), "1".to_owned()),
            ("X-Two".to_owned(), "2".to_owned()),
            ("X-One".to_owned(), "3".to_owned()),
        ]
    );
    let rest = policy.decide("elsewhere.org");
    assert!(rest.allowed);
    assert!(rest.inject.is_empty());

    let broad_first = parse(&json!({"allowlist": [
        {"domain": "*"},
        {"domain": "telemetry.example.com", "transform": {"Authorization": "Bearer x"}},
    ]}));
    assert!(
        broad_first
            .decide("telemetry.example.com")
            .inject
            .is_empty()
    );
}

#[test]
fn an_entry_with_a_credential_refuses_rather_than_sending_without_the_secret() {
    let policy = parse(&json!({"allowlist": [
        {"domain": "api.example.com", "credential": "cred-42"},
        {"domain": "*"},
    ]}));
    let decision = policy.decide("api.example.com");
    assert!(!decision.allowed);
    assert!(decision.reason.contains("cred-42"), "{}", decision.reason);
    assert!(
        decision.reason.contains("allowlist[0]"),
        "{}",
        decision.reason
    );
    assert!(policy.decide("other.example.com").allowed);
}

#[test]
fn invalid_policies_name_the_json_path() {
    let cases = [
        (json!("enabled"), "network"),
        (json!(42), "network"),
        (json!({"allow_list": []}), "network.allow_list"),
        (json!({"allowlist": "all"}), "network.allowlist"),
        (
            json!({"allowlist": ["example.com"]}),
            "network.allowlist[0]",
        ),
        (json!({"allowlist": [{}]}), "network.allowlist[0].domain"),
        (
            json!({"allowlist": [{"domain": "*"}, {"domain": 7}]}),
            "network.allowlist[1].domain",
        ),
        (
            json!({"allowlist": [{"domain": "a.*.com"}]}),
            "network.allowlist[0].domain",
        ),
        (
            json!({"allowlist": [{"domain": "xn--a.com"}]}),
            "network.allowlist[0].domain",
        ),
        (
            json!({"allowlist": [{"domain": "*", "headers": {}}]}),
            "network.allowlist[0].headers",
        ),
        (
            json!({"allowlist": [{"domain": "*", "transform": "x"}]}),
            "network.allowlist[0].transform",
        ),
        (
            json!({"allowlist": [{"domain": "*", "transform": [{"X-A": "1"}, "x"]}]}),
            "network.allowlist[0].transform[1]",
        ),
        (
            json!({"allowlist": [{"domain": "*", "transform": {"bad header": "s3cret"}}]}),
            "network.allowlist[0].transform.bad header",
        ),
        (
            json!({"allowlist": [{"domain": "*", "transform": {"X-A": "s3cret\nline"}}]}),
            "network.allowlist[0].transform.X-A",
        ),
        (
            json!({"allowlist": [{"domain": "*", "transform": [{"Host": "s3cret"}]}]}),
            "network.allowlist[0].transform[0].Host",
        ),
        (
            json!({"allowlist": [{"domain": "*", "transform": {"X-A": 1}}]}),
            "network.allowlist[0].transform.X-A",
        ),
        (
            json!({"allowlist": [{"domain": "*", "credential": ""}]}),
            "network.allowlist[0].credential",
        ),
    ];
    for (network, path) in cases {
        let error = parse_error(&network);
        assert_eq!(error.path, path, "{network}: {error}");
        let message = error.to_string();
        assert!(message.contains(path), "{message}");
        assert!(
            !message.contains("s3cret"),
            "{message} leaks a header value"
        );
    }
}

#[test]
fn debug_output_hides_transform_values() {
    let policy = parse(&json!({"allowlist": [
        {"domain": "api.example.com", "transform": {"Authorization": "Bearer s3cret"}},
    ]}));
    let debug = format!("{policy:?} {:?}", policy.decide("api.example.com"));
    assert!(debug.contains("Authorization"), "{debug}");
    assert!(!debug.contains("s3cret"), "{debug}");
}

#[test]
fn matches_url_says_whether_the_policy_has_an_entry_for_the_host() {
    let allowlist = json!({"allowlist": [
        {"domain": "api.example.com", "credential": "not-resolved-here"},
        {"domain": "*.telemetry.test"}
    ]});
    let cases = [
        (json!(null), "https://anywhere.example.org/x", true),
        (json!("disabled"), "https://api.example.com/x", false),
        (allowlist.clone(), "https://api.example.com/x", true),
        (allowlist.clone(), "https://API.Example.com:8443/x", true),
        (allowlist.clone(), "https://a.telemetry.test/x", true),
        (allowlist.clone(), "https://telemetry.test/x", false),
        (allowlist.clone(), "https://other.example.com/x", false),
        (allowlist, "not a url", false),
    ];
    for (network, url, expected) in cases {
        assert_eq!(
            parse(&network).matches_url(url),
            expected,
            "{network} {url}"
        );
    }
}
