//! What `execve` needs, prepared before a fork: the paths to try, the argument and environment
//! arrays, for the keeper, which executes a program from a forked process that may not
//! allocate. (A warm sandbox's call lays its request out in memory of its own instead: see
//! `warm::launch`.)

use std::ffi::{CStr, CString, OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::after_fork::errno;

/// Search path used when the environment has no `PATH` (the C library's default).
pub(crate) const DEFAULT_PATH: &[u8] = b"/bin:/usr/bin";

/// The environment `vars` as [`ExecArgs::new`] takes it: `NAME=value` each.
pub(crate) fn env_entries(vars: impl IntoIterator<Item = (OsString, OsString)>) -> Vec<Vec<u8>> {
    vars.into_iter()
        .map(|(name, value)| {
            let mut var = name.into_vec();
            var.push(b'=');
            var.extend_from_slice(value.as_bytes());
            var
        })
        .collect()
}

/// A program to execute like `execvp` does, with its arguments and environment.
#[derive(Debug)]
pub(crate) struct ExecArgs {
    /// The paths to execute, tried in order while they are missing: the program itself, or
    /// the program in each directory of the environment's `PATH`.
    candidates: Vec<CString>,
    /// The program's arguments, its name first (owned here; `argv` points into them).
    _args: Vec<CString>,
    /// The program's environment as `NAME=value` (owned here; `envp` points into them).
    _vars: Vec<CString>,
    /// Null-terminated pointers to `_args`.
    argv: CPointers,
    /// Null-terminated pointers to `_vars`.
    envp: CPointers,
}

impl ExecArgs {
    /// Prepares `program` with `args` (after the program's name) and the environment `vars`
    /// (`NAME=value` each, searched for `PATH`). Fails, as the standard library would, on a
    /// NUL byte.
    pub(crate) fn new<'a>(
        program: &'a OsStr,
        args: impl IntoIterator<Item = &'a OsStr>,
        vars: Vec<Vec<u8>>,
    ) -> io::Result<Self> {
        let search = vars
            .iter()
            .find_map(|var| var.strip_prefix(b"PATH="))
            .unwrap_or(DEFAULT_PATH);
        let candidates = candidates(program.as_bytes(), search)?;
        let args = std::iter::once(program)
            .chain(args)
            .map(|arg| c_string(arg.as_bytes().to_vec()))
            .collect::<io::Result<Vec<_>>>()?;
        let vars = vars
            .into_iter()
            .map(c_string)
            .collect::<io::Result<Vec<_>>>()?;
        Ok(Self {
            candidates,
            argv: CPointers::new(&args),
            envp: CPointers::new(&vars),
            _args: args,
            _vars: vars,
        })
    }

    /// Executes the program, trying each candidate path while it is missing; returns the
    /// errno when that fails. Makes only system calls (safe between fork and exec).
    pub(crate) fn exec(&self) -> i32 {
        // SAFETY: null-terminated arrays of NUL-terminated strings, all owned by `self`.
        #[expect(unsafe_code, reason = "execve between fork and exec")]
        unsafe {
            exec_first(
                self.candidates.iter().map(CString::as_c_str),
                self.argv.as_ptr(),
                self.envp.as_ptr(),
            )
        }
    }
}

/// Executes the first of `paths` that is there (as `execvp` does: past a missing one, or one
/// whose directory is not one; an unreadable one is remembered) with `argv` and `envp`;
/// returns the errno when none could be executed. Makes only system calls.
///
/// # Safety
///
/// `argv` and `envp` must be null-terminated arrays of pointers to NUL-terminated strings.
#[expect(unsafe_code, reason = "execve on arrays the caller vouches for")]
pub(crate) unsafe fn exec_first<'a>(
    paths: impl Iterator<Item = &'a CStr>,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
) -> i32 {
    let mut failure = libc::ENOENT;
    for path in paths {
        // SAFETY: a NUL-terminated path; the arrays as the caller vouches.
        unsafe { libc::execve(path.as_ptr(), argv, envp) };
        match errno() {
            libc::ENOENT | libc::ENOTDIR => {}
            libc::EACCES => failure = libc::EACCES,
            other => return other,
        }
    }
    failure
}

/// A null-terminated array of pointers to C strings owned alongside it.
#[derive(Debug)]
pub(crate) struct CPointers(Vec<*const libc::c_char>);

// SAFETY: the pointers refer to the heap buffers of `CString`s owned by the same struct as
// this array, which never change or move while it exists; they are only read (by `execve`).
#[expect(unsafe_code, reason = "raw pointers into strings owned alongside")]
unsafe impl Send for CPointers {}
// SAFETY: as above; nothing writes through them.
#[expect(unsafe_code, reason = "raw pointers into strings owned alongside")]
unsafe impl Sync for CPointers {}

impl CPointers {
    /// Pointers to `strings`, which must outlive this array and never move.
    pub(crate) fn new(strings: &[CString]) -> Self {
        Self(
            strings
                .iter()
                .map(|string| string.as_ptr())
                .chain(std::iter::once(std::ptr::null()))
                .collect(),
        )
    }

    /// The array, for `execve`.
    pub(crate) fn as_ptr(&self) -> *const *const libc::c_char {
        self.0.as_ptr()
    }
}

/// The paths `execvp` would try for `program` along `search` (a `PATH` value; an empty
/// directory is the working directory).
fn candidates(program: &[u8], search: &[u8]) -> io::Result<Vec<CString>> {
    if program.contains(&b'/') {
        return Ok(vec![c_string(program.to_vec())?]);
    }
    search
        .split(|&byte| byte == b':')
        .map(|dir| {
            let mut path = if dir.is_empty() {
                b".".to_vec()
            } else {
                dir.to_vec()
            };
            path.push(b'/');
            path.extend_from_slice(program);
            c_string(path)
        })
        .collect()
}

fn c_string(bytes: Vec<u8>) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "nul byte found in the program, an argument or the environment",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(paths: &[CString]) -> Vec<&str> {
        paths.iter().map(|path| path.to_str().unwrap()).collect()
    }

    #[test]
    fn a_program_with_a_slash_is_tried_alone() {
        let paths = candidates(b"./run.sh", b"/bin").unwrap();
        assert_eq!(texts(&paths), ["./run.sh"]);
    }

    #[test]
    fn a_bare_name_is_tried_in_each_directory_of_the_path() {
        let paths = candidates(b"sh", b"/usr/bin::/bin").unwrap();
        assert_eq!(texts(&paths), ["/usr/bin/sh", "./sh", "/bin/sh"]);
    }

    #[test]
    fn the_path_of_the_environment_is_searched() {
        let args = ExecArgs::new(OsStr::new("sh"), [], vec![b"PATH=/x:/y".to_vec()]).unwrap();
        assert_eq!(texts(&args.candidates), ["/x/sh", "/y/sh"]);
    }

    #[test]
    fn a_nul_byte_is_refused() {
        let error = ExecArgs::new(OsStr::new("sh"), [OsStr::new("a\0b")], Vec::new())
            .err()
            .map(|error| error.kind());
        assert_eq!(error, Some(io::ErrorKind::InvalidInput));
    }
}
