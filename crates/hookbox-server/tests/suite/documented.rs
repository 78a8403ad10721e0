//! What the README documents for the environments API, sent to the server: every `network`
//! value its table gives is accepted and means what the table says, and its example spec is
//! valid. A value added to the table is checked without touching this test.

use hookbox_net::EgressPolicy;
use serde_json::{Value, json};

use super::support::Api;

/// The README.
fn readme() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap()
}

/// The `network` row of the README's table of environment members: each JSON value in
/// backticks with the policy its clause says it means (clauses without a meaning of their own,
/// like the allowlist's shape with `…`, are left out).
fn documented_networks() -> Vec<(Value, EgressPolicy)> {
    let readme = readme();
    let row = readme
        .lines()
        .find(|line| line.starts_with("| `network` |"))
        .expect("the README's table has a `network` row");
    let cell = row.trim_start_matches("| `network` |");
    let mut values = Vec::new();
    for clause in cell.split(';') {
        let meaning = if clause.contains("public egress") {
            EgressPolicy::PUBLIC
        } else if clause.contains("means none") {
            EgressPolicy::DISABLED
        } else {
            continue;
        };
        let spans = clause.split('`').skip(1).step_by(2);
        for span in spans {
            if let Ok(value) = serde_json::from_str::<Value>(span) {
                values.push((value, meaning.clone()));
            }
        }
    }
    values
}

#[tokio::test]
async fn every_network_value_the_readme_documents_is_accepted_and_means_what_it_says() {
    let documented = documented_networks();
    let shown: Vec<&Value> = documented.iter().map(|(value, _)| value).collect();
    for expected in [json!(null), json!({}), json!("disabled")] {
        assert!(
            shown.contains(&&expected),
            "{expected} not found in {shown:?}"
        );
    }
    let api = Api::start().await;
    for (network, meaning) in documented {
        let reply = api
            .post_json("/v1/environments", &json!({"network": network}))
            .await;
        assert_eq!(reply.status, 200, "network {network}: {:?}", reply.body);
        let id = reply.json()["id"].as_str().unwrap().to_owned();
        let stored = api.get(&format!("/v1/environments/{id}")).await.json();
        let policy = EgressPolicy::from_network(stored.get("network")).unwrap();
        assert!(policy == meaning, "network {network} stored as {stored}");
    }
}

#[test]
fn the_readmes_example_spec_is_valid() {
    let readme = readme();
    let start = readme
        .find("cat > spec.json <<'JSON'\n")
        .expect("the README's example spec");
    let body = &readme[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let body = &body[..body.find("\nJSON\n").unwrap()];
    let spec: Value = serde_json::from_str(body).unwrap();
    hookbox_env::EnvironmentSpec::from_json(&spec).unwrap();
}
