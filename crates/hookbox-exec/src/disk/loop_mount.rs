//! Attaching an image to a loop device and mounting it; finding and removing such mounts.

use std::ffi::{CStr, CString};
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, CWD, StatxAttributes, StatxFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, UnmountFlags};

use super::{DiskError, back, io_error};

/// `LOOP_CTL_GET_FREE`: the number of a free loop device (created if needed).
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
/// `LOOP_CONFIGURE`: attach a file and set its status in one step (Linux 5.8).
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
/// `LOOP_CLR_FD`: detach the file now.
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
/// `LO_FLAGS_AUTOCLEAR`: detach when the last user (the mount) lets go.
const LO_FLAGS_AUTOCLEAR: u32 = 4;
/// Attempts at winning a free loop device against other processes taking one at once.
const ATTACH_ATTEMPTS: usize = 32;
/// Options of every image mount: never zero the lazily initialised inode tables in the
/// background (their reserved blocks already read as zeros). No `discard`: it would punch the
/// blocks files free out of the image, giving its reservation back to the host.
const MOUNT_OPTIONS: &CStr = c"noinit_itable";

/// `struct loop_info64` of `<linux/loop.h>`.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config` of `<linux/loop.h>`.
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// Attaches `image` (an ext4 image, see [`make_image`](super::make_image)) to a free loop device
/// with autoclear and mounts it at the existing directory `target`, `nodev,nosuid`, after
/// reserving any of its blocks the host does not hold yet (the holes of an image an older
/// hookbox made sparse; [`DiskError::NoSpace`] when the host cannot). If the mount fails the
/// device is detached again. The caller makes sure the image is not mounted
/// elsewhere (two mounts of one image would corrupt it).
pub fn mount_image(image: &Path, target: &Path) -> Result<(), DiskError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(image)
        .map_err(io_error("open", image))?;
    let len = file.metadata().map_err(io_error("inspect", image))?.len();
    back(&file, image, len, 0)?;
    let (device_path, device) = attach(&file)?;
    let source = c_path(&device_path)?;
    let dest = c_path(target)?;
    let mounted = rustix::mount::mount(
        source.as_c_str(),
        dest.as_c_str(),
        c"ext4",
        MountFlags::NODEV | MountFlags::NOSUID,
        MOUNT_OPTIONS,
    );
    if let Err(err) = mounted {
        // Detach now rather than by autoclear, which the kernel runs asynchronously.
        #[expect(unsafe_code, reason = "loop device ioctl")]
        // SAFETY: LOOP_CLR_FD takes no argument; `device` is an open loop device.
        unsafe {
            libc::ioctl(device.as_raw_fd(), LOOP_CLR_FD);
        }
        return Err(io_error("mount the disk image on", target)(err.into()));
    }
    // The mount holds the device now; closing ours lets autoclear detach it on unmount.
    drop(device);
    Ok(())
}

/// Attaches `file` to a free loop device with autoclear; returns its path and an open handle.
fn attach(file: &File) -> Result<(std::path::PathBuf, File), DiskError> {
    let control_path = Path::new("/dev/loop-control");
    let control = OpenOptions::new()
        .read(true)
        .write(true)
        .open(control_path)
        .map_err(io_error("open", control_path))?;
    let config = LoopConfig {
        fd: u32::try_from(file.as_raw_fd()).unwrap_or(u32::MAX),
        block_size: 0,
        info: LoopInfo64 {
            lo_device: 0,
            lo_inode: 0,
            lo_rdevice: 0,
            lo_offset: 0,
            lo_sizelimit: 0,
            lo_number: 0,
            lo_encrypt_type: 0,
            lo_encrypt_key_size: 0,
            lo_flags: LO_FLAGS_AUTOCLEAR,
            lo_file_name: [0; 64],
            lo_crypt_name: [0; 64],
            lo_encrypt_key: [0; 32],
            lo_init: [0; 2],
        },
        reserved: [0; 8],
    };
    let mut last = io::Error::from_raw_os_error(libc::EBUSY);
    for _ in 0..ATTACH_ATTEMPTS {
        #[expect(unsafe_code, reason = "loop-control ioctl")]
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns a device number or -1.
        let number = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE) };
        if number < 0 {
            return Err(io_error("find a free loop device with", control_path)(
                io::Error::last_os_error(),
            ));
        }
        let path = std::path::PathBuf::from(format!("/dev/loop{number}"));
        let device = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(device) => device,
            Err(err) => {
                last = err;
                continue;
            }
        };
        #[expect(unsafe_code, reason = "loop device ioctl")]
        // SAFETY: LOOP_CONFIGURE reads one `struct loop_config`, which `config` is (repr(C),
        // the kernel's layout) and which outlives the call.
        let ret = unsafe { libc::ioctl(device.as_raw_fd(), LOOP_CONFIGURE, &raw const config) };
        if ret == 0 {
            return Ok((path, device));
        }
        last = io::Error::last_os_error();
        // Another process took this device between GET_FREE and CONFIGURE: try the next.
        if last.raw_os_error() != Some(libc::EBUSY) {
            return Err(io_error("attach the disk image to", &path)(last));
        }
    }
    Err(io_error(
        "attach the disk image to a loop device via",
        control_path,
    )(last))
}

/// Unmounts the file system mounted at `target` (lazily: a process still using it keeps it
/// until it lets go, then the loop device detaches itself, shortly after: the kernel runs
/// autoclear asynchronously). Nothing mounted there is fine.
pub fn unmount(target: &Path) -> Result<(), DiskError> {
    let dest = c_path(target)?;
    match rustix::mount::unmount(
        dest.as_c_str(),
        UnmountFlags::DETACH | UnmountFlags::NOFOLLOW,
    ) {
        Ok(()) | Err(Errno::INVAL | Errno::NOENT) => Ok(()),
        Err(err) => Err(io_error("unmount", target)(err.into())),
    }
}

/// Whether `target` is the root of a mount (without following a final link).
pub fn is_mounted(target: &Path) -> Result<bool, DiskError> {
    let stat = rustix::fs::statx(
        CWD,
        target,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS,
    )
    .map_err(|err| io_error("inspect", target)(err.into()))?;
    let mount_root = StatxAttributes::MOUNT_ROOT;
    Ok(stat.stx_attributes_mask.contains(mount_root) && stat.stx_attributes.contains(mount_root))
}

/// The file behind the loop device mounted at `target`, as the kernel reports it (ending in
/// ` (deleted)` once that file was removed); `None` when `target` is not a loop mount.
pub fn backing_file(target: &Path) -> Result<Option<String>, DiskError> {
    let stat = rustix::fs::statx(
        CWD,
        target,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS,
    )
    .map_err(|err| io_error("inspect", target)(err.into()))?;
    let path = format!(
        "/sys/dev/block/{}:{}/loop/backing_file",
        stat.stx_dev_major, stat.stx_dev_minor
    );
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(text.trim_end_matches('\n').to_owned())),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(io_error("read", Path::new(&path))(err)),
    }
}

/// `path` as a C string (a path with a NUL byte cannot exist).
fn c_path(path: &Path) -> Result<CString, DiskError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|err| io_error("use", path)(err.into()))
}
