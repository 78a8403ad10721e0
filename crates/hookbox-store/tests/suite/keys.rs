use hookbox_store::{Entity, Error, NewApiKey, Resource, SqliteStore, Store};

fn key(id: &str, name: &str) -> NewApiKey {
    NewApiKey {
        id: id.to_owned(),
        name: name.to_owned(),
        hash: vec![7; 32],
    }
}

#[test]
fn api_keys_are_created_listed_found_touched_and_revoked() {
    let store = SqliteStore::open_in_memory().unwrap();
    let created = store.create_api_key(key("k1", "alice")).unwrap();
    assert_eq!(created.name, "alice");
    assert_eq!(created.last_used, None);
    match store.create_api_key(key("k2", "alice")) {
        Err(Error::AlreadyExists {
            entity: Entity::ApiKey,
            id,
        }) => assert_eq!(id, "alice"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        store.create_api_key(key("k3", " ")),
        Err(Error::InvalidInput { .. })
    ));
    store.create_api_key(key("k2", "bob")).unwrap();
    let names: Vec<String> = store
        .list_api_keys()
        .unwrap()
        .into_iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, ["alice", "bob"]);
    let (found, hash) = store.find_api_key("k1").unwrap().unwrap();
    assert_eq!((found.name.as_str(), hash), ("alice", vec![7; 32]));
    assert!(store.find_api_key("nope").unwrap().is_none());
    store.touch_api_key("k1").unwrap();
    let used = store.find_api_key("k1").unwrap().unwrap().0.last_used;
    assert!(used.is_some());
    store.revoke_api_key("alice").unwrap();
    assert!(store.find_api_key("k1").unwrap().is_none());
    match store.revoke_api_key("alice") {
        Err(Error::NotFound {
            entity: Entity::ApiKey,
            id,
        }) => assert_eq!(id, "alice"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn owners_are_claimed_once_and_forgotten_with_their_resource() {
    let store = SqliteStore::open_in_memory().unwrap();
    store
        .put_environment("env_a", serde_json::json!({}))
        .unwrap();
    store.claim(Resource::Environment, "env_a", "k1").unwrap();
    // A second claim never changes the owner.
    store.claim(Resource::Environment, "env_a", "k2").unwrap();
    assert_eq!(
        store
            .owner(Resource::Environment, "env_a")
            .unwrap()
            .as_deref(),
        Some("k1")
    );
    assert_eq!(store.owner(Resource::Interaction, "env_a").unwrap(), None);
    store.delete_environment("env_a").unwrap();
    assert_eq!(store.owner(Resource::Environment, "env_a").unwrap(), None);
}
