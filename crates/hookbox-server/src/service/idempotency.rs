//! Retried creates: the SDK sends no idempotency header, so a create whose exact body matches
//! an interaction still running, or changed within [`IDEMPOTENCY_WINDOW`], is that interaction.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use hookbox_store::Timestamp;
use serde_json::Value;

use super::{IDEMPOTENCY_WINDOW, InteractionService, ServiceError, blocking};

/// How many earlier interactions with an identical body a create looks through.
const MAX_IDENTICAL_BODIES: u32 = 1000;

impl InteractionService {
    /// Whether `body` repeats a create whose interaction is still running or changed within the
    /// idempotency window: `Ok(id)` of that interaction, else `Err(key)`, a fresh key for this
    /// one. Keys are `body:<scope><hash>:<length>:<n>`, `n` counting identical bodies.
    pub(super) async fn body_idempotency(
        &self,
        body: &Value,
        scope: &str,
    ) -> Result<Result<String, String>, ServiceError> {
        let text = body.to_string();
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        let base = format!("body:{scope}{:016x}:{}", hasher.finish(), text.len());
        let window = i64::try_from(IDEMPOTENCY_WINDOW.as_millis()).unwrap_or(i64::MAX);
        let now = Timestamp::now().unix_millis();
        for n in 0..MAX_IDENTICAL_BODIES {
            let key = format!("{base}:{n}");
            let store = Arc::clone(self.runtime.store());
            let lookup = key.clone();
            let Some(id) = blocking(move || store.interaction_for_key(&lookup)).await? else {
                return Ok(Err(key));
            };
            let store = Arc::clone(self.runtime.store());
            let owned = id.clone();
            let existing = blocking(move || store.get_interaction(&owned)).await?;
            let recent = existing.status.is_running()
                || now.saturating_sub(existing.updated.unix_millis()) <= window;
            if existing.request == *body && recent {
                return Ok(Ok(id));
            }
        }
        // Pathological: that many identical bodies. Run it without a key.
        Ok(Err(String::new()))
    }
}
