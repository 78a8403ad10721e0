//! Environment records.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::Value;

use super::json;
use crate::error::{Entity, Error};
use crate::id;
use crate::record::{EnvironmentRecord, Page, PageRequest};
use crate::store::MAX_PAGE_SIZE;
use crate::time::Timestamp;

/// Columns read into [`Raw`], in order.
const COLUMNS: &str = "id, created, updated, metadata";

/// An environment row before its JSON is parsed.
struct Raw {
    /// `id`.
    id: String,
    /// `created`.
    created: i64,
    /// `updated`.
    updated: i64,
    /// `metadata`.
    metadata: String,
}

impl Raw {
    /// Reads [`COLUMNS`].
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            created: row.get(1)?,
            updated: row.get(2)?,
            metadata: row.get(3)?,
        })
    }

    /// The record.
    fn decode(self) -> Result<EnvironmentRecord, Error> {
        let metadata = json::decode(&self.metadata, || {
            format!("metadata of environment {}", self.id)
        })?;
        Ok(EnvironmentRecord {
            id: self.id,
            created: Timestamp::from_unix_millis(self.created),
            updated: Timestamp::from_unix_millis(self.updated),
            metadata,
        })
    }
}

/// Creates or replaces the environment's metadata.
pub(super) fn put(
    connection: &Connection,
    id: &str,
    metadata: &Value,
) -> Result<EnvironmentRecord, Error> {
    id::check("environment id", id)?;
    connection
        .prepare_cached(
            "INSERT INTO environments (id, created, updated, metadata) VALUES (?1, ?2, ?2, ?3)
             ON CONFLICT (id) DO UPDATE SET updated = excluded.updated,
                                            metadata = excluded.metadata",
        )?
        .execute(params![
            id,
            Timestamp::now().unix_millis(),
            json::encode(metadata)
        ])?;
    get(connection, id)
}

/// The environment, or [`Error::NotFound`].
pub(super) fn get(connection: &Connection, id: &str) -> Result<EnvironmentRecord, Error> {
    connection
        .prepare_cached(&format!("SELECT {COLUMNS} FROM environments WHERE id = ?1"))?
        .query_row([id], Raw::read)
        .optional()?
        .ok_or_else(|| Error::NotFound {
            entity: Entity::Environment,
            id: id.to_owned(),
        })?
        .decode()
}

/// A page of environments ordered by `(created, id)`; the token is `<created>.<id>` of the last.
pub(super) fn list(
    connection: &Connection,
    page: &PageRequest,
) -> Result<Page<EnvironmentRecord>, Error> {
    let limit = match page.limit {
        0 => MAX_PAGE_SIZE,
        limit => limit.min(MAX_PAGE_SIZE),
    };
    let (created, id) = match &page.after {
        None => (i64::MIN, String::new()),
        Some(token) => parse_token(token)?,
    };
    let mut items = connection
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM environments WHERE (created, id) > (?1, ?2)
             ORDER BY created, id LIMIT ?3"
        ))?
        .query_map(
            params![created, id, i64::try_from(limit + 1).unwrap_or(i64::MAX)],
            Raw::read,
        )?
        .map(|raw| raw.map_err(Error::from).and_then(Raw::decode))
        .collect::<Result<Vec<_>, _>>()?;
    let next = if items.len() > limit {
        items.truncate(limit);
        items
            .last()
            .map(|last| format!("{}.{}", last.created.unix_millis(), last.id))
    } else {
        None
    };
    Ok(Page { items, next })
}

/// Splits a page token into `(created, id)`.
fn parse_token(token: &str) -> Result<(i64, String), Error> {
    token
        .split_once('.')
        .and_then(|(created, id)| Some((created.parse().ok()?, id.to_owned())))
        .ok_or_else(|| Error::InvalidInput {
            field: "page token",
            problem: format!(
                "`{token}` is not a token this server gave; start from the first page"
            ),
        })
}

/// Deletes the environment, or fails with [`Error::NotFound`].
pub(super) fn delete(connection: &Connection, id: &str) -> Result<(), Error> {
    let deleted = connection
        .prepare_cached("DELETE FROM environments WHERE id = ?1")?
        .execute([id])?;
    if deleted == 0 {
        return Err(Error::NotFound {
            entity: Entity::Environment,
            id: id.to_owned(),
        });
    }
    Ok(())
}
