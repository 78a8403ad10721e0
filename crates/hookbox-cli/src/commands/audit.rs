//! `hookbox audit status|retry`: the backlog of the audit outbox and its dead events, and
//! reviving them.

use std::process::ExitCode;

use anyhow::Context;
use hookbox_env::Environments;
use hookbox_store::{OutboxDeadLetter, OutboxDestination, SqliteStore, Store, Timestamp};
use serde_json::{Value, json};

use crate::cli::AuditCommand;
use crate::render;

/// How many dead events `hookbox audit status` lists (the newest).
const DEAD_SHOWN: u64 = 50;

pub(crate) fn run(command: &AuditCommand) -> anyhow::Result<ExitCode> {
    let home = Environments::default_home()?;
    let store = SqliteStore::open_without_recovery(home.join("hookbox.db"))
        .with_context(|| format!("cannot open the store in {}", home.display()))?;
    match command {
        AuditCommand::Status { json } => {
            let destinations = store
                .outbox_destinations()
                .context("cannot read the audit outbox")?;
            let dead = store
                .dead_outbox(DEAD_SHOWN)
                .context("cannot read the dead audit events")?;
            let dead_of = |destination: &OutboxDestination| {
                dead.iter()
                    .filter(|letter| letter.url == destination.url)
                    .collect::<Vec<_>>()
            };
            if *json {
                let destinations = destinations
                    .iter()
                    .map(|destination| to_json(destination, &dead_of(destination)))
                    .collect();
                render::print_json(&Value::Array(destinations))?;
            } else if destinations.is_empty() {
                render::print_text("the audit outbox is empty\n")?;
            } else {
                let now = Timestamp::now();
                let mut text: String = destinations
                    .iter()
                    .map(|destination| lines(destination, &dead_of(destination), now))
                    .collect();
                let total: u64 = destinations.iter().map(|d| d.dead).sum();
                if total > DEAD_SHOWN {
                    text.push_str(&format!(
                        "(the newest {DEAD_SHOWN} of {total} dead events are listed)\n"
                    ));
                }
                render::print_text(&text)?;
            }
        }
        AuditCommand::Retry => {
            let revived = store
                .retry_dead_outbox()
                .context("cannot retry the dead audit events")?;
            render::print_text(&format!(
                "{revived} dead audit event(s) pending again, each back in its place in its \
                 queue; `hookbox serve` delivers them\n"
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One destination and its listed dead events as `hookbox audit status --json` prints them.
fn to_json(destination: &OutboxDestination, dead: &[&OutboxDeadLetter]) -> Value {
    let dead: Vec<Value> = dead
        .iter()
        .map(|letter| {
            json!({
                "id": letter.id,
                "queue": letter.queue.key(),
                "handler": letter.handler,
                "created": letter.created.to_string(),
                "died": letter.died.to_string(),
                "attempts": letter.attempts,
                "refusals": letter.refusals,
                "last_error": letter.last_error,
            })
        })
        .collect();
    json!({
        "url": destination.url,
        "pending": destination.pending,
        "oldest_pending": destination.oldest_pending.map(|time| time.to_string()),
        "dead": destination.dead,
        "delivered": destination.delivered,
        "last_error": destination.last_error,
        "dead_events": dead,
    })
}

/// One destination as a line (pending and the oldest's age, dead, delivered, last error),
/// then a line per listed dead event (its id, queue, attempts, refusals and last error).
fn lines(destination: &OutboxDestination, dead: &[&OutboxDeadLetter], now: Timestamp) -> String {
    let age = |time: Timestamp| now.unix_millis().saturating_sub(time.unix_millis()) / 1000;
    let oldest = destination
        .oldest_pending
        .map(|time| format!(" (oldest {} s old)", age(time)))
        .unwrap_or_default();
    let error = destination
        .last_error
        .as_deref()
        .map(|error| format!("  last error: {error}"))
        .unwrap_or_default();
    let mut text = format!(
        "{}  pending {}{oldest}  dead {}  delivered {}{error}\n",
        destination.url, destination.pending, destination.dead, destination.delivered
    );
    for letter in dead {
        text.push_str(&format!(
            "  dead {} of {}, stored {} s ago: {} attempts, {} refused; {}\n",
            letter.id,
            letter.queue,
            age(letter.created),
            letter.attempts,
            letter.refusals,
            letter.last_error.as_deref().unwrap_or("no error recorded")
        ));
    }
    text
}
