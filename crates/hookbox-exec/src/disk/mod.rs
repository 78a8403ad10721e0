//! Disk budgets: a file-system image of a fixed size and inode count, loop-mounted.
//!
//! An image is a file whose every block is allocated on the host up front (`fallocate`: the
//! blocks are reserved, not written, so making a 2 GiB image takes milliseconds), formatted as
//! ext4 by `mke2fs` (no reserved blocks, lazily initialised inode tables). The budget is thus
//! *backed*: whatever fills the host file system later, writes inside an image land on blocks it
//! already holds, so one environment (or anything else) filling the host can never make another
//! environment's writes fail or its journal abort. An image is made only while the host keeps a
//! given amount free beside it ([`make_image`]), and mounting fills any hole an older hookbox's
//! sparse image still has. It is attached to a free loop device with `LOOP_CONFIGURE` and the
//! *autoclear* flag (the device detaches itself once the file system is unmounted), and mounted
//! `nodev,nosuid`, without `discard` (which would punch freed blocks out of the image and give
//! its reservation away). Everything written below the mount point counts against the image:
//! past its size writes fail with `ENOSPC`, past its inode count file creation fails with
//! `ENOSPC`, and the host holds exactly the image's size for it. Mounting needs
//! `CAP_SYS_ADMIN` in the initial namespaces ([`can_mount`]).

mod image;
mod loop_mount;

use std::io;
use std::path::{Path, PathBuf};

pub use image::make_image;
pub use loop_mount::{backing_file, is_mounted, mount_image, unmount};

/// The size and inode count of one file-system image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskBudget {
    /// Size of the image in bytes (file-system metadata takes a small part of it).
    pub bytes: u64,
    /// Number of inodes (files, directories, links) it can hold, rounded up by `mke2fs` to fill
    /// its block groups.
    pub inodes: u64,
}

impl DiskBudget {
    /// 2 GiB and 100,000 inodes.
    pub const DEFAULT: Self = Self {
        bytes: 2 << 30,
        inodes: 100_000,
    };

    /// The smallest image `mke2fs` formats with a journal: 4 MiB.
    pub const MIN_BYTES: u64 = 4 << 20;

    /// The fewest inodes an image can have: 64.
    pub const MIN_INODES: u64 = 64;

    /// The largest inode count ext4 supports: 2^32 - 1.
    pub const MAX_INODES: u64 = u32::MAX as u64;

    /// The most inodes an image of `bytes` can have: one per KiB (the smallest ext4 block),
    /// at most [`MAX_INODES`](Self::MAX_INODES); more cannot be formatted.
    pub fn max_inodes(bytes: u64) -> u64 {
        (bytes / 1024).min(Self::MAX_INODES)
    }

    /// `inodes` if given, else the default count lowered to what `bytes` can hold.
    pub fn inodes_for(bytes: u64, inodes: Option<u64>) -> u64 {
        inodes.unwrap_or_else(|| Self::DEFAULT.inodes.min(Self::max_inodes(bytes)))
    }

    /// Checks both values are within what an image can have; the error says which and why.
    pub fn validate(&self) -> Result<(), String> {
        if self.bytes < Self::MIN_BYTES {
            return Err(format!(
                "disk_bytes {} is below the minimum of {} (4 MiB)",
                self.bytes,
                Self::MIN_BYTES
            ));
        }
        let max = Self::max_inodes(self.bytes);
        if !(Self::MIN_INODES..=max).contains(&self.inodes) {
            return Err(format!(
                "disk_inodes {} is outside {}..={max} (at most one inode per KiB of disk_bytes \
                 {})",
                self.inodes,
                Self::MIN_INODES,
                self.bytes
            ));
        }
        Ok(())
    }
}

impl Default for DiskBudget {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Why an image could not be made, mounted or unmounted.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    /// A system call on a path failed.
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// On which path.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: io::Error,
    },
    /// `mke2fs` is not installed where hookbox looks for it.
    #[error(
        "cannot format a disk image: `mke2fs` was not found in /usr/sbin or /sbin; install \
         e2fsprogs (or run hookbox as a user that cannot mount, which gives environments no \
         disk budget)"
    )]
    NoMkfs,
    /// The host file system cannot back the image: too little free space.
    #[error(
        "cannot reserve a disk budget of {bytes} bytes in `{}`: its file system has {free} \
         bytes free and hookbox keeps {keep_free} of them for its own store ([sandbox] \
         disk_reserve_bytes); free space there, delete environments, or lower the budget \
         ([sandbox] disk_bytes, or a spec's limits.disk_bytes)",
        dir.display()
    )]
    NoSpace {
        /// The directory the image is in.
        dir: PathBuf,
        /// The image's size.
        bytes: u64,
        /// The bytes free on the host file system (for an unprivileged user).
        free: u64,
        /// The bytes kept free beside images.
        keep_free: u64,
    },
    /// `mke2fs` ran but failed.
    #[error("`mke2fs` could not format `{}`: {detail}", path.display())]
    Mkfs {
        /// The image.
        path: PathBuf,
        /// Its exit status and error output.
        detail: String,
    },
}

/// The `Io` error for `action` on `path`.
fn io_error(action: &'static str, path: &Path) -> impl FnOnce(io::Error) -> DiskError + use<> {
    let path = path.to_path_buf();
    move |source| DiskError::Io {
        action,
        path,
        source,
    }
}

/// Reserves every block of `file` (at `path`, `len` bytes) on its file system, filling the
/// holes it has; keeps `keep_free` bytes free beside it. Cheap when nothing is missing.
fn back(file: &std::fs::File, path: &Path, len: u64, keep_free: u64) -> Result<(), DiskError> {
    let dir = path.parent().unwrap_or(path);
    let no_space = |dir: &Path| -> Result<(), DiskError> {
        Err(DiskError::NoSpace {
            dir: dir.to_path_buf(),
            bytes: len,
            free: free_bytes(dir)?,
            keep_free,
        })
    };
    if keep_free > 0 {
        let stat = rustix::fs::fstat(file).map_err(|err| io_error("inspect", path)(err.into()))?;
        let held = u64::try_from(stat.st_blocks).unwrap_or(0) * 512;
        let missing = len.saturating_sub(held);
        if free_bytes(dir)? < missing.saturating_add(keep_free) {
            return no_space(dir);
        }
    }
    match rustix::fs::fallocate(file, rustix::fs::FallocateFlags::empty(), 0, len) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT) => no_space(dir),
        Err(err) => Err(io_error("reserve the blocks of", path)(err.into())),
    }
}

/// The bytes free for an unprivileged user on the file system holding `dir`.
fn free_bytes(dir: &Path) -> Result<u64, DiskError> {
    let stat = rustix::fs::statvfs(dir).map_err(|err| io_error("inspect", dir)(err.into()))?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Whether this process may attach loop devices and mount file systems: it runs as root (in
/// the initial user namespace) and `/dev/loop-control` exists.
pub fn can_mount() -> bool {
    rustix::process::geteuid().is_root() && Path::new("/dev/loop-control").exists()
}
