//! The warm sandbox's first process once the supervisor runs: the intermediate (see
//! `sandbox::child`), forked from the process that starts the sandbox, re-executes the
//! supervisor's program with [`PARENT_ARG`] as soon as the init has executed the supervisor,
//! so that it keeps none of that process's memory (a fork shares its pages copy-on-write, and
//! every page the starting process changes later becomes the fork's own copy: megabytes per
//! sandbox as `hookbox serve`'s heap moves). It stays the supervisor's parent, which dies with
//! it, and itself dies with the thread that forked it (the parent-death signal survives the
//! execution of an ordinary program); it waits for the supervisor and exits like it.

use std::ffi::OsStr;
use std::io::Write;

use crate::after_fork::exit_like;

/// The argument (right after the program's name) that makes [`supervise_if_asked`] wait as a
/// warm sandbox's first process.
///
/// [`supervise_if_asked`]: super::supervise_if_asked
pub const PARENT_ARG: &str = "--hookbox-sandbox-parent";

/// The arguments the intermediate executes the supervisor's program with.
pub(crate) fn parent_args() -> Vec<Vec<u8>> {
    [super::SUPERVISOR_PROGRAM, PARENT_ARG]
        .map(|arg| arg.as_bytes().to_vec())
        .to_vec()
}

/// Whether this process was started as a warm sandbox's first process (its arguments are
/// exactly [`PARENT_ARG`]).
pub(super) fn asked() -> bool {
    let mut args = std::env::args_os().skip(1);
    args.next().as_deref() == Some(OsStr::new(PARENT_ARG)) && args.next().is_none()
}

/// Waits for this process's one child (the supervisor) and exits like it; without a child
/// (started by hand), says what the argument is for and exits with status 2.
pub(super) fn wait_for_the_supervisor() -> ! {
    // Not dumpable, as the supervisor: nothing may open its `/proc` entries.
    // SAFETY: plain prctl.
    #[expect(unsafe_code, reason = "prctl has no safe wrapper here")]
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes into the local.
        #[expect(unsafe_code, reason = "waitpid for any child")]
        let reaped = unsafe { libc::waitpid(-1, &raw mut status, 0) };
        if reaped > 0 {
            exit_like(status);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            break;
        }
    }
    let _written = writeln!(
        std::io::stderr(),
        "{PARENT_ARG} is for hookbox's own use: the first process of a warm sandbox"
    );
    std::process::exit(2)
}
