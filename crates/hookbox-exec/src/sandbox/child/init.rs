//! pid 1 of the new namespaces: builds the root, joins the network, confines itself (or, in
//! a warm sandbox, becomes the supervisor).

use super::confine::{Confinement, close_inherited_on_exec, confine};
use super::mounts::apply;
use super::network::{NetHandoff, join_network, listen_on_loopback, loopback_up};
use super::{
    CONTROL_FD, FIRST_OP, Failed, Plan, RECORD_LISTENER, STEP_CWD, STEP_FDS, STEP_HOSTNAME,
    STEP_JOIN_NET, STEP_LISTEN, STEP_LOOPBACK, STEP_SUPERVISOR, Step, SupervisorLaunch, check,
    errno, send_record,
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
    }
    if let Some(launch) = &plan.supervisor {
        return Err(exec_supervisor(plan, launch));
    }
    confine(&Confinement {
        rlimits: &plan.rlimits,
        landlock: plan.landlock.as_ref(),
        cap_last: plan.cap_last,
        filter: plan.filter,
    })
    // The init's copy of the status socket closes at exec (close-on-exec).
}

/// Executes the warm sandbox's supervisor (see [`crate::warm`]) in place of a program, with
/// the status socket as descriptor [`CONTROL_FD`] and nothing else; returns only if that
/// fails. The supervisor stays
/// unconfined (it starts each call in namespaces of its own and confines it there).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn exec_supervisor(plan: &Plan, launch: &SupervisorLaunch) -> Failed {
    // SAFETY: raw system calls on descriptors this process owns and on NUL-terminated or
    // null-terminated arrays prepared by the parent.
    unsafe {
        if let Err(errno) = close_inherited_on_exec() {
            return Failed {
                step: STEP_FDS,
                errno,
            };
        }
        // Out of the way of the control socket's number first (the executable may have it),
        // then the socket into it, kept open at exec (`dup2` clears close-on-exec on the copy;
        // a socket already there keeps its flag, which is cleared instead).
        let program = libc::fcntl(launch.program, libc::F_DUPFD_CLOEXEC, CONTROL_FD + 1);
        let placed = if plan.status == CONTROL_FD {
            libc::fcntl(CONTROL_FD, libc::F_SETFD, 0)
        } else {
            libc::dup2(plan.status, CONTROL_FD)
        };
        if program < 0 || placed < 0 {
            return Failed {
                step: STEP_SUPERVISOR,
                errno: errno(),
            };
        }
        libc::syscall(
            libc::SYS_execveat,
            program,
            c"".as_ptr(),
            launch.argv.as_ptr(),
            launch.envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        );
        Failed {
            step: STEP_SUPERVISOR,
            errno: errno(),
        }
    }
}
