use hookbox_env::{EnvironmentSpec, StoreError};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Home, snapshot};

/// Parses and creates `spec`, returning the JSON path of the error.
async fn refused_at(home: &Home, spec: &Value) -> String {
    let spec = match EnvironmentSpec::from_json(spec) {
        Ok(spec) => spec,
        Err(err) => return err.path,
    };
    match home.envs.create(&spec).await {
        Ok(env) => panic!("created {}", env.id()),
        Err(StoreError::Source { index, .. }) => format!("$.sources[{index}]"),
        Err(other) => panic!("unexpected error: {other}"),
    }
}

fn inline(target: &str) -> Value {
    json!({"type": "inline", "target": target, "content": "x"})
}

#[tokio::test]
async fn every_bad_spec_is_refused_at_its_json_path_and_nothing_is_written() {
    let home = Home::new();
    let host = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(host.path().join("one")).unwrap();
    std::fs::create_dir_all(host.path().join("two")).unwrap();
    std::fs::write(host.path().join("one/same.txt"), "1").unwrap();
    std::fs::write(host.path().join("two/same.txt"), "2").unwrap();
    let one = host.path().join("one").display().to_string();
    let two = host.path().join("two").display().to_string();
    let missing = host.path().join("missing").display().to_string();

    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"sources": [{"type": "skill_registry", "source": "x"}]}),
            "$.sources[0].type",
        ),
        (json!({"sources": [{"target": "a"}]}), "$.sources[0].type"),
        (
            json!({"sources": [inline("a"), inline("../escape")]}),
            "$.sources[1].target",
        ),
        (
            json!({"sources": [inline("workspace/../../x")]}),
            "$.sources[0].target",
        ),
        (json!({"sources": [inline("/")]}), "$.sources[0].target"),
        (json!({"sources": [inline("")]}), "$.sources[0].target"),
        (
            json!({"sources": [inline("etc/passwd")]}),
            "$.sources[0].target",
        ),
        (
            json!({"sources": [inline("usr/bin/x")]}),
            "$.sources[0].target",
        ),
        (
            json!({"sources": [inline("/lib64/x")]}),
            "$.sources[0].target",
        ),
        (
            json!({"sources": [inline("workspace/a\u{0}b")]}),
            "$.sources[0].target",
        ),
        (
            json!({"sources": [{"type": "inline", "target": "a", "content": "!!!", "encoding": "base64"}]}),
            "$.sources[0].content",
        ),
        (
            json!({"sources": [{"type": "inline", "target": "a", "content": "x", "encoding": "hex"}]}),
            "$.sources[0].encoding",
        ),
        (
            json!({"sources": [{"type": "inline", "target": "a"}]}),
            "$.sources[0].content",
        ),
        (
            json!({"sources": [{"type": "inline", "target": "a", "content": 42}]}),
            "$.sources[0].content",
        ),
        (
            json!({"sources": [{"type": "inline", "content": "x"}]}),
            "$.sources[0].target",
        ),
        (
            json!({"sources": [inline("workspace/a"), inline("/workspace/a")]}),
            "$.sources[1].target",
        ),
        (
            json!({"sources": [inline("workspace/a"), inline("workspace/a/b")]}),
            "$.sources[1].target",
        ),
        (
            json!({"sources": [{"type": "inline", "target": "a", "content": "x", "mode": "755"}]}),
            "$.sources[0].mode",
        ),
        (json!({"sourcez": []}), "$.sourcez"),
        (json!({"sources": {"type": "inline"}}), "$.sources"),
        (json!({"type": "local"}), "$.type"),
        (json!({"type": 3}), "$.type"),
        (json!({"env": {"A": 1}}), "$.env.A"),
        (json!({"env": {"BAD-NAME": "1"}}), "$.env.BAD-NAME"),
        (json!({"network": "open"}), "$.network"),
        (
            json!({"network": {"allowlist": [{"transform": {}}]}}),
            "$.network.allowlist[0].domain",
        ),
        (json!({"agents_writable": "yes"}), "$.agents_writable"),
        (json!({"environment_id": "../x"}), "$.environment_id"),
        (
            json!({"sources": [{"type": "gcs", "source": "gs://Bucket/prefix"}]}),
            "$.sources[0].source",
        ),
        (
            json!({"sources": [{"type": "repository", "source": "-u evil"}]}),
            "$.sources[0].source",
        ),
        (
            json!({"sources": [{"type": "local", "source": "relative/dir"}]}),
            "$.sources[0].source",
        ),
        // Only found while materialising: still nothing written.
        (
            json!({"sources": [inline("workspace/ok"), {"type": "local", "source": missing}]}),
            "$.sources[1]",
        ),
        (
            json!({"sources": [{"type": "local", "source": one}, {"type": "gcs", "source": format!("file://{two}")}]}),
            "$.sources[1]",
        ),
        (
            json!({"sources": [inline("workspace/ok"), {"type": "repository", "source": missing}]}),
            "$.sources[1]",
        ),
    ];
    let before = snapshot(home.dir.path());
    for (spec, path) in &cases {
        assert_eq!(refused_at(&home, spec).await, *path, "spec {spec}");
    }
    assert_eq!(snapshot(home.dir.path()), before);
}

#[tokio::test]
async fn errors_say_what_to_do() {
    let err = EnvironmentSpec::from_json(&json!({"sources": [inline("etc/passwd")]})).unwrap_err();
    assert!(err.to_string().contains("workspace/"), "{err}");
    let err =
        EnvironmentSpec::from_json(&json!({"sources": [{"type": "gcs", "source": "gs://b/p"}]}))
            .unwrap_err();
    assert!(
        err.to_string().contains(
            "bucket names are 3 to 222 characters long; write it as `gs://BUCKET/PREFIX`"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_credential_the_server_does_not_hold_is_refused_at_its_json_path() {
    let home = Home::new();
    let spec = |credential: &str| {
        EnvironmentSpec::from_json(&json!({
            "sources": [inline("workspace/a.txt")],
            "network": {"allowlist": [
                {"domain": "*"},
                {"domain": "api.example.com", "credential": credential}
            ]},
        }))
        .unwrap()
    };
    let before = std::fs::read_dir(home.dir.path().join("environments"))
        .unwrap()
        .count();
    match home.envs.create(&spec("example-token")).await {
        Err(StoreError::Misplaced { path, problem }) => {
            assert_eq!(path, "$.network.allowlist[1].credential");
            assert!(
                problem.contains("hookbox credentials add example-token"),
                "{problem}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    let after = std::fs::read_dir(home.dir.path().join("environments"))
        .unwrap()
        .count();
    assert_eq!(before, after, "a refused create wrote something");

    let env_spec = EnvironmentSpec::from_json(&json!({
        "env": {"TOKEN": {"credential": "missing"}},
    }))
    .unwrap();
    match home.envs.create(&env_spec).await {
        Err(StoreError::Misplaced { path, .. }) => assert_eq!(path, "$.env.TOKEN.credential"),
        other => panic!("expected a refusal, got {other:?}"),
    }

    hookbox_env::CredentialStore::open(home.dir.path())
        .unwrap()
        .add(
            "example-token",
            None,
            "Bearer secret-value",
            &["api.example.com"],
        )
        .unwrap();
    let created = home.envs.create(&spec("example-token")).await.unwrap();
    let updated = home.envs.update(created.id(), &spec("other-token")).await;
    assert!(
        matches!(updated, Err(StoreError::Misplaced { ref path, .. }) if path == "$.network.allowlist[1].credential"),
        "{updated:?}"
    );

    // Issue 11: binding the credential to a domain it does not list (any caller could choose
    // where the server's secret goes) is refused at the entry, on create and on update.
    for domain in ["evil.example", "*.example.com", "*"] {
        let bound = EnvironmentSpec::from_json(&json!({
            "network": {"allowlist": [
                {"domain": "api.example.com", "credential": "example-token"},
                {"domain": domain, "credential": "example-token"},
            ]},
        }))
        .unwrap();
        for result in [
            home.envs.create(&bound).await,
            home.envs.update(created.id(), &bound).await,
        ] {
            match result {
                Err(StoreError::Misplaced { path, problem }) => {
                    assert_eq!(path, "$.network.allowlist[1].credential", "{domain}");
                    assert!(
                        problem.contains("may only be sent to `api.example.com`"),
                        "{problem}"
                    );
                }
                other => panic!("{domain}: expected a refusal, got {other:?}"),
            }
        }
    }
    assert_eq!(
        home.envs.get(created.id()).unwrap().network(),
        spec("example-token").network.as_ref()
    );
}

/// A credential file written before credentials had domains is refused where it is named, with
/// the way to re-add it.
#[tokio::test]
async fn a_credential_without_domains_is_refused_with_how_to_re_add_it() {
    let home = Home::new();
    let dir = home.dir.path().join("credentials");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("legacy.json"),
        r#"{"name":"legacy","header":"Authorization","value":"Bearer x","created":"2026-01-01T00:00:00Z"}"#,
    )
    .unwrap();
    let spec = EnvironmentSpec::from_json(&json!({
        "network": {"allowlist": [{"domain": "api.example.com", "credential": "legacy"}]},
    }))
    .unwrap();
    match home.envs.create(&spec).await {
        Err(StoreError::Misplaced { path, problem }) => {
            assert_eq!(path, "$.network.allowlist[0].credential");
            assert!(problem.contains("hookbox credentials add"), "{problem}");
            assert!(problem.contains("--domain"), "{problem}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}
