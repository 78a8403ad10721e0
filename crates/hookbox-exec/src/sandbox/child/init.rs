//! pid 1 of the new namespaces: builds the root, joins the network, confines itself (or, in
//! a warm sandbox, becomes the supervisor).

use super::confine::{Confinement, close_inherited_on_exec, confine, create_ruleset};
use super::mounts::apply;
use super::network::{NetHandoff, join_network, listen_on_loopback, loopback_up};
use super::{
    CONTROL_FD, FIRST_OP, Failed, Plan, RECORD_LISTENER, RULESET_FD, STEP_CWD, STEP_FDS,
    STEP_HOSTNAME, STEP_JOIN_NET, STEP_LANDLOCK, STEP_LISTEN, STEP_LOOPBACK, STEP_SUPERVISOR, Step,
    SupervisorLaunch, check, errno, send_record,
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
    let ruleset = plan
        .landlock
        .as_ref()
        .map(create_ruleset)
        .transpose()
        .at(STEP_LANDLOCK)?;
    if let Some(launch) = &plan.supervisor {
        return Err(exec_supervisor(plan, launch, ruleset));
    }
    confine(&Confinement {
        rlimits: &plan.rlimits,
        ruleset,
        cap_last: plan.cap_last,
        filter: plan.filter,
    })
    // The init's copies of the status socket and the ruleset close at exec (close-on-exec).
}

/// Executes the warm sandbox's supervisor (see [`crate::warm`]) in place of a program, with
/// the status socket as descriptor [`CONTROL_FD`] and the landlock ruleset, if any, as
/// [`RULESET_FD`], and nothing else; returns only if that fails. The supervisor stays
/// unconfined (it starts each call in namespaces of its own and confines it there).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn exec_supervisor(plan: &Plan, launch: &SupervisorLaunch, ruleset: Option<libc::c_int>) -> Failed {
    // SAFETY: raw system calls on descriptors this process owns and on NUL-terminated or
    // null-terminated arrays prepared by the parent.
    unsafe {
        if let Err(errno) = close_inherited_on_exec() {
            return Failed {
                step: STEP_FDS,
                errno,
            };
        }
        // Out of the way of the target numbers first (the executable too, which may have one
        // of them), then into them (`dup2` clears close-on-exec on the copy).
        let mut moves = [
            (plan.status, CONTROL_FD),
            (ruleset.unwrap_or(-1), RULESET_FD),
            (launch.program, -1),
        ];
        for (fd, _) in &mut moves {
            if *fd >= 0 {
                *fd = libc::fcntl(*fd, libc::F_DUPFD_CLOEXEC, 10);
                if *fd < 0 {
                    return Failed {
                        step: STEP_SUPERVISOR,
                        errno: errno(),
                    };
                }
            }
        }
        let [control, rules, (program, _)] = moves;
        for (fd, target) in [control, rules] {
            if fd >= 0 && libc::dup2(fd, target) < 0 {
                return Failed {
                    step: STEP_SUPERVISOR,
                    errno: errno(),
                };
            }
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
