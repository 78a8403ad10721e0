//! One server per hookbox home: `hookbox serve` recovers the store's interrupted interactions,
//! resets the upload staging directory and supervises the environments' warm sandboxes, which
//! a second server on the same home would do to the first one's live work. [`HomeLock`] is an
//! advisory lock on `<home>/serve.lock`, which the system releases when its holder exits,
//! however it exits (`kill -9` too).

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

use anyhow::Context;

/// The lock file's name in the home.
const LOCK_FILE: &str = "serve.lock";

/// The exclusive lock on a home held by the server serving it; released when dropped or when
/// the process ends.
#[derive(Debug)]
pub struct HomeLock {
    _file: File,
}

impl HomeLock {
    /// Locks `home` for this process, writing its pid in the lock file; if another process
    /// holds it, an error naming the home, that process's pid and how to go on.
    pub fn acquire(home: &Path) -> anyhow::Result<Self> {
        std::fs::create_dir_all(home)
            .with_context(|| format!("cannot create the home {}", home.display()))?;
        let path = home.join(LOCK_FILE);
        let mut file = File::options()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open the server lock {}", path.display()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Err(held(&path, &mut file, home)),
            Err(TryLockError::Error(error)) => {
                return Err(error)
                    .with_context(|| format!("cannot lock the server lock {}", path.display()));
            }
        }
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| writeln!(file, "{}", std::process::id()))
            .with_context(|| format!("cannot write this process's pid in {}", path.display()))?;
        Ok(Self { _file: file })
    }
}

/// The error for a home whose lock `file` (at `path`) another process holds.
fn held(path: &Path, file: &mut File, home: &Path) -> anyhow::Error {
    let mut text = String::new();
    // The holder may not have written its pid yet: then the error says so.
    let holder = match file.read_to_string(&mut text).ok().map(|_| text.trim()) {
        Some(pid) if !pid.is_empty() && pid.bytes().all(|byte| byte.is_ascii_digit()) => {
            format!("pid {pid}")
        }
        _ => "a process that has not written its pid yet".to_owned(),
    };
    anyhow::anyhow!(
        "another hookbox server ({holder}) is serving the home {} (it holds {}); two servers on \
         one home would recover, reset and supervise each other's work: stop that one first, \
         or give this one a home of its own with HOOKBOX_HOME=DIR",
        home.display(),
        path.display()
    )
}
