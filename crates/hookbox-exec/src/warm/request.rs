//! A call as the parent hands it to a warm sandbox's supervisor: the program, its arguments,
//! environment and working directory, encoded in a memory file (so that no size limit of a
//! socket message applies) passed with the call's descriptors.
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

    /// The request in the memory file `payload`.
    pub(crate) fn read(payload: std::os::fd::OwnedFd) -> Option<Self> {
        use std::os::unix::fs::FileExt;
        let file = std::fs::File::from(payload);
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        let mut bytes = vec![0; len];
        file.read_exact_at(&mut bytes, 0).ok()?;
        Self::decode(&bytes)
    }

    /// The request encoded in `bytes`, or `None` if they are not one.
    pub(crate) fn decode(bytes: &[u8]) -> Option<Self> {
        let mut reader = Reader(bytes);
        let program = reader.string()?;
        let cwd = reader.string()?;
        let args = reader.list()?;
        let vars = reader.list()?;
        reader.0.is_empty().then_some(Self {
            program,
            cwd,
            args,
            vars,
        })
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// What is left of the bytes being decoded.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, len: usize) -> Option<&[u8]> {
        if self.0.len() < len {
            return None;
        }
        let (taken, rest) = self.0.split_at(len);
        self.0 = rest;
        Some(taken)
    }

    fn count(&mut self) -> Option<usize> {
        let bytes: [u8; 4] = self.take(4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(bytes)).ok()
    }

    fn string(&mut self) -> Option<Vec<u8>> {
        let len = self.count()?;
        self.take(len).map(<[u8]>::to_vec)
    }

    fn list(&mut self) -> Option<Vec<Vec<u8>>> {
        let count = self.count()?;
        // Each item takes at least its length: a count beyond that is a lie, not an allocation.
        if count > self.0.len() / 4 {
            return None;
        }
        (0..count).map(|_| self.string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips() {
        let request = Request {
            program: b"sh".to_vec(),
            cwd: b"/workspace".to_vec(),
            args: vec![b"-c".to_vec(), b"echo \0 hi".to_vec(), Vec::new()],
            vars: vec![b"PATH=/bin".to_vec()],
        };
        assert_eq!(Request::decode(&request.encode()), Some(request));
    }

    #[test]
    fn truncated_or_padded_bytes_are_refused() {
        let bytes = Request {
            program: b"true".to_vec(),
            cwd: b"/".to_vec(),
            args: Vec::new(),
            vars: Vec::new(),
        }
        .encode();
        assert_eq!(Request::decode(&bytes[..bytes.len() - 1]), None);
        let mut padded = bytes;
        padded.push(0);
        assert_eq!(Request::decode(&padded), None);
        // A count of a billion items with nothing behind it.
        assert_eq!(
            Request::decode(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0xca, 0x9a, 0x3b]),
            None
        );
    }
}
