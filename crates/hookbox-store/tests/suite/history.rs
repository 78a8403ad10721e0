use hookbox_store::{ChainEnd, Error, NewInteraction, Status, Store, Update};
use pretty_assertions::assert_eq;

use super::support::{memory, request, text_step};

/// Creates a completed interaction `id` continuing `previous`, with one step saying `id`.
fn turn(store: &dyn Store, id: &str, previous: Option<&str>) {
    let new = NewInteraction {
        id: Some(id.to_owned()),
        previous_interaction_id: previous.map(str::to_owned),
        ..NewInteraction::new("hookbox", request(id))
    };
    store.create_interaction(new).unwrap();
    store.append_steps(id, vec![text_step(id)]).unwrap();
    let done = Update {
        status: Some(Status::Completed),
        ..Update::default()
    };
    store.update_interaction(id, done).unwrap();
}

/// The ids of a history, oldest first.
fn ids(store: &dyn Store, id: &str, depth: usize) -> (Vec<String>, ChainEnd) {
    let history = store.history(id, depth).unwrap();
    for entry in &history.interactions {
        assert_eq!(
            entry.steps[0].body["content"][0]["text"],
            entry.interaction.id.as_str()
        );
    }
    let ids = history
        .interactions
        .into_iter()
        .map(|entry| entry.interaction.id)
        .collect();
    (ids, history.end)
}

#[test]
fn history_follows_previous_interactions_oldest_first() {
    let store = memory();
    turn(&store, "int_a", None);
    turn(&store, "int_b", Some("int_a"));
    turn(&store, "int_c", Some("int_b"));
    turn(&store, "int_side", Some("int_a"));

    assert_eq!(
        ids(&store, "int_c", 100),
        (strings(&["int_a", "int_b", "int_c"]), ChainEnd::Start)
    );
    assert_eq!(
        ids(&store, "int_side", 100),
        (strings(&["int_a", "int_side"]), ChainEnd::Start)
    );
    assert_eq!(
        ids(&store, "int_a", 100),
        (strings(&["int_a"]), ChainEnd::Start)
    );
}

#[test]
fn the_depth_cap_keeps_the_newest_interactions() {
    let store = memory();
    turn(&store, "int_0", None);
    for n in 1..10 {
        turn(&store, &format!("int_{n}"), Some(&format!("int_{}", n - 1)));
    }
    assert_eq!(
        ids(&store, "int_9", 3),
        (strings(&["int_7", "int_8", "int_9"]), ChainEnd::DepthCap)
    );
    assert_eq!(ids(&store, "int_9", 10).1, ChainEnd::Start);
    assert!(matches!(
        store.history("int_9", 0),
        Err(Error::InvalidInput { .. })
    ));
}

#[test]
fn a_deleted_link_ends_the_history() {
    let store = memory();
    turn(&store, "int_a", None);
    turn(&store, "int_b", Some("int_a"));
    turn(&store, "int_c", Some("int_b"));
    store.delete_interaction("int_b").unwrap();
    assert_eq!(
        ids(&store, "int_c", 100),
        (strings(&["int_c"]), ChainEnd::Missing("int_b".to_owned()))
    );
}

/// Ids reused after a delete can close a loop; the walk stops at the first repeat.
#[test]
fn a_cycle_ends_the_history() {
    let store = memory();
    turn(&store, "int_a", None);
    turn(&store, "int_b", Some("int_a"));
    store.delete_interaction("int_a").unwrap();
    turn(&store, "int_a", Some("int_b"));
    assert_eq!(
        ids(&store, "int_a", 100),
        (
            strings(&["int_b", "int_a"]),
            ChainEnd::Cycle("int_a".to_owned())
        )
    );
    assert_eq!(
        ids(&store, "int_b", 100),
        (
            strings(&["int_a", "int_b"]),
            ChainEnd::Cycle("int_b".to_owned())
        )
    );
}

/// Owned strings.
fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|&item| item.to_owned()).collect()
}
