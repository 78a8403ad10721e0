//! What the kernel and this process allow: user namespaces, the landlock ABI, the highest
//! capability; [`check_isolation`] tries the namespaces in a forked child.

use std::io;
use std::sync::OnceLock;

use landlock::ABI;

use super::IsolationError;

/// Whether this process runs as root (limits are then cgroups, see [`super::Limits`]).
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The kernel's landlock ABI, capped at the newest one this code was written for (V6: file
/// system rights and scopes). Asked once per process.
pub(super) fn landlock_abi() -> ABI {
    static ABI_VERSION: OnceLock<i32> = OnceLock::new();
    let version = *ABI_VERSION.get_or_init(|| {
        #[expect(
            unsafe_code,
            reason = "the landlock crate keeps its version query (LandlockStatus::current) private"
        )]
        // SAFETY: with a null attribute, size 0 and the VERSION flag, the call only returns a
        // number.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<u8>(),
                0_usize,
                1_u32, // LANDLOCK_CREATE_RULESET_VERSION
            )
        };
        i32::try_from(version.min(6)).unwrap_or(0)
    });
    ABI::from(version)
}

/// The highest capability number of the kernel (read once per process).
pub(super) fn cap_last() -> u32 {
    static CAP_LAST: OnceLock<u32> = OnceLock::new();
    *CAP_LAST.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(63)
    })
}

fn read_sysctl(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// A known configuration that forbids this process to create user namespaces.
pub(super) fn userns_restriction() -> Option<String> {
    if read_sysctl("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some(
            "user namespaces are disabled (sysctl user.max_user_namespaces=0); enable them".into(),
        );
    }
    if is_root() {
        return None;
    }
    if read_sysctl("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some(
            "unprivileged user namespaces are disabled (sysctl \
             kernel.unprivileged_userns_clone=0); run as root or enable them"
                .into(),
        );
    }
    if read_sysctl("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1")
    {
        return Some(
            "AppArmor restricts unprivileged user namespaces (sysctl \
             kernel.apparmor_restrict_unprivileged_userns=1); run as root, allow them, or \
             give hookbox an AppArmor profile with `userns`"
                .into(),
        );
    }
    None
}

/// Checks, cheaply, that this process can create the namespaces a sandbox needs (user,
/// mount, pid, net, ipc, uts, cgroup) and map its ids, by forking a child that tries.
pub fn check_isolation() -> Result<(), IsolationError> {
    if let Some(reason) = userns_restriction() {
        return Err(IsolationError::Namespaces(reason));
    }
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    let uid_map = format!("0 {uid} 1\n").into_bytes();
    let gid_map = format!("0 {gid} 1\n").into_bytes();
    let status = probe(&uid_map, &gid_map)?;
    if status == 0 {
        return Ok(());
    }
    let (step, errno) = (status >> 8, status & 0xff);
    let what = match step {
        1 => {
            "unshare(CLONE_NEWUSER|CLONE_NEWNS|CLONE_NEWPID|CLONE_NEWNET|CLONE_NEWIPC|CLONE_NEWUTS)"
        }
        2 => "denying setgroups",
        3 => "writing the gid map",
        4 => "writing the uid map",
        _ => "mounting a tmpfs in the new mount namespace",
    };
    Err(IsolationError::Namespaces(format!(
        "{what} failed: {}",
        io::Error::from_raw_os_error(errno)
    )))
}

/// Forks a child that creates the namespaces; returns `step << 8 | errno` of what failed (0 if
/// all went well; errno is kept modulo 32, enough for the errors that matter here).
#[expect(unsafe_code, reason = "fork, and raw system calls in the forked child")]
fn probe(uid_map: &[u8], gid_map: &[u8]) -> Result<i32, IsolationError> {
    fn write(path: &std::ffi::CStr, data: &[u8]) -> bool {
        // SAFETY: NUL-terminated path, valid buffer, our own descriptor.
        unsafe {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return false;
            }
            let ok = libc::write(fd, data.as_ptr().cast(), data.len()) == data.len() as isize;
            libc::close(fd);
            ok
        }
    }
    // SAFETY: the child only makes async-signal-safe calls on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(IsolationError::Namespaces(format!(
            "fork failed: {}",
            io::Error::last_os_error()
        )));
    }
    if pid == 0 {
        // SAFETY: raw system calls with valid arguments, then _exit.
        unsafe {
            let flags = libc::CLONE_NEWUSER
                | libc::CLONE_NEWNS
                | libc::CLONE_NEWPID
                | libc::CLONE_NEWNET
                | libc::CLONE_NEWIPC
                | libc::CLONE_NEWUTS;
            if libc::unshare(flags) != 0 {
                fail_small(1);
            }
            if !write(c"/proc/self/setgroups", b"deny") {
                fail_small(2);
            }
            if !write(c"/proc/self/gid_map", gid_map) {
                fail_small(3);
            }
            if !write(c"/proc/self/uid_map", uid_map) {
                fail_small(4);
            }
            if libc::mount(
                c"tmpfs".as_ptr(),
                c"/tmp".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                std::ptr::null(),
            ) != 0
            {
                fail_small(5);
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let reaped = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if reaped == pid {
            break;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(IsolationError::Namespaces(format!(
                "waiting for the probe failed: {error}"
            )));
        }
    }
    if !libc::WIFEXITED(status) {
        return Err(IsolationError::Namespaces(
            "the namespace probe was killed".into(),
        ));
    }
    let code = libc::WEXITSTATUS(status);
    Ok(if code == 0 {
        0
    } else {
        (code >> 5) << 8 | (code & 0x1f)
    })
}

/// In the probe child: exits with `step` in bits 5..8 and errno (mod 32) in bits 0..5.
#[expect(unsafe_code, reason = "_exit in the forked probe child")]
fn fail_small(step: i32) -> ! {
    let errno = io::Error::last_os_error().raw_os_error().unwrap_or(1) & 0x1f;
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(step << 5 | errno) }
}
