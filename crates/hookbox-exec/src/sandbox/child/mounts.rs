//! The init's file system operations: the plan's [`Op`]s, bind mounts and their flags.

use std::ffi::CStr;
use std::ptr;

use super::{Op, check, errno};

/// Remount flags to keep from the mount at `path` (a bind remount may not clear locked ones).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn kept_flags(path: &CStr) -> libc::c_ulong {
    // SAFETY: statvfs fills the zeroed struct; `path` is NUL-terminated.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(path.as_ptr(), &raw mut stat) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st, _)| stat.f_flag & st != 0)
        .fold(0, |flags, (_, ms)| flags | ms)
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
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn bind(src: &CStr, dst: &CStr, read_only: bool, device: bool) -> Result<(), i32> {
    // SAFETY: NUL-terminated paths and null optional arguments.
    unsafe {
        check(
            libc::mount(
                src.as_ptr(),
                dst.as_ptr(),
                ptr::null(),
                libc::MS_BIND | libc::MS_REC,
                ptr::null(),
            )
            .into(),
        )?;
        if device {
            return Ok(());
        }
        if set_attributes(dst, read_only) {
            return Ok(());
        }
        let mut flags =
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NODEV | kept_flags(dst);
        if read_only {
            flags |= libc::MS_RDONLY;
        }
        check(libc::mount(ptr::null(), dst.as_ptr(), ptr::null(), flags, ptr::null()).into())?;
    }
    Ok(())
}

/// Creates the mount point for a bind of something of type `mode` at `dst`.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn mount_point(dst: &CStr, mode: libc::mode_t) -> Result<(), i32> {
    // SAFETY: NUL-terminated paths.
    unsafe {
        if mode & libc::S_IFMT == libc::S_IFDIR {
            if libc::mkdir(dst.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                return Err(errno());
            }
        } else {
            // A file that is already there (e.g. a system trust bundle inside a read-only
            // `/etc` entry) is mounted over as it is: creating it would fail on a read-only
            // file system.
            let mut existing: libc::stat = std::mem::zeroed();
            if libc::lstat(dst.as_ptr(), &raw mut existing) == 0
                && existing.st_mode & libc::S_IFMT == libc::S_IFREG
            {
                return Ok(());
            }
            let fd = libc::open(
                dst.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
                0o644,
            );
            if fd < 0 {
                return Err(errno());
            }
            libc::close(fd);
        }
    }
    Ok(())
}

/// Reproduces the symlink at `src` (read with `readlink`/`readlinkat`) at `dst`.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn copy_link(dirfd: libc::c_int, src: &CStr, dst: &CStr) -> Result<(), i32> {
    let mut target = [0_u8; 4096];
    // SAFETY: the buffer is valid for its length minus the NUL we append.
    let len = unsafe {
        libc::readlinkat(
            dirfd,
            src.as_ptr(),
            target.as_mut_ptr().cast(),
            target.len() - 1,
        )
    };
    if len < 0 {
        return Err(errno());
    }
    target[len as usize] = 0;
    // SAFETY: `target` is NUL-terminated now.
    check(unsafe { libc::symlink(target.as_ptr().cast(), dst.as_ptr()) }.into())?;
    Ok(())
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

#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn apply(op: &Op) -> Result<(), i32> {
    // SAFETY (whole function): raw system calls with NUL-terminated paths prepared by the
    // parent, stack buffers of the stated sizes, and descriptors we own.
    unsafe {
        match op {
            Op::Private => check(
                libc::mount(
                    ptr::null(),
                    c"/".as_ptr(),
                    ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    ptr::null(),
                )
                .into(),
            )
            .map(drop),
            Op::Tmpfs { target, data } => check(
                libc::mount(
                    c"tmpfs".as_ptr(),
                    target.as_ptr(),
                    c"tmpfs".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV,
                    data.as_ptr().cast(),
                )
                .into(),
            )
            .map(drop),
            Op::Mkdir(path) => {
                if libc::mkdir(path.as_ptr(), 0o755) != 0 && errno() != libc::EEXIST {
                    return Err(errno());
                }
                Ok(())
            }
            Op::PivotRoot { new, old } => check(libc::syscall(
                libc::SYS_pivot_root,
                new.as_ptr(),
                old.as_ptr(),
            ))
            .map(drop),
            Op::Chdir(path) => check(libc::chdir(path.as_ptr()).into()).map(drop),
            Op::Detach(path) => {
                check(libc::umount2(path.as_ptr(), libc::MNT_DETACH).into()).map(drop)
            }
            Op::Host { src, dst, device } => {
                let mut stat: libc::stat = std::mem::zeroed();
                if libc::lstat(src.as_ptr(), &raw mut stat) != 0 {
                    return match errno() {
                        libc::ENOENT | libc::ENOTDIR => Ok(()),
                        other => Err(other),
                    };
                }
                if stat.st_mode & libc::S_IFMT == libc::S_IFLNK {
                    return copy_link(libc::AT_FDCWD, src, dst);
                }
                mount_point(dst, stat.st_mode)?;
                bind(src, dst, !device, *device)
            }
            Op::Bind {
                src,
                dst,
                read_only,
                copy_link: copy,
            } => {
                let fd = libc::open(
                    src.as_ptr(),
                    libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                );
                if fd < 0 {
                    return Err(errno());
                }
                let mut stat: libc::stat = std::mem::zeroed();
                let result = if libc::fstat(fd, &raw mut stat) != 0 {
                    Err(errno())
                } else if stat.st_mode & libc::S_IFMT == libc::S_IFLNK {
                    if *copy {
                        copy_link(fd, c"", dst)
                    } else {
                        Err(libc::ELOOP)
                    }
                } else {
                    let mut buf = [0; 64];
                    mount_point(dst, stat.st_mode)
                        .and_then(|()| bind(fd_path(&mut buf, fd), dst, *read_only, false))
                };
                libc::close(fd);
                result
            }
            Op::Symlink { target, link } => {
                check(libc::symlink(target.as_ptr(), link.as_ptr()).into()).map(drop)
            }
            Op::Proc(target) => check(
                libc::mount(
                    c"proc".as_ptr(),
                    target.as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    ptr::null(),
                )
                .into(),
            )
            .map(drop),
            Op::RemountRo(path) => check(
                libc::mount(
                    ptr::null(),
                    path.as_ptr(),
                    ptr::null(),
                    libc::MS_REMOUNT
                        | libc::MS_BIND
                        | libc::MS_RDONLY
                        | libc::MS_NOSUID
                        | libc::MS_NODEV
                        | kept_flags(path),
                    ptr::null(),
                )
                .into(),
            )
            .map(drop),
        }
    }
}
