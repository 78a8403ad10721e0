use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::Api;

/// An inline source writing `text` to `target`.
fn inline(target: &str, text: &str) -> serde_json::Value {
    json!({"type": "inline", "target": target, "content": text})
}

#[tokio::test]
async fn environments_are_created_read_listed_and_deleted_under_any_version() {
    let api = Api::start().await;
    let reply = api
        .post_json(
            "/v1/environments",
            &json!({"sources": [inline("workspace/a.txt", "hi")], "network": "disabled"}),
        )
        .await;
    assert_eq!(reply.status, 200);
    let created = reply.json();
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("env_"), "{created}");
    assert_eq!(created["status"], "active");
    assert_eq!(created["network"], "disabled");
    assert_eq!(
        std::fs::read_to_string(api.root(&id).join("workspace/a.txt")).unwrap(),
        "hi"
    );

    let got = api.get(&format!("/v1beta/environments/{id}")).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json(), created);

    let copy = api
        .create(&json!({"from_environment": format!("environments/{id}"), "mode": "on_demand"}))
        .await;
    assert_eq!(
        std::fs::read_to_string(api.root(&copy).join("workspace/a.txt")).unwrap(),
        "hi"
    );

    let first = api.get("/v1alpha/environments?page_size=1").await.json();
    assert_eq!(first["environments"].as_array().unwrap().len(), 1);
    let token = first["next_page_token"].as_str().unwrap().to_owned();
    let second = api
        .get(&format!("/v1/environments?page_size=1&page_token={token}"))
        .await
        .json();
    assert_eq!(second["environments"].as_array().unwrap().len(), 1);
    assert!(second.get("next_page_token").is_none(), "{second}");
    let mut ids = vec![
        first["environments"][0]["id"].as_str().unwrap().to_owned(),
        second["environments"][0]["id"].as_str().unwrap().to_owned(),
    ];
    ids.sort();
    let mut expected = vec![id.clone(), copy.clone()];
    expected.sort();
    assert_eq!(ids, expected);

    let root = api.root(&id);
    let deleted = api
        .send("DELETE", &format!("/v1/environments/{id}"), &[], "")
        .await;
    assert_eq!((deleted.status, deleted.json()), (200, json!({})));
    assert!(!root.exists());
    let again = api
        .send("DELETE", &format!("/v1/environments/{id}"), &[], "")
        .await;
    assert_eq!(
        (again.status, again.error_code()),
        (404, "not_found".to_owned())
    );
    let gone = api.get(&format!("/v1/environments/{id}")).await;
    assert_eq!(
        (gone.status, gone.error_code()),
        (404, "not_found".to_owned())
    );
    let all = api.get("/v1/environments").await.json();
    assert_eq!(all["environments"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn an_empty_body_creates_an_empty_environment() {
    let api = Api::start().await;
    let reply = api.send("POST", "/v1/environments", &[], "").await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    assert!(api.root(&id).join("workspace").is_dir());
}

#[tokio::test]
async fn bad_bodies_get_400_with_the_json_path_of_the_problem() {
    let api = Api::start().await;
    let cases = [
        (json!([1]), "invalid_argument", "`$`"),
        (json!({"bogus": 1}), "invalid_argument", "`$.bogus`"),
        (json!({"sources": {}}), "invalid_argument", "`$.sources`"),
        (
            json!({"sources": [{"type": "inline", "target": 5, "content": ""}]}),
            "invalid_argument",
            "`$.sources[0].target`",
        ),
        (
            json!({"sources": [inline("a", "x"), {"type": "ftp", "target": "b"}]}),
            "invalid_argument",
            "`$.sources[1].type`",
        ),
        (
            json!({"sources": [{"type": "inline", "target": "etc/x", "content": ""}]}),
            "invalid_argument",
            "`$.sources[0].target`",
        ),
        (json!({"network": 3}), "invalid_argument", "`$.network`"),
        (
            json!({"from_environment": 3}),
            "invalid_argument",
            "`$.from_environment`",
        ),
        (
            json!({"mode": "self_hosted"}),
            "invalid_argument",
            "`$.mode`",
        ),
        (
            json!({"sources": [{"type": "local", "source": "/etc", "target": "workspace/e"}]}),
            "invalid_argument",
            "`$.sources[0]`",
        ),
        (
            json!({"sources": [{"type": "repository", "source": "/srv/repo"}]}),
            "invalid_argument",
            "`$.sources[0]`",
        ),
    ];
    for (body, code, path) in cases {
        let reply = api.post_json("/v1/environments", &body).await;
        assert_eq!(reply.status, 400, "{body}: {:?}", reply.body);
        assert_eq!(reply.error_code(), code, "{body}");
        assert!(
            reply.message().contains(path),
            "{body}: {}",
            reply.message()
        );
    }
    let broken = api
        .send("POST", "/v1/environments", &[], "{\"sources\": [")
        .await;
    assert_eq!(
        (broken.status, broken.error_code()),
        (400, "invalid_json".to_owned())
    );
    assert!(broken.message().contains("line 1"), "{}", broken.message());
    let listed = api.get("/v1/environments").await.json();
    assert_eq!(listed["environments"], json!([]), "nothing was created");
}

#[tokio::test]
async fn unknown_ids_are_404_and_bad_page_tokens_400() {
    let api = Api::start().await;
    for path in [
        "/v1/environments/env_aaaaaaaaaaaaaaaaaaaaaaaaaa",
        "/v1/environments/nonsense",
        "/v1/environments/env_aaaaaaaaaaaaaaaaaaaaaaaaaa/files/workspace",
    ] {
        let reply = api.get(path).await;
        assert_eq!(
            (reply.status, reply.error_code()),
            (404, "not_found".to_owned()),
            "{path}"
        );
    }
    let from_unknown = api
        .post_json(
            "/v1/environments",
            &json!({"from_environment": "env_aaaaaaaaaaaaaaaaaaaaaaaaaa"}),
        )
        .await;
    assert_eq!(from_unknown.status, 404);
    for query in ["page_token=zzz", "page_size=-2", "page_size=many"] {
        let reply = api.get(&format!("/v1/environments?{query}")).await;
        assert_eq!(reply.status, 400, "{query}");
        assert_eq!(reply.error_code(), "invalid_argument");
    }
}

#[tokio::test]
async fn oversized_bodies_get_413_in_the_error_shape() {
    let api = Api::start_with(|config| config.server.max_body_bytes = Some(64 * 1024)).await;
    let big = json!({"sources": [inline("workspace/big", &"x".repeat(100 * 1024))]});
    let reply = api.post_json("/v1/environments", &big).await;
    assert_eq!(reply.status, 413);
    assert_eq!(reply.error_code(), "payload_too_large");
    let fits = json!({"sources": [inline("workspace/small", &"x".repeat(1024))]});
    assert_eq!(api.post_json("/v1/environments", &fits).await.status, 200);
}

#[tokio::test]
async fn other_routes_answer_in_the_error_shape_never_204() {
    let api = Api::start().await;
    for (method, path, status, code) in [
        ("POST", "/v1/interactions", 400, "invalid_argument"),
        ("GET", "/v1beta/interactions/int_1", 404, "not_found"),
        ("POST", "/v1/interactions/int_1/cancel", 404, "not_found"),
        ("DELETE", "/v1/interactions/int_1", 404, "not_found"),
    ] {
        let reply = api.send(method, path, &[], "{}").await;
        assert_eq!(reply.status, status, "{method} {path}");
        assert_eq!(reply.error_code(), code, "{method} {path}");
    }
    let unknown = api.get("/v1/models").await;
    assert_eq!(
        (unknown.status, unknown.error_code()),
        (404, "not_found".to_owned())
    );
    let wrong_method = api.send("PATCH", "/v1/environments", &[], "").await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(wrong_method.error_code(), "method_not_allowed");
}

#[tokio::test]
async fn the_database_holds_every_environment_without_its_transform_secrets() {
    use hookbox_store::Store;
    let api = Api::start().await;
    let secret = "Bearer db-secret-5e2d";
    let id = api
        .create(&json!({
            "sources": [inline("workspace/a.txt", "hi")],
            "network": {"allowlist": [{"domain": "api.example.com", "transform": {"Authorization": secret}}]},
        }))
        .await;
    let store =
        hookbox_store::SqliteStore::open_without_recovery(api.home().join("hookbox.db")).unwrap();
    let record = store.get_environment(&id).unwrap();
    assert_eq!(record.metadata["id"], id.as_str());
    assert_eq!(
        record.metadata["network"]["allowlist"][0]["transform"]["Authorization"],
        "[REDACTED]"
    );
    let database = std::fs::read(api.home().join("hookbox.db")).unwrap();
    assert!(
        !database
            .windows(secret.len())
            .any(|window| window == secret.as_bytes()),
        "the secret is in the database file"
    );

    let reply = api
        .send("DELETE", &format!("/v1/environments/{id}"), &[], Vec::new())
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert!(store.get_environment(&id).is_err());
}
