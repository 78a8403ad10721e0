//! The init's file system operations: the plan's [`Op`]s, bind mounts and their flags.
//!
//! Through rustix (raw system calls, no allocation with `&CStr` paths), except
//! `mount_setattr`, which it does not wrap.

use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd};

use rustix::fs::{CWD, FileType, Mode, OFlags, StatVfsMountFlags};
use rustix::io::Errno;
use rustix::mount::{MountFlags, MountPropagationFlags, UnmountFlags};

use super::Op;

/// Remount flags to keep from the mount at `path` (a bind remount may not clear locked ones).
fn kept_flags(path: &CStr) -> MountFlags {
    let Ok(stat) = rustix::fs::statvfs(path) else {
        return MountFlags::empty();
    };
    let pairs = [
        (StatVfsMountFlags::NOSUID, MountFlags::NOSUID),
        (StatVfsMountFlags::NODEV, MountFlags::NODEV),
        (StatVfsMountFlags::NOEXEC, MountFlags::NOEXEC),
        (StatVfsMountFlags::NOATIME, MountFlags::NOATIME),
        (StatVfsMountFlags::NODIRATIME, MountFlags::NODIRATIME),
        (StatVfsMountFlags::RELATIME, MountFlags::RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| stat.f_flag.contains(*st))
        .fold(MountFlags::empty(), |flags, (_, ms)| flags | *ms)
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// `MOUNT_ATTR_RDONLY`, `MOUNT_ATTR_NOSUID`, `MOUNT_ATTR_NODEV` (linux/mount.h).
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// Makes the mount at `dst` and everything below it nosuid, nodev and, if asked, read-only,
/// with one `mount_setattr` (Linux 5.12+; it only adds flags, so the flags a user namespace
/// locks need not be read first). `false` when the kernel cannot, for the remount fallback.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn set_attributes(dst: &CStr, read_only: bool) -> bool {
    let mut attr = MountAttr {
        attr_set: MOUNT_ATTR_NOSUID
            | MOUNT_ATTR_NODEV
            | if read_only { MOUNT_ATTR_RDONLY } else { 0 },
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a NUL-terminated path and a live, correctly sized `mount_attr`.
    let result = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            dst.as_ptr(),
            libc::AT_RECURSIVE as libc::c_uint,
            &raw mut attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    result == 0
}

/// Bind-mounts `src` (a path, possibly `/proc/self/fd/N`) on `dst`, then remounts it with
/// nosuid, nodev and, if asked, read-only.
fn bind(src: &CStr, dst: &CStr, read_only: bool, device: bool) -> Result<(), Errno> {
    rustix::mount::mount_bind_recursive(src, dst)?;
    if device || set_attributes(dst, read_only) {
        return Ok(());
    }
    let mut flags = MountFlags::BIND | MountFlags::NOSUID | MountFlags::NODEV | kept_flags(dst);
    if read_only {
        flags |= MountFlags::RDONLY;
    }
    // A bind remount ignores its data.
    rustix::mount::mount_remount(dst, flags, c"")
}

/// Creates the mount point for a bind of something of type `kind` at `dst`.
fn mount_point(dst: &CStr, kind: FileType) -> Result<(), Errno> {
    if kind == FileType::Directory {
        return make_directory(dst);
    }
    // A file that is already there (e.g. a system trust bundle inside a read-only `/etc`
    // entry) is mounted over as it is: creating it would fail on a read-only file system.
    if rustix::fs::lstat(dst)
        .is_ok_and(|existing| FileType::from_raw_mode(existing.st_mode) == FileType::RegularFile)
    {
        return Ok(());
    }
    rustix::fs::open(
        dst,
        OFlags::WRONLY | OFlags::CREATE | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )
    .map(drop)
}

/// `mkdir` with mode 0755; an existing directory is fine.
fn make_directory(path: &CStr) -> Result<(), Errno> {
    match rustix::fs::mkdir(path, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => Ok(()),
        Err(error) => Err(error),
    }
}

/// Reproduces the symlink at `src` (relative to `dir`) at `dst`.
fn copy_link(dir: impl AsFd, src: &CStr, dst: &CStr) -> Result<(), Errno> {
    let mut target = [0_u8; 4096];
    // Leaves room for the NUL.
    let len = rustix::fs::readlinkat_raw(dir, src, &mut target[..4095])?;
    target[len] = 0;
    let target = CStr::from_bytes_until_nul(&target).map_err(|_| Errno::NAMETOOLONG)?;
    rustix::fs::symlink(target, dst)
}

/// Writes `/oldroot/proc/self/fd/<fd>` into `buf`, NUL-terminated.
fn fd_path(buf: &mut [u8; 64], fd: libc::c_int) -> &CStr {
    const PREFIX: &[u8] = b"/oldroot/proc/self/fd/";
    buf[..PREFIX.len()].copy_from_slice(PREFIX);
    let mut digits = [0_u8; 12];
    let mut n = fd.unsigned_abs();
    let mut count = 0;
    loop {
        digits[count] = b'0' + (n % 10) as u8;
        count += 1;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for i in 0..count {
        buf[PREFIX.len() + i] = digits[count - 1 - i];
    }
    buf[PREFIX.len() + count] = 0;
    CStr::from_bytes_until_nul(&buf[..]).unwrap_or(c"/")
}

/// Applies one file system operation of the plan.
pub(super) fn apply(op: &Op) -> Result<(), i32> {
    apply_op(op).map_err(Errno::raw_os_error)
}

fn apply_op(op: &Op) -> Result<(), Errno> {
    match op {
        Op::Private => rustix::mount::mount_change(
            c"/",
            MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
        ),
        Op::Tmpfs { target, data } => rustix::mount::mount(
            c"tmpfs",
            target.as_c_str(),
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            data.as_c_str(),
        ),
        Op::Mkdir(path) => make_directory(path),
        Op::PivotRoot { new, old } => rustix::process::pivot_root(new.as_c_str(), old.as_c_str()),
        Op::Chdir(path) => rustix::process::chdir(path.as_c_str()),
        Op::Detach(path) => rustix::mount::unmount(path.as_c_str(), UnmountFlags::DETACH),
        Op::Host { src, dst, device } => {
            let stat = match rustix::fs::lstat(src.as_c_str()) {
                Ok(stat) => stat,
                Err(Errno::NOENT | Errno::NOTDIR) => return Ok(()),
                Err(error) => return Err(error),
            };
            let kind = FileType::from_raw_mode(stat.st_mode);
            if kind == FileType::Symlink {
                return copy_link(CWD, src, dst);
            }
            mount_point(dst, kind)?;
            bind(src, dst, !device, *device)
        }
        Op::Bind {
            src,
            dst,
            read_only,
            copy_link: copy,
        } => {
            let fd = rustix::fs::open(
                src.as_c_str(),
                OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
            if kind == FileType::Symlink {
                return if *copy {
                    copy_link(&fd, c"", dst)
                } else {
                    Err(Errno::LOOP)
                };
            }
            mount_point(dst, kind)?;
            let mut buf = [0; 64];
            bind(fd_path(&mut buf, fd.as_raw_fd()), dst, *read_only, false)
        }
        Op::Symlink { target, link } => rustix::fs::symlink(target.as_c_str(), link.as_c_str()),
        Op::Proc(target) => rustix::mount::mount(
            c"proc",
            target.as_c_str(),
            c"proc",
            MountFlags::NOSUID | MountFlags::NODEV | MountFlags::NOEXEC,
            None,
        ),
        Op::RemountRo(path) => rustix::mount::mount_remount(
            path.as_c_str(),
            MountFlags::BIND
                | MountFlags::RDONLY
                | MountFlags::NOSUID
                | MountFlags::NODEV
                | kept_flags(path),
            c"",
        ),
    }
}
