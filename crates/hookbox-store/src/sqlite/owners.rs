//! Which API key owns each environment and interaction.

use rusqlite::{Connection, OptionalExtension, params};

use crate::error::Error;
use crate::record::Resource;

/// Records `owner` as the owner of `resource` `id` unless it already has one (an owner never
/// changes).
pub(super) fn claim(
    connection: &Connection,
    resource: Resource,
    id: &str,
    owner: &str,
) -> Result<(), Error> {
    connection
        .prepare_cached("INSERT OR IGNORE INTO owners (kind, id, owner) VALUES (?1, ?2, ?3)")?
        .execute(params![resource.kind(), id, owner])?;
    Ok(())
}

/// The owner of `resource` `id`, if it has one.
pub(super) fn get(
    connection: &Connection,
    resource: Resource,
    id: &str,
) -> Result<Option<String>, Error> {
    Ok(connection
        .prepare_cached("SELECT owner FROM owners WHERE kind = ?1 AND id = ?2")?
        .query_row(params![resource.kind(), id], |row| row.get(0))
        .optional()?)
}

/// Forgets the owner of `resource` `id` (it was deleted).
pub(super) fn forget(connection: &Connection, resource: Resource, id: &str) -> Result<(), Error> {
    connection
        .prepare_cached("DELETE FROM owners WHERE kind = ?1 AND id = ?2")?
        .execute(params![resource.kind(), id])?;
    Ok(())
}
