//! pid 1 of the new namespaces: builds the root, joins the network, confines itself.

use super::confine::{apply_landlock, drop_capabilities};
use super::mounts::apply;
use super::network::{NetHandoff, join_network, listen_on_loopback, loopback_up};
use super::{
    FIRST_OP, Failed, Plan, RECORD_LISTENER, STEP_CAPS, STEP_CWD, STEP_FDS, STEP_HOSTNAME,
    STEP_JOIN_NET, STEP_LANDLOCK, STEP_LISTEN, STEP_LOOPBACK, STEP_NNP, STEP_RLIMIT, STEP_SECCOMP,
    Step, check, errno, send_record,
};

/// pid 1 of the new namespace: builds the root, confines itself and returns to exec.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn init_process(plan: &Plan, net: NetHandoff) -> Result<(), Failed> {
    for (index, op) in plan.ops.iter().enumerate() {
        apply(op).at(FIRST_OP + index as u32)?;
    }
    join_network(net).at(STEP_JOIN_NET)?;
    // SAFETY (rest of the function): raw system calls with valid arguments; the structs passed
    // by pointer are locals that outlive the calls.
    unsafe {
        check(libc::sethostname(c"sandbox".as_ptr(), 7).into()).at(STEP_HOSTNAME)?;
        loopback_up().at(STEP_LOOPBACK)?;
        if let Some(port) = plan.listen_port {
            // Created in the new network namespace, where it stays wherever it is used; the
            // parent accepts on it from outside. Our copy is closed before the program runs.
            let listener = listen_on_loopback(port).at(STEP_LISTEN)?;
            let sent = send_record(
                plan.status,
                RECORD_LISTENER,
                u32::from(port),
                0,
                Some(listener),
            );
            let sent_errno = errno();
            libc::close(listener);
            if !sent {
                return Err(sent_errno).at(STEP_LISTEN);
            }
        }
        check(libc::chdir(plan.cwd.as_ptr()).into()).at(STEP_CWD)?;
        for &(resource, soft, hard) in &plan.rlimits {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            check(libc::setrlimit(resource, &raw const limit).into()).at(STEP_RLIMIT)?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into()).at(STEP_NNP)?;
        if let Some(landlock) = &plan.landlock {
            apply_landlock(landlock).at(STEP_LANDLOCK)?;
        }
        drop_capabilities(plan.cap_last).at(STEP_CAPS)?;
        close_inherited_on_exec().at(STEP_FDS)?;
        let filter = libc::sock_fprog {
            len: plan.filter.len() as u16,
            filter: plan.filter.as_ptr().cast_mut(),
        };
        check(libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const filter,
        ))
        .at(STEP_SECCOMP)?;
    }
    // The init's copy of the status socket closes at exec (it is close-on-exec).
    Ok(())
}

/// Marks every descriptor from 3 up close-on-exec, so the program gets only its stdio: hookbox
/// may itself have inherited descriptors without that flag (from a shell, a supervisor…), and
/// the standard library passes those on.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn close_inherited_on_exec() -> Result<(), i32> {
    // SAFETY: close_range with CLOSE_RANGE_CLOEXEC only sets a flag on descriptors.
    let marked = unsafe {
        libc::syscall(
            libc::SYS_close_range,
            3,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    if marked == 0 {
        return Ok(());
    }
    // Before Linux 5.11: flag each possible descriptor (the soft limit was just set).
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the local struct.
    check(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut limit) }.into())?;
    let highest = libc::c_int::try_from(limit.rlim_cur).unwrap_or(libc::c_int::MAX);
    for fd in 3..highest {
        // SAFETY: F_SETFD on a descriptor that may not exist fails harmlessly with EBADF.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}
