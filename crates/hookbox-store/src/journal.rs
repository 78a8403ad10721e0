//! The decision journal: where a short-lived `hookbox hook` process appends its decision (one
//! JSON line, one `write`), for a later import into the store's decision log. Opening SQLite,
//! reading its schema and committing cost about 3 ms a call, more than the agent's own trivial
//! hook; an append costs a few microseconds.
//!
//! Appenders hold a shared lock on the journal while they write; an import renames the journal
//! away, takes an exclusive lock on it (so it waits for appenders that opened it before the
//! rename), reads it, stores its decisions in one transaction and deletes it. An appender that
//! finds the journal renamed under it (its file is no longer the one at the path) opens the new
//! one. A line cut short by a crash is skipped at import; a failed import leaves its file,
//! which the next import takes too.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::decision::NewDecision;
use crate::error::Error;
use crate::id::random_token;
use crate::store::Store;
use crate::time::Timestamp;

/// The journal's file name in its directory; imports rename it to this plus `.importing-…`.
const FILE_NAME: &str = "decisions.journal";

/// How often an appender retries when imports keep renaming the journal under it.
const APPEND_ATTEMPTS: usize = 5;

/// The decision journal of one hookbox home.
#[derive(Debug, Clone)]
pub struct DecisionJournal {
    dir: PathBuf,
}

impl DecisionJournal {
    /// The journal in `dir` (the hookbox home).
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    fn path(&self) -> PathBuf {
        self.dir.join(FILE_NAME)
    }

    /// Whether decisions wait in the journal (or in a journal a failed import left).
    pub fn has_entries(&self) -> bool {
        self.path().exists() || self.taken_files().is_ok_and(|files| !files.is_empty())
    }

    /// Appends `decision`, decided at `at`, as one line (the file is created with mode 0600);
    /// returns the journal's size after it, for the caller to import when it grew large.
    pub fn append(&self, at: Timestamp, decision: &NewDecision) -> io::Result<u64> {
        let mut line = to_json(at, decision).to_string();
        line.push('\n');
        let path = self.path();
        for _ in 0..APPEND_ATTEMPTS {
            let mut file = OpenOptions::new()
                .append(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&path)?;
            file.lock_shared()?;
            // An import renamed it between the open and the lock: append to the new one.
            let current = std::fs::symlink_metadata(&path);
            let ours = file.metadata()?;
            if !current
                .is_ok_and(|current| current.ino() == ours.ino() && current.dev() == ours.dev())
            {
                continue;
            }
            file.write_all(line.as_bytes())?;
            return Ok(file.metadata()?.len());
        }
        Err(io::Error::other(
            "the decision journal kept being renamed by imports; try again",
        ))
    }

    /// Moves every journaled decision into `store`'s decision log (keeping its newest `keep`;
    /// see [`Store::record_decisions`]); returns how many. Lines that do not parse (cut short
    /// by a crash) are skipped.
    pub fn import(&self, store: &dyn Store, keep: u64) -> Result<usize, Error> {
        let token = random_token().map_err(|error| journal_error(&self.dir, error))?;
        let taken = self.dir.join(format!("{FILE_NAME}.importing-{token}"));
        match std::fs::rename(self.path(), &taken) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(journal_error(&self.path(), error)),
        }
        let mut imported = 0;
        for file in self.taken_files()? {
            imported += import_file(&file, store, keep)?;
        }
        Ok(imported)
    }

    /// The journals taken by imports (this one's, and any a failed import left), oldest first.
    fn taken_files(&self) -> Result<Vec<PathBuf>, Error> {
        let prefix = format!("{FILE_NAME}.importing-");
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(journal_error(&self.dir, error)),
        };
        let mut files: Vec<(std::time::SystemTime, PathBuf)> = entries
            .flatten()
            .filter(|entry| entry.file_name().to_string_lossy().starts_with(&prefix))
            .map(|entry| {
                let modified = entry
                    .metadata()
                    .and_then(|metadata| metadata.modified())
                    .unwrap_or(std::time::UNIX_EPOCH);
                (modified, entry.path())
            })
            .collect();
        files.sort();
        Ok(files.into_iter().map(|(_, path)| path).collect())
    }
}

/// Imports one taken journal once its appenders are done, then deletes it.
fn import_file(path: &Path, store: &dyn Store, keep: u64) -> Result<usize, Error> {
    let mut file = File::open(path).map_err(|error| journal_error(path, error))?;
    file.lock().map_err(|error| journal_error(path, error))?;
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|error| journal_error(path, error))?;
    let decisions: Vec<(Timestamp, NewDecision)> = text.lines().filter_map(from_line).collect();
    store.record_decisions(&decisions, keep)?;
    std::fs::remove_file(path).map_err(|error| journal_error(path, error))?;
    Ok(decisions.len())
}

fn journal_error(path: &Path, source: io::Error) -> Error {
    Error::Journal {
        path: path.to_owned(),
        source,
    }
}

/// One journal line's JSON.
fn to_json(at: Timestamp, decision: &NewDecision) -> Value {
    json!({
        "at_ms": at.unix_millis(),
        "agent": decision.agent,
        "session": decision.session,
        "event": decision.event,
        "tool": decision.tool,
        "decision": decision.decision,
        "reason": decision.reason,
        "latency_us": u64::try_from(decision.latency.as_micros()).unwrap_or(u64::MAX),
        "policy": decision.policy,
        "handler": decision.handler,
    })
}

/// The decision of one journal line, unless it does not parse.
fn from_line(line: &str) -> Option<(Timestamp, NewDecision)> {
    let value: Value = serde_json::from_str(line).ok()?;
    let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_owned);
    let decision = NewDecision {
        agent: text("agent")?,
        session: text("session"),
        event: text("event")?,
        tool: text("tool"),
        decision: text("decision")?,
        reason: text("reason"),
        latency: Duration::from_micros(value.get("latency_us")?.as_u64()?),
        policy: text("policy"),
        handler: text("handler"),
    };
    Some((
        Timestamp::from_unix_millis(value.get("at_ms")?.as_i64()?),
        decision,
    ))
}
