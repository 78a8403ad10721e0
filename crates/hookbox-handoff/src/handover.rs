//! A call that the thin client `hookbox-hook` read but the daemon did not answer is answered by
//! the full `hookbox`, which the thin client executes with, as its stdin, a memory file named
//! [`NAME`] holding a frame of [`Handed`] (what is left to do) and the event's bytes.
//!
//! Only a process that made such a file can hand a call over this way: an agent gives its hook
//! a pipe, and nothing in the event, the command line or the environment turns fd 0 into a
//! memory file. That matters for [`Handed::DaemonFailed`]: for a policy that does not fail
//! closed, the failure answer is the agent's non-blocking error, weaker than a deny the policy
//! would give, so a model must not be able to ask for it (an environment variable would let a
//! project's agent settings set it).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::MemfdFlags;

use crate::client::Handed;
use crate::wire;

/// The memory file's name (`/proc/self/fd/0` reads `/memfd:NAME (deleted)`).
const NAME: &str = "hookbox-hook-handover";

/// A memory file holding `handed` and `event`, read from its start: the full `hookbox`'s stdin.
pub fn write(handed: &Handed, event: &[u8]) -> std::io::Result<OwnedFd> {
    let mut file = File::from(rustix::fs::memfd_create(NAME, MemfdFlags::CLOEXEC)?);
    wire::write_json(&mut file, handed)?;
    file.write_all(event)?;
    file.seek(SeekFrom::Start(0))?;
    Ok(file.into())
}

/// The call handed to this process on its stdin by the thin client (what is left to do and the
/// event, or why it cannot be read); `None` when stdin is anything else, which is then left
/// untouched.
pub fn take() -> Option<std::io::Result<(Handed, Vec<u8>)>> {
    let target = std::fs::read_link("/proc/self/fd/0").ok()?;
    if target.as_os_str().as_bytes() != format!("/memfd:{NAME} (deleted)").as_bytes() {
        return None;
    }
    let mut stdin = std::io::stdin().lock();
    Some(wire::read_json(&mut stdin).and_then(|handed| {
        let mut event = Vec::new();
        stdin.read_to_end(&mut event)?;
        Ok((handed, event))
    }))
}
