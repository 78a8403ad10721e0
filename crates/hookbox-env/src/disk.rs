//! The file system an environment with a disk budget lives on: `<env>/disk.img`, loop-mounted
//! at `/run/hookbox/disks/<dev>-<inode of the image>` (outside the hookbox home, so that the
//! home can always be removed with `rm -rf`), the environment's root being its `root/`.
//!
//! The mount point is named after the image file itself, so it follows the environment through
//! the rename from its staging directory and is shared by every hookbox process on the host;
//! an exclusive `flock` on a lock file beside the mount points serialises mounting and
//! unmounting between them (one image is never mounted twice). An image is mounted only while a
//! [`Lease`] on it lives somewhere: each holds a shared `flock` on the image, and the last one
//! let go (on the host: the one whose exclusive `flock` then succeeds) unmounts it. `/run` is
//! emptied at boot, and the image is mounted again on first use.

use std::fs::{self, File};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use hookbox_exec::disk::{self, DiskBudget};
use rustix::fs::FlockOperation;

use crate::store::{StoreError, io_error};

/// Name of the image file in an environment's directory.
pub(crate) const IMAGE: &str = "disk.img";

/// Where images are mounted.
const MOUNTS: &str = "/run/hookbox/disks";

/// Name of the environment root inside the file system (beside it: `lost+found`, staging).
const ROOT: &str = "root";

/// What the kernel appends to a loop device's backing file once the file was removed.
const DELETED: &str = " (deleted)";

/// The mount point of `image` (which must exist); nothing is mounted by asking.
pub(crate) fn mount_point(image: &Path) -> Result<PathBuf, StoreError> {
    let meta = fs::metadata(image).map_err(io_error("inspect the disk image", image))?;
    Ok(Path::new(MOUNTS).join(format!("{:x}-{:x}", meta.dev(), meta.ino())))
}

/// The environment root on the file system mounted at `mount`.
pub(crate) fn root(mount: &Path) -> PathBuf {
    mount.join(ROOT)
}

/// Makes `image` (in a directory only this process uses yet) with `budget`, backed on the host
/// while `keep_free` bytes stay free there, mounts it and creates its (empty) root. Returns the
/// mount point.
pub(crate) async fn create(
    image: &Path,
    budget: &DiskBudget,
    keep_free: u64,
) -> Result<PathBuf, StoreError> {
    disk::make_image(image, budget, keep_free)
        .await
        .map_err(StoreError::Disk)?;
    let mount = mount(image)?;
    // `lost+found` is for fsck; the root beside it is what the sandbox sees.
    let _ = fs::remove_dir(mount.join("lost+found"));
    let root = root(&mount);
    fs::create_dir(&root).map_err(io_error("create", &root))?;
    Ok(mount)
}

/// Mounts `image` at its mount point unless it is already mounted there; returns the mount
/// point. A mount left at that point by another (since removed) image is replaced.
pub(crate) fn mount(image: &Path) -> Result<PathBuf, StoreError> {
    let _mounts = lock_mounts()?;
    let mount = mount_point(image)?;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&mount)
        .map_err(io_error("create the mount point", &mount))?;
    if disk::is_mounted(&mount).map_err(StoreError::Disk)? {
        let wanted = fs::canonicalize(image).map_err(io_error("resolve", image))?;
        let backing = disk::backing_file(&mount).map_err(StoreError::Disk)?;
        if backing.as_deref() == wanted.to_str() {
            return Ok(mount);
        }
        disk::unmount(&mount).map_err(StoreError::Disk)?;
    }
    wait_detached(image)?;
    disk::mount_image(image, &mount).map_err(StoreError::Disk)?;
    Ok(mount)
}

/// How long [`mount`] waits for an earlier, lazily detached mount of an image to let go.
const DETACH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits (up to [`DETACH_WAIT`]) until no loop device holds `image`: a mount detached lazily
/// keeps its device (and its file system) until the last process using it lets go, and
/// attaching the image again meanwhile would mount it twice, which corrupts it.
fn wait_detached(image: &Path) -> Result<(), StoreError> {
    let wanted = fs::canonicalize(image).map_err(io_error("resolve", image))?;
    let give_up = std::time::Instant::now() + DETACH_WAIT;
    loop {
        let attached = fs::read_dir("/sys/block")
            .map_err(io_error("read", Path::new("/sys/block")))?
            .filter_map(|entry| {
                fs::read_to_string(entry.ok()?.path().join("loop/backing_file")).ok()
            })
            .any(|file| Path::new(file.trim_end_matches('\n')) == wanted);
        if !attached {
            return Ok(());
        }
        if std::time::Instant::now() > give_up {
            return Err(io_error(
                "mount (a loop device still holds it: a process of a stopped sandbox still uses \
                 its file system; retry once it has ended)",
                image,
            )(io::Error::from(io::ErrorKind::ResourceBusy)));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// Unmounts `image` (the loop device detaches itself) and removes its mount point.
pub(crate) fn unmount(image: &Path) -> Result<(), StoreError> {
    let _mounts = lock_mounts()?;
    let mount = mount_point(image)?;
    disk::unmount(&mount).map_err(StoreError::Disk)?;
    match fs::remove_dir(&mount) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => {
            Err(io_error("remove the mount point", &mount)(err))
        }
        _ => Ok(()),
    }
}

/// Unmounts every image whose file was removed without hookbox (its home deleted with
/// `rm -rf`): such a mount can never be reached again, and it keeps the removed image's
/// blocks allocated on the host. Live environments are never touched.
pub(crate) fn sweep_orphans() -> Result<(), StoreError> {
    // Held from each check to its unmount: once an orphan's image is released, its inode number
    // (so its mount point's name) may go to a new image that another process mounts there.
    let _mounts = lock_mounts()?;
    let entries = match fs::read_dir(MOUNTS) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(io_error("read", Path::new(MOUNTS))(err)),
    };
    for entry in entries {
        let mount = entry.map_err(io_error("read", Path::new(MOUNTS)))?.path();
        if !disk::is_mounted(&mount).unwrap_or(false) {
            continue;
        }
        let orphaned = disk::backing_file(&mount)
            .map_err(StoreError::Disk)?
            .is_some_and(|file| file.ends_with(DELETED));
        if orphaned {
            disk::unmount(&mount).map_err(StoreError::Disk)?;
            let _ = fs::remove_dir(&mount);
        }
    }
    Ok(())
}

/// An exclusive lock on the table of mounts under [`MOUNTS`], shared by every hookbox process
/// on the host and held while the returned file is open, so that deciding what is mounted
/// where and acting on it is one step.
fn lock_mounts() -> Result<File, StoreError> {
    let mounts = Path::new(MOUNTS);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(mounts)
        .map_err(io_error("create", mounts))?;
    let path = mounts.with_extension("lock");
    let file = File::options()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(io_error("open", &path))?;
    rustix::fs::flock(&file, FlockOperation::LockExclusive)
        .map_err(|err| io_error("lock", &path)(err.into()))?;
    Ok(file)
}

/// A use of an environment's file system by this process: the image is mounted while one
/// lives, in this process or another; dropping the last one on the host unmounts it (and its
/// loop device detaches itself).
#[derive(Debug)]
pub(crate) struct Lease {
    /// The image, open, with a shared `flock` on it.
    file: File,
    /// Where it is mounted.
    mount: PathBuf,
}

/// How long [`lease`] waits for another process's exclusive lock on an image (held only
/// while it decides to unmount): a few seconds at most, so a stray holder is an error, not a
/// hang.
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Mounts `image` (see [`mount`]) under a new [`Lease`].
pub(crate) fn lease(image: &Path) -> Result<Lease, StoreError> {
    let file = File::open(image).map_err(io_error("open", image))?;
    let give_up = std::time::Instant::now() + LEASE_WAIT;
    while let Err(err) = rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared) {
        if err != rustix::io::Errno::WOULDBLOCK || std::time::Instant::now() > give_up {
            return Err(io_error("take a shared lock on", image)(err.into()));
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let mount = mount(image)?;
    Ok(Lease { file, mount })
}

impl Drop for Lease {
    fn drop(&mut self) {
        let Ok(_mounts) = lock_mounts() else {
            return;
        };
        // Our shared lock becomes exclusive only if no one else holds one; if it cannot, it is
        // simply gone, which is what dropping means.
        if rustix::fs::flock(&self.file, FlockOperation::NonBlockingLockExclusive).is_err() {
            return;
        }
        // Only our image's mount: once ours was removed its mount point's name may have gone
        // to another image.
        let ours = fs::read_link(format!("/proc/self/fd/{}", self.file.as_raw_fd()));
        let mounted = disk::backing_file(&self.mount).ok().flatten();
        if ours.is_ok_and(|path| mounted.as_deref() == path.to_str()) {
            if let Err(err) = disk::unmount(&self.mount) {
                tracing::warn!("{err}");
            }
            let _ = fs::remove_dir(&self.mount);
        }
    }
}

/// Unmounts the images of `images` that no process holds a [`Lease`] on (left mounted by a
/// process that was killed).
pub(crate) fn sweep_unleased(images: impl Iterator<Item = PathBuf>) {
    for image in images {
        let Ok(file) = File::open(&image) else {
            continue;
        };
        if rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared).is_ok() {
            let Ok(mount) = mount_point(&image) else {
                continue;
            };
            drop(Lease { file, mount });
        }
    }
}
