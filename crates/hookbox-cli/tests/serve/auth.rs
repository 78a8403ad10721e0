//! Attacks on an open API: requests without a key, and one key's client reaching another key's
//! environments, files and interactions.

use serde_json::{Value, json};

use super::http::{self, Reply};
use super::{api_key, serve};

/// A hookbox.toml whose agent `echo` answers "hi" and whose agent `tool` runs one
/// `code_execution` call, then answers.
fn write_agents(home: &std::path::Path) {
    let echo = home.join("echo.script.json");
    std::fs::write(
        &echo,
        r#"{"turns": [{"text": "hi"}, {"text": "hi again"}]}"#,
    )
    .unwrap();
    let tool = home.join("tool.script.json");
    std::fs::write(
        &tool,
        r#"{"turns": [{"tool_calls": [{"name": "code_execution", "args": {"code": "echo ran", "language": "bash"}}]}, {"text": "done"}]}"#,
    )
    .unwrap();
    std::fs::write(
        home.join("hookbox.toml"),
        format!(
            "[agents.echo]\nprovider = \"scripted\"\nscript = \"{}\"\n\n\
             [agents.tool]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            echo.display(),
            tool.display()
        ),
    )
    .unwrap();
}

#[test]
fn requests_need_a_valid_api_key_in_any_of_the_three_places() {
    let home = tempfile::tempdir().unwrap();
    let key = api_key(home.path(), "alice");
    assert!(key.len() >= 40, "{key}");
    let listed = super::super::hookbox_in(home.path(), &["api-keys", "list"], b"");
    assert_eq!(super::super::code(&listed), 0);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(listed.contains("alice"), "{listed}");
    assert!(!listed.contains(&key), "list printed the key: {listed}");
    // Stored hashed: the database file never holds the key.
    let db = std::fs::read(home.path().join("hookbox.db")).unwrap();
    assert!(!db.windows(key.len()).any(|window| window == key.as_bytes()));

    let served = serve(home.path(), &[]);
    let url = &served.base_url;
    let none = http::send(url, "GET", "/v1/environments", &[], "");
    assert_eq!(none.status, 401, "{none:?}");
    assert_eq!(none.error_code(), "unauthenticated");
    let wrong = format!("{}x", &key[..key.len() - 1]);
    for reply in [
        http::send(
            url,
            "GET",
            "/v1/environments",
            &[("x-goog-api-key", &wrong)],
            "",
        ),
        http::send(
            url,
            "GET",
            &format!("/v1/environments?key={wrong}"),
            &[],
            "",
        ),
        http::send(
            url,
            "GET",
            "/v1/environments",
            &[("authorization", &format!("Bearer {wrong}"))],
            "",
        ),
        http::send(
            url,
            "GET",
            "/v1/environments",
            &[("x-goog-api-key", "")],
            "",
        ),
    ] {
        assert_eq!(reply.status, 401, "{reply:?}");
        assert_eq!(reply.error_code(), "unauthenticated");
    }
    let ok = [
        http::send(
            url,
            "GET",
            "/v1/environments",
            &[("x-goog-api-key", &key)],
            "",
        ),
        http::send(url, "GET", &format!("/v1/environments?key={key}"), &[], ""),
        http::send(
            url,
            "GET",
            "/v1/environments?page_size=5",
            &[("authorization", &format!("Bearer {key}"))],
            "",
        ),
    ];
    for reply in ok {
        assert_eq!(reply.status, 200, "{reply:?}");
    }
    // Unknown routes are behind the key too (nothing reveals what exists).
    let unknown = http::send(url, "GET", "/v1/nothing", &[], "");
    assert_eq!(unknown.status, 401, "{unknown:?}");

    let listed = super::super::hookbox_in(home.path(), &["api-keys", "list"], b"");
    assert!(
        !String::from_utf8_lossy(&listed.stdout).contains("never"),
        "last use not recorded: {}",
        String::from_utf8_lossy(&listed.stdout)
    );
    let revoked = super::super::hookbox_in(home.path(), &["api-keys", "revoke", "alice"], b"");
    assert_eq!(super::super::code(&revoked), 0);
    let after = http::send(
        url,
        "GET",
        "/v1/environments",
        &[("x-goog-api-key", &key)],
        "",
    );
    assert_eq!(after.status, 401, "a revoked key still works: {after:?}");
    let again = super::super::hookbox_in(home.path(), &["api-keys", "revoke", "alice"], b"");
    assert_eq!(super::super::code(&again), 1);
    assert!(String::from_utf8_lossy(&again.stderr).contains("alice"));
    let _ = served.terminate();
}

#[test]
fn serve_refuses_to_start_without_a_key_and_no_auth_is_loopback_only() {
    let home = tempfile::tempdir().unwrap();
    let output = super::super::hookbox_in(home.path(), &["serve", "--listen", "127.0.0.1:0"], b"");
    assert_eq!(super::super::code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("hookbox api-keys create") && stderr.contains("--no-auth"),
        "{stderr}"
    );
    let output = super::super::hookbox_in(
        home.path(),
        &["serve", "--no-auth", "--listen", "0.0.0.0:0"],
        b"",
    );
    assert_eq!(super::super::code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loopback"), "{stderr}");

    let served = serve(home.path(), &["--no-auth"]);
    let reply = http::send(&served.base_url, "GET", "/v1/environments", &[], "");
    assert_eq!(reply.status, 200, "{reply:?}");
    let (_, log) = served.terminate();
    assert!(
        log.contains("WARNING") && log.contains("--no-auth"),
        "{log}"
    );
}

/// The id of a created resource, or a failure showing the reply.
fn id(reply: &Reply) -> String {
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.json()["id"].as_str().expect("id").to_owned()
}

#[test]
fn another_key_gets_404_for_everything_it_does_not_own() {
    let home = tempfile::tempdir().unwrap();
    write_agents(home.path());
    let alice = api_key(home.path(), "alice");
    let bob = api_key(home.path(), "bob");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;

    let env = id(&http::json(
        url,
        &alice,
        "POST",
        "/v1/environments",
        &json!({"sources": [{"type": "inline", "target": "workspace/a.txt", "content": "secret"}]}),
    ));
    let body = json!({"agent": "echo", "input": "hello", "environment": env});
    let first = http::send(
        url,
        "POST",
        "/v1/interactions",
        &[
            ("x-goog-api-key", &alice),
            ("content-type", "application/json"),
            ("idempotency-key", "k1"),
        ],
        &body.to_string(),
    );
    let interaction = id(&first);
    let start = http::send(
        url,
        "PUT",
        &format!("/upload/v1/environments/{env}/files/workspace/up.txt"),
        &[
            ("x-goog-api-key", &alice),
            ("x-goog-upload-protocol", "resumable"),
            ("x-goog-upload-command", "start"),
            ("x-goog-upload-header-content-length", "2"),
        ],
        "",
    );
    assert_eq!(start.status, 200, "{start:?}");
    let upload_url = start
        .headers
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("x-goog-upload-url")
                .then(|| value.trim().to_owned())
        })
        .expect("upload url");
    let upload_path = upload_url.trim_start_matches(url.as_str()).to_owned();

    // Everything bob tries on alice's resources is a 404, as for ids that do not exist.
    let bob_json =
        |method: &str, path: &str, body: &Value| http::json(url, &bob, method, path, body);
    let missing = |reply: Reply, what: &str| {
        assert_eq!(reply.status, 404, "{what}: {reply:?}");
        assert_eq!(reply.error_code(), "not_found", "{what}");
        assert!(!reply.body.contains("secret"), "{what}");
    };
    missing(
        bob_json("GET", &format!("/v1/environments/{env}"), &Value::Null),
        "get environment",
    );
    missing(
        bob_json(
            "GET",
            &format!("/v1/environments/{env}/files/workspace"),
            &Value::Null,
        ),
        "list files",
    );
    missing(
        bob_json(
            "GET",
            &format!("/v1/environments/{env}/files/workspace/a.txt?alt=media"),
            &Value::Null,
        ),
        "download",
    );
    missing(
        http::send(
            url,
            "PUT",
            &format!("/upload/v1/environments/{env}/files/workspace/b.txt"),
            &[
                ("x-goog-api-key", &bob),
                ("x-goog-upload-protocol", "resumable"),
                ("x-goog-upload-command", "start"),
                ("x-goog-upload-header-content-length", "2"),
            ],
            "",
        ),
        "start an upload",
    );
    missing(
        http::send(
            url,
            "POST",
            &upload_path,
            &[
                ("x-goog-api-key", &bob),
                ("x-goog-upload-command", "upload, finalize"),
                ("x-goog-upload-offset", "0"),
            ],
            "hi",
        ),
        "send the chunk of another key's upload",
    );
    missing(
        bob_json(
            "POST",
            "/v1/environments",
            &json!({"from_environment": env}),
        ),
        "copy from_environment",
    );
    missing(
        bob_json(
            "GET",
            &format!("/v1/interactions/{interaction}"),
            &Value::Null,
        ),
        "get interaction",
    );
    missing(
        bob_json(
            "GET",
            &format!("/v1/interactions/{interaction}/hook_traces"),
            &Value::Null,
        ),
        "hook traces",
    );
    missing(
        bob_json(
            "POST",
            &format!("/v1/interactions/{interaction}/cancel"),
            &Value::Null,
        ),
        "cancel",
    );
    missing(
        bob_json(
            "POST",
            "/v1/interactions",
            &json!({"agent": "echo", "input": "more", "previous_interaction_id": interaction}),
        ),
        "previous_interaction_id",
    );
    missing(
        bob_json(
            "POST",
            "/v1/interactions",
            &json!({"agent": "echo", "input": "x", "environment": env}),
        ),
        "environment by id",
    );
    missing(
        bob_json(
            "POST",
            "/v1/interactions",
            &json!({"agent": "echo", "input": "x", "environment": {"type": "remote", "environment_id": env,
                "sources": [{"type": "inline", "target": "workspace/a.txt", "content": "owned"}]}}),
        ),
        "update by environment_id",
    );
    missing(
        bob_json(
            "DELETE",
            &format!("/v1/interactions/{interaction}"),
            &Value::Null,
        ),
        "delete interaction",
    );
    missing(
        bob_json("DELETE", &format!("/v1/environments/{env}"), &Value::Null),
        "delete environment",
    );
    let listed = bob_json("GET", "/v1/environments", &Value::Null);
    assert_eq!(listed.status, 200);
    assert!(!listed.body.contains(&env), "{listed:?}");
    // The same Idempotency-Key never replays another key's interaction; the same body sent
    // again after it was answered is a new interaction, for anyone.
    let plain = json!({"agent": "echo", "input": "plain"}).to_string();
    let with_key = |key: &str, idempotency: Option<&str>| {
        let mut headers = vec![
            ("x-goog-api-key", key),
            ("content-type", "application/json"),
        ];
        if let Some(value) = idempotency {
            headers.push(("idempotency-key", value));
        }
        id(&http::send(
            url,
            "POST",
            "/v1/interactions",
            &headers,
            &plain,
        ))
    };
    let alices = with_key(&alice, None);
    assert_ne!(
        with_key(&alice, None),
        alices,
        "a body re-sent after its answer is re-run"
    );
    assert_ne!(with_key(&bob, None), alices);
    let alices = with_key(&alice, Some("k2"));
    assert_eq!(
        with_key(&alice, Some("k2")),
        alices,
        "a retry with the same Idempotency-Key is deduplicated"
    );
    assert_ne!(with_key(&bob, Some("k2")), alices);

    // Alice still has everything.
    let own = |method: &str, path: &str| http::json(url, &alice, method, path, &Value::Null);
    assert_eq!(own("GET", &format!("/v1/environments/{env}")).status, 200);
    let file = own(
        "GET",
        &format!("/v1/environments/{env}/files/workspace/a.txt?alt=media"),
    );
    assert_eq!(file.body, "secret");
    assert!(own("GET", "/v1/environments").body.contains(&env));
    let got = own("GET", &format!("/v1/interactions/{interaction}"));
    assert_eq!(got.json()["status"], "completed", "{got:?}");
    let next = http::json(
        url,
        &alice,
        "POST",
        "/v1/interactions",
        &json!({"agent": "echo", "input": "more", "previous_interaction_id": interaction}),
    );
    assert_eq!(next.json()["environment_id"], env.as_str(), "{next:?}");
    assert_eq!(
        own("DELETE", &format!("/v1/interactions/{interaction}")).status,
        200
    );
    assert_eq!(
        own("DELETE", &format!("/v1/environments/{env}")).status,
        200
    );
    let _ = served.terminate();
}
