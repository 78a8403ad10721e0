//! A call's request laid out for `execve` in the call's own arena, without allocating: the
//! call shares the supervisor's memory until it executes its program (see
//! `sandbox::child::call`), so it may not use the allocator.
//!
//! The request (see [`super::request`](mod@super::request)) is read into the start of the
//! arena; after it come the argument and environment pointer arrays, then each string
//! NUL-terminated, then the paths to try one after the other (as `execvp` would: the program
//! itself when it has a slash, else the program in each directory of the environment's
//! `PATH`).

use std::ffi::CStr;
use std::os::fd::BorrowedFd;

use rustix::io::Errno;

use crate::exec_args::{DEFAULT_PATH, exec_first};
use crate::sandbox::{Failed, STEP_EXEC, STEP_REQUEST};

/// The size of a pointer in the arrays `execve` takes.
const POINTER: usize = std::mem::size_of::<*const u8>();

/// A request laid out in an arena: what [`Launch::exec`] needs.
pub(super) struct Launch<'a> {
    /// The arena after the request: the arrays, the strings and the paths to try.
    out: &'a [u8],
    /// Where the null-terminated environment pointers start (the argument pointers start
    /// at 0).
    envp: usize,
    /// Where the working directory starts.
    cwd: usize,
    /// Where the paths to try start, one after the other.
    candidates: usize,
    /// How many paths to try.
    tries: usize,
}

fn failed(step: u32, errno: Errno) -> Failed {
    Failed {
        step,
        errno: errno.raw_os_error(),
    }
}

/// A request that is not one.
fn invalid() -> Failed {
    failed(STEP_REQUEST, Errno::INVAL)
}

/// What is left of the request while reading it.
#[derive(Clone)]
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn count(&mut self) -> Result<usize, Failed> {
        let (count, rest) = self.bytes.split_first_chunk::<4>().ok_or_else(invalid)?;
        self.bytes = rest;
        usize::try_from(u32::from_le_bytes(*count)).map_err(|_| invalid())
    }

    /// The next string; a NUL byte inside it would cut it short: refused, as the standard
    /// library refuses it.
    fn string(&mut self) -> Result<&'a [u8], Failed> {
        let len = self.count()?;
        let (string, rest) = self.bytes.split_at_checked(len).ok_or_else(invalid)?;
        self.bytes = rest;
        if string.contains(&0) {
            return Err(failed(STEP_EXEC, Errno::INVAL));
        }
        Ok(string)
    }
}

/// The arena after the request, being written.
struct Writer<'a> {
    out: &'a mut [u8],
    /// Where the next string goes.
    next: usize,
}

impl Writer<'_> {
    /// Writes `parts` one after the other and a NUL (the room was counted); where they start.
    fn string(&mut self, parts: &[&[u8]]) -> usize {
        let start = self.next;
        for part in parts.iter().chain([&&b"\0"[..]]) {
            if let Some(target) = self.out.get_mut(self.next..self.next + part.len()) {
                target.copy_from_slice(part);
            }
            self.next += part.len();
        }
        start
    }

    /// Writes at `at` the address of the byte `to` of the arena after the request (a null
    /// pointer for `None`).
    fn pointer(&mut self, at: usize, to: Option<usize>) {
        let address = to.map_or(0, |to| self.out.as_ptr() as usize + to);
        if let Some(slot) = self.out.get_mut(at..at + POINTER) {
            slot.copy_from_slice(&address.to_ne_bytes());
        }
    }
}

/// Reads the request in the memory file `payload` into `arena` and lays it out for `execve`.
/// A request that is not one fails at [`STEP_REQUEST`]; a NUL byte inside a string, or a
/// request too large for the arena (far larger than `execve` would take), at [`STEP_EXEC`].
pub(super) fn lay_out<'a>(
    payload: BorrowedFd<'_>,
    arena: &'a mut [u8],
) -> Result<Launch<'a>, Failed> {
    let too_big = || failed(STEP_EXEC, Errno::TOOBIG);
    let size = rustix::fs::fstat(payload)
        .map_err(|errno| failed(STEP_REQUEST, errno))?
        .st_size;
    let len = usize::try_from(size).map_err(|_| invalid())?;
    let split = len.next_multiple_of(POINTER);
    if split > arena.len() {
        return Err(too_big());
    }
    let (request, out) = arena.split_at_mut(split);
    let request = request.get_mut(..len).ok_or_else(too_big)?;
    let mut filled = 0;
    while let Some(rest) = request.get_mut(filled..).filter(|rest| !rest.is_empty()) {
        match rustix::io::pread(payload, rest, filled as u64) {
            Ok(0) => return Err(invalid()),
            Ok(read) => filled += read,
            Err(Errno::INTR) => {}
            Err(errno) => return Err(failed(STEP_REQUEST, errno)),
        }
    }

    // First pass: the request's shape, and the room it takes laid out.
    let mut reader = Reader { bytes: request };
    let program = reader.string()?;
    let cwd = reader.string()?;
    let args = reader.count()?;
    let args_reader = reader.clone();
    let mut string_bytes = program.len() + 1 + cwd.len() + 1;
    for _ in 0..args {
        string_bytes += reader.string()?.len() + 1;
    }
    let vars = reader.count()?;
    let vars_reader = reader.clone();
    let mut search = None;
    for _ in 0..vars {
        let var = reader.string()?;
        string_bytes += var.len() + 1;
        search = search.or_else(|| var.strip_prefix(b"PATH="));
    }
    if !reader.bytes.is_empty() {
        return Err(invalid());
    }
    let search = search.unwrap_or(DEFAULT_PATH);
    let searched = !program.contains(&b'/');
    let (tries, try_bytes) = if searched {
        search
            .split(|&byte| byte == b':')
            .fold((0, 0), |(tries, bytes), dir| {
                (tries + 1, bytes + dir.len().max(1) + 1 + program.len() + 1)
            })
    } else {
        (1, program.len() + 1)
    };

    // Second pass: the pointer arrays, then the strings, then the paths to try.
    let envp = (args + 2) * POINTER;
    let strings = envp + (vars + 1) * POINTER;
    if strings + string_bytes + try_bytes > out.len() {
        return Err(too_big());
    }
    let mut writer = Writer { out, next: strings };
    // The program's name is the first argument; the arguments follow it in their array (at
    // 0), the environment has its own (at `envp`); each ends with a null pointer.
    let name = writer.string(&[program]);
    writer.pointer(0, Some(name));
    for (mut reader, count, array, first) in
        [(args_reader, args, 0, 1), (vars_reader, vars, envp, 0)]
    {
        for slot in first..first + count {
            let copied = writer.string(&[reader.string()?]);
            writer.pointer(array + slot * POINTER, Some(copied));
        }
        writer.pointer(array + (first + count) * POINTER, None);
    }
    let cwd = writer.string(&[cwd]);
    let candidates = writer.next;
    if searched {
        for dir in search.split(|&byte| byte == b':') {
            let dir: &[u8] = if dir.is_empty() { b"." } else { dir };
            writer.string(&[dir, b"/", program]);
        }
    } else {
        writer.string(&[program]);
    }
    Ok(Launch {
        out: writer.out,
        envp,
        cwd,
        candidates,
        tries,
    })
}

impl Launch<'_> {
    /// The working directory.
    pub(super) fn cwd(&self) -> &CStr {
        CStr::from_bytes_until_nul(self.out.get(self.cwd..).unwrap_or_default()).unwrap_or(c"/")
    }

    /// Executes the program, trying each path while it is missing; returns the errno when that
    /// fails.
    #[expect(unsafe_code, reason = "execve on the arrays laid out")]
    pub(super) fn exec(&self) -> i32 {
        let mut rest = self.out.get(self.candidates..).unwrap_or_default();
        let paths = (0..self.tries).map_while(|_| {
            let path = CStr::from_bytes_until_nul(rest).ok()?;
            rest = rest.get(path.count_bytes() + 1..).unwrap_or_default();
            Some(path)
        });
        // SAFETY: null-terminated arrays of pointers to NUL-terminated strings, all in
        // `self.out`, laid out by `lay_out`.
        unsafe {
            exec_first(
                paths,
                self.out.as_ptr().cast(),
                self.out.as_ptr().add(self.envp).cast(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::os::fd::{AsFd, OwnedFd};

    use super::*;
    use crate::warm::request::Request;

    fn memfd(bytes: &[u8]) -> OwnedFd {
        let fd = rustix::fs::memfd_create("request", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
        std::fs::File::from(fd.try_clone().unwrap())
            .write_all(bytes)
            .unwrap();
        fd
    }

    fn request(program: &str, args: &[&str], vars: &[&str]) -> Vec<u8> {
        Request {
            program: program.into(),
            cwd: b"/workspace".to_vec(),
            args: args.iter().map(|arg| arg.as_bytes().to_vec()).collect(),
            vars: vars.iter().map(|var| var.as_bytes().to_vec()).collect(),
        }
        .encode()
    }

    /// The strings a null-terminated pointer array at `at` in `out` points to.
    #[expect(unsafe_code, reason = "reading the arrays laid out for execve")]
    fn strings(out: &[u8], at: usize) -> Vec<String> {
        let mut found = Vec::new();
        // SAFETY: `lay_out` wrote a null-terminated array of pointers to NUL-terminated
        // strings in `out` there.
        unsafe {
            let mut pointer = out.as_ptr().add(at).cast::<*const libc::c_char>();
            while !pointer.read_unaligned().is_null() {
                let string = CStr::from_ptr(pointer.read_unaligned());
                found.push(string.to_str().unwrap().to_owned());
                pointer = pointer.add(1);
            }
        }
        found
    }

    fn candidates(launch: &Launch<'_>) -> Vec<String> {
        let mut rest = &launch.out[launch.candidates..];
        (0..launch.tries)
            .map(|_| {
                let path = CStr::from_bytes_until_nul(rest).unwrap();
                rest = &rest[path.count_bytes() + 1..];
                path.to_str().unwrap().to_owned()
            })
            .collect()
    }

    /// What a request laid out says: the arguments, the environment, the working directory
    /// and the paths to try.
    #[derive(Debug, PartialEq)]
    struct LaidOut {
        argv: Vec<String>,
        envp: Vec<String>,
        cwd: String,
        tries: Vec<String>,
    }

    fn lay_out_in(bytes: &[u8], arena_bytes: usize) -> Result<LaidOut, (u32, i32)> {
        let payload = memfd(bytes);
        let mut arena = vec![0_u8; arena_bytes];
        let launch =
            lay_out(payload.as_fd(), &mut arena).map_err(|failed| (failed.step, failed.errno))?;
        Ok(LaidOut {
            argv: strings(launch.out, 0),
            envp: strings(launch.out, launch.envp),
            cwd: launch.cwd().to_str().unwrap().to_owned(),
            tries: candidates(&launch),
        })
    }

    #[test]
    fn a_request_is_laid_out_for_execve() {
        let bytes = request(
            "sh",
            &["-c", "echo hi", ""],
            &["A=1", "PATH=/x::/y", "PATH=/z"],
        );
        let laid_out = lay_out_in(&bytes, 1 << 20).unwrap();
        assert_eq!(laid_out.argv, ["sh", "-c", "echo hi", ""]);
        assert_eq!(laid_out.envp, ["A=1", "PATH=/x::/y", "PATH=/z"]);
        assert_eq!(laid_out.cwd, "/workspace");
        // The first `PATH` is searched; an empty directory is the working directory.
        assert_eq!(laid_out.tries, ["/x/sh", "./sh", "/y/sh"]);
    }

    #[test]
    fn a_program_with_a_slash_is_tried_alone_and_no_path_searches_the_default() {
        let laid_out = lay_out_in(&request("./run.sh", &[], &[]), 1 << 20).unwrap();
        assert_eq!(laid_out.argv, ["./run.sh"]);
        assert!(laid_out.envp.is_empty());
        assert_eq!(laid_out.tries, ["./run.sh"]);
        let laid_out = lay_out_in(&request("true", &[], &["HOME=/h"]), 1 << 20).unwrap();
        assert_eq!(laid_out.tries, ["/bin/true", "/usr/bin/true"]);
    }

    #[test]
    fn what_is_not_a_request_or_cannot_be_executed_fails_at_its_step() {
        let bytes = request("sh", &["-c", "true"], &["PATH=/bin"]);
        let invalid = (STEP_REQUEST, libc::EINVAL);
        assert_eq!(
            lay_out_in(&bytes[..bytes.len() - 1], 1 << 20).err(),
            Some(invalid)
        );
        let mut padded = bytes;
        padded.push(0);
        assert_eq!(lay_out_in(&padded, 1 << 20).err(), Some(invalid));
        // A count of a billion arguments with nothing behind it: refused, nothing reserved.
        assert_eq!(
            lay_out_in(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0xca, 0x9a, 0x3b], 1 << 20).err(),
            Some(invalid)
        );
        assert_eq!(
            lay_out_in(&request("sh", &["a\0b"], &[]), 1 << 20).err(),
            Some((STEP_EXEC, libc::EINVAL))
        );
        // Larger than the arena (whose size is far beyond what execve takes).
        assert_eq!(
            lay_out_in(&request("sh", &[&"x".repeat(4096)], &[]), 4096).err(),
            Some((STEP_EXEC, libc::E2BIG))
        );
        assert_eq!(
            lay_out_in(&request("sh", &[&"x".repeat(2000)], &[]), 4096).err(),
            Some((STEP_EXEC, libc::E2BIG))
        );
    }
}
