//! A long-lived child to talk to: its stdin and stdout piped as async handles, its stderr
//! captured (capped) in the background, no deadline; killed with everything it started when
//! the handle is dropped or hookbox dies. It is spawned exactly as [`crate::run`] spawns
//! (same sandbox, keeper, process group), only not waited for.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::task::JoinHandle;

use crate::capture::CapturedOutput;
use crate::group::ProcessGroup;
use crate::keeper;
use crate::sandbox::Prepared;
use crate::spawn::{self, ExecError, ProcessSpec, Spawned, StopListening};

/// A running child started by [`spawn_interactive`].
///
/// Dropping it kills the child's whole process group, or its keeper (which kills every
/// descendant), or, in a sandbox, the sandbox's intermediate process, whose death kills pid 1
/// of the sandbox and so everything inside; tokio reaps the child, the run's cgroups are
/// removed once empty, and its pipes are closed. A sandboxed child also dies with hookbox, as
/// in [`crate::run`].
pub struct Interactive {
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Arc<Mutex<CapturedOutput>>,
    /// Reads stderr until its end (`None` once that was awaited).
    reading_stderr: Option<JoinHandle<()>>,
    // Fields drop in order: the group is killed before the preparation removes the cgroups.
    group: ProcessGroup,
    _listening: Option<StopListening>,
    _prepared: Option<Prepared>,
}

impl std::fmt::Debug for Interactive {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Interactive")
            .field("group", &self.group)
            .finish_non_exhaustive()
    }
}

/// Starts `spec` and returns at once (a sandbox is set up before this returns), for the caller
/// to talk to over [`Interactive::take_stdin`] and [`Interactive::take_stdout`]. Everything of
/// `spec` applies except `stdin` and `timeout`, which are not used: the child runs until it
/// exits or the handle is dropped. Its stderr is read as it comes, keeping the first
/// `spec.output_limit` bytes ([`Interactive::stderr`]).
pub async fn spawn_interactive(spec: &ProcessSpec) -> Result<Interactive, ExecError> {
    let Spawned {
        stdin,
        stdout,
        stderr,
        group,
        prepared,
        keeper_report,
    } = spawn::spawn(spec)?;
    if let Some(report) = keeper_report
        && let Some(errno) = keeper::failed_start(report).await
    {
        return Err(ExecError::Spawn {
            program: spec.program.to_string_lossy().into_owned(),
            source: std::io::Error::from_raw_os_error(errno),
        });
    }
    let listening = match &prepared {
        // Ends once the sandbox's init has reported itself (or at its exec at the latest).
        Some(prepared) => prepared.init_pidfd(false).await.1.map(StopListening),
        None => None,
    };
    let captured = Arc::new(Mutex::new(CapturedOutput::default()));
    let into = Arc::clone(&captured);
    let limit = spec.output_limit;
    let reading_stderr = tokio::spawn(async move {
        let Some(mut stderr) = stderr else { return };
        let mut buf = vec![0; 8192];
        while let Ok(read @ 1..) = stderr.read(&mut buf).await {
            into.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .keep(&buf[..read], limit);
        }
    });
    Ok(Interactive {
        stdin,
        stdout,
        stderr: captured,
        reading_stderr: Some(reading_stderr),
        group,
        _listening: listening,
        _prepared: prepared,
    })
}

impl Interactive {
    /// The child's stdin (`None` once taken); dropping it closes the pipe.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The child's stdout (`None` once taken).
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// What the child wrote to stderr so far (capped at the spec's `output_limit`).
    pub fn stderr(&self) -> CapturedOutput {
        self.stderr
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Resolves once the child's stderr has reached its end (every process holding it closed
    /// it or exited), so that [`stderr`](Self::stderr) holds all of it that is kept. Bound
    /// the wait: a descendant may keep it open.
    pub async fn stderr_closed(&mut self) {
        if let Some(reading) = self.reading_stderr.as_mut() {
            // A failed join means the task was aborted, which only the drop does.
            let _joined = reading.await;
            self.reading_stderr = None;
        }
    }

    /// Resolves once the child has exited (without reaping it: dropping the handle does).
    pub async fn exited(&self) {
        // An error means the pidfd cannot be polled: treat the child as gone.
        let _ignored = self.group.exited().await;
    }
}

impl Drop for Interactive {
    fn drop(&mut self) {
        if let Some(reading) = &self.reading_stderr {
            reading.abort();
        }
        self.group.kill();
    }
}
