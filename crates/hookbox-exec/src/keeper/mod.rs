//! The keeper: what a host run with [`crate::ProcessSpec::die_with_parent`] runs under, so
//! that nothing it starts outlives the run, nor hookbox.
//!
//! The spawned child (the one watched through its pidfd, leading the process group) does not
//! execute the program itself. Between fork and exec it becomes the keeper: it blocks every
//! signal, takes `PR_SET_PDEATHSIG(SIGTERM)` (checking that its parent is still the caller),
//! makes itself a child subreaper (`PR_SET_CHILD_SUBREAPER`: every orphaned descendant, even
//! one that called `setsid`, becomes its child), and starts the program with
//! `clone(CLONE_VM | CLONE_VFORK)` (no copy of hookbox's address space, unlike a fork; the
//! program gets `PR_SET_PDEATHSIG(SIGKILL)` bound to the keeper). It then closes every
//! descriptor and waits for `SIGCHLD` or `SIGTERM`. When the program exits, or when it is told
//! to stop (`SIGTERM`: the caller's timeout, cancellation, or the caller's death), it SIGKILLs
//! every child it has (listed in `/proc/thread-self/children`), reaps one, and repeats until it
//! has none left (each killed process's children are reparented to it), then exits the way
//! the program did (or dies by `SIGTERM` when told to stop).
//!
//! So the caller sees the keeper exit as soon as the program has exited and its descendants
//! are gone; no grandchild can hold the output pipes open past that.
//!
//! The keeper runs as the program's user, so the program can signal it. SIGSTOP cannot be
//! blocked: the caller sends SIGCONT with every SIGTERM, and a keeper still there when the
//! grace after a timeout ends is killed with its whole process group. A host program that
//! keeps freezing its keeper from outside that group (after `setsid`) can therefore leave
//! processes behind: the keeper bounds what a hook or a command leaks by accident, and the
//! sandbox, not the keeper, is the boundary against a hostile program.
//!
//! [`child`] sets the keeper up and starts the program; [`watch`] waits and kills.
//!
//! Everything the keeper needs (paths to try, argument and environment arrays) is prepared here
//! by the parent; [`child`] only makes raw system calls on it.

mod child;
mod watch;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

pub(crate) use child::run;

use crate::ProcessSpec;
use crate::exec_args::ExecArgs;

/// Everything the keeper needs to start the program, prepared before the fork.
#[derive(Debug)]
pub(crate) struct KeeperPlan {
    /// The process that spawns the keeper: the keeper gives up if its parent is another one.
    caller: libc::pid_t,
    /// The program, its arguments and environment.
    exec: ExecArgs,
    /// Where the keeper writes the errno of a program it could not start (the write end of a
    /// pipe the parent reads, see [`read_failed_start`]).
    report: libc::c_int,
}

impl KeeperPlan {
    /// The plan for running `spec`'s program (its working directory is set by the standard
    /// library before the keeper starts). Fails, as the standard library would, on a NUL
    /// byte in the program, an argument or a variable.
    /// `report` is the write end of the pipe of [`read_failed_start`], open until the spawn
    /// returned.
    pub(crate) fn new(spec: &ProcessSpec, report: BorrowedFd<'_>) -> io::Result<Self> {
        let vars = crate::exec_args::env_entries(environment(spec));
        Ok(Self {
            caller: rustix::process::getpid().as_raw_nonzero().get(),
            exec: ExecArgs::new(
                &spec.program,
                spec.args.iter().map(OsString::as_os_str),
                vars,
            )?,
            report: report.as_raw_fd(),
        })
    }
}

/// The errno of a program its keeper could not start, from the read end of the keeper's
/// report pipe (non-blocking; read once the keeper has exited); `None` when it started.
///
/// The keeper lets the spawn succeed before it starts the program: a program that stops its
/// keeper (SIGSTOP cannot be blocked) before the keeper closed the standard library's
/// exec-error channel would otherwise hold the spawning thread forever.
pub(crate) fn read_failed_start(report: &OwnedFd) -> Option<i32> {
    let mut errno = [0_u8; 4];
    match rustix::io::read(report, &mut errno) {
        Ok(4) => Some(i32::from_le_bytes(errno)),
        _ => None,
    }
}

/// Waits, for at most a couple of seconds, until the keeper behind `report` (the read end of
/// its report pipe, see [`read_failed_start`]) started its program or said why it could not:
/// the errno, or `None` once it started (or when the wait ended first).
pub(crate) async fn failed_start(report: OwnedFd) -> Option<i32> {
    use tokio::io::AsyncReadExt;
    let mut report = tokio::net::unix::pipe::Receiver::from_owned_fd(report).ok()?;
    let mut errno = [0_u8; 4];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        report.read_exact(&mut errno),
    )
    .await;
    matches!(read, Ok(Ok(_))).then(|| i32::from_le_bytes(errno))
}

/// The program's environment: the caller's (unless cleared) with `spec.env` on top.
pub(crate) fn environment(spec: &ProcessSpec) -> BTreeMap<OsString, OsString> {
    let mut vars: BTreeMap<OsString, OsString> = if spec.env_clear {
        BTreeMap::new()
    } else {
        std::env::vars_os().collect()
    };
    vars.extend(spec.env.iter().cloned());
    vars
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::*;

    #[test]
    fn the_spec_environment_overrides_the_inherited_one() {
        let spec = ProcessSpec {
            env_clear: true,
            env: vec![
                ("A".into(), "1".into()),
                ("B".into(), "2".into()),
                ("A".into(), "3".into()),
            ],
            ..ProcessSpec::shell("true", std::time::Duration::from_secs(1))
        };
        let vars = environment(&spec);
        assert_eq!(vars.len(), 2);
        assert_eq!(vars.get(OsStr::new("A")), Some(&OsString::from("3")));
    }

    #[test]
    fn a_nul_byte_is_refused() {
        let spec = ProcessSpec {
            args: vec!["a\0b".into()],
            ..ProcessSpec::shell("true", std::time::Duration::from_secs(1))
        };
        let error = KeeperPlan::new(&spec, std::os::fd::AsFd::as_fd(&std::io::stderr()))
            .err()
            .map(|error| error.kind());
        assert_eq!(error, Some(io::ErrorKind::InvalidInput));
    }
}
