use hookbox_store::{Error, NewInteraction, Store};
use pretty_assertions::assert_eq;

use super::support::{memory, request, text_step};

/// A create with a key.
fn keyed(key: &str, text: &str) -> NewInteraction {
    NewInteraction {
        idempotency_key: Some(key.to_owned()),
        ..NewInteraction::new("hookbox", request(text))
    }
}

#[test]
fn a_retried_create_returns_the_first_interaction() {
    let store = memory();
    let first = store.create_interaction(keyed("retry-1", "hello")).unwrap();
    assert!(first.created);
    store
        .append_steps(&first.interaction.id, vec![text_step("running")])
        .unwrap();

    let again = store.create_interaction(keyed("retry-1", "hello")).unwrap();
    assert!(!again.created);
    assert_eq!(
        again.interaction,
        store.get_interaction(&first.interaction.id).unwrap()
    );
    assert_eq!(
        store.list_steps(&first.interaction.id).unwrap().len(),
        1,
        "no new run"
    );

    let other = store.create_interaction(keyed("retry-2", "hello")).unwrap();
    assert!(other.created, "another key is another interaction");
    assert_ne!(other.interaction.id, first.interaction.id);
}

#[test]
fn a_reused_key_with_another_request_is_refused() {
    let store = memory();
    let first = store
        .create_interaction(keyed("k", "hello"))
        .unwrap()
        .interaction;
    let error = store.create_interaction(keyed("k", "goodbye")).unwrap_err();
    match &error {
        Error::IdempotencyMismatch {
            key,
            interaction_id,
        } => assert_eq!((key.as_str(), interaction_id), ("k", &first.id)),
        other => panic!("unexpected {other}"),
    }
    assert!(error.to_string().contains("different request"), "{error}");
}

#[test]
fn a_refused_create_writes_nothing_not_even_its_key() {
    let store = memory();
    let bad = NewInteraction {
        previous_interaction_id: Some("int_missing".to_owned()),
        ..keyed("k", "hello")
    };
    assert!(matches!(
        store.create_interaction(bad),
        Err(Error::NotFound { .. })
    ));
    let created = store.create_interaction(keyed("k", "other body")).unwrap();
    assert!(created.created, "the key was not kept by the failed create");
}

#[test]
fn deleting_the_interaction_frees_its_key() {
    let store = memory();
    let first = store
        .create_interaction(keyed("k", "hello"))
        .unwrap()
        .interaction;
    store.delete_interaction(&first.id).unwrap();
    let second = store.create_interaction(keyed("k", "hello")).unwrap();
    assert!(second.created);
    assert_ne!(second.interaction.id, first.id);
}

/// Concurrent retries of one create, from several threads, make exactly one interaction.
#[test]
fn racing_retries_make_one_interaction() {
    let store = memory();
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| store.create_interaction(keyed("race", "hello")).unwrap()))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    assert_eq!(results.iter().filter(|created| created.created).count(), 1);
    let id = &results[0].interaction.id;
    assert!(results.iter().all(|created| &created.interaction.id == id));
}

#[test]
fn a_key_names_its_interaction_until_the_interaction_is_deleted() {
    let store = memory();
    assert_eq!(store.interaction_for_key("k").unwrap(), None);
    let created = store.create_interaction(keyed("k", "hello")).unwrap();
    let id = created.interaction.id;
    assert_eq!(store.interaction_for_key("k").unwrap(), Some(id.clone()));
    store.delete_interaction(&id).unwrap();
    assert_eq!(store.interaction_for_key("k").unwrap(), None);
}
