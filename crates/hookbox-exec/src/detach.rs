//! Starting a long-lived helper of hookbox's own (the per-user `hookbox daemon`) that outlives
//! the process that starts it: a session of its own, stdin from `/dev/null`, stdout and
//! stderr appended to a log file, an environment built from nothing.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A program to start detached with [`spawn_detached`].
#[derive(Debug)]
pub struct DetachedSpec {
    /// The program (an absolute path: nothing is looked up on `PATH`).
    pub program: PathBuf,
    /// Arguments after the program name.
    pub args: Vec<OsString>,
    /// The program's whole environment (the caller's is not inherited, so none of its secrets
    /// reach a process that lives on).
    pub env: Vec<(OsString, OsString)>,
    /// Where its stdout and stderr go.
    pub log: File,
}

/// Starts `spec` in a new session (so no terminal, process group or pipe of the caller's
/// holds it, and a signal to the caller's group does not reach it) and returns its pid. It is
/// never waited for: when the caller exits first, init (or a subreaper) reaps it.
#[expect(
    clippy::disallowed_methods,
    reason = "hookbox-exec is the one place that builds commands"
)]
#[expect(unsafe_code, reason = "pre_exec calls setsid in the child")]
pub fn spawn_detached(spec: DetachedSpec) -> std::io::Result<u32> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .env_clear()
        .envs(spec.env)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(spec.log.try_clone()?)
        .stderr(spec.log);
    // SAFETY: runs in the forked child between fork and exec; `setsid` is one raw system call
    // (async-signal-safe), no allocation or lock.
    unsafe {
        command.pre_exec(|| {
            rustix::process::setsid()?;
            Ok(())
        });
    }
    let child = command.spawn()?;
    Ok(child.id())
}
