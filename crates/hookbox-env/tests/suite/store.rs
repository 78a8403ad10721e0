use hookbox_env::{EnvValue, EnvironmentSpec, Environments, StoreError};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Home, snapshot};

#[tokio::test]
async fn environments_survive_a_reopen_and_metadata_holds_no_inline_content() {
    let home = Home::new();
    hookbox_env::CredentialStore::open(home.dir.path())
        .unwrap()
        .add("cred-1", None, "credential-value", &["api.example.com"])
        .unwrap();
    let env = home
        .create(json!({
            "sources": [{"type": "inline", "target": "workspace/secret.txt", "content": "very-secret-content"}],
            "network": {"allowlist": [{"domain": "*.example.com"}]},
            "env": {"A": "1", "TOKEN": {"credential": "cred-1"}},
        }))
        .await;
    let reopened = Environments::open(home.dir.path()).unwrap();
    let again = reopened.get(env.id()).unwrap();
    assert_eq!(again.root(), env.root());
    assert_eq!(again.created(), env.created());
    assert_eq!(
        again.network(),
        Some(&json!({"allowlist": [{"domain": "*.example.com"}]}))
    );
    let values: Vec<_> = again
        .env_vars()
        .iter()
        .map(|v| (v.name.as_str(), v.value.clone()))
        .collect();
    assert_eq!(
        values,
        [
            ("A", EnvValue::Literal("1".into())),
            (
                "TOKEN",
                EnvValue::Credential {
                    credential: "cred-1".into()
                }
            )
        ]
    );
    let ids: Vec<_> = reopened
        .list()
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(ids, [env.id().to_owned()]);
    // The metadata is the environment's record in the database (and its journal).
    let meta: String = ["hookbox.db", "hookbox.db-wal"]
        .iter()
        .filter_map(|name| std::fs::read(home.dir.path().join(name)).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .collect();
    assert!(meta.contains(env.id()), "the record is in the database");
    assert!(!meta.contains("very-secret-content"));
    assert!(
        env.id().starts_with("env_") && env.id().len() == 30,
        "{}",
        env.id()
    );
    assert!(
        env.created().ends_with('Z') && env.created().len() == 20,
        "{}",
        env.created()
    );
}

#[tokio::test]
async fn update_adds_files_and_replaces_what_it_gives() {
    let home = Home::new();
    let env = home
        .create(json!({
            "sources": [{"type": "inline", "target": "workspace/a.txt", "content": "a"}],
            "env": {"A": "1"},
        }))
        .await;
    std::fs::write(env.root().join("workspace/agent-made.txt"), "kept").unwrap();
    let spec = EnvironmentSpec::from_json(&json!({
        "environment_id": env.id(),
        "sources": [
            {"type": "inline", "target": "workspace/a.txt", "content": "a2"},
            {"type": "inline", "target": "workspace/new/b.txt", "content": "b"},
        ],
        "network": "disabled",
        "agents_writable": true,
    }))
    .unwrap();
    let updated = home.envs.apply(&spec).await.unwrap();
    assert_eq!(updated.id(), env.id());
    let read = |rel: &str| std::fs::read_to_string(env.root().join(rel)).unwrap();
    assert_eq!(read("workspace/a.txt"), "a2");
    assert_eq!(read("workspace/new/b.txt"), "b");
    assert_eq!(read("workspace/agent-made.txt"), "kept");
    let again = home.envs.get(env.id()).unwrap();
    assert_eq!(again.sources().len(), 3);
    assert_eq!(again.network(), Some(&json!("disabled")));
    assert_eq!(again.env_vars().len(), 1, "env kept when not given");
    assert!(again.agents_writable());
    assert!(again.read_only_entries().is_empty());
}

#[tokio::test]
async fn an_update_that_clashes_changes_nothing() {
    let home = Home::new();
    let env = home
        .create(
            json!({"sources": [{"type": "inline", "target": "workspace/dir/x", "content": "x"}]}),
        )
        .await;
    let before = snapshot(home.dir.path());
    let root_before = snapshot(env.root());
    let spec = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": "workspace/fine.txt", "content": "f"},
        {"type": "inline", "target": "workspace/dir", "content": "file over a directory"},
    ]}))
    .unwrap();
    let err = home.envs.update(env.id(), &spec).await.unwrap_err();
    assert!(matches!(err, StoreError::Update { .. }), "{err}");
    assert_eq!(snapshot(home.dir.path()), before);
    assert_eq!(snapshot(env.root()), root_before);
}

#[tokio::test]
async fn from_environment_copies_the_files() {
    let home = Home::new();
    let base = home
        .create(
            json!({"sources": [{"type": "inline", "target": "workspace/a.txt", "content": "a"}]}),
        )
        .await;
    let copy = home
        .create(json!({"from_environment": base.id(), "sources": [{"type": "inline", "target": "workspace/b.txt", "content": "b"}]}))
        .await;
    assert_ne!(copy.id(), base.id());
    assert_eq!(
        std::fs::read_to_string(copy.root().join("workspace/a.txt")).unwrap(),
        "a"
    );
    assert_eq!(copy.from_environment(), Some(base.id()));
    assert!(!base.root().join("workspace/b.txt").exists());
}

#[tokio::test]
async fn delete_removes_everything() {
    let home = Home::new();
    let env = home.create(json!({})).await;
    let root = env.root().to_path_buf();
    let dir = home.dir.path().join("environments").join(env.id());
    assert!(dir.exists() && root.exists());
    home.envs.delete(env.id()).unwrap();
    assert!(!dir.exists());
    assert!(!root.exists());
    assert!(matches!(
        home.envs.get(env.id()),
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        home.envs.delete(env.id()),
        Err(StoreError::NotFound { .. })
    ));
    assert!(home.envs.list().unwrap().is_empty());
    let left: Vec<_> = std::fs::read_dir(dir.parent().unwrap()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn invalid_ids_are_not_found_without_touching_anything() {
    let home = Home::new();
    let outside = home.dir.path().join("victim");
    std::fs::create_dir_all(outside.join("root")).unwrap();
    std::fs::write(outside.join("environment.json"), "{}").unwrap();
    let before = snapshot(home.dir.path());
    for id in [
        "../victim",
        "env_../../victim",
        "",
        "env_",
        "ENV_AAAAAAAAAAAAAAAAAAAAAAAAAA",
        "env_aaaaaaaaaaaaaaaaaaaaaaaaaa",
    ] {
        assert!(
            matches!(home.envs.get(id), Err(StoreError::NotFound { .. })),
            "{id}"
        );
        assert!(
            matches!(home.envs.delete(id), Err(StoreError::NotFound { .. })),
            "{id}"
        );
        let spec = EnvironmentSpec::default();
        assert!(
            matches!(
                home.envs.update(id, &spec).await,
                Err(StoreError::NotFound { .. })
            ),
            "{id}"
        );
    }
    assert_eq!(snapshot(home.dir.path()), before);
}

/// The files of environment `id` in `home` (names, relative to its directory, without its root).
fn beside_root(home: &Home, id: &str) -> Vec<String> {
    let dir = home.dir.path().join("environments").join(id);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "root" && name != "disk.img")
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn the_record_is_in_the_database_and_transform_secrets_in_a_private_file_only() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    let secret = "Bearer store-secret-81f3";
    let network = json!({"allowlist": [{"domain": "api.example.com", "transform": {"Authorization": secret}}]});
    let env = home
        .create(json!({"network": network, "env": {"A": "1"}}))
        .await;
    assert_eq!(beside_root(&home, env.id()), ["network.json"]);
    let secrets = home
        .dir
        .path()
        .join("environments")
        .join(env.id())
        .join("network.json");
    let mode = std::fs::metadata(&secrets).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{mode:o}");
    let database: Vec<u8> = ["hookbox.db", "hookbox.db-wal"]
        .iter()
        .filter_map(|name| std::fs::read(home.dir.path().join(name)).ok())
        .flatten()
        .collect();
    assert!(
        !database
            .windows(secret.len())
            .any(|window| window == secret.as_bytes()),
        "the secret is in the database"
    );
    let again = Environments::open(home.dir.path())
        .unwrap()
        .get(env.id())
        .unwrap();
    assert_eq!(again.network(), Some(&network));
    assert_eq!(
        again.to_json()["network"]["allowlist"][0]["transform"]["Authorization"],
        "[REDACTED]"
    );

    let plain = home.create(json!({"env": {"A": "1"}})).await;
    assert!(beside_root(&home, plain.id()).is_empty());
}

#[tokio::test]
async fn an_environment_json_of_an_older_hookbox_is_imported_once() {
    let home = Home::new();
    let id = "env_abcdefghijklmnopqrstuvwxyz";
    let dir = home.dir.path().join("environments").join(id);
    std::fs::create_dir_all(dir.join("root/workspace")).unwrap();
    std::fs::write(dir.join("root/workspace/kept.txt"), "kept").unwrap();
    let legacy = json!({
        "id": id,
        "created": "2026-01-01T00:00:05Z",
        "updated": "2026-01-02T00:00:05Z",
        "agents_writable": false,
        "sources": [{"type": "inline", "target": "/workspace/kept.txt", "size_bytes": 4}],
        "network": {"allowlist": [{"domain": "a.example.com", "transform": {"X-Key": "legacy-secret"}}]},
        "env": [],
    });
    std::fs::write(dir.join("environment.json"), legacy.to_string()).unwrap();
    assert!(matches!(
        home.envs.get(id),
        Err(StoreError::NotFound { .. })
    ));
    // An older server also kept a copy of its API view (secrets redacted) in the database.
    {
        use hookbox_store::Store;
        let mut copy = legacy.clone();
        copy["status"] = "active".into();
        copy["network"]["allowlist"][0]["transform"]["X-Key"] = "[REDACTED]".into();
        hookbox_store::SqliteStore::open_without_recovery(home.dir.path().join("hookbox.db"))
            .unwrap()
            .put_environment(id, copy)
            .unwrap();
    }

    let reopened = Environments::open(home.dir.path()).unwrap();
    let env = reopened.get(id).unwrap();
    assert_eq!(env.created(), "2026-01-01T00:00:05Z");
    assert_eq!(env.updated(), "2026-01-02T00:00:05Z");
    assert_eq!(env.network(), Some(&legacy["network"]));
    assert_eq!(env.sources().len(), 1);
    assert_eq!(
        std::fs::read_to_string(env.root().join("workspace/kept.txt")).unwrap(),
        "kept"
    );
    assert_eq!(beside_root(&home, id), ["network.json"]);
    let ids: Vec<_> = reopened
        .list()
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(ids, [id]);
    // Once: opening again changes nothing.
    let before = snapshot(home.dir.path());
    Environments::open(home.dir.path()).unwrap();
    assert_eq!(snapshot(home.dir.path()), before);
}

#[tokio::test]
async fn open_removes_an_environment_a_crash_left_without_its_record() {
    let home = Home::new();
    let kept = home.create(json!({})).await;
    // What a crash between the rename into place and the record leaves.
    let id = "env_abcdefghijklmnopqrstuvwxyz";
    let dir = home.dir.path().join("environments").join(id);
    std::fs::create_dir_all(dir.join("root/workspace")).unwrap();
    std::fs::write(dir.join(".uncommitted"), "").unwrap();
    // A directory with neither a record nor a marker is not hookbox's to remove.
    let stranger = home
        .dir
        .path()
        .join("environments")
        .join("env_bbbbbbbbbbbbbbbbbbbbbbbbbb");
    std::fs::create_dir_all(&stranger).unwrap();
    let reopened = Environments::open(home.dir.path()).unwrap();
    assert!(!dir.exists());
    assert!(stranger.exists());
    let ids: Vec<_> = reopened
        .list()
        .unwrap()
        .iter()
        .map(|e| e.id().to_owned())
        .collect();
    assert_eq!(ids, [kept.id().to_owned()]);
    assert_eq!(beside_root(&home, kept.id()), Vec::<String>::new());
}

#[tokio::test]
async fn an_update_to_a_network_without_secrets_leaves_no_copy_of_the_old_ones() {
    let home = Home::new();
    let network = json!({"allowlist": [{"domain": "api.example.com", "transform": {"Authorization": "Bearer old-secret-5e1c"}}]});
    let env = home.create(json!({ "network": network })).await;
    assert_eq!(beside_root(&home, env.id()), ["network.json"]);
    let plain = EnvironmentSpec::from_json(
        &json!({"network": {"allowlist": [{"domain": "api.example.com"}]}}),
    )
    .unwrap();
    let updated = home.envs.update(env.id(), &plain).await.unwrap();
    assert!(beside_root(&home, env.id()).is_empty());
    let plain_network = json!({"allowlist": [{"domain": "api.example.com"}]});
    assert_eq!(updated.network(), Some(&plain_network));
    // It still loads, from its record alone.
    assert_eq!(
        home.envs.get(env.id()).unwrap().network(),
        Some(&plain_network)
    );
}
