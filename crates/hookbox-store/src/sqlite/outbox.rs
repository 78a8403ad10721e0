//! The audit outbox table: enqueue, the head of each environment's queue, settling attempts,
//! the per-destination backlog, dead events, retrying them, shedding and pruning.

use rusqlite::{Connection, Row, params};

use super::json;
use crate::error::Error;
use crate::id;
use crate::outbox::{
    NewOutboxEvent, OutboxDeadLetter, OutboxDestination, OutboxEvent, OutboxQueue, OutboxState,
    Settlement,
};
use crate::time::Timestamp;

/// Columns read by [`read`], in order.
const COLUMNS: &str = "id, environment, url, handler, headers, body, timeout_ms, model_writable, \
                       created, since, attempts, next_attempt, last_error, state, \
                       signing_credential, refusals";

/// An outbox row before its headers are parsed.
struct Raw {
    /// Everything but the headers.
    event: OutboxEvent,
    /// `headers`, JSON.
    headers: String,
}

/// Reads [`COLUMNS`].
fn read(row: &Row<'_>) -> rusqlite::Result<Raw> {
    let state: String = row.get(13)?;
    let state = match state.as_str() {
        "delivered" => OutboxState::Delivered,
        "dead" => OutboxState::Dead,
        _ => OutboxState::Pending,
    };
    Ok(Raw {
        headers: row.get(4)?,
        event: OutboxEvent {
            event: NewOutboxEvent {
                id: row.get(0)?,
                queue: OutboxQueue::from_key(row.get(1)?),
                url: row.get(2)?,
                handler: row.get(3)?,
                headers: Vec::new(),
                body: row.get(5)?,
                timeout_ms: count(row.get(6)?),
                model_writable: row.get(7)?,
                signing_credential: row.get(14)?,
            },
            created: Timestamp::from_unix_millis(row.get(8)?),
            since: Timestamp::from_unix_millis(row.get(9)?),
            attempts: row.get(10)?,
            refusals: row.get(15)?,
            next_attempt: Timestamp::from_unix_millis(row.get(11)?),
            last_error: row.get(12)?,
            state,
        },
    })
}

impl Raw {
    /// The record, its headers parsed.
    fn decode(self) -> Result<OutboxEvent, Error> {
        let mut event = self.event;
        let headers = json::decode(&self.headers, || {
            format!("headers of outbox event {}", event.event.id)
        })?;
        event.event.headers = serde_json::from_value(headers).map_err(|error| Error::Corrupt {
            what: format!("headers of outbox event {}", event.event.id),
            problem: format!("not [name, value] pairs: {error}"),
        })?;
        Ok(event)
    }
}

/// Stores `event` as pending, due now.
pub(super) fn enqueue(connection: &Connection, event: &NewOutboxEvent) -> Result<(), Error> {
    id::check("outbox event id", &event.id)?;
    let headers = serde_json::to_string(&event.headers).map_err(|error| Error::InvalidInput {
        field: "outbox event headers",
        problem: error.to_string(),
    })?;
    let now = Timestamp::now().unix_millis();
    connection.execute(
        "INSERT INTO outbox (id, environment, url, handler, headers, body, timeout_ms,
                             model_writable, created, since, updated, attempts, next_attempt, state,
                             signing_credential)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9, ?9, 0, ?9, 'pending', ?10)",
        params![
            event.id,
            event.queue.key(),
            event.url,
            event.handler,
            headers,
            event.body,
            stored(event.timeout_ms),
            event.model_writable,
            now,
            event.signing_credential
        ],
    )?;
    Ok(())
}

/// The oldest pending event of every environment, oldest first (due or not). A skip scan of
/// the `outbox_pending` index: one seek per environment, however long the backlog (the
/// deliverer asks after every event stored, while tool calls wait for the same connection).
pub(super) fn heads(connection: &Connection) -> Result<Vec<OutboxEvent>, Error> {
    let mut statement = connection.prepare_cached(&format!(
        "WITH RECURSIVE waiting(name) AS (
             SELECT (SELECT environment FROM outbox INDEXED BY outbox_pending
                     WHERE state = 'pending' ORDER BY environment LIMIT 1)
             UNION ALL
             SELECT (SELECT environment FROM outbox INDEXED BY outbox_pending
                     WHERE state = 'pending' AND environment > name ORDER BY environment LIMIT 1)
             FROM waiting WHERE name IS NOT NULL
         )
         SELECT {COLUMNS} FROM waiting JOIN outbox ON outbox.seq = (
             SELECT seq FROM outbox INDEXED BY outbox_pending
             WHERE state = 'pending' AND environment = waiting.name ORDER BY seq LIMIT 1)
         ORDER BY outbox.seq"
    ))?;
    let raws = statement
        .query_map([], read)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    raws.into_iter().map(Raw::decode).collect()
}

/// Records what became of an attempt on pending event `id` (a settled event is left alone). A
/// delivered event's body is dropped: the receiver has it, and it may hold file contents.
pub(super) fn settle(
    connection: &Connection,
    id: &str,
    settlement: &Settlement,
) -> Result<(), Error> {
    let now = Timestamp::now().unix_millis();
    let (state, error, next, refused) = match settlement {
        Settlement::Delivered => ("delivered", None, now, false),
        Settlement::Retry { error, at, refused } => {
            ("pending", Some(error.as_str()), at.unix_millis(), *refused)
        }
        Settlement::Dead { error, refused } => ("dead", Some(error.as_str()), now, *refused),
    };
    connection.execute(
        "UPDATE outbox SET state = ?2, last_error = coalesce(?3, last_error), next_attempt = ?4,
                           attempts = attempts + 1, refusals = refusals + ?6, updated = ?5,
                           body = CASE WHEN ?2 = 'delivered' THEN X'' ELSE body END
         WHERE id = ?1 AND state = 'pending'",
        params![id, state, error, next, now, refused],
    )?;
    Ok(())
}

/// Each destination's backlog, by URL.
pub(super) fn destinations(connection: &Connection) -> Result<Vec<OutboxDestination>, Error> {
    let mut statement = connection.prepare(
        "SELECT url,
                sum(state = 'pending'),
                min(CASE WHEN state = 'pending' THEN created END),
                sum(state = 'dead'),
                sum(state = 'delivered'),
                (SELECT last_error FROM outbox AS failed
                 WHERE failed.url = outbox.url AND failed.state != 'delivered'
                   AND failed.last_error IS NOT NULL
                 ORDER BY failed.updated DESC, failed.seq DESC LIMIT 1)
         FROM outbox GROUP BY url ORDER BY url",
    )?;
    let destinations = statement
        .query_map([], |row| {
            Ok(OutboxDestination {
                url: row.get(0)?,
                pending: count(row.get(1)?),
                oldest_pending: row
                    .get::<_, Option<i64>>(2)?
                    .map(Timestamp::from_unix_millis),
                dead: count(row.get(3)?),
                delivered: count(row.get(4)?),
                last_error: row.get(5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(destinations)
}

/// The newest `limit` dead events, oldest first (the `outbox_by_state` index, newest first).
pub(super) fn dead(connection: &Connection, limit: u64) -> Result<Vec<OutboxDeadLetter>, Error> {
    let mut statement = connection.prepare(
        "SELECT id, environment, url, handler, created, updated, attempts, refusals, last_error
         FROM (SELECT seq, id, environment, url, handler, created, updated, attempts, refusals,
                      last_error
               FROM outbox WHERE state = 'dead' ORDER BY seq DESC LIMIT ?1)
         ORDER BY seq",
    )?;
    let dead = statement
        .query_map(params![stored(limit)], |row| {
            Ok(OutboxDeadLetter {
                id: row.get(0)?,
                queue: OutboxQueue::from_key(row.get(1)?),
                url: row.get(2)?,
                handler: row.get(3)?,
                created: Timestamp::from_unix_millis(row.get(4)?),
                died: Timestamp::from_unix_millis(row.get(5)?),
                attempts: row.get(6)?,
                refusals: row.get(7)?,
                last_error: row.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(dead)
}

/// Makes every dead event pending again, due now, with a new delivery window and no refusals
/// counted; returns how many. Its `seq` is kept, so it goes back to its place in its queue.
pub(super) fn retry_dead(connection: &Connection) -> Result<u64, Error> {
    let now = Timestamp::now().unix_millis();
    let revived = connection.execute(
        "UPDATE outbox SET state = 'pending', since = ?1, next_attempt = ?1, updated = ?1,
                           refusals = 0
         WHERE state = 'dead'",
        params![now],
    )?;
    Ok(u64::try_from(revived).unwrap_or(u64::MAX))
}

/// Marks the oldest pending events dead until at most `max_pending` remain; returns how many.
pub(super) fn shed(connection: &Connection, max_pending: u64) -> Result<u64, Error> {
    let now = Timestamp::now().unix_millis();
    let error = format!(
        "dropped unsent: the outbox held more than [audit] max_pending = {max_pending} pending \
         events"
    );
    let shed = connection.execute(
        "UPDATE outbox SET state = 'dead', last_error = ?2, updated = ?3
         WHERE seq IN (SELECT seq FROM outbox WHERE state = 'pending' ORDER BY seq
                       LIMIT max(0, (SELECT count(*) FROM outbox WHERE state = 'pending') - ?1))",
        params![stored(max_pending), error, now],
    )?;
    Ok(u64::try_from(shed).unwrap_or(u64::MAX))
}

/// Deletes all but the newest `keep` delivered events and the newest `keep` dead ones;
/// returns how many went.
pub(super) fn prune(connection: &Connection, keep: u64) -> Result<u64, Error> {
    let mut pruned = 0;
    for state in [OutboxState::Delivered, OutboxState::Dead] {
        let deleted = connection.execute(
            "DELETE FROM outbox WHERE state = ?1 AND seq < coalesce(
                 (SELECT seq FROM outbox WHERE state = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2), 0)",
            params![state.as_str(), stored(keep.saturating_sub(1))],
        )?;
        pruned += u64::try_from(deleted).unwrap_or(u64::MAX);
    }
    Ok(pruned)
}

/// `n` as SQLite stores integers (saturating).
fn stored(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// A stored count or duration read back (never negative in practice; 0 if it were).
fn count(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
