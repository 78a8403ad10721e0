//! What a warm sandbox keeps alive, counted whole, from another process (`hookbox env list`):
//! see [`warm_sandbox_footprint`].

use std::collections::HashMap;
use std::io;

use super::supervisor::SUPERVISOR_ARG;

/// Every process a warm sandbox keeps alive and the memory they hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WarmFootprint {
    /// The sandbox's processes: the supervisor's parent (the sandbox's first process, which
    /// the supervisor dies with), the supervisor, and every process below it (spares waiting
    /// for their call, calls running).
    pub pids: Vec<u32>,
    /// Their proportional set size (`Pss` of `/proc/<pid>/smaps_rollup`), each address space
    /// counted once (a spare shares the supervisor's until it executes its call's program).
    pub pss_bytes: u64,
}

/// Counts what the warm sandbox whose supervisor is `supervisor_pid` keeps alive (see
/// [`WarmFootprint`]). Fails when that process is not a warm sandbox's supervisor, or when
/// this process may not read the memory of the sandbox's processes (it takes root).
pub fn warm_sandbox_footprint(supervisor_pid: u32) -> io::Result<WarmFootprint> {
    let not_supervisor = || {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("process {supervisor_pid} is not a warm sandbox's supervisor"),
        )
    };
    let cmdline = std::fs::read(format!("/proc/{supervisor_pid}/cmdline"))
        .map_err(|_gone| not_supervisor())?;
    if cmdline.split(|&byte| byte == 0).nth(1) != Some(SUPERVISOR_ARG.as_bytes()) {
        return Err(not_supervisor());
    }
    let parents = parents();
    let parent = *parents.get(&supervisor_pid).ok_or_else(not_supervisor)?;
    let mut pids = vec![parent, supervisor_pid];
    let mut index = 1;
    while let Some(&pid) = pids.get(index) {
        pids.extend(
            parents
                .iter()
                .filter(|&(_, &of)| of == pid)
                .map(|(&child, _)| child),
        );
        index += 1;
    }
    // The supervisor and its parent must be read; a process below them may have ended since.
    let mut counted: Vec<u32> = Vec::new();
    let mut pss_bytes = 0;
    for (index, &pid) in pids.iter().enumerate() {
        if counted.iter().any(|&other| same_memory(pid, other)) {
            continue;
        }
        match pss(pid) {
            Ok(bytes) => {
                pss_bytes += bytes;
                counted.push(pid);
            }
            Err(error) if index < 2 => {
                return Err(io::Error::new(
                    error.kind(),
                    format!("reading the memory of process {pid} of a warm sandbox: {error}"),
                ));
            }
            Err(_gone) => {}
        }
    }
    Ok(WarmFootprint { pids, pss_bytes })
}

/// The parent of every process, by pid.
fn parents() -> HashMap<u32, u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .flatten()
        .filter_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // "pid (comm) S ppid ...": the name may hold spaces and parentheses.
            let after_name = stat.get(stat.rfind(')')? + 1..)?;
            let parent = after_name.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, parent))
        })
        .collect()
}

/// The `Pss` of process `pid`, in bytes.
fn pss(pid: u32) -> io::Result<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))?;
    rollup
        .lines()
        .find_map(|line| line.strip_prefix("Pss:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .ok_or_else(|| io::Error::other(format!("no Pss in /proc/{pid}/smaps_rollup")))
}

/// Whether processes `a` and `b` share one address space (`kcmp`; not known: no).
fn same_memory(a: u32, b: u32) -> bool {
    /// `KCMP_VM` of `<linux/kcmp.h>`.
    const KCMP_VM: libc::c_long = 1;
    let (Ok(a), Ok(b)) = (libc::pid_t::try_from(a), libc::pid_t::try_from(b)) else {
        return false;
    };
    // SAFETY: kcmp only compares kernel objects of the two processes; no memory is passed.
    #[expect(unsafe_code, reason = "kcmp has no wrapper")]
    let order = unsafe { libc::syscall(libc::SYS_kcmp, a, b, KCMP_VM, 0, 0) };
    order == 0
}
