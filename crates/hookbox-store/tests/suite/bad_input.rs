use hookbox_store::{Append, Entity, Error, NewInteraction, NewTrace, PageRequest, Store, Update};
use serde_json::json;

use super::support::{memory, request, start, text_step};

/// Asserts `result` failed with `NotFound` for `entity` and `id`.
fn assert_not_found<T: std::fmt::Debug>(result: Result<T, Error>, entity: Entity, id: &str) {
    match result {
        Err(Error::NotFound {
            entity: found,
            id: found_id,
        }) => assert_eq!((found, found_id.as_str()), (entity, id)),
        other => panic!("expected NotFound {entity} {id}, got {other:?}"),
    }
}

#[test]
fn unknown_interactions_are_not_found() {
    let store = memory();
    let missing = "int_missing";
    assert_not_found(store.get_interaction(missing), Entity::Interaction, missing);
    assert_not_found(
        store.get_interaction_with_steps(missing),
        Entity::Interaction,
        missing,
    );
    assert_not_found(store.list_steps(missing), Entity::Interaction, missing);
    assert_not_found(store.list_traces(missing), Entity::Interaction, missing);
    assert_not_found(store.history(missing, 10), Entity::Interaction, missing);
    assert_not_found(
        store.delete_interaction(missing),
        Entity::Interaction,
        missing,
    );
    assert_not_found(
        store.append_steps(missing, vec![text_step("x")]),
        Entity::Interaction,
        missing,
    );
    assert_not_found(
        store.update_interaction(missing, Update::default()),
        Entity::Interaction,
        missing,
    );
    let error = store.get_interaction(missing).unwrap_err();
    assert_eq!(
        error.to_string(),
        "interaction `int_missing` not found; check the id (deleted records are gone for good)"
    );
}

#[test]
fn unknown_environments_are_not_found() {
    let store = memory();
    assert_not_found(store.get_environment("env_x"), Entity::Environment, "env_x");
    assert_not_found(
        store.delete_environment("env_x"),
        Entity::Environment,
        "env_x",
    );
}

#[test]
fn an_unknown_previous_interaction_is_refused() {
    let store = memory();
    let new = NewInteraction {
        previous_interaction_id: Some("int_gone".to_owned()),
        ..NewInteraction::new("hookbox", request("x"))
    };
    let error = store.create_interaction(new).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("previous interaction `int_gone` not found"),
        "{error}"
    );
}

#[test]
fn a_taken_id_is_refused() {
    let store = memory();
    let id = start(&store, "x");
    let again = NewInteraction {
        id: Some(id.clone()),
        ..NewInteraction::new("hookbox", request("y"))
    };
    assert!(matches!(
        store.create_interaction(again),
        Err(Error::AlreadyExists {
            entity: Entity::Interaction,
            ..
        })
    ));
    assert_eq!(
        store.get_interaction(&id).unwrap().request,
        request("x"),
        "untouched"
    );
}

#[test]
fn malformed_ids_keys_and_tokens_are_refused() {
    let store = memory();
    for (new, field) in [
        (
            NewInteraction {
                id: Some("../etc".to_owned()),
                ..NewInteraction::new("hookbox", request("x"))
            },
            "interaction id",
        ),
        (
            NewInteraction {
                idempotency_key: Some(String::new()),
                ..NewInteraction::new("hookbox", request("x"))
            },
            "idempotency key",
        ),
        (
            NewInteraction {
                environment_id: Some("env 1".to_owned()),
                ..NewInteraction::new("hookbox", request("x"))
            },
            "environment id",
        ),
    ] {
        match store.create_interaction(new) {
            Err(Error::InvalidInput { field: found, .. }) => assert_eq!(found, field),
            other => panic!("expected InvalidInput for {field}, got {other:?}"),
        }
    }
    assert!(matches!(
        store.put_environment("", json!({})),
        Err(Error::InvalidInput { .. })
    ));
    let page = PageRequest {
        limit: 1,
        after: Some("not-a-token".to_owned()),
    };
    assert!(matches!(
        store.list_environments(page),
        Err(Error::InvalidInput { .. })
    ));
}

/// A trace naming a step that does not exist fails the whole append: the batch's steps are not
/// stored either.
#[test]
fn a_trace_for_a_missing_step_fails_the_whole_append() {
    let store = memory();
    let id = start(&store, "x");
    let append = Append {
        steps: vec![text_step("a"), text_step("b")],
        traces: vec![NewTrace {
            step_index: Some(2),
            entry: json!({}),
        }],
        update: None,
    };
    let error = store.append(&id, append).unwrap_err();
    assert!(error.to_string().contains("has no step 2"), "{error}");
    assert!(store.list_steps(&id).unwrap().is_empty());
    assert!(store.list_traces(&id).unwrap().is_empty());
}
