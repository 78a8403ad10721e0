//! The decision log of `hookbox hook`.

use std::time::Duration;

use rusqlite::{Connection, Row, params};

use crate::decision::{DecisionQuery, DecisionRecord, NewDecision};
use crate::error::Error;
use crate::time::Timestamp;

/// Rows are pruned when the log passes a multiple of this many rows or of `keep` (not at
/// every insert).
const PRUNE_EVERY: i64 = 1000;

/// Appends `decisions` (each with the instant it was made), then, when the log passed a
/// multiple of [`PRUNE_EVERY`] or of `keep` rows, drops the oldest rows beyond the newest `keep`.
pub(super) fn record(
    connection: &Connection,
    decisions: &[(Timestamp, NewDecision)],
    keep: u64,
) -> Result<(), Error> {
    let mut insert = connection.prepare_cached(
        "INSERT INTO decisions (at, agent, session, event, tool, decision, reason, latency_us, \
         policy, handler) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    let before: i64 =
        connection.query_row("SELECT coalesce(max(seq), 0) FROM decisions", [], |row| {
            row.get(0)
        })?;
    for (at, decision) in decisions {
        let latency_us = i64::try_from(decision.latency.as_micros()).unwrap_or(i64::MAX);
        insert.execute(params![
            at.unix_millis(),
            decision.agent,
            decision.session,
            decision.event,
            decision.tool,
            decision.decision,
            decision.reason,
            latency_us,
            decision.policy,
            decision.handler,
        ])?;
    }
    let seq = connection.last_insert_rowid();
    let keep = i64::try_from(keep).unwrap_or(i64::MAX).max(1);
    let passed = |every: i64| seq / every > before / every;
    if !decisions.is_empty() && (passed(PRUNE_EVERY) || passed(keep)) {
        connection.execute(
            "DELETE FROM decisions WHERE seq <= ?1",
            params![seq.saturating_sub(keep)],
        )?;
    }
    Ok(())
}

/// The newest `query.limit` decisions matching `query`, oldest first.
pub(super) fn list(
    connection: &Connection,
    query: &DecisionQuery,
) -> Result<Vec<DecisionRecord>, Error> {
    let mut statement = connection.prepare_cached(
        "SELECT seq, at, agent, session, event, tool, decision, reason, latency_us, policy, \
         handler FROM decisions WHERE (?1 IS NULL OR agent = ?1) AND (?2 IS NULL OR at >= ?2) \
         ORDER BY seq DESC LIMIT ?3",
    )?;
    let since = query.since.map(Timestamp::unix_millis);
    let mut records = statement
        .query_map(params![query.agent, since, query.limit], read)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    records.reverse();
    Ok(records)
}

/// A decision row.
fn read(row: &Row<'_>) -> rusqlite::Result<DecisionRecord> {
    let latency_us: i64 = row.get(8)?;
    Ok(DecisionRecord {
        seq: row.get(0)?,
        at: Timestamp::from_unix_millis(row.get(1)?),
        decision: NewDecision {
            agent: row.get(2)?,
            session: row.get(3)?,
            event: row.get(4)?,
            tool: row.get(5)?,
            decision: row.get(6)?,
            reason: row.get(7)?,
            latency: Duration::from_micros(u64::try_from(latency_us).unwrap_or(0)),
            policy: row.get(9)?,
            handler: row.get(10)?,
        },
    })
}
