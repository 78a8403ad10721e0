//! Small pieces shared by the processes hookbox forks that wait for a child of their own (the
//! sandbox's intermediate and the keeper): the errno, closing inherited descriptors, and
//! exiting the way the child did.
//!
//! Like the rest of what runs between fork and exec, nothing here allocates or takes a lock.

use std::io;
use std::ptr;

/// The calling thread's errno (`EINVAL` if it cannot be read).
pub(crate) fn errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EINVAL)
}

/// Exits the way the child whose wait `status` this is ended: with its exit code, or by its
/// signal.
pub(crate) fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        die_by(libc::WTERMSIG(status));
    }
    // SAFETY: plain system call.
    #[expect(
        unsafe_code,
        reason = "exiting without running the parent's destructors"
    )]
    unsafe {
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// Dies by `signal` (its default action restored and unblocked), or exits with `128 + signal`
/// when that action does not end the process.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(crate) fn die_by(signal: libc::c_int) -> ! {
    // SAFETY: raw system calls on valid arguments.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut set);
        libc::sigaddset(&raw mut set, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal)
    }
}

/// Closes every descriptor from 3 up, except `keep`.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(crate) fn close_from_3_except(keep: libc::c_int) {
    let ranges: [(u32, u32); 2] = if keep >= 3 {
        [(3, keep as u32 - 1), (keep as u32 + 1, u32::MAX)]
    } else {
        [(3, u32::MAX), (1, 0)]
    };
    for (first, last) in ranges {
        if first <= last {
            // SAFETY: close_range only closes descriptors; nothing here uses them afterwards.
            unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) };
        }
    }
}
