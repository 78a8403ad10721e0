//! The seccomp programs installed last, just before the sandboxed program is executed.
//!
//! Built in the parent (they allocate); the child only hands them to the kernel.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::IsolationError;

/// System calls refused with `EPERM` whatever their arguments.
const DENIED: &[libc::c_long] = &[
    // Mounts and root changes, old and new mount API.
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    // New namespaces (clone with namespace flags is handled below).
    libc::SYS_unshare,
    libc::SYS_setns,
    // Debugging other processes.
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    // Kernel attack surface.
    libc::SYS_bpf,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_vhangup,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_sethostname,
    libc::SYS_setdomainname,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_iopl,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_ioperm,
    #[cfg(target_arch = "x86_64")]
    libc::SYS_uselib,
];

/// Namespace flags that `clone` may not be given.
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWCGROUP as u64,
    0x80, // CLONE_NEWTIME
];

/// `personality` values still allowed: query, plain Linux, 32-bit Linux.
const PERSONALITIES: &[u64] = &[0, 0x0008, 0xffff_ffff];

fn arch() -> Result<TargetArch, IsolationError> {
    if cfg!(target_arch = "x86_64") {
        Ok(TargetArch::x86_64)
    } else if cfg!(target_arch = "aarch64") {
        Ok(TargetArch::aarch64)
    } else {
        Err(IsolationError::Unsupported(
            "seccomp filters are only built for x86_64 and aarch64".into(),
        ))
    }
}

fn condition(
    index: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, IsolationError> {
    SeccompCondition::new(index, len, op, value).map_err(seccomp_error)
}

fn seccomp_error(error: impl std::fmt::Display) -> IsolationError {
    IsolationError::Unsupported(format!("cannot build the seccomp filter: {error}"))
}

/// The main deny-list: `EPERM` for the calls above, namespace-creating `clone`s, terminal
/// injection ioctls and personality changes; everything else is allowed.
pub(crate) fn deny_list() -> Result<BpfProgram, IsolationError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|&call| (call, Vec::new())).collect();

    let mut clone_rules = Vec::new();
    for &flag in NAMESPACE_FLAGS {
        clone_rules.push(
            SeccompRule::new(vec![condition(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(flag),
                flag,
            )?])
            .map_err(seccomp_error)?,
        );
    }
    rules.insert(libc::SYS_clone, clone_rules);

    let mut ioctl_rules = Vec::new();
    for request in [libc::TIOCSTI, libc::TIOCLINUX] {
        ioctl_rules.push(
            SeccompRule::new(vec![condition(
                1,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::MaskedEq(0xffff_ffff),
                u64::from(request as u32),
            )?])
            .map_err(seccomp_error)?,
        );
    }
    rules.insert(libc::SYS_ioctl, ioctl_rules);

    let personality = PERSONALITIES
        .iter()
        .map(|&allowed| condition(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, allowed))
        .collect::<Result<Vec<_>, _>>()?;
    rules.insert(
        libc::SYS_personality,
        vec![SeccompRule::new(personality).map_err(seccomp_error)?],
    );

    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch()?,
    )
    .map_err(seccomp_error)?;
    BpfProgram::try_from(filter).map_err(seccomp_error)
}

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// A second, hand-written program: `clone3` fails with `ENOSYS` (its flags live in memory a
/// filter cannot read, so the C library falls back to `clone`, which the deny-list inspects),
/// x32 system calls (numbers with bit 30 set) fail with `EPERM`, and a foreign architecture is
/// killed.
pub(crate) fn guard() -> Vec<libc::sock_filter> {
    #[cfg(target_arch = "x86_64")]
    const ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
    #[cfg(target_arch = "aarch64")]
    const ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    const ARCH: u32 = 0;
    const RET_ALLOW: u32 = 0x7fff_0000;
    const RET_ERRNO: u32 = 0x0005_0000;
    const RET_KILL_PROCESS: u32 = 0x8000_0000;
    let x32_bit = if cfg!(target_arch = "x86_64") {
        0x4000_0000
    } else {
        u32::MAX
    };
    vec![
        stmt(BPF_LD_W_ABS, 4), // seccomp_data.arch
        jump(BPF_JEQ_K, ARCH, 1, 0),
        stmt(BPF_RET_K, RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, 0), // seccomp_data.nr
        jump(BPF_JGE_K, x32_bit, 0, 1),
        stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32),
        jump(BPF_JEQ_K, libc::SYS_clone3 as u32, 0, 1),
        stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32),
        stmt(BPF_RET_K, RET_ALLOW),
    ]
}
