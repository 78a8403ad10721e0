//! The last steps before a sandboxed program runs: limits, landlock, dropped capabilities,
//! closed descriptors and the seccomp filter.

use super::{
    Failed, LandlockPlan, STEP_CAPS, STEP_FDS, STEP_LANDLOCK, STEP_NNP, STEP_RLIMIT, STEP_SECCOMP,
    Step, check, errno,
};

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Creates the landlock ruleset of `plan` (a close-on-exec descriptor), with a rule for each
/// of its paths that exists.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn create_ruleset(plan: &LandlockPlan) -> Result<libc::c_int, i32> {
    let attr = RulesetAttr {
        handled_access_fs: plan.handled_fs,
        handled_access_net: 0,
        scoped: plan.scoped,
    };
    // SAFETY: `attr` is valid for `attr_size` bytes (at most its full size); the descriptors
    // opened are closed before returning, the ruleset too when a rule fails.
    unsafe {
        let ruleset = check(libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            plan.attr_size,
            0,
        ))? as libc::c_int;
        for (path, access) in &plan.rules {
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                // A path that is not there needs no rule.
                continue;
            }
            let rule = PathBeneathAttr {
                allowed_access: *access,
                parent_fd: fd,
            };
            let added = libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                1, // LANDLOCK_RULE_PATH_BENEATH
                &raw const rule,
                0,
            );
            libc::close(fd);
            if added != 0 {
                let failed = errno();
                libc::close(ruleset);
                return Err(failed);
            }
        }
        Ok(ruleset)
    }
}

/// What confines a program, the last steps before it is executed: by the init of a cold
/// sandbox, and by each call of a warm one (whose supervisor stays unconfined).
pub(crate) struct Confinement<'a> {
    /// `(resource, soft, hard)` limits to set.
    pub(crate) rlimits: &'a [(libc::__rlimit_resource_t, u64, u64)],
    /// The landlock rules, when the kernel has landlock; their paths are opened now, so that
    /// they name what is mounted there at this point (a warm sandbox's call has fresh `/tmp`
    /// and `/dev/shm`: a rule on what they cover would not reach below them).
    pub(crate) landlock: Option<&'a LandlockPlan>,
    /// The highest capability number of the kernel.
    pub(crate) cap_last: u32,
    /// The seccomp program.
    pub(crate) filter: &'static [libc::sock_filter],
}

/// Sets the limits and `no_new_privs`, restricts to the landlock rules, drops every
/// capability, marks every descriptor from 3 up close-on-exec and applies the seccomp filter.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(crate) fn confine(confinement: &Confinement<'_>) -> Result<(), Failed> {
    // SAFETY: raw system calls with valid arguments; the structs passed by pointer are locals
    // that outlive the calls.
    unsafe {
        for &(resource, soft, hard) in confinement.rlimits {
            let limit = libc::rlimit {
                rlim_cur: soft,
                rlim_max: hard,
            };
            check(libc::setrlimit(resource, &raw const limit).into()).at(STEP_RLIMIT)?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0).into()).at(STEP_NNP)?;
        if let Some(landlock) = confinement.landlock {
            let ruleset = create_ruleset(landlock).at(STEP_LANDLOCK)?;
            let restricted = check(libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0));
            libc::close(ruleset);
            restricted.at(STEP_LANDLOCK)?;
        }
        drop_capabilities(confinement.cap_last).at(STEP_CAPS)?;
        close_inherited_on_exec().at(STEP_FDS)?;
        let filter = libc::sock_fprog {
            len: confinement.filter.len() as u16,
            filter: confinement.filter.as_ptr().cast_mut(),
        };
        check(libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const filter,
        ))
        .at(STEP_SECCOMP)?;
    }
    Ok(())
}

/// Marks every descriptor from 3 up close-on-exec, so the program gets only its stdio: hookbox
/// may itself have inherited descriptors without that flag (from a shell, a supervisor…), and
/// the standard library passes those on.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn close_inherited_on_exec() -> Result<(), i32> {
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

/// Empties the bounding, ambient, inheritable, permitted and effective sets and locks the
/// securebits, so that executing a program as uid 0 grants no capability back.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
fn drop_capabilities(cap_last: u32) -> Result<(), i32> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    // SAFETY: prctl and capset with valid arguments; the cap structs are locals.
    unsafe {
        for cap in 0..=cap_last {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0
                && errno() != libc::EINVAL
            {
                return Err(errno());
            }
        }
        check(
            libc::prctl(
                libc::PR_CAP_AMBIENT,
                libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
                0,
                0,
                0,
            )
            .into(),
        )?;
        check(
            libc::prctl(
                libc::PR_SET_SECUREBITS,
                SECBIT_NOROOT
                    | SECBIT_NOROOT_LOCKED
                    | SECBIT_NO_SETUID_FIXUP
                    | SECBIT_NO_SETUID_FIXUP_LOCKED
                    | SECBIT_KEEP_CAPS_LOCKED
                    | SECBIT_NO_CAP_AMBIENT_RAISE
                    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                0,
                0,
                0,
            )
            .into(),
        )?;
        let header = CapHeader {
            version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3
            pid: 0,
        };
        let data = [CapData {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        check(libc::syscall(
            libc::SYS_capset,
            &raw const header,
            data.as_ptr(),
        ))?;
    }
    Ok(())
}
