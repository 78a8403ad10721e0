//! The keeper between fork and exec: only raw system calls on the [`KeeperPlan`].
//!
//! Nothing here allocates or takes a lock: the parent may have had other threads at fork time.

use std::ffi::c_void;
use std::io;
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use super::{KeeperPlan, watch};
use crate::after_fork::{close_from_3_except, errno};

/// Size of the stack the program starts on (in 16-byte words): it only resets its signals
/// and calls `execve`.
const LAUNCH_STACK_WORDS: usize = 2048;

/// What the program's side of the `clone` reads, and where it reports a failed `execve`.
struct Launch<'a> {
    plan: &'a KeeperPlan,
    keeper: libc::pid_t,
    /// The errno of the last failed step, 0 while none failed.
    error: AtomicI32,
}

/// The body of `pre_exec` in the spawned child: becomes the keeper and never returns, except
/// with the error of a step that failed before it let the spawn succeed (which the standard
/// library then reports as the spawn's error); a program it could not start is reported on
/// `plan.report` (see [`super::read_failed_start`]).
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(crate) fn run(plan: &KeeperPlan) -> io::Result<()> {
    // SAFETY (whole function): raw system calls on valid arguments; none allocates.
    unsafe {
        // Every signal stays pending until asked for: SIGCHLD and SIGTERM by `wait_for`.
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&raw mut all);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const all, ptr::null_mut());
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
            return Err(io::Error::from_raw_os_error(errno()));
        }
        // If the caller died before prctl, the signal will never come.
        if libc::getppid() != plan.caller {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1) != 0 {
            return Err(io::Error::from_raw_os_error(errno()));
        }
        // The standard library's exec-error channel closes here, before the program starts,
        // which tells the caller the spawn succeeded: once started, the program could stop
        // this process (SIGSTOP) before it closed the channel, and the caller's spawn would
        // wait forever. A program that cannot start is reported on `plan.report` instead.
        close_from_3_except(plan.report);
        let program = match start(plan) {
            Ok(program) => program,
            Err(error) => {
                let errno = error.raw_os_error().unwrap_or(libc::EINVAL).to_le_bytes();
                libc::write(plan.report, errno.as_ptr().cast(), errno.len());
                libc::_exit(127);
            }
        };
        // The program holds the stdio pipes; the report pipe closes here too.
        libc::syscall(libc::SYS_close_range, 0_u32, u32::MAX, 0_u32);
        watch::keep(program)
    }
}

/// Starts the program with `clone(CLONE_VM | CLONE_VFORK)`: it shares this process's memory
/// until `execve` (this thread is suspended meanwhile), so nothing is copied.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn start(plan: &KeeperPlan) -> io::Result<libc::pid_t> {
    // Left uninitialised: the program's side touches only the top of it (zeroing it all would
    // fault in every page of this copy of the caller's stack).
    let mut stack = std::mem::MaybeUninit::<[u128; LAUNCH_STACK_WORDS]>::uninit();
    let launch = Launch {
        plan,
        // SAFETY: plain system call.
        keeper: unsafe { libc::getpid() },
        error: AtomicI32::new(0),
    };
    // SAFETY: the new task runs `launch_program` on `stack` (the top is 16-byte aligned, as
    // every ABI requires) with a pointer to `launch`; with CLONE_VFORK this thread resumes only
    // once it has executed the program or exited, so both outlive its use of them.
    let program = unsafe {
        let top = stack
            .as_mut_ptr()
            .cast::<u128>()
            .add(LAUNCH_STACK_WORDS)
            .cast::<c_void>();
        libc::clone(
            launch_program,
            top,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw const launch).cast_mut().cast(),
        )
    };
    if program < 0 {
        return Err(io::Error::from_raw_os_error(errno()));
    }
    match launch.error.load(Ordering::Relaxed) {
        0 => Ok(program),
        error => {
            // SAFETY: plain system call; the failed program has already exited.
            unsafe { libc::waitpid(program, ptr::null_mut(), 0) };
            Err(io::Error::from_raw_os_error(error))
        }
    }
}

/// The program's side of the `clone`: binds its death to the keeper, restores the signals and
/// executes the program, or reports why it could not and exits.
#[expect(unsafe_code, reason = "raw system calls between clone and exec")]
extern "C" fn launch_program(launch: *mut c_void) -> libc::c_int {
    // SAFETY: `start` passes a pointer to a live `Launch`, only read here (the error is atomic).
    let launch = unsafe { &*launch.cast::<Launch<'_>>() };
    launch.error.store(exec(launch), Ordering::Relaxed);
    // SAFETY: plain system call; `_exit` runs no destructor or handler of the shared memory.
    unsafe { libc::_exit(127) }
}

/// Executes the program like `execvp` does (trying each candidate path while it is missing);
/// returns the errno when that fails.
#[expect(unsafe_code, reason = "raw system calls between clone and exec")]
fn exec(launch: &Launch<'_>) -> i32 {
    let plan = launch.plan;
    // SAFETY (whole function): raw system calls on valid, NUL-terminated or null-terminated
    // arguments prepared by the parent; none allocates.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return errno();
        }
        if libc::getppid() != launch.keeper {
            return libc::ESRCH;
        }
        // Inherited handlers must not run in this task, which shares the keeper's memory;
        // `execve` resets them anyway.
        for signal in 1..=libc::SIGRTMAX() {
            let mut action: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, ptr::null(), &raw mut action) == 0
                && action.sa_sigaction != libc::SIG_DFL
                && action.sa_sigaction != libc::SIG_IGN
            {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &raw const default, ptr::null_mut());
            }
        }
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&raw mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &raw const none, ptr::null_mut());
        plan.exec.exec()
    }
}
