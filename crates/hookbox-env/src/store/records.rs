//! Environments' records: the hookbox database (`<home>/hookbox.db`, hookbox-store's
//! `environments` table) is the one source of truth for an environment's metadata; its
//! directory holds its files, plus `network.json` when its allowlist has `transform` headers
//! (secrets the egress proxy injects: the database never holds them, so they stay in a file
//! only hookbox's user can read, and the record shows `[REDACTED]`).
//!
//! Environments made by a hookbox that kept `environment.json` in their directory are imported
//! once, when the environments are opened.

use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookbox_store::{PageRequest, SqliteStore, Store};
use serde_json::Value;

use crate::environment::{Metadata, redact_network};
use crate::store::{StoreError, io_error};

/// The file beside an environment's root holding its network policy with its secrets.
const SECRETS: &str = "network.json";

/// Where hookbox before the database kept an environment's metadata.
pub(crate) const LEGACY_METADATA: &str = "environment.json";

/// The environments' records in the hookbox database.
#[derive(Debug, Clone)]
pub(crate) struct Records {
    store: Arc<SqliteStore>,
    path: PathBuf,
}

impl Records {
    /// Opens the database of hookbox home `home` (without failing running interactions: that
    /// is the interaction service's job at start-up).
    pub(crate) fn open(home: &Path) -> Result<Self, StoreError> {
        let path = home.join("hookbox.db");
        let store = SqliteStore::open_without_recovery(&path).map_err(|err| StoreError::Io {
            action: "open the environments' records in",
            path: path.clone(),
            source: io::Error::other(err),
        })?;
        Ok(Self {
            store: Arc::new(store),
            path,
        })
    }

    /// The metadata of environment `id`, whose directory is `dir`; `None` without a record.
    pub(crate) fn load(&self, id: &str, dir: &Path) -> Result<Option<Metadata>, StoreError> {
        let record = match self.store.get_environment(id) {
            Ok(record) => record,
            Err(hookbox_store::Error::NotFound { .. }) => return Ok(None),
            Err(err) => return Err(self.failed("read the environments' records in", err)),
        };
        let mut meta: Metadata =
            serde_json::from_value(record.metadata).map_err(|err| StoreError::Io {
                action: "parse the record of an environment in",
                path: self.path.clone(),
                source: io::Error::new(io::ErrorKind::InvalidData, err),
            })?;
        if meta.network.as_ref().is_some_and(has_secrets) {
            let path = dir.join(SECRETS);
            let text = fs::read(&path).map_err(io_error("read", &path))?;
            meta.network = Some(serde_json::from_slice(&text).map_err(|err| StoreError::Io {
                action: "parse",
                path: path.clone(),
                source: io::Error::new(io::ErrorKind::InvalidData, err),
            })?);
        }
        Ok(Some(meta))
    }

    /// Writes the secrets of `meta` into `dir` (the environment's directory, or the staging
    /// directory it is renamed from), before its record is [`put`](Self::put).
    pub(crate) fn write_secrets(dir: &Path, meta: &Metadata) -> Result<(), StoreError> {
        match &meta.network {
            Some(network) if has_secrets(network) => write_private(dir, SECRETS, network),
            _ => Ok(()),
        }
    }

    /// Removes the secrets file from `dir` when `meta`'s network has no secrets (an update
    /// replaced a network that had them), so no copy of the old values stays on disk. Called
    /// once the record without them is stored: until then the old record needs the file.
    pub(crate) fn remove_stale_secrets(dir: &Path, meta: &Metadata) -> Result<(), StoreError> {
        if meta.network.as_ref().is_some_and(has_secrets) {
            return Ok(());
        }
        let path = dir.join(SECRETS);
        match fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => {
                Err(io_error("remove", &path)(err))
            }
            _ => Ok(()),
        }
    }

    /// Stores (creates or replaces) the record of `meta`, its secrets redacted.
    pub(crate) fn put(&self, meta: &Metadata) -> Result<(), StoreError> {
        self.store
            .put_environment(&meta.id, meta.redacted())
            .map(drop)
            .map_err(|err| self.failed("write an environment's record in", err))
    }

    /// Removes the record of `id`, if there is one.
    pub(crate) fn remove(&self, id: &str) -> Result<(), StoreError> {
        match self.store.delete_environment(id) {
            Ok(()) | Err(hookbox_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => Err(self.failed("remove an environment's record from", err)),
        }
    }

    /// The ids of every record.
    pub(crate) fn ids(&self) -> Result<Vec<String>, StoreError> {
        let mut ids = Vec::new();
        let mut after = None;
        loop {
            let page = self
                .store
                .list_environments(PageRequest { limit: 0, after })
                .map_err(|err| self.failed("list the environments' records in", err))?;
            ids.extend(page.items.into_iter().map(|record| record.id));
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(ids),
            }
        }
    }

    /// Imports the `environment.json` of the environment in `dir` made by an older hookbox,
    /// once: its secrets move beside it, its record into the database, and the file goes.
    pub(crate) fn import_legacy(&self, dir: &Path) -> Result<(), StoreError> {
        let path = dir.join(LEGACY_METADATA);
        let text = match fs::read(&path) {
            Ok(text) => text,
            // Another process opening the same home imported it first.
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(err) => return Err(io_error("read", &path)(err)),
        };
        let meta: Metadata = serde_json::from_slice(&text).map_err(|err| StoreError::Io {
            action: "parse",
            path: path.clone(),
            source: io::Error::new(io::ErrorKind::InvalidData, err),
        })?;
        Self::write_secrets(dir, &meta)?;
        self.put(&meta)?;
        match fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => {
                return Err(io_error("remove", &path)(err));
            }
            _ => {}
        }
        tracing::info!(
            environment = %meta.id,
            from = %path.display(),
            "imported an environment's metadata into the database (once, after an upgrade)"
        );
        Ok(())
    }

    /// The error for a database operation that failed: `cannot {action} <database>: …`.
    fn failed(&self, action: &'static str, err: hookbox_store::Error) -> StoreError {
        StoreError::Io {
            action,
            path: self.path.clone(),
            source: io::Error::other(err),
        }
    }
}

/// Whether `network`'s allowlist has any `transform` (whose values are secrets).
fn has_secrets(network: &Value) -> bool {
    redact_network(&mut network.clone())
}

/// Writes `value` to `dir/name` atomically (temporary file, then rename), readable by hookbox's
/// user only.
fn write_private(dir: &Path, name: &str, value: &Value) -> Result<(), StoreError> {
    let path = dir.join(name);
    let temp = dir.join(format!(".{name}.{}", token()?));
    let text = serde_json::to_vec_pretty(value).map_err(|err| StoreError::Io {
        action: "serialise",
        path: path.clone(),
        source: io::Error::other(err),
    })?;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .map_err(io_error("create", &temp))?;
    file.write_all(&text)
        .and_then(|()| file.sync_all())
        .map_err(io_error("write", &temp))?;
    fs::rename(&temp, &path).map_err(io_error("replace", &path))
}

/// A random name suffix.
pub(crate) fn token() -> Result<String, StoreError> {
    hookbox_store::random_token().map_err(io_error(
        "read random bytes from",
        Path::new("the operating system's random source"),
    ))
}
