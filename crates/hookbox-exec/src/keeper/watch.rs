//! What the keeper does once the program runs: wait for it or for the order to stop, then kill
//! every descendant. Only raw system calls; nothing allocates.

use std::ptr;

use crate::after_fork::{die_by, errno, exit_like};

/// Waits for `program` (a child of this process) to exit or for `SIGTERM`, kills every
/// descendant, and exits like the program did (or dies by `SIGTERM`). Every signal must be
/// blocked.
pub(super) fn keep(program: libc::pid_t) -> ! {
    let status = wait_for(program);
    kill_descendants();
    match status {
        Some(status) => exit_like(status),
        None => die_by(libc::SIGTERM),
    }
}

/// Waits until the program exits (its wait status) or the keeper is told to stop (`None`).
/// Orphans reparented to the keeper meanwhile are reaped as they exit. Children are reaped
/// before each wait, so a `SIGCHLD` lost before the signals were blocked loses nothing.
#[expect(unsafe_code, reason = "raw system calls of the keeper")]
fn wait_for(program: libc::pid_t) -> Option<libc::c_int> {
    // SAFETY (whole function): raw system calls on valid arguments.
    unsafe {
        let mut wanted: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut wanted);
        libc::sigaddset(&raw mut wanted, libc::SIGCHLD);
        libc::sigaddset(&raw mut wanted, libc::SIGTERM);
        loop {
            loop {
                let mut status = 0;
                let reaped = libc::waitpid(-1, &raw mut status, libc::WNOHANG | libc::__WALL);
                if reaped == program {
                    return Some(status);
                }
                if reaped <= 0 {
                    break;
                }
            }
            if libc::sigwaitinfo(&raw const wanted, ptr::null_mut()) == libc::SIGTERM {
                return None;
            }
        }
    }
}

/// SIGKILLs every child of the keeper and reaps them until none is left: the children of each
/// killed one are reparented to the keeper (a subreaper) and killed in the next round.
#[expect(unsafe_code, reason = "raw system calls of the keeper")]
fn kill_descendants() {
    loop {
        signal_children(libc::SIGKILL);
        // SAFETY: plain system call.
        let reaped = unsafe { libc::waitpid(-1, ptr::null_mut(), libc::__WALL) };
        if reaped < 0 && errno() != libc::EINTR {
            // ECHILD: nothing left.
            return;
        }
    }
}

/// Sends `signal` to every child listed in `/proc/thread-self/children` (the keeper has one
/// thread).
#[expect(unsafe_code, reason = "raw system calls of the keeper")]
fn signal_children(signal: libc::c_int) {
    // SAFETY (whole function): raw system calls on a valid path and a local buffer.
    unsafe {
        let fd = libc::open(
            c"/proc/thread-self/children".as_ptr(),
            libc::O_RDONLY | libc::O_CLOEXEC,
        );
        if fd < 0 {
            return;
        }
        let mut buf = [0_u8; 512];
        let mut pid: libc::pid_t = 0;
        loop {
            let read = libc::read(fd, buf.as_mut_ptr().cast(), buf.len());
            let Ok(read @ 1..) = usize::try_from(read) else {
                break;
            };
            for &byte in &buf[..read] {
                if byte.is_ascii_digit() {
                    pid = pid
                        .saturating_mul(10)
                        .saturating_add(i32::from(byte - b'0'));
                } else {
                    if pid > 0 {
                        libc::kill(pid, signal);
                    }
                    pid = 0;
                }
            }
        }
        if pid > 0 {
            libc::kill(pid, signal);
        }
        libc::close(fd);
    }
}
