//! `hookbox audit status|retry`: the backlog of the audit outbox, and reviving dead events.

use std::process::ExitCode;

use anyhow::Context;
use hookbox_env::Environments;
use hookbox_store::{OutboxDestination, SqliteStore, Store, Timestamp};
use serde_json::{Value, json};

use crate::cli::AuditCommand;
use crate::render;

pub(crate) fn run(command: &AuditCommand) -> anyhow::Result<ExitCode> {
    let home = Environments::default_home()?;
    let store = SqliteStore::open_without_recovery(home.join("hookbox.db"))
        .with_context(|| format!("cannot open the store in {}", home.display()))?;
    match command {
        AuditCommand::Status { json } => {
            let destinations = store
                .outbox_destinations()
                .context("cannot read the audit outbox")?;
            if *json {
                render::print_json(&Value::Array(destinations.iter().map(to_json).collect()))?;
            } else if destinations.is_empty() {
                render::print_text("the audit outbox is empty\n")?;
            } else {
                let now = Timestamp::now();
                let lines: String = destinations.iter().map(|d| line(d, now)).collect();
                render::print_text(&lines)?;
            }
        }
        AuditCommand::Retry => {
            let revived = store
                .retry_dead_outbox()
                .context("cannot retry the dead audit events")?;
            render::print_text(&format!(
                "{revived} dead audit event(s) pending again; `hookbox serve` delivers them\n"
            ))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One destination as `hookbox audit status --json` prints it.
fn to_json(destination: &OutboxDestination) -> Value {
    json!({
        "url": destination.url,
        "pending": destination.pending,
        "oldest_pending": destination.oldest_pending.map(|time| time.to_string()),
        "dead": destination.dead,
        "delivered": destination.delivered,
        "last_error": destination.last_error,
    })
}

/// One destination as a line: pending (and the oldest's age), dead, delivered, last error.
fn line(destination: &OutboxDestination, now: Timestamp) -> String {
    let oldest = destination
        .oldest_pending
        .map(|time| {
            let seconds = now.unix_millis().saturating_sub(time.unix_millis()) / 1000;
            format!(" (oldest {seconds} s old)")
        })
        .unwrap_or_default();
    let error = destination
        .last_error
        .as_deref()
        .map(|error| format!("  last error: {error}"))
        .unwrap_or_default();
    format!(
        "{}  pending {}{oldest}  dead {}  delivered {}{error}\n",
        destination.url, destination.pending, destination.dead, destination.delivered
    )
}
