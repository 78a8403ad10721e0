//! What a serving process publishes about its warm sandboxes, for other processes (`hookbox
//! env list`): `<home>/run/<pid>-<start>/warm-sandboxes.json`, a JSON array of
//! `{environment_id, supervisor_pid, started_unix_ms}` rewritten (by rename) at every start
//! and stop. A reader believes an entry only while its supervisor runs (`/proc/<pid>/cmdline`
//! names the supervisor argument), so the file of a process killed outright says nothing.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The file's name in the process's directory.
pub(crate) const FILE_NAME: &str = "warm-sandboxes.json";

/// One warm sandbox as published.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) environment_id: String,
    pub(crate) supervisor_pid: u32,
    pub(crate) started_unix_ms: u64,
}

/// An environment's warm sandbox, as some serving process published it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmStatus {
    /// The environment's id.
    pub environment_id: String,
    /// The supervisor's pid.
    pub supervisor_pid: u32,
    /// When the sandbox was built.
    pub started: SystemTime,
    /// The memory the sandbox keeps, counted whole: the proportional set size of every process
    /// it keeps alive (see [`hookbox_exec::warm_sandbox_footprint`]), when this process may
    /// read it (root).
    pub memory_bytes: Option<u64>,
}

/// Replaces `file` with `records` (a temporary file renamed over it).
pub(crate) fn write(file: &Path, records: &[Record]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut temporary = tempfile::NamedTempFile::new_in(dir)?;
    temporary.write_all(&serde_json::to_vec(records)?)?;
    temporary.persist(file).map_err(|error| error.error)?;
    Ok(())
}

/// Every live warm sandbox published under `run` (`<home>/run`), sorted by environment id.
pub(crate) fn read_all(run: &Path) -> Vec<WarmStatus> {
    let Ok(entries) = std::fs::read_dir(run) else {
        return Vec::new();
    };
    let mut all: Vec<WarmStatus> = entries
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join(FILE_NAME)).ok())
        .filter_map(|bytes| serde_json::from_slice::<Vec<Record>>(&bytes).ok())
        .flatten()
        .filter(|record| is_supervisor(record.supervisor_pid))
        .map(|record| WarmStatus {
            memory_bytes: hookbox_exec::warm_sandbox_footprint(record.supervisor_pid)
                .ok()
                .map(|footprint| footprint.pss_bytes),
            started: SystemTime::UNIX_EPOCH + Duration::from_millis(record.started_unix_ms),
            environment_id: record.environment_id,
            supervisor_pid: record.supervisor_pid,
        })
        .collect();
    all.sort_by(|a, b| a.environment_id.cmp(&b.environment_id));
    all
}

/// Whether process `pid` is a warm sandbox's supervisor.
fn is_supervisor(pid: u32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmdline| {
        cmdline
            .split(|&byte| byte == 0)
            .any(|arg| arg == hookbox_exec::SUPERVISOR_ARG.as_bytes())
    })
}
