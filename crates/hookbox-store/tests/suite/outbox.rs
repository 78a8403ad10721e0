//! The audit outbox: per-environment order, settling, backlog, retry, shedding and pruning.

use hookbox_store::{
    NewOutboxEvent, OutboxQueue, OutboxState, Settlement, SqliteStore, Store, Timestamp,
};
use pretty_assertions::assert_eq;

use super::support::{db_path, memory};

/// An event `id` of environment `environment` for `url`.
fn event(id: &str, environment: &str, url: &str) -> NewOutboxEvent {
    NewOutboxEvent {
        id: id.to_owned(),
        queue: OutboxQueue::Environment(environment.to_owned()),
        url: url.to_owned(),
        handler: ".agents/hooks.json $.audit.post_tool_execution[0].hooks[0]".to_owned(),
        headers: vec![("X-Source".to_owned(), "hookbox".to_owned())],
        body: format!(r#"{{"n":"{id}"}}"#).into_bytes(),
        timeout_ms: 10_000,
        model_writable: false,
        signing_credential: None,
    }
}

/// The ids of the current heads.
fn head_ids(store: &dyn Store) -> Vec<String> {
    store
        .outbox_heads()
        .unwrap()
        .into_iter()
        .map(|head| head.event.id)
        .collect()
}

#[test]
fn an_sdk_session_has_a_queue_of_its_own_even_with_an_environment_ids_spelling() {
    let store = memory();
    let environment = event("msg_e", "env_a", "https://t.example/e");
    let session = NewOutboxEvent {
        id: "msg_s".to_owned(),
        queue: OutboxQueue::Session("env_a".to_owned()),
        signing_credential: Some("audit-key".to_owned()),
        ..environment.clone()
    };
    store.enqueue_outbox(&environment).unwrap();
    store.enqueue_outbox(&session).unwrap();
    let heads: Vec<NewOutboxEvent> = store
        .outbox_heads()
        .unwrap()
        .into_iter()
        .map(|head| head.event)
        .collect();
    assert_eq!(heads, [environment, session]);
}

#[test]
fn each_environment_sends_its_oldest_event_first() {
    let store = memory();
    for (id, environment) in [
        ("msg_a1", "env_a"),
        ("msg_b1", "env_b"),
        ("msg_a2", "env_a"),
    ] {
        store
            .enqueue_outbox(&event(id, environment, "https://t.example/e"))
            .unwrap();
    }
    let heads = store.outbox_heads().unwrap();
    assert_eq!(heads.len(), 2);
    assert_eq!(
        heads[0].event,
        event("msg_a1", "env_a", "https://t.example/e")
    );
    assert_eq!(heads[0].state, OutboxState::Pending);
    assert_eq!(
        (heads[0].attempts, heads[0].last_error.as_deref()),
        (0, None)
    );
    assert_eq!(heads[0].created, heads[0].since);

    let later = Timestamp::from_unix_millis(Timestamp::now().unix_millis() + 60_000);
    let retry = Settlement::Retry {
        error: "HTTP status 503".to_owned(),
        at: later,
    };
    store.settle_outbox("msg_a1", &retry).unwrap();
    let heads = store.outbox_heads().unwrap();
    assert_eq!(
        heads[0].event.id, "msg_a1",
        "a failed event keeps its place"
    );
    assert_eq!((heads[0].attempts, heads[0].next_attempt), (1, later));
    assert_eq!(heads[0].last_error.as_deref(), Some("HTTP status 503"));

    store
        .settle_outbox("msg_a1", &Settlement::Delivered)
        .unwrap();
    assert_eq!(head_ids(&store), ["msg_b1", "msg_a2"]);
    // Settling a settled event changes nothing.
    store
        .settle_outbox(
            "msg_a1",
            &Settlement::Dead {
                error: "late".to_owned(),
            },
        )
        .unwrap();
    store
        .settle_outbox(
            "msg_a2",
            &Settlement::Dead {
                error: "too old".to_owned(),
            },
        )
        .unwrap();
    assert_eq!(head_ids(&store), ["msg_b1"]);
}

#[test]
fn the_backlog_is_told_per_destination_and_dead_events_can_be_retried() {
    let store = memory();
    let (up, down) = ("https://up.example/e", "https://down.example/e");
    store.enqueue_outbox(&event("msg_1", "env_a", up)).unwrap();
    store
        .enqueue_outbox(&event("msg_2", "env_b", down))
        .unwrap();
    store
        .enqueue_outbox(&event("msg_3", "env_b", down))
        .unwrap();
    store
        .settle_outbox("msg_1", &Settlement::Delivered)
        .unwrap();
    store
        .settle_outbox(
            "msg_2",
            &Settlement::Dead {
                error: "connection refused".to_owned(),
            },
        )
        .unwrap();
    let destinations = store.outbox_destinations().unwrap();
    assert_eq!(destinations.len(), 2);
    let (down_row, up_row) = (&destinations[0], &destinations[1]);
    assert_eq!(
        (down_row.url.as_str(), down_row.pending, down_row.dead),
        (down, 1, 1)
    );
    assert!(down_row.oldest_pending.is_some());
    assert_eq!(down_row.last_error.as_deref(), Some("connection refused"));
    assert_eq!((up_row.pending, up_row.dead, up_row.delivered), (0, 0, 1));
    assert_eq!(
        (up_row.oldest_pending, up_row.last_error.as_deref()),
        (None, None)
    );

    assert_eq!(store.retry_dead_outbox().unwrap(), 1);
    assert_eq!(
        head_ids(&store),
        ["msg_2"],
        "the retried event goes first again"
    );
    assert_eq!(store.outbox_destinations().unwrap()[0].dead, 0);
}

#[test]
fn a_full_outbox_sheds_its_oldest_events_as_dead_and_prunes_settled_ones() {
    let store = memory();
    for n in 0..5 {
        store
            .enqueue_outbox(&event(&format!("msg_{n}"), "env_a", "https://t.example/e"))
            .unwrap();
    }
    assert_eq!(store.shed_outbox(3).unwrap(), 2);
    assert_eq!(store.shed_outbox(3).unwrap(), 0);
    assert_eq!(head_ids(&store), ["msg_2"]);
    let destination = &store.outbox_destinations().unwrap()[0];
    assert_eq!((destination.pending, destination.dead), (3, 2));
    assert!(
        destination
            .last_error
            .as_deref()
            .unwrap_or_default()
            .contains("max_pending = 3"),
        "{destination:?}"
    );
    store
        .settle_outbox("msg_2", &Settlement::Delivered)
        .unwrap();
    store
        .settle_outbox("msg_3", &Settlement::Delivered)
        .unwrap();
    assert_eq!(
        store.prune_outbox(1).unwrap(),
        2,
        "one delivered and one dead go"
    );
    let destination = &store.outbox_destinations().unwrap()[0];
    assert_eq!(
        (destination.pending, destination.dead, destination.delivered),
        (1, 1, 1)
    );
}

#[test]
fn pending_events_survive_a_reopen_and_ids_are_checked() {
    let (_dir, path) = db_path();
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .enqueue_outbox(&event("msg_kept", "env_a", "https://t.example/e"))
            .unwrap();
        assert!(
            store
                .enqueue_outbox(&event("msg_kept", "env_b", "https://t.example/e"))
                .is_err()
        );
        assert!(
            store
                .enqueue_outbox(&event("../x", "env_b", "https://t.example/e"))
                .is_err()
        );
    }
    let store = SqliteStore::open(&path).unwrap();
    let heads = store.outbox_heads().unwrap();
    assert_eq!(heads.len(), 1);
    assert_eq!(
        heads[0].event,
        event("msg_kept", "env_a", "https://t.example/e")
    );
}

#[test]
fn a_delivered_events_body_is_dropped_and_a_dead_ones_kept() {
    let (_dir, path) = db_path();
    let store = SqliteStore::open(&path).unwrap();
    for id in ["msg_sent", "msg_dead"] {
        store
            .enqueue_outbox(&event(id, id, "https://t.example/e"))
            .unwrap();
    }
    store
        .settle_outbox("msg_sent", &Settlement::Delivered)
        .unwrap();
    store
        .settle_outbox(
            "msg_dead",
            &Settlement::Dead {
                error: "refused".to_owned(),
            },
        )
        .unwrap();
    let connection = rusqlite::Connection::open(&path).unwrap();
    let length = |id: &str| -> i64 {
        connection
            .query_row(
                "SELECT length(body) FROM outbox WHERE id = ?1",
                [id],
                |row| row.get(0),
            )
            .unwrap()
    };
    assert_eq!(length("msg_sent"), 0);
    assert_eq!(
        length("msg_dead"),
        i64::try_from(r#"{"n":"msg_dead"}"#.len()).unwrap()
    );
    store.retry_dead_outbox().unwrap();
    assert_eq!(
        store.outbox_heads().unwrap()[0].event.body,
        br#"{"n":"msg_dead"}"#
    );
}
