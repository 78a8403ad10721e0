//! The init's confinement: landlock rules and dropped capabilities.

use super::{LandlockPlan, check, errno};

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

#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn apply_landlock(plan: &LandlockPlan) -> Result<(), i32> {
    let attr = RulesetAttr {
        handled_access_fs: plan.handled_fs,
        handled_access_net: 0,
        scoped: plan.scoped,
    };
    // SAFETY: `attr` is valid for `attr_size` bytes (at most its full size); the descriptors
    // are ours and closed before returning.
    unsafe {
        let ruleset = check(libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &raw const attr,
            plan.attr_size,
            0,
        ))? as libc::c_int;
        let mut result = Ok(());
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
                result = Err(errno());
                break;
            }
        }
        if result.is_ok() && libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) != 0 {
            result = Err(errno());
        }
        libc::close(ruleset);
        result
    }
}

/// Empties the bounding, ambient, inheritable, permitted and effective sets and locks the
/// securebits, so that executing a program as uid 0 grants no capability back.
#[expect(unsafe_code, reason = "raw system calls between fork and exec")]
pub(super) fn drop_capabilities(cap_last: u32) -> Result<(), i32> {
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
