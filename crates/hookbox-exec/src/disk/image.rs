//! Making an image file whose blocks are reserved, and formatting it with `mke2fs`.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{DiskBudget, DiskError, back, io_error};
use crate::{ExitKind, ProcessSpec, run};

/// Where `mke2fs` is looked for (it is not on a non-root user's `PATH` on Debian).
const MKFS_DIRS: [&str; 2] = ["/usr/sbin", "/sbin"];

/// Creates `path` (it must not exist) as a file of `budget.bytes` whose blocks are all reserved
/// on the host, formatted as ext4 with `budget.inodes` inodes, no reserved blocks and its root
/// directory owned by this process's user. Refused with [`DiskError::NoSpace`] unless the host
/// file system keeps at least `keep_free` bytes free beside it. On failure the file is removed.
pub async fn make_image(path: &Path, budget: &DiskBudget, keep_free: u64) -> Result<(), DiskError> {
    let mkfs = MKFS_DIRS
        .iter()
        .map(|dir| Path::new(dir).join("mke2fs"))
        .find(|candidate| candidate.is_file())
        .ok_or(DiskError::NoMkfs)?;
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(io_error("create", path))?;
    let result = match back(&file, path, budget.bytes, keep_free) {
        Ok(()) => format(&mkfs, path, budget).await,
        Err(err) => Err(err),
    };
    if result.is_err() {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// Runs `mke2fs` on the existing file `path`.
async fn format(mkfs: &PathBuf, path: &Path, budget: &DiskBudget) -> Result<(), DiskError> {
    let owner = format!(
        "root_owner={}:{},lazy_itable_init=1,lazy_journal_init=1,nodiscard",
        rustix::process::geteuid().as_raw(),
        rustix::process::getegid().as_raw()
    );
    let spec = ProcessSpec {
        program: mkfs.into(),
        args: vec![
            "-q".into(),
            "-F".into(),
            "-t".into(),
            "ext4".into(),
            "-m".into(),
            "0".into(),
            "-N".into(),
            budget.inodes.to_string().into(),
            "-E".into(),
            owner.into(),
            path.into(),
        ],
        env_clear: true,
        env: vec![("LANG".into(), "C".into())],
        ..ProcessSpec::shell("", Duration::from_secs(60))
    };
    let output = run(&spec).await.map_err(|err| DiskError::Mkfs {
        path: path.to_path_buf(),
        detail: err.to_string(),
    })?;
    if output.exit == ExitKind::Exited(0) {
        return Ok(());
    }
    Err(DiskError::Mkfs {
        path: path.to_path_buf(),
        detail: format!("{:?}: {}", output.exit, output.stderr.to_text().trim()),
    })
}
