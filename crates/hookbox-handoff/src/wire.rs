//! What `hookbox hook` and `hookbox daemon` say over the socket: frames of a 4-byte big-endian
//! length and that many bytes. A request is a JSON [`Request`]; a hook request is followed by
//! the caller's environment (`NAME=VALUE` entries, each ended by a NUL byte, as in
//! `/proc/PID/environ`) and the hook event's bytes. The answer is one JSON [`Response`].

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The largest frame either end accepts (an agent's hook event is far smaller).
const MAX_FRAME: usize = 64 * 1024 * 1024;

/// A client's request.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Answer a `hookbox hook` call (the environment and stdin frames follow).
    Hook {
        /// The [`build_id_of`] the client's `hookbox`: a daemon of another build does not answer.
        build: String,
        /// The arguments after `hookbox` (`hook AGENT …`).
        argv: Vec<String>,
        /// The caller's working directory.
        cwd: String,
    },
    /// Say how the daemon is.
    Status,
    /// Stop taking calls and exit once the calls in progress are answered.
    Stop,
}

/// The daemon's response.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Response {
    /// The answer to a hook call: what the client writes and exits with.
    Answer {
        /// Standard output.
        stdout: String,
        /// Standard error.
        stderr: String,
        /// The exit code.
        exit_code: u8,
    },
    /// The client answers the call itself: the daemon is of another build (`stale`: and is
    /// exiting, so the client starts a new one), or the command line is not one the daemon
    /// answers (`--help`, a usage error), whose messages are the client's to print.
    InProcess {
        /// Why.
        reason: String,
        /// The daemon's binary was replaced: it is exiting.
        stale: bool,
    },
    /// The daemon's state.
    Status {
        /// Its process id.
        pid: u32,
        /// The [`build_id_of`] its own binary.
        build: String,
        /// Hook calls answered.
        calls: u64,
        /// Calls in progress.
        active: usize,
        /// Seconds since the last call ended (or since it started).
        idle_seconds: u64,
    },
    /// The daemon is stopping.
    Stopping,
    /// The caller may not use this daemon (another user).
    Refused {
        /// Why.
        reason: String,
    },
}

/// Writes `bytes` as one frame.
pub fn write_frame(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    let length = u32::try_from(bytes.len())
        .ok()
        .filter(|&length| length as usize <= MAX_FRAME)
        .ok_or_else(|| std::io::Error::other("the frame is over 64 MiB"))?;
    out.write_all(&length.to_be_bytes())?;
    out.write_all(bytes)
}

/// Reads one frame.
pub fn read_frame(input: &mut impl Read) -> std::io::Result<Vec<u8>> {
    let mut length = [0; 4];
    input.read_exact(&mut length)?;
    let length = u32::from_be_bytes(length) as usize;
    if length > MAX_FRAME {
        return Err(std::io::Error::other("the frame is over 64 MiB"));
    }
    let mut bytes = vec![0; length];
    input.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Writes `message` as one JSON frame.
pub fn write_json(out: &mut impl Write, message: &impl Serialize) -> std::io::Result<()> {
    write_frame(out, &serde_json::to_vec(message)?)
}

/// Reads one JSON frame.
pub fn read_json<T: for<'de> Deserialize<'de>>(input: &mut impl Read) -> std::io::Result<T> {
    Ok(serde_json::from_slice(&read_frame(input)?)?)
}

/// An environment as one frame's bytes.
pub fn environ(vars: impl Iterator<Item = (OsString, OsString)>) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (name, value) in vars {
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(b'=');
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// The environment in one frame's bytes (an entry without `=` is skipped).
pub fn parse_environ(bytes: &[u8]) -> Vec<(OsString, OsString)> {
    bytes
        .split(|&byte| byte == 0)
        .filter_map(|entry| {
            let equals = entry.iter().position(|&byte| byte == b'=')?;
            Some((
                OsString::from_vec(entry[..equals].to_vec()),
                OsString::from_vec(entry[equals + 1..].to_vec()),
            ))
        })
        .collect()
}

/// The identity of the `hookbox` binary at `exe` (`/proc/self/exe` for the running one): its
/// version and the device, inode, size and modification time of the file. A rebuilt or
/// reinstalled binary is a new file, so a daemon started from the old one is not used.
pub fn build_id_of(exe: &Path) -> String {
    let file = std::fs::metadata(exe).map_or_else(
        |_| "unknown".to_owned(),
        |meta| {
            format!(
                "{}:{}:{}:{}.{}",
                meta.dev(),
                meta.ino(),
                meta.size(),
                meta.mtime(),
                meta.mtime_nsec()
            )
        },
    );
    format!("{} {file}", env!("CARGO_PKG_VERSION"))
}
