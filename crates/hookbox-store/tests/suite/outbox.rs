//! The audit outbox: per-environment order, settling, backlog, retry, shedding and pruning.

use hookbox_store::{
    NewOutboxEvent, OutboxQueue, OutboxState, Settlement, SqliteStore, Store, Timestamp,
};
use pretty_assertions::assert_eq;

use super::support::{db_path, memory};

/// A failure of an attempt on `id`, refused by the receiver or not.
fn failed(store: &dyn Store, id: &str, refused: bool) {
    let error = if refused {
        "HTTP status 413"
    } else {
        "HTTP status 503"
    };
    let settlement = Settlement::Retry {
        error: error.to_owned(),
        at: Timestamp::now(),
        refused,
    };
    store.settle_outbox(id, &settlement).unwrap();
}

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
        refused: false,
    };
    store.settle_outbox("msg_a1", &retry).unwrap();
    let heads = store.outbox_heads().unwrap();
    assert_eq!(
        heads[0].event.id, "msg_a1",
        "a failed event keeps its place"
    );
    assert_eq!(
        (heads[0].attempts, heads[0].refusals, heads[0].next_attempt),
        (1, 0, later)
    );
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
                refused: false,
            },
        )
        .unwrap();
    store
        .settle_outbox(
            "msg_a2",
            &Settlement::Dead {
                error: "too old".to_owned(),
                refused: false,
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
                refused: false,
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
                refused: false,
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

#[test]
fn a_refused_event_counts_its_refusals_and_once_dead_its_queue_moves_on() {
    let store = memory();
    for id in ["msg_1", "msg_2", "msg_3"] {
        store
            .enqueue_outbox(&event(id, "env_a", "https://t.example/e"))
            .unwrap();
    }
    failed(&store, "msg_1", true);
    failed(&store, "msg_1", false);
    failed(&store, "msg_1", true);
    let head = &store.outbox_heads().unwrap()[0];
    assert_eq!(
        (head.event.id.as_str(), head.attempts, head.refusals),
        ("msg_1", 3, 2),
        "a refused event waiting for its next attempt holds its queue"
    );
    store
        .settle_outbox(
            "msg_1",
            &Settlement::Dead {
                error: "HTTP status 413 (refused 3 times)".to_owned(),
                refused: true,
            },
        )
        .unwrap();
    assert_eq!(head_ids(&store), ["msg_2"], "the dead letter is skipped");
    let dead = store.dead_outbox(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(
        (
            dead[0].id.as_str(),
            dead[0].url.as_str(),
            &dead[0].queue,
            dead[0].attempts,
            dead[0].refusals,
            dead[0].last_error.as_deref()
        ),
        (
            "msg_1",
            "https://t.example/e",
            &OutboxQueue::Environment("env_a".to_owned()),
            4,
            3,
            Some("HTTP status 413 (refused 3 times)")
        )
    );
    assert!(dead[0].died >= dead[0].created, "{dead:?}");
    store
        .settle_outbox("msg_2", &Settlement::Delivered)
        .unwrap();

    // Revived, it goes before the events still pending (msg_3), after those delivered
    // meanwhile (msg_2), with its refusals forgotten and its attempts kept.
    assert_eq!(store.retry_dead_outbox().unwrap(), 1);
    let head = &store.outbox_heads().unwrap()[0];
    assert_eq!(
        (head.event.id.as_str(), head.attempts, head.refusals),
        ("msg_1", 4, 0)
    );
    assert_eq!(head.state, OutboxState::Pending);
    assert!(store.dead_outbox(10).unwrap().is_empty());
    store
        .settle_outbox("msg_1", &Settlement::Delivered)
        .unwrap();
    assert_eq!(head_ids(&store), ["msg_3"]);
}

#[test]
fn the_newest_dead_events_are_listed_oldest_first() {
    let store = memory();
    for n in 0..4 {
        let id = format!("msg_{n}");
        store
            .enqueue_outbox(&event(&id, &format!("env_{n}"), "https://t.example/e"))
            .unwrap();
        let settlement = Settlement::Dead {
            error: format!("HTTP status 40{n}"),
            refused: true,
        };
        store.settle_outbox(&id, &settlement).unwrap();
    }
    let ids = |limit| -> Vec<String> {
        store
            .dead_outbox(limit)
            .unwrap()
            .into_iter()
            .map(|dead| dead.id)
            .collect()
    };
    assert_eq!(ids(2), ["msg_2", "msg_3"]);
    assert_eq!(ids(10), ["msg_0", "msg_1", "msg_2", "msg_3"]);
    assert!(ids(0).is_empty());
}
