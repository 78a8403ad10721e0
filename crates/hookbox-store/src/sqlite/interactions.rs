//! Interaction rows: create (with idempotency keys), read, delete, recover.

use rusqlite::{Connection, OptionalExtension, Row, params};
use serde_json::{Value, json};

use super::json;
use super::steps;
use crate::error::{Entity, Error};
use crate::id;
use crate::record::{Created, Interaction, InteractionWithSteps, NewInteraction, Status};
use crate::time::Timestamp;

/// Columns read into [`Raw`], in order.
const COLUMNS: &str = "id, agent, status, created, updated, environment_id, \
                       previous_interaction_id, request, outputs, usage, error";

/// `code` of the error [`recover`] records.
const RESTARTED_CODE: &str = "hookbox_restarted";

/// An interaction row before its JSON is parsed.
struct Raw {
    /// `id`.
    id: String,
    /// `agent`.
    agent: String,
    /// `status`.
    status: String,
    /// `created`.
    created: i64,
    /// `updated`.
    updated: i64,
    /// `environment_id`.
    environment_id: Option<String>,
    /// `previous_interaction_id`.
    previous_interaction_id: Option<String>,
    /// `request`.
    request: String,
    /// `outputs`.
    outputs: Option<String>,
    /// `usage`.
    usage: Option<String>,
    /// `error`.
    error: Option<String>,
}

impl Raw {
    /// Reads [`COLUMNS`].
    fn read(row: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: row.get(0)?,
            agent: row.get(1)?,
            status: row.get(2)?,
            created: row.get(3)?,
            updated: row.get(4)?,
            environment_id: row.get(5)?,
            previous_interaction_id: row.get(6)?,
            request: row.get(7)?,
            outputs: row.get(8)?,
            usage: row.get(9)?,
            error: row.get(10)?,
        })
    }

    /// The record.
    fn decode(self) -> Result<Interaction, Error> {
        let id = self.id;
        let what = |column: &str| format!("{column} of interaction {id}");
        let status = self
            .status
            .parse::<Status>()
            .map_err(|error| Error::Corrupt {
                what: what("status"),
                problem: error.to_string(),
            })?;
        let request = json::decode(&self.request, || what("request"))?;
        let outputs = json::decode_opt(self.outputs, || what("outputs"))?;
        let usage = json::decode_opt(self.usage, || what("usage"))?;
        let error = json::decode_opt(self.error, || what("error"))?;
        Ok(Interaction {
            id,
            agent: self.agent,
            status,
            created: Timestamp::from_unix_millis(self.created),
            updated: Timestamp::from_unix_millis(self.updated),
            environment_id: self.environment_id,
            previous_interaction_id: self.previous_interaction_id,
            request,
            outputs,
            usage,
            error,
        })
    }
}

/// The interaction, if it exists.
pub(super) fn find(connection: &Connection, id: &str) -> Result<Option<Interaction>, Error> {
    connection
        .prepare_cached(&format!("SELECT {COLUMNS} FROM interactions WHERE id = ?1"))?
        .query_row([id], Raw::read)
        .optional()?
        .map(Raw::decode)
        .transpose()
}

/// The interaction, or [`Error::NotFound`].
pub(super) fn get(connection: &Connection, id: &str) -> Result<Interaction, Error> {
    find(connection, id)?.ok_or_else(|| not_found(id))
}

/// The interaction and its steps.
pub(super) fn get_with_steps(
    connection: &Connection,
    id: &str,
) -> Result<InteractionWithSteps, Error> {
    let interaction = get(connection, id)?;
    let steps = steps::list(connection, id)?;
    Ok(InteractionWithSteps { interaction, steps })
}

/// [`Error::NotFound`] for interaction `id`.
pub(super) fn not_found(id: &str) -> Error {
    Error::NotFound {
        entity: Entity::Interaction,
        id: id.to_owned(),
    }
}

/// Whether interaction `id` exists.
fn exists(connection: &Connection, id: &str) -> Result<bool, Error> {
    Ok(connection
        .prepare_cached("SELECT 1 FROM interactions WHERE id = ?1")?
        .exists([id])?)
}

/// The interaction idempotency key `key` names, if any.
pub(super) fn for_key(connection: &Connection, key: &str) -> Result<Option<String>, Error> {
    Ok(connection
        .prepare_cached("SELECT interaction_id FROM idempotency_keys WHERE key = ?1")?
        .query_row([key], |row| row.get::<_, String>(0))
        .optional()?)
}

/// Creates the interaction and its idempotency key, or returns the one the key already names.
///
/// Two requests are the same when their compact JSON texts are equal: a client's retry resends
/// the same body, so this is exact, and no hash (with its collisions) is needed; the stored request
/// is the reference.
pub(super) fn create(connection: &Connection, new: NewInteraction) -> Result<Created, Error> {
    check(&new)?;
    let request = json::encode(&new.request);
    if let Some(key) = &new.idempotency_key
        && let Some((existing, stored_request)) = connection
            .prepare_cached(
                "SELECT interactions.id, interactions.request
                 FROM idempotency_keys JOIN interactions ON interactions.id = interaction_id
                 WHERE key = ?1",
            )?
            .query_row([key], |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
            })
            .optional()?
    {
        if stored_request != request {
            return Err(Error::IdempotencyMismatch {
                key: key.clone(),
                interaction_id: existing,
            });
        }
        return Ok(Created {
            interaction: get(connection, &existing)?,
            created: false,
        });
    }
    let id = match new.id {
        Some(id) if exists(connection, &id)? => {
            return Err(Error::AlreadyExists {
                entity: Entity::Interaction,
                id,
            });
        }
        Some(id) => id,
        None => id::generate_interaction_id()?,
    };
    if let Some(previous) = &new.previous_interaction_id
        && !exists(connection, previous)?
    {
        return Err(Error::NotFound {
            entity: Entity::PreviousInteraction,
            id: previous.clone(),
        });
    }
    let now = Timestamp::now().unix_millis();
    connection
        .prepare_cached(
            "INSERT INTO interactions (id, agent, status, created, updated, environment_id,
                                       previous_interaction_id, request)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6, ?7)",
        )?
        .execute(params![
            id,
            new.agent,
            new.status.as_str(),
            now,
            new.environment_id,
            new.previous_interaction_id,
            request
        ])?;
    if let Some(key) = &new.idempotency_key {
        connection
            .prepare_cached(
                "INSERT INTO idempotency_keys (key, interaction_id, created) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![key, id, now])?;
    }
    Ok(Created {
        interaction: get(connection, &id)?,
        created: true,
    })
}

/// Checks the caller-given ids and key of a new interaction.
fn check(new: &NewInteraction) -> Result<(), Error> {
    if let Some(id) = &new.id {
        id::check("interaction id", id)?;
    }
    if let Some(id) = &new.previous_interaction_id {
        id::check("previous_interaction_id", id)?;
    }
    if let Some(id) = &new.environment_id {
        id::check("environment id", id)?;
    }
    if let Some(key) = &new.idempotency_key {
        id::check_key(key)?;
    }
    Ok(())
}

/// Deletes the interaction; its steps, traces and keys go with it (`ON DELETE CASCADE`).
pub(super) fn delete(connection: &Connection, id: &str) -> Result<(), Error> {
    let deleted = connection
        .prepare_cached("DELETE FROM interactions WHERE id = ?1")?
        .execute([id])?;
    if deleted == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

/// Marks every running interaction failed; returns their ids.
pub(super) fn recover(connection: &Connection) -> Result<Vec<String>, Error> {
    let error = json!({
        "code": RESTARTED_CODE,
        "message": "hookbox restarted while this interaction was running; the steps recorded \
                    before the restart are kept. Send the request again to retry.",
    });
    let mut ids = connection
        .prepare_cached(
            "UPDATE interactions SET status = 'failed', error = ?1, updated = ?2
             WHERE status IN ('queued', 'in_progress') RETURNING id",
        )?
        .query_map(
            params![json::encode(&error), Timestamp::now().unix_millis()],
            |row| row.get::<_, String>(0),
        )?
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort();
    Ok(ids)
}

/// Applies `update`-style changes to the row; `None` keeps a column.
pub(super) fn set_fields(
    connection: &Connection,
    id: &str,
    status: Option<Status>,
    environment_id: Option<&str>,
    values: [Option<&Value>; 3],
) -> Result<(), Error> {
    let [outputs, usage, error] = values;
    connection
        .prepare_cached(
            "UPDATE interactions SET status = COALESCE(?2, status),
                                     environment_id = COALESCE(?3, environment_id),
                                     outputs = COALESCE(?4, outputs),
                                     usage = COALESCE(?5, usage),
                                     error = COALESCE(?6, error),
                                     updated = ?7
             WHERE id = ?1",
        )?
        .execute(params![
            id,
            status.map(Status::as_str),
            environment_id,
            json::encode_opt(outputs),
            json::encode_opt(usage),
            json::encode_opt(error),
            Timestamp::now().unix_millis()
        ])?;
    Ok(())
}
