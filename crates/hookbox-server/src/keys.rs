//! API keys: `hbk_<id>_<secret>`, 256 random bits of secret. The store keeps the public id, the
//! name and the SHA-256 of the secret, never the key; a presented key is checked by its id and a
//! constant-time comparison of digests.

use std::path::Path;
use std::sync::Arc;

use hookbox_store::{ApiKey, NewApiKey, SqliteStore, Store};
use ring::digest::{SHA256, digest};
use ring::rand::{SecureRandom, SystemRandom};
use subtle::ConstantTimeEq;

/// Every key starts with this, so a leaked one is recognisable (secret scanners, logs).
const PREFIX: &str = "hbk_";

/// Random bytes in a key's public id.
const ID_BYTES: usize = 6;

/// Random bytes in a key's secret.
const SECRET_BYTES: usize = 32;

/// Why a key operation failed.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The store failed, or refused (a taken name, an unknown name).
    #[error(transparent)]
    Store(#[from] hookbox_store::Error),
    /// The system's random number generator failed.
    #[error("cannot draw random bytes for a new API key; try again")]
    Random,
}

/// The API keys kept in a hookbox home's store.
#[derive(Clone)]
pub struct ApiKeys {
    store: Arc<dyn Store>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeys").finish_non_exhaustive()
    }
}

impl ApiKeys {
    /// The keys of the store at `<home>/hookbox.db` (opened without failing running
    /// interactions, so this is safe beside a running server).
    pub fn open(home: &Path) -> Result<Self, KeyError> {
        let store = SqliteStore::open_without_recovery(home.join("hookbox.db"))?;
        Ok(Self::new(Arc::new(store)))
    }

    /// The keys of `store`.
    pub fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Creates key `name`; returns its record and the key itself, which is shown only now.
    pub fn create(&self, name: &str) -> Result<(ApiKey, String), KeyError> {
        let random = SystemRandom::new();
        let mut id = [0u8; ID_BYTES];
        let mut secret = [0u8; SECRET_BYTES];
        random.fill(&mut id).map_err(|_| KeyError::Random)?;
        random.fill(&mut secret).map_err(|_| KeyError::Random)?;
        let id = hex(&id);
        let secret = hex(&secret);
        let record = self.store.create_api_key(NewApiKey {
            id: id.clone(),
            name: name.to_owned(),
            hash: digest(&SHA256, secret.as_bytes()).as_ref().to_vec(),
        })?;
        Ok((record, format!("{PREFIX}{id}_{secret}")))
    }

    /// Every key, oldest first (never the keys themselves).
    pub fn list(&self) -> Result<Vec<ApiKey>, KeyError> {
        Ok(self.store.list_api_keys()?)
    }

    /// Revokes key `name`: requests with it fail from now on.
    pub fn revoke(&self, name: &str) -> Result<(), KeyError> {
        Ok(self.store.revoke_api_key(name)?)
    }

    /// Whether any key exists.
    pub fn any(&self) -> Result<bool, KeyError> {
        Ok(!self.list()?.is_empty())
    }

    /// The key `presented` names, if it is a valid, unrevoked key; records its use. Blocks on
    /// the store.
    pub fn verify(&self, presented: &str) -> Result<Option<ApiKey>, KeyError> {
        let Some((id, secret)) = presented
            .strip_prefix(PREFIX)
            .and_then(|rest| rest.split_once('_'))
        else {
            return Ok(None);
        };
        let presented_hash = digest(&SHA256, secret.as_bytes());
        let Some((key, stored_hash)) = self.store.find_api_key(id)? else {
            return Ok(None);
        };
        if !bool::from(presented_hash.as_ref().ct_eq(stored_hash.as_slice())) {
            return Ok(None);
        }
        match self.store.touch_api_key(id) {
            // When the home is full, its last use goes unrecorded: the key still works, so
            // reads do and writes get their own 507.
            Err(err) if err.is_disk_full() => {
                tracing::warn!(key = id, "cannot record the API key's use: {err}");
            }
            other => other?,
        }
        Ok(Some(key))
    }
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn a_created_key_verifies_and_near_misses_do_not() {
        let keys = ApiKeys::new(Arc::new(SqliteStore::open_in_memory().unwrap()));
        assert!(!keys.any().unwrap());
        let (record, key) = keys.create("ci").unwrap();
        assert!(
            key.starts_with("hbk_") && key.len() == 4 + 12 + 1 + 64,
            "{key}"
        );
        assert_eq!(keys.verify(&key).unwrap().unwrap().id, record.id);
        let mut flipped = key.clone().into_bytes();
        let last = flipped.len() - 1;
        flipped[last] = if flipped[last] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).unwrap();
        for bad in [
            &flipped[..],
            &key[..key.len() - 1],
            "",
            "hbk_",
            "hbk__",
            &key[4..],
        ] {
            assert!(keys.verify(bad).unwrap().is_none(), "{bad}");
        }
        let (_, other) = keys.create("other").unwrap();
        assert_ne!(other, key);
        keys.revoke("ci").unwrap();
        assert!(keys.verify(&key).unwrap().is_none());
        assert!(keys.verify(&other).unwrap().is_some());
    }
}
