//! API keys: names, digests, creation and last use.

use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::error::{Entity, Error};
use crate::record::{ApiKey, NewApiKey};
use crate::time::Timestamp;

/// Columns read by [`read`], in order.
const COLUMNS: &str = "id, name, created, last_used";

/// How stale `last_used` may get before a use rewrites it (one write a minute, not per request).
const LAST_USED_GRANULARITY_MS: i64 = 60_000;

/// A key row.
fn read(row: &Row<'_>) -> rusqlite::Result<ApiKey> {
    Ok(ApiKey {
        id: row.get(0)?,
        name: row.get(1)?,
        created: Timestamp::from_unix_millis(row.get(2)?),
        last_used: row
            .get::<_, Option<i64>>(3)?
            .map(Timestamp::from_unix_millis),
    })
}

/// Stores `key`; a taken name fails with [`Error::AlreadyExists`].
pub(super) fn create(connection: &Connection, key: NewApiKey) -> Result<ApiKey, Error> {
    if key.name.trim().is_empty() || key.name.len() > 200 {
        return Err(Error::InvalidInput {
            field: "API key name",
            problem: "give a name of 1 to 200 characters".to_owned(),
        });
    }
    let taken: Option<String> = connection
        .query_row(
            "SELECT id FROM api_keys WHERE name = ?1",
            params![key.name],
            |row| row.get(0),
        )
        .optional()?;
    if taken.is_some() {
        return Err(Error::AlreadyExists {
            entity: Entity::ApiKey,
            id: key.name,
        });
    }
    let now = Timestamp::now();
    connection.execute(
        "INSERT INTO api_keys (id, name, hash, created) VALUES (?1, ?2, ?3, ?4)",
        params![key.id, key.name, key.hash, now.unix_millis()],
    )?;
    Ok(ApiKey {
        id: key.id,
        name: key.name,
        created: now,
        last_used: None,
    })
}

/// Every key, oldest first.
pub(super) fn list(connection: &Connection) -> Result<Vec<ApiKey>, Error> {
    let mut statement = connection.prepare(&format!(
        "SELECT {COLUMNS} FROM api_keys ORDER BY created, id"
    ))?;
    let keys = statement
        .query_map([], read)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(keys)
}

/// The key with public id `id` and its digest, if there is one.
pub(super) fn find(connection: &Connection, id: &str) -> Result<Option<(ApiKey, Vec<u8>)>, Error> {
    Ok(connection
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, hash FROM api_keys WHERE id = ?1"
        ))?
        .query_row(params![id], |row| Ok((read(row)?, row.get(4)?)))
        .optional()?)
}

/// Records a use of key `id` now, unless one was recorded within the last minute.
pub(super) fn touch(connection: &Connection, id: &str) -> Result<(), Error> {
    let now = Timestamp::now().unix_millis();
    connection
        .prepare_cached(
            "UPDATE api_keys SET last_used = ?2 WHERE id = ?1 AND (last_used IS NULL OR last_used < ?3)",
        )?
        .execute(params![id, now, now.saturating_sub(LAST_USED_GRANULARITY_MS)])?;
    Ok(())
}

/// Deletes the key named `name`; an unknown name fails with [`Error::NotFound`].
pub(super) fn revoke(connection: &Connection, name: &str) -> Result<(), Error> {
    let deleted = connection.execute("DELETE FROM api_keys WHERE name = ?1", params![name])?;
    if deleted == 0 {
        return Err(Error::NotFound {
            entity: Entity::ApiKey,
            id: name.to_owned(),
        });
    }
    Ok(())
}
