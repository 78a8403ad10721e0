//! The seccomp program installed last, just before the sandboxed program is executed.
//!
//! One hand-written classic BPF program, built once per process in the parent (the child only
//! hands it to the kernel). After the architecture check, the system call number is found by
//! binary search among the few numbers that need a decision, so both the kernel's check at
//! install time (it emulates the program for every system call number to build its cache of
//! always-allowed calls) and the per-call cost stay small.

use std::sync::OnceLock;

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
    // Hard links: a second name for a file would pass a path gate under the name it allows
    // (symbolic links are resolved before hooks see a path; a hard link cannot be).
    #[cfg(target_arch = "x86_64")]
    libc::SYS_link,
    libc::SYS_linkat,
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

/// Namespace flags that `clone` may not be given (each a single bit; `0x80` is
/// `CLONE_NEWTIME`).
const NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP
    | 0x80) as u32;

/// The only socket families `socket` and `socketpair` may create: Unix, IPv4, IPv6. Nothing
/// inside needs another one once the filter is installed (the sandbox's init brings `lo` up
/// through an `AF_INET` ioctl before; glibc's `getaddrinfo` treats a refused `AF_NETLINK` as
/// "both address families configured"). vsock in particular is not namespaced: in a guest VM
/// it reaches the hypervisor.
const SOCKET_FAMILIES: &[u32] = &[
    libc::AF_UNIX as u32,
    libc::AF_INET as u32,
    libc::AF_INET6 as u32,
];

/// `personality` values still allowed: query, plain Linux, 32-bit Linux.
const PERSONALITIES: &[u32] = &[0, 0x0008, 0xffff_ffff];

#[cfg(target_arch = "x86_64")]
const ARCH: Option<u32> = Some(0xc000_003e); // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const ARCH: Option<u32> = Some(0xc000_00b7); // AUDIT_ARCH_AARCH64
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCH: Option<u32> = None;

/// x32 system calls (x86_64 only) have this bit set in their number.
const X32_BIT: u32 = if cfg!(target_arch = "x86_64") {
    0x4000_0000
} else {
    u32::MAX
};

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;

/// Offsets in `struct seccomp_data`.
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;
/// The low 32 bits of argument `index`.
const fn arg_low(index: u32) -> u32 {
    16 + 8 * index + if cfg!(target_endian = "big") { 4 } else { 0 }
}

const BPF_LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const BPF_JA: u16 = (libc::BPF_JMP | libc::BPF_JA) as u16;
const BPF_JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const BPF_JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const BPF_JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
const BPF_RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

/// Where a jump goes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum To {
    /// The next instruction.
    Next,
    /// An absolute instruction index.
    At(usize),
    /// A block placed after the search.
    Block(Block),
}

/// The blocks after the search, each ending in a `ret`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Block {
    Allow,
    Eperm,
    Enosys,
    Eafnosupport,
    Clone,
    Socket,
    Ioctl,
    Personality,
}

struct Insn {
    code: u16,
    k: u32,
    jt: To,
    jf: To,
}

struct Builder {
    code: Vec<Insn>,
}

impl Builder {
    fn push(&mut self, code: u16, k: u32, jt: To, jf: To) -> usize {
        self.code.push(Insn { code, k, jt, jf });
        self.code.len() - 1
    }

    fn stmt(&mut self, code: u16, k: u32) {
        self.push(code, k, To::Next, To::Next);
    }

    /// Emits the search for the accumulator (the call number) among `entries` (sorted).
    fn search(&mut self, entries: &[(u32, Block)]) {
        if entries.len() <= 3 {
            for &(nr, block) in entries {
                self.push(BPF_JEQ_K, nr, To::Block(block), To::Next);
            }
            self.push(BPF_JA, 0, To::Block(Block::Allow), To::Next);
            return;
        }
        let (low, high) = entries.split_at(entries.len() / 2);
        let split = self.push(BPF_JGE_K, high[0].0, To::Next, To::Next);
        self.search(low);
        let high_start = self.code.len();
        self.code[split].jt = To::At(high_start);
        self.search(high);
    }

    /// Resolves every jump into a relative offset.
    fn finish(self, blocks: &[(Block, usize)]) -> Result<Vec<libc::sock_filter>, IsolationError> {
        let resolve = |from: usize, to: To| -> Result<u32, IsolationError> {
            let target = match to {
                To::Next => from + 1,
                To::At(at) => at,
                To::Block(block) => blocks
                    .iter()
                    .find(|(b, _)| *b == block)
                    .map(|&(_, at)| at)
                    .ok_or_else(|| IsolationError::Unsupported("seccomp: no such block".into()))?,
            };
            target
                .checked_sub(from + 1)
                .and_then(|offset| u32::try_from(offset).ok())
                .ok_or_else(|| IsolationError::Unsupported("seccomp: backward jump".into()))
        };
        let mut out = Vec::with_capacity(self.code.len());
        for (index, insn) in self.code.iter().enumerate() {
            let (k, jt, jf) = if insn.code == BPF_JA {
                (resolve(index, insn.jt)?, 0, 0)
            } else if insn.code & 0x07 == libc::BPF_JMP as u16 {
                let short = |to| {
                    resolve(index, to).and_then(|offset| {
                        u8::try_from(offset).map_err(|_| {
                            IsolationError::Unsupported("seccomp: jump too far".into())
                        })
                    })
                };
                (insn.k, short(insn.jt)?, short(insn.jf)?)
            } else {
                (insn.k, 0, 0)
            };
            out.push(libc::sock_filter {
                code: insn.code,
                jt,
                jf,
                k,
            });
        }
        if out.len() > usize::from(u16::MAX) {
            return Err(IsolationError::Unsupported(
                "seccomp: program too long".into(),
            ));
        }
        Ok(out)
    }
}

/// Builds the program: a foreign architecture is killed; x32 system calls fail with `EPERM`;
/// `clone3` fails with `ENOSYS` (its flags live in memory a filter cannot read, so the C
/// library falls back to `clone`); `EPERM` for the calls above, `clone` with a namespace flag,
/// the terminal injection ioctls `TIOCSTI` and `TIOCLINUX`, and personality changes;
/// `socket` and `socketpair` of any family but those of [`SOCKET_FAMILIES`] fail with
/// `EAFNOSUPPORT` (as if the kernel lacked it, so programs fall back); everything else is
/// allowed.
fn build() -> Result<Vec<libc::sock_filter>, IsolationError> {
    let Some(arch) = ARCH else {
        return Err(IsolationError::Unsupported(
            "seccomp filters are only built for x86_64 and aarch64".into(),
        ));
    };
    let mut entries: Vec<(u32, Block)> = DENIED
        .iter()
        .map(|&nr| (nr as u32, Block::Eperm))
        .chain([
            (libc::SYS_clone3 as u32, Block::Enosys),
            (libc::SYS_clone as u32, Block::Clone),
            (libc::SYS_ioctl as u32, Block::Ioctl),
            (libc::SYS_personality as u32, Block::Personality),
            (libc::SYS_socket as u32, Block::Socket),
            (libc::SYS_socketpair as u32, Block::Socket),
        ])
        .collect();
    entries.sort_unstable_by_key(|&(nr, _)| nr);
    entries.dedup_by_key(|&mut (nr, _)| nr);

    let mut b = Builder { code: Vec::new() };
    b.stmt(BPF_LD_W_ABS, OFFSET_ARCH);
    b.push(BPF_JEQ_K, arch, To::At(3), To::Next);
    b.stmt(BPF_RET_K, RET_KILL_PROCESS);
    b.stmt(BPF_LD_W_ABS, OFFSET_NR);
    b.push(BPF_JGE_K, X32_BIT, To::Block(Block::Eperm), To::Next);
    b.search(&entries);

    let mut blocks = Vec::new();
    blocks.push((Block::Clone, b.code.len()));
    b.stmt(BPF_LD_W_ABS, arg_low(0));
    b.push(
        BPF_JSET_K,
        NAMESPACE_FLAGS,
        To::Block(Block::Eperm),
        To::Block(Block::Allow),
    );
    blocks.push((Block::Ioctl, b.code.len()));
    b.stmt(BPF_LD_W_ABS, arg_low(1));
    for request in [libc::TIOCSTI, libc::TIOCLINUX] {
        b.push(BPF_JEQ_K, request as u32, To::Block(Block::Eperm), To::Next);
    }
    b.push(BPF_JA, 0, To::Block(Block::Allow), To::Next);
    blocks.push((Block::Socket, b.code.len()));
    b.stmt(BPF_LD_W_ABS, arg_low(0));
    for &family in SOCKET_FAMILIES {
        b.push(BPF_JEQ_K, family, To::Block(Block::Allow), To::Next);
    }
    b.push(BPF_JA, 0, To::Block(Block::Eafnosupport), To::Next);
    blocks.push((Block::Personality, b.code.len()));
    b.stmt(BPF_LD_W_ABS, arg_low(0));
    for &allowed in PERSONALITIES {
        b.push(BPF_JEQ_K, allowed, To::Block(Block::Allow), To::Next);
    }
    blocks.push((Block::Eperm, b.code.len()));
    b.stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32);
    blocks.push((Block::Enosys, b.code.len()));
    b.stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32);
    blocks.push((Block::Eafnosupport, b.code.len()));
    b.stmt(BPF_RET_K, RET_ERRNO | libc::EAFNOSUPPORT as u32);
    blocks.push((Block::Allow, b.code.len()));
    b.stmt(BPF_RET_K, RET_ALLOW);
    b.finish(&blocks)
}

/// The program (built once per process).
pub(crate) fn program() -> Result<&'static [libc::sock_filter], IsolationError> {
    static PROGRAM: OnceLock<Result<Vec<libc::sock_filter>, String>> = OnceLock::new();
    match PROGRAM.get_or_init(|| build().map_err(|error| error.to_string())) {
        Ok(program) => Ok(program),
        Err(error) => Err(IsolationError::Unsupported(error.clone())),
    }
}

#[cfg(test)]
mod tests {
    //! The program against the previous pair of filters (a `seccompiler` deny-list and a
    //! hand-written guard) plus the socket family rule, run through a small BPF interpreter.

    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::*;

    /// Runs `program` on a `seccomp_data`, returning the action.
    fn run(program: &[libc::sock_filter], data: &[u8; 64]) -> u32 {
        let word = |offset: u32| {
            let at = offset as usize;
            u32::from_ne_bytes(data[at..at + 4].try_into().unwrap())
        };
        let (mut pc, mut acc) = (0_usize, 0_u32);
        loop {
            let insn = program[pc];
            pc += 1;
            match insn.code {
                BPF_LD_W_ABS => acc = word(insn.k),
                BPF_RET_K => return insn.k,
                0x54 => acc &= insn.k, // BPF_ALU | BPF_AND | BPF_K (seccompiler's masks)
                BPF_JA => pc += insn.k as usize,
                BPF_JEQ_K | BPF_JGE_K | BPF_JSET_K => {
                    let taken = match insn.code {
                        BPF_JEQ_K => acc == insn.k,
                        BPF_JGE_K => acc >= insn.k,
                        _ => acc & insn.k != 0,
                    };
                    pc += usize::from(if taken { insn.jt } else { insn.jf });
                }
                other => panic!("unexpected instruction {other:#x}"),
            }
        }
    }

    /// The precedence of an action (lower wins), as the kernel orders stacked filters.
    fn rank(action: u32) -> u32 {
        match action & 0xffff_0000 {
            RET_KILL_PROCESS => 0,
            0 => 1,           // KILL_THREAD
            0x0003_0000 => 2, // TRAP
            RET_ERRNO => 3,
            _ => 9,
        }
    }

    fn old_deny_list() -> Vec<libc::sock_filter> {
        let condition =
            |index, len, op, value| SeccompCondition::new(index, len, op, value).unwrap();
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            DENIED.iter().map(|&call| (call, Vec::new())).collect();
        let flags = [
            libc::CLONE_NEWNS as u64,
            libc::CLONE_NEWUSER as u64,
            libc::CLONE_NEWPID as u64,
            libc::CLONE_NEWNET as u64,
            libc::CLONE_NEWIPC as u64,
            libc::CLONE_NEWUTS as u64,
            libc::CLONE_NEWCGROUP as u64,
            0x80,
        ];
        rules.insert(
            libc::SYS_clone,
            flags
                .iter()
                .map(|&flag| {
                    SeccompRule::new(vec![condition(
                        0,
                        SeccompCmpArgLen::Qword,
                        SeccompCmpOp::MaskedEq(flag),
                        flag,
                    )])
                    .unwrap()
                })
                .collect(),
        );
        rules.insert(
            libc::SYS_ioctl,
            [libc::TIOCSTI, libc::TIOCLINUX]
                .iter()
                .map(|&request| {
                    SeccompRule::new(vec![condition(
                        1,
                        SeccompCmpArgLen::Dword,
                        SeccompCmpOp::MaskedEq(0xffff_ffff),
                        u64::from(request as u32),
                    )])
                    .unwrap()
                })
                .collect(),
        );
        rules.insert(
            libc::SYS_personality,
            vec![
                SeccompRule::new(
                    [0_u64, 0x0008, 0xffff_ffff]
                        .iter()
                        .map(|&allowed| {
                            condition(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, allowed)
                        })
                        .collect(),
                )
                .unwrap(),
            ],
        );
        let arch = if cfg!(target_arch = "x86_64") {
            TargetArch::x86_64
        } else {
            TargetArch::aarch64
        };
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )
        .unwrap();
        BpfProgram::try_from(filter)
            .unwrap()
            .iter()
            .map(|insn| libc::sock_filter {
                code: insn.code,
                jt: insn.jt,
                jf: insn.jf,
                k: insn.k,
            })
            .collect()
    }

    fn old_guard() -> Vec<libc::sock_filter> {
        let stmt = |code, k| libc::sock_filter {
            code,
            jt: 0,
            jf: 0,
            k,
        };
        let jump = |code, k, jt, jf| libc::sock_filter { code, jt, jf, k };
        vec![
            stmt(BPF_LD_W_ABS, 4),
            jump(BPF_JEQ_K, ARCH.unwrap(), 1, 0),
            stmt(BPF_RET_K, RET_KILL_PROCESS),
            stmt(BPF_LD_W_ABS, 0),
            jump(BPF_JGE_K, X32_BIT, 0, 1),
            stmt(BPF_RET_K, RET_ERRNO | libc::EPERM as u32),
            jump(BPF_JEQ_K, libc::SYS_clone3 as u32, 0, 1),
            stmt(BPF_RET_K, RET_ERRNO | libc::ENOSYS as u32),
            stmt(BPF_RET_K, RET_ALLOW),
        ]
    }

    fn data(arch: u32, nr: u32, args: [u64; 6]) -> [u8; 64] {
        let mut data = [0_u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (index, arg) in args.iter().enumerate() {
            data[16 + 8 * index..24 + 8 * index].copy_from_slice(&arg.to_ne_bytes());
        }
        data
    }

    /// What the socket family rule decides for `socket`/`socketpair` of this call, if it
    /// applies: allowed families go on to the previous filters, others fail.
    fn socket_rule(arch: u32, nr: u32, family: u64) -> Option<u32> {
        let is_socket = nr == libc::SYS_socket as u32 || nr == libc::SYS_socketpair as u32;
        if arch != ARCH.unwrap() || !is_socket || SOCKET_FAMILIES.contains(&(family as u32)) {
            return None;
        }
        Some(RET_ERRNO | libc::EAFNOSUPPORT as u32)
    }

    #[test]
    fn the_program_decides_like_the_previous_pair_plus_the_socket_rule() {
        let new = program().unwrap();
        let (deny, guard) = (old_deny_list(), old_guard());
        let arch = ARCH.unwrap();
        let values: Vec<u64> = [
            0,
            1,
            8,
            0x40_0000,
            0xffff_ffff,
            0x1_0000_0000,
            0x1_0000_0008,
            u64::MAX,
            u64::from(libc::SIGCHLD as u32),
            u64::from(libc::TIOCSTI as u32),
            u64::from(libc::TIOCLINUX as u32),
            0x1_0000_0000 | u64::from(libc::TIOCSTI as u32),
            10,
            16,
            17,
            38,
            40,
            44,
            0x1_0000_0002,
            0x1_0000_0028,
        ]
        .into_iter()
        .chain((0..32).map(|bit| 1_u64 << bit))
        .chain((0..32).map(|bit| (1_u64 << bit) | libc::SIGCHLD as u64))
        .collect();
        let mut numbers: Vec<u32> = (0..600).collect();
        numbers.extend([0x4000_0000, 0x4000_0001, 0x4000_0200, u32::MAX]);
        for &other_arch in &[arch, 0x4000_0003] {
            for &nr in &numbers {
                for &value in &values {
                    for args in [[value, 0, 0, 0, 0, 0], [0, value, 0, 0, 0, 0]] {
                        let data = data(other_arch, nr, args);
                        let (a, b) = (run(&deny, &data), run(&guard, &data));
                        assert!(rank(a) != rank(b) || a == b, "ambiguous: {a:#x} {b:#x}");
                        let old = if rank(a) <= rank(b) { a } else { b };
                        let expected = socket_rule(other_arch, nr, args[0]).unwrap_or(old);
                        assert_eq!(run(new, &data), expected, "nr {nr} args {args:x?}");
                    }
                }
            }
        }
    }
}
