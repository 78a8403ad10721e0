//! Steps and hook traces: appending them, reading them, walking a conversation.

use std::collections::HashSet;

use rusqlite::{Connection, params};

use super::interactions;
use super::json;
use crate::error::Error;
use crate::record::{
    Append, Appended, ChainEnd, History, HookTrace, InteractionWithSteps, Step, Update,
};
use crate::time::Timestamp;

// The statements below are written so that their query plan does not depend on the bound id.
// A cached statement has its bindings cleared when it goes back to rusqlite's cache, and SQLite
// re-prepares at its next use any statement whose plan looked at a bound value: `WHERE key = ?1`
// with `ORDER BY` or `MAX` on the next column of the same index is such a statement. Written the
// plain way, these were parsed again at every use, a third of the store's work per interaction
// (BENCHMARKS.md). Reaching the id through the interaction's row, or through `(SELECT ?1)`, keeps
// the same index search without the dependency; `statements_are_never_prepared_again` checks it.

/// The next step index and the next trace sequence number of interaction `?1`.
const NEXT_INDEXES: &str = "
    SELECT (SELECT COALESCE(MAX(idx) + 1, 0) FROM steps WHERE interaction_id = i.id),
           (SELECT COALESCE(MAX(seq) + 1, 0) FROM hook_traces WHERE interaction_id = i.id)
    FROM interactions i WHERE i.id = ?1";

/// The steps of interaction `?1`, by index.
const LIST_STEPS: &str = "
    SELECT idx, created, body FROM steps WHERE interaction_id = (SELECT ?1) ORDER BY idx";

/// The hook traces of interaction `?1`, by sequence number.
const LIST_TRACES: &str = "
    SELECT seq, step_index, created, entry FROM hook_traces
    WHERE interaction_id = (SELECT ?1) ORDER BY seq";

/// Appends steps, then traces, then applies the update; the caller's transaction makes it atomic.
pub(super) fn append(connection: &Connection, id: &str, append: Append) -> Result<Appended, Error> {
    let current = interactions::get(connection, id)?;
    if !current.status.is_running() {
        return Err(Error::Stopped {
            id: id.to_owned(),
            status: current.status,
        });
    }
    let now = Timestamp::now().unix_millis();
    let (first, mut seq): (u32, i64) = connection
        .prepare_cached(NEXT_INDEXES)?
        .query_row([id], |row| Ok((row.get(0)?, row.get(1)?)))?;
    let end = u32::try_from(append.steps.len())
        .ok()
        .and_then(|count| first.checked_add(count))
        .ok_or_else(|| Error::InvalidInput {
            field: "steps",
            problem: "too many steps for one interaction".to_owned(),
        })?;
    let mut insert_step = connection.prepare_cached(
        "INSERT INTO steps (interaction_id, idx, created, body) VALUES (?1, ?2, ?3, ?4)",
    )?;
    let mut insert_trace = connection.prepare_cached(
        "INSERT INTO hook_traces (interaction_id, seq, step_index, created, entry)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    for (index, step) in (first..end).zip(&append.steps) {
        insert_step.execute(params![id, index, now, json::encode(&step.body)])?;
        for entry in &step.traces {
            insert_trace.execute(params![id, seq, index, now, json::encode(entry)])?;
            seq += 1;
        }
    }
    for trace in &append.traces {
        if let Some(index) = trace.step_index
            && index >= end
        {
            return Err(Error::InvalidInput {
                field: "trace step_index",
                problem: format!(
                    "interaction `{id}` has no step {index} (it has {end}); record the step first"
                ),
            });
        }
        insert_trace.execute(params![
            id,
            seq,
            trace.step_index,
            now,
            json::encode(&trace.entry)
        ])?;
        seq += 1;
    }
    let Update {
        status,
        environment_id,
        outputs,
        usage,
        error,
    } = append.update.unwrap_or_default();
    if let Some(environment_id) = &environment_id {
        crate::id::check("environment id", environment_id)?;
    }
    interactions::set_fields(
        connection,
        id,
        status,
        environment_id.as_deref(),
        [outputs.as_ref(), usage.as_ref(), error.as_ref()],
    )?;
    Ok(Appended {
        steps: first..end,
        interaction: interactions::get(connection, id)?,
    })
}

/// The interaction's steps, by index.
pub(super) fn list(connection: &Connection, id: &str) -> Result<Vec<Step>, Error> {
    let rows = connection
        .prepare_cached(LIST_STEPS)?
        .query_map([id], |row| {
            Ok((
                row.get::<_, u32>(0)?,
                row.get::<_, i64>(1)?,
                row.get::<_, String>(2)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(index, created, body)| {
            Ok(Step {
                index,
                body: json::decode(&body, || format!("step {index} of interaction {id}"))?,
                created: Timestamp::from_unix_millis(created),
            })
        })
        .collect()
}

/// The interaction's hook traces, by sequence number.
pub(super) fn traces(connection: &Connection, id: &str) -> Result<Vec<HookTrace>, Error> {
    let rows = connection
        .prepare_cached(LIST_TRACES)?
        .query_map([id], |row| {
            Ok((
                row.get::<_, u32>(0)?,
                row.get::<_, Option<u32>>(1)?,
                row.get::<_, i64>(2)?,
                row.get::<_, String>(3)?,
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    rows.into_iter()
        .map(|(seq, step_index, created, entry)| {
            Ok(HookTrace {
                seq,
                step_index,
                entry: json::decode(&entry, || format!("hook trace {seq} of interaction {id}"))?,
                created: Timestamp::from_unix_millis(created),
            })
        })
        .collect()
}

/// Follows `previous_interaction_id` from `id`, at most `max_depth` interactions.
pub(super) fn history(
    connection: &Connection,
    id: &str,
    max_depth: usize,
) -> Result<History, Error> {
    if max_depth == 0 {
        return Err(Error::InvalidInput {
            field: "history depth",
            problem: "must be at least 1 (the interaction itself)".to_owned(),
        });
    }
    let mut current = interactions::get(connection, id)?;
    let mut seen = HashSet::new();
    let mut chain = Vec::new();
    let end = loop {
        seen.insert(current.id.clone());
        let previous = current.previous_interaction_id.clone();
        chain.push(current);
        let Some(previous) = previous else {
            break ChainEnd::Start;
        };
        if seen.contains(&previous) {
            break ChainEnd::Cycle(previous);
        }
        if chain.len() >= max_depth {
            break ChainEnd::DepthCap;
        }
        match interactions::find(connection, &previous)? {
            Some(found) => current = found,
            None => break ChainEnd::Missing(previous),
        }
    };
    let interactions = chain
        .into_iter()
        .rev()
        .map(|interaction| {
            let steps = list(connection, &interaction.id)?;
            Ok(InteractionWithSteps { interaction, steps })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(History { interactions, end })
}

#[cfg(test)]
mod tests {
    use rusqlite::StatementStatus;
    use serde_json::json;

    use super::{LIST_STEPS, LIST_TRACES, NEXT_INDEXES, append, list, traces};
    use crate::record::{Append, NewInteraction, NewStep};
    use crate::sqlite::{SqliteStore, interactions};

    #[test]
    fn statements_are_never_prepared_again() {
        let store = SqliteStore::open_in_memory().unwrap();
        let connection = store.lock();
        for run in 0..3 {
            let id =
                interactions::create(&connection, NewInteraction::new("a", json!({ "run": run })))
                    .unwrap()
                    .interaction
                    .id;
            for _ in 0..2 {
                let step = NewStep {
                    body: json!({"type": "text"}),
                    traces: vec![json!({"decision": "allow"})],
                };
                append(
                    &connection,
                    &id,
                    Append {
                        steps: vec![step],
                        ..Append::default()
                    },
                )
                .unwrap();
            }
            assert_eq!(list(&connection, &id).unwrap().len(), 2);
            assert_eq!(traces(&connection, &id).unwrap().len(), 2);
        }
        for sql in [NEXT_INDEXES, LIST_STEPS, LIST_TRACES] {
            let statement = connection.prepare_cached(sql).unwrap();
            assert_eq!(
                statement.get_status(StatementStatus::RePrepare),
                0,
                "parsed again after its first use: {sql}"
            );
        }
    }
}
