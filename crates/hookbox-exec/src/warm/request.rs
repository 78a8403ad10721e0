//! A call as the parent hands it to a warm sandbox's spare: the program, its arguments,
//! environment and working directory, encoded in a memory file (so that no size limit of a
//! socket message applies) passed with the call's descriptors; the spare lays it out for
//! `execve` without allocating ([`super::launch`]).
//!
//! Each string is a little-endian `u32` length and its bytes; each list, a `u32` count and its
//! strings.

/// One call's program, arguments, environment and working directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Request {
    /// The program (looked up on the environment's `PATH` when it has no slash).
    pub(crate) program: Vec<u8>,
    /// The working directory inside the sandbox.
    pub(crate) cwd: Vec<u8>,
    /// The arguments after the program's name.
    pub(crate) args: Vec<Vec<u8>>,
    /// The whole environment, `NAME=value` each.
    pub(crate) vars: Vec<Vec<u8>>,
}

impl Request {
    /// The request's bytes.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, &self.program);
        put(&mut out, &self.cwd);
        for list in [&self.args, &self.vars] {
            out.extend_from_slice(&(list.len() as u32).to_le_bytes());
            for item in list {
                put(&mut out, item);
            }
        }
        out
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}
