use hookbox_store::{NewInteraction, SqliteStore, Status, Store, Update};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{db_path, request, text_step};

/// A completed interaction and an environment written before a restart are read back after it,
/// and the parent directory of the database was created on the way.
#[test]
fn records_survive_a_restart() {
    let (_dir, path) = db_path();
    let (before, environment) = {
        let store = SqliteStore::open(&path).unwrap();
        let id = store
            .create_interaction(NewInteraction {
                previous_interaction_id: None,
                ..NewInteraction::new("hookbox", request("hello"))
            })
            .unwrap()
            .interaction
            .id;
        store
            .append_steps(&id, vec![text_step("one"), text_step("two")])
            .unwrap();
        let done = Update {
            status: Some(Status::Completed),
            usage: Some(json!({"total_tokens": 3})),
            ..Update::default()
        };
        store.update_interaction(&id, done).unwrap();
        let environment = store
            .put_environment("env_kept", json!({"sources": []}))
            .unwrap();
        (store.get_interaction_with_steps(&id).unwrap(), environment)
    };
    assert!(path.is_file());

    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        store.recovered_at_open(),
        &[] as &[String],
        "nothing was running"
    );
    let after = store
        .get_interaction_with_steps(&before.interaction.id)
        .unwrap();
    assert_eq!(after, before);
    assert_eq!(store.get_environment("env_kept").unwrap(), environment);
}

/// An interaction still running when the store was closed (hookbox stopped) is failed on the next
/// open, with an error saying why; its steps stay, and stopped ones are left alone.
#[test]
fn reopening_fails_interactions_left_running() {
    let (_dir, path) = db_path();
    let (running, waiting, done) = {
        let store = SqliteStore::open(&path).unwrap();
        let start = |status| {
            let new = NewInteraction {
                status,
                ..NewInteraction::new("hookbox", request("x"))
            };
            store.create_interaction(new).unwrap().interaction.id
        };
        let (running, queued, done) = (
            start(Status::InProgress),
            start(Status::Queued),
            start(Status::Completed),
        );
        store
            .append_steps(&running, vec![text_step("partial")])
            .unwrap();
        (running, queued, done)
    };

    let store = SqliteStore::open(&path).unwrap();
    let mut expected = vec![running.clone(), waiting.clone()];
    expected.sort();
    assert_eq!(store.recovered_at_open(), expected.as_slice());
    for id in [&running, &waiting] {
        let interaction = store.get_interaction(id).unwrap();
        assert_eq!(interaction.status, Status::Failed);
        let error = interaction.error.unwrap();
        assert_eq!(error["code"], "hookbox_restarted");
        assert!(
            error["message"].as_str().unwrap().contains("restarted"),
            "{error}"
        );
    }
    assert_eq!(store.list_steps(&running).unwrap().len(), 1);
    assert_eq!(
        store.get_interaction(&done).unwrap().status,
        Status::Completed
    );
    assert_eq!(
        store.recover().unwrap(),
        Vec::<String>::new(),
        "recovery is idempotent"
    );
}

/// A tool that inspects the database while hookbox runs does not fail the running interactions.
#[test]
fn opening_without_recovery_leaves_running_interactions_alone() {
    let (_dir, path) = db_path();
    let server = SqliteStore::open(&path).unwrap();
    let id = super::support::start(&server, "x");
    let inspector = SqliteStore::open_without_recovery(&path).unwrap();
    assert_eq!(
        inspector.get_interaction(&id).unwrap().status,
        Status::InProgress
    );
    server.append_steps(&id, vec![text_step("more")]).unwrap();
    assert_eq!(
        inspector.list_steps(&id).unwrap().len(),
        1,
        "sees the server's writes"
    );
}

/// A database written by a newer hookbox is refused rather than misread.
#[test]
fn a_newer_schema_is_refused() {
    let (_dir, path) = db_path();
    drop(SqliteStore::open(&path).unwrap());
    {
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
    }
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(
        matches!(
            error,
            hookbox_store::Error::SchemaTooNew {
                found: 99,
                supported: 6
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("upgrade hookbox"), "{error}");
}

/// Schema 4 rebuilds the outbox table: the events a version-3 database holds survive it.
#[test]
fn the_outbox_keeps_its_events_through_the_signing_credential_migration() {
    let (_dir, path) = db_path();
    drop(SqliteStore::open(&path).unwrap());
    {
        // Back to schema 3 (no decision log yet), its outbox holding one pending event.
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "DROP TABLE decisions;
                 DROP TABLE outbox;
                 CREATE TABLE outbox (
                     seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                     environment TEXT NOT NULL, url TEXT NOT NULL, handler TEXT NOT NULL,
                     headers TEXT NOT NULL, timeout_ms INTEGER NOT NULL,
                     model_writable INTEGER NOT NULL, created INTEGER NOT NULL,
                     since INTEGER NOT NULL, updated INTEGER NOT NULL,
                     attempts INTEGER NOT NULL, next_attempt INTEGER NOT NULL,
                     last_error TEXT, state TEXT NOT NULL, body BLOB NOT NULL) STRICT;
                 INSERT INTO outbox VALUES (7, 'msg_old', 'env_a', 'https://t.example/e',
                     'hooks.json $.a', '[]', 10000, 0, 1, 1, 1, 2, 1, 'HTTP status 503',
                     'pending', CAST('{}' AS BLOB));
                 PRAGMA user_version = 3;",
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let heads = store.outbox_heads().unwrap();
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert_eq!(head.event.id, "msg_old");
    assert_eq!(
        head.event.queue,
        hookbox_store::OutboxQueue::Environment("env_a".to_owned())
    );
    assert_eq!(head.event.signing_credential, None);
    assert_eq!(
        (head.attempts, head.last_error.as_deref()),
        (2, Some("HTTP status 503"))
    );
    assert_eq!(head.event.body, b"{}");
}

/// Schema 6 rebuilds the outbox table with a refusal count: the events a version-5 database
/// holds survive it, pending and dead, none counted as refused.
#[test]
fn the_outbox_keeps_its_events_through_the_refusals_migration() {
    let (_dir, path) = db_path();
    drop(SqliteStore::open(&path).unwrap());
    {
        // Back to schema 5, its outbox holding a pending and a dead event.
        let connection = rusqlite::Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "DROP TABLE outbox;
                 CREATE TABLE outbox (
                     seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE,
                     environment TEXT NOT NULL, url TEXT NOT NULL, handler TEXT NOT NULL,
                     headers TEXT NOT NULL, timeout_ms INTEGER NOT NULL,
                     model_writable INTEGER NOT NULL, created INTEGER NOT NULL,
                     since INTEGER NOT NULL, updated INTEGER NOT NULL,
                     attempts INTEGER NOT NULL, next_attempt INTEGER NOT NULL,
                     last_error TEXT, state TEXT NOT NULL, signing_credential TEXT,
                     body BLOB NOT NULL) STRICT;
                 INSERT INTO outbox VALUES (7, 'msg_old', 'env_a', 'https://t.example/e',
                     'hooks.json $.a', '[]', 10000, 0, 1, 1, 1, 2, 1, 'HTTP status 503',
                     'pending', 'audit-key', CAST('{}' AS BLOB));
                 INSERT INTO outbox VALUES (8, 'msg_dead', 'env_b', 'https://t.example/e',
                     'hooks.json $.a', '[]', 10000, 0, 1, 1, 5, 9, 1, 'HTTP status 500',
                     'dead', NULL, CAST('{}' AS BLOB));
                 PRAGMA user_version = 5;",
            )
            .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let heads = store.outbox_heads().unwrap();
    assert_eq!(heads.len(), 1);
    let head = &heads[0];
    assert_eq!(head.event.id, "msg_old");
    assert_eq!(head.event.signing_credential.as_deref(), Some("audit-key"));
    assert_eq!(
        (head.attempts, head.refusals, head.last_error.as_deref()),
        (2, 0, Some("HTTP status 503"))
    );
    assert_eq!(head.event.body, b"{}");
    let dead = store.dead_outbox(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (dead[0].id.as_str(), dead[0].attempts, dead[0].refusals),
        ("msg_dead", 9, 0)
    );
    assert_eq!(dead[0].died, hookbox_store::Timestamp::from_unix_millis(5));
}
