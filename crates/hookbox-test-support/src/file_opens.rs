//! Every open of a file on one file system, by whom: `fanotify` notification events on the
//! whole file system (every mount of it, sandboxes' bind mounts included), for taint checks
//! that must see what processes read, execute or map, whatever path they took.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// One open seen by [`FileOpens`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileOpen {
    /// The opening process (its thread group id, in the watcher's pid namespace).
    pub pid: u32,
    /// The file's inode number on the watched file system.
    pub inode: u64,
    /// The file's path as the watcher sees it (for messages).
    pub path: PathBuf,
    /// Whether it was opened for execution (`execve`, or a library mapped executable).
    pub exec: bool,
}

/// A watch on every open (for reading, writing or execution, directories included) of any
/// file on the file system holding a path, from [`FileOpens::watch`] until
/// [`FileOpens::take`]. Needs `CAP_SYS_ADMIN`; nothing is ever lost (an unlimited queue).
#[derive(Debug)]
pub struct FileOpens {
    fd: OwnedFd,
}

/// The fanotify events a watch asks for.
const EVENTS: u64 = libc::FAN_OPEN | libc::FAN_OPEN_EXEC | libc::FAN_ONDIR;

impl FileOpens {
    /// Starts watching the file system holding `path`.
    #[expect(
        unsafe_code,
        reason = "fanotify has no safe wrapper in the crates hookbox uses"
    )]
    pub fn watch(path: &Path) -> std::io::Result<Self> {
        // SAFETY: plain system call; a non-negative result is a new descriptor we own.
        let raw = unsafe {
            libc::fanotify_init(
                libc::FAN_CLOEXEC
                    | libc::FAN_NONBLOCK
                    | libc::FAN_CLASS_NOTIF
                    | libc::FAN_UNLIMITED_QUEUE,
                (libc::O_RDONLY | libc::O_CLOEXEC | libc::O_LARGEFILE) as u32,
            )
        };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `raw` was just returned by fanotify_init and is owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(std::io::Error::other)?;
        // SAFETY: `fd` is a fanotify descriptor and `c_path` a NUL-terminated path.
        let marked = unsafe {
            libc::fanotify_mark(
                fd.as_raw_fd(),
                libc::FAN_MARK_ADD | libc::FAN_MARK_FILESYSTEM,
                EVENTS,
                libc::AT_FDCWD,
                c_path.as_ptr(),
            )
        };
        if marked < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Self { fd })
    }

    /// Every open since the watch started (or the last `take`), in order.
    #[expect(
        unsafe_code,
        reason = "fanotify has no safe wrapper in the crates hookbox uses"
    )]
    pub fn take(&self) -> std::io::Result<Vec<FileOpen>> {
        let mut opens = Vec::new();
        let mut buffer = vec![0_u8; 64 * 1024];
        loop {
            // SAFETY: reads into `buffer`, whose length is passed.
            let read = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buffer.as_mut_ptr().cast(),
                    buffer.len(),
                )
            };
            if read < 0 {
                let error = std::io::Error::last_os_error();
                if error.kind() == std::io::ErrorKind::WouldBlock {
                    return Ok(opens);
                }
                return Err(error);
            }
            let size = std::mem::size_of::<libc::fanotify_event_metadata>();
            let mut offset = 0;
            let end = usize::try_from(read).unwrap_or(0);
            while offset + size <= end {
                // SAFETY: the kernel wrote whole events; the read is unaligned-safe.
                let event: libc::fanotify_event_metadata =
                    unsafe { std::ptr::read_unaligned(buffer[offset..].as_ptr().cast()) };
                offset += (event.event_len as usize).max(size);
                if event.mask & libc::FAN_Q_OVERFLOW != 0 {
                    return Err(std::io::Error::other("the fanotify queue overflowed"));
                }
                if event.fd < 0 {
                    continue;
                }
                // SAFETY: the kernel opened this descriptor for us; we own it now.
                let file = unsafe { OwnedFd::from_raw_fd(event.fd) };
                let path = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
                    .unwrap_or_default();
                let inode = std::fs::File::from(file).metadata()?.ino();
                opens.push(FileOpen {
                    pid: u32::try_from(event.pid).unwrap_or(0),
                    inode,
                    path,
                    exec: event.mask & libc::FAN_OPEN_EXEC != 0,
                });
            }
        }
    }
}
