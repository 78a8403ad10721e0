//! One server per hookbox home: `hookbox serve` recovers the store's interrupted interactions,
//! resets the upload staging directory and supervises the environments' warm sandboxes, which
//! a second server on the same home would do to the first one's live work. [`HomeLock`] is an
//! advisory lock (`flock`) on the home directory itself, not on a name in it that could be
//! deleted while the server runs; the system releases it when its holder exits, however it
//! exits (`kill -9` too). `<home>/serve.lock` only names the holder's pid, for the error.

use std::fs::{File, TryLockError};
use std::io::Write;
use std::path::Path;

use anyhow::Context;

/// The name of the file in the home that names the holder's pid.
const PID_FILE: &str = "serve.lock";

/// The exclusive lock on a home held by the server serving it; released when dropped or when
/// the process ends.
#[derive(Debug)]
pub struct HomeLock {
    _home: File,
}

impl HomeLock {
    /// Locks `home` for this process and writes its pid in `serve.lock`; if another process
    /// holds it, an error naming the home, that process's pid and how to go on.
    pub fn acquire(home: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(home)
            .with_context(|| format!("cannot create the home {}", home.display()))?;
        let directory =
            File::open(home).with_context(|| format!("cannot open the home {}", home.display()))?;
        let path = home.join(PID_FILE);
        match directory.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(held(&path, home)),
            Err(TryLockError::Error(error)) => {
                return Err(error)
                    .with_context(|| format!("cannot lock the home {}", home.display()));
            }
        }
        let mut file =
            File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
        writeln!(file, "{}", std::process::id())
            .with_context(|| format!("cannot write this process's pid in {}", path.display()))?;
        Ok(Self { _home: directory })
    }
}

/// The error for a home another process holds, naming it by the pid in `path` if it can.
fn held(path: &Path, home: &Path) -> anyhow::Error {
    // The holder may not have written its pid yet, or the file may be gone: then the error
    // says so.
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let holder = match text.trim() {
        pid if !pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit()) => {
            format!("pid {pid}")
        }
        _ => "pid unknown: serve.lock not written yet, or deleted".to_owned(),
    };
    anyhow::anyhow!(
        "another hookbox server ({holder}) is serving the home {} (it holds a lock on the \
         directory; {} names its pid); two servers on one home would recover, reset and \
         supervise each other's work: stop that one first, or give this one a home of its own \
         with HOOKBOX_HOME=DIR",
        home.display(),
        path.display()
    )
}
