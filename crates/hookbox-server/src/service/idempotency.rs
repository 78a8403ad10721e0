//! Retried creates. The SDK sends no idempotency header, so without an `Idempotency-Key` a
//! create is a retry only when it is provably one: its exact body matches a create whose
//! request is still open and unanswered (the client gave up waiting and sent it again). The
//! same body sent after the first was answered is a new interaction: re-running a prompt on
//! purpose must run it.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::runs::lock;
use super::{InteractionService, ServiceError, blocking};

/// How many earlier interactions with an identical body a create looks through.
const MAX_IDENTICAL_BODIES: u32 = 1000;

/// The body keys of creates still open and unanswered, each with how many requests hold it.
pub(super) type OpenCreates = Arc<Mutex<HashMap<String, usize>>>;

/// Holds a create's body key open: from before its interaction is stored until its answer is
/// being written, or its request is dropped (the client closed the connection).
#[derive(Debug)]
pub(crate) struct OpenCreate {
    open: OpenCreates,
    key: String,
}

impl OpenCreate {
    /// Marks `key` open in `open` until the returned value is dropped.
    pub(super) fn hold(open: &OpenCreates, key: &str) -> Self {
        *lock(open).entry(key.to_owned()).or_insert(0) += 1;
        Self {
            open: Arc::clone(open),
            key: key.to_owned(),
        }
    }
}

impl Drop for OpenCreate {
    fn drop(&mut self) {
        let mut open = lock(&self.open);
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

impl InteractionService {
    /// Whether `body` is a retry of a create still open and unanswered: `Ok(id)` of its
    /// interaction, else `Err(key)`, a fresh key for this one (to hold open while it is
    /// created: see [`OpenCreate`]). Keys are `body:<scope><hash>:<length>:<n>`, `n` counting
    /// identical bodies.
    pub(super) async fn body_idempotency(
        &self,
        body: &Value,
        scope: &str,
    ) -> Result<Result<String, String>, ServiceError> {
        let text = body.to_string();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let base = format!("body:{scope}{:016x}:{}", hasher.finish(), text.len());
        for n in 0..MAX_IDENTICAL_BODIES {
            let key = format!("{base}:{n}");
            let store = Arc::clone(self.runtime.store());
            let lookup = key.clone();
            let Some(id) = blocking(move || store.interaction_for_key(&lookup)).await? else {
                return Ok(Err(key));
            };
            if !lock(&self.open_creates).contains_key(&key) {
                continue;
            }
            let store = Arc::clone(self.runtime.store());
            let owned = id.clone();
            let existing = blocking(move || store.get_interaction(&owned)).await?;
            if existing.request == *body {
                return Ok(Ok(id));
            }
        }
        // Pathological: that many identical bodies. Run it without a key.
        Ok(Err(String::new()))
    }
}

#[cfg(test)]
mod tests {
    use hookbox_runtime::{Config, Runtime};
    use hookbox_store::NewInteraction;
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn an_identical_body_is_a_retry_only_while_the_first_create_is_open() {
        let home = tempfile::tempdir().unwrap();
        let runtime = Arc::new(Runtime::from_config(&Config::new(home.path())).unwrap());
        let service = InteractionService::open(Arc::clone(&runtime)).unwrap();
        let body = json!({"agent": "a", "input": "hi"});
        let Err(first_key) = service.body_idempotency(&body, "").await.unwrap() else {
            panic!("nothing was created yet");
        };
        let open = OpenCreate::hold(&service.open_creates, &first_key);
        let new = NewInteraction {
            idempotency_key: Some(first_key.clone()),
            ..NewInteraction::new("a", body.clone())
        };
        let created = runtime.store().create_interaction(new).unwrap();
        let id = created.interaction.id;
        // While the first request is open, the same body is that interaction; another
        // caller's (scope) is not.
        assert_eq!(
            service.body_idempotency(&body, "").await.unwrap(),
            Ok(id.clone())
        );
        assert!(
            service
                .body_idempotency(&body, "bob/")
                .await
                .unwrap()
                .is_err()
        );
        // Once it was answered, the same body is a new interaction with the next key.
        drop(open);
        let Err(second_key) = service.body_idempotency(&body, "").await.unwrap() else {
            panic!("an answered create was replayed");
        };
        assert_ne!(second_key, first_key);
        assert!(second_key.ends_with(":1"), "{second_key}");
    }

    #[test]
    fn a_key_stays_open_while_any_holder_does() {
        let open = OpenCreates::default();
        let first = OpenCreate::hold(&open, "k");
        let second = OpenCreate::hold(&open, "k");
        drop(first);
        assert!(lock(&open).contains_key("k"));
        drop(second);
        assert!(lock(&open).is_empty());
    }
}
