//! `hookbox log`: the decisions `hookbox hook` made, from the decision log.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use hookbox_env::Environments;
use hookbox_runtime::Config;
use hookbox_runtime::DurationValue;
use hookbox_store::{
    DecisionJournal, DecisionQuery, DecisionRecord, SqliteStore, Store, Timestamp,
};
use serde_json::{Value, json};

use crate::cli::LogArgs;
use crate::render;

pub(crate) fn run(args: &LogArgs) -> anyhow::Result<ExitCode> {
    let since = args.since.as_deref().map(since).transpose()?;
    let home = Environments::default_home()?;
    let path = home.join("hookbox.db");
    let journal = DecisionJournal::in_dir(&home);
    let records = if path.exists() || journal.has_entries() {
        let store = SqliteStore::open_without_recovery(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let config = Config::read(args.config.as_deref(), &home)?;
        journal.import(&store, config.policy.keep_decisions().max(1))?;
        store.list_decisions(&DecisionQuery {
            agent: args.agent.clone(),
            since,
            limit: args.limit,
        })?
    } else {
        Vec::new()
    };
    if args.json {
        render::print_json(&Value::Array(records.iter().map(record_json).collect()))?;
    } else if records.is_empty() {
        render::print_text("no decision logged (that matches)\n")?;
    } else {
        render::print_text(&records.iter().map(line).collect::<String>())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The instant `--since` names: a UTC time, or a duration before now.
fn since(text: &str) -> anyhow::Result<Timestamp> {
    if let Ok(instant) = text.parse::<Timestamp>() {
        return Ok(instant);
    }
    let seconds = DurationValue::Text(text.to_owned())
        .seconds()
        .with_context(|| {
            format!(
                "--since {text:?}: write a UTC time like 2026-01-01T00:00:00Z or a duration \
                 before now like 90s, 30m, 24h, 7d"
            )
        })?;
    let back = Duration::from_secs(seconds).as_millis();
    let back = i64::try_from(back).unwrap_or(i64::MAX);
    Ok(Timestamp::from_unix_millis(
        Timestamp::now().unix_millis().saturating_sub(back),
    ))
}

/// One decision as a line: when, who, what, the decision and why, how long, and which handler.
fn line(record: &DecisionRecord) -> String {
    let decision = &record.decision;
    let mut line = format!(
        "{} {} {} {}",
        record.at,
        decision.agent,
        decision.session.as_deref().unwrap_or("-"),
        decision.event
    );
    if let Some(tool) = &decision.tool {
        line.push_str(&format!(" {tool}"));
    }
    line.push_str(&format!(
        " → {} in {:.1} ms",
        decision.decision,
        decision.latency.as_secs_f64() * 1000.0
    ));
    if let Some(reason) = &decision.reason {
        line.push_str(&format!(": {reason:?}"));
    }
    if let Some(handler) = &decision.handler {
        line.push_str(&format!(
            " [{handler} in {}]",
            decision.policy.as_deref().unwrap_or("-")
        ));
    }
    line.push('\n');
    line
}

/// One decision as JSON.
fn record_json(record: &DecisionRecord) -> Value {
    let decision = &record.decision;
    json!({
        "seq": record.seq,
        "at": record.at.to_string(),
        "agent": decision.agent,
        "session": decision.session,
        "event": decision.event,
        "tool": decision.tool,
        "decision": decision.decision,
        "reason": decision.reason,
        "latency_ms": decision.latency.as_secs_f64() * 1000.0,
        "policy": decision.policy,
        "handler": decision.handler,
    })
}
