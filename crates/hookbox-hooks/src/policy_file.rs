//! Reading a policy or settings file on the host so that whatever sits at its path cannot hang
//! or flood the reader: it is opened with `O_NONBLOCK` (opening a FIFO returns at once), only a
//! regular file is read (a FIFO, device, socket or directory is refused by its type), at most
//! [`POLICY_FILE_MAX_BYTES`] of it, and where the model can write the path, a symbolic link at
//! it is refused (`O_NOFOLLOW`): a link never carries trust.

use std::fs::File;
use std::io::{self, ErrorKind, Read};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// Largest policy or settings file hookbox reads; a larger one is refused.
pub const POLICY_FILE_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// Whether a symbolic link at a file's path is followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// Followed: a file of the user's or the administrator's, which the model cannot replace.
    Follow,
    /// Refused, at the file and at its directory: a file the model can write (a project's),
    /// where a link would point hookbox at a file its owner never reviewed there.
    Refuse,
}

/// The bytes of the regular file at `path`, `None` when nothing is there. Anything else at the
/// path (a FIFO, a device, a socket, a directory, a file over [`POLICY_FILE_MAX_BYTES`], a link
/// under [`Links::Refuse`]) is an error saying what it is, returned without waiting on it.
pub fn read_policy_file(path: &Path, links: Links) -> io::Result<Option<Vec<u8>>> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    if links == Links::Refuse {
        flags |= OFlags::NOFOLLOW;
        // The directory holding it (a project's `.agents`) is the agent's to replace too.
        if let Some(parent) = path.parent()
            && std::fs::symlink_metadata(parent).is_ok_and(|meta| meta.file_type().is_symlink())
        {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                format!(
                    "its directory {} is a symbolic link; a file the agent can write must be \
                     reached without one (a link never carries trust): replace the link with \
                     the directory itself",
                    parent.display()
                ),
            ));
        }
    }
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) if links == Links::Refuse => {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                "it is a symbolic link; a file the agent can write must be a regular file \
                 (a link never carries trust): replace the link with the file itself",
            ));
        }
        // Opening a socket fails (ENXIO): say what is there.
        Err(errno) => {
            return Err(match rustix::fs::stat(path) {
                Ok(stat) if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile => {
                    not_regular(FileType::from_raw_mode(stat.st_mode))
                }
                _ => errno.into(),
            });
        }
    };
    let kind = FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode);
    if kind != FileType::RegularFile {
        return Err(not_regular(kind));
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(POLICY_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > POLICY_FILE_MAX_BYTES {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            format!("it is larger than the {POLICY_FILE_MAX_BYTES}-byte limit for policy files"),
        ));
    }
    Ok(Some(bytes))
}

/// [`read_policy_file`]'s bytes as UTF-8 text.
pub fn read_policy_text(path: &Path, links: Links) -> io::Result<Option<String>> {
    read_policy_file(path, links)?
        .map(|bytes| {
            String::from_utf8(bytes)
                .map_err(|_| io::Error::new(ErrorKind::InvalidData, "it is not UTF-8 text"))
        })
        .transpose()
}

/// The error for a file of `kind`, which is not a regular file.
fn not_regular(kind: FileType) -> io::Error {
    io::Error::new(
        ErrorKind::InvalidInput,
        format!(
            "it is {}, not a regular file; hookbox reads policy and settings only from regular \
             files",
            describe(kind)
        ),
    )
}

/// `kind`, with its article, for messages.
fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Fifo => "a FIFO",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Socket => "a socket",
        FileType::Directory => "a directory",
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile | FileType::Unknown => "an unknown kind of file",
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::net::UnixListener;
    use std::path::{Path, PathBuf};
    use std::sync::mpsc;
    use std::time::Duration;

    use rustix::fs::{FileType, Mode};

    use super::{Links, POLICY_FILE_MAX_BYTES, read_policy_file, read_policy_text};

    /// Makes a kind of file in a directory and returns its path.
    type Make = fn(&Path) -> PathBuf;

    /// What can sit at a policy file's path: each makes it in `dir` and returns the path.
    /// A new kind of file is one line.
    const KINDS: [(&str, Make); 9] = [
        ("regular", |dir| write(dir, "regular", b"{}")),
        ("missing", |dir| dir.join("missing")),
        ("fifo", |dir| fifo(dir, "fifo")),
        ("socket", |dir| {
            let path = dir.join("socket");
            std::mem::forget(UnixListener::bind(&path).expect("bind"));
            path
        }),
        ("directory", |dir| {
            let path = dir.join("directory");
            std::fs::create_dir(&path).expect("mkdir");
            path
        }),
        ("huge", |dir| {
            let path = dir.join("huge");
            let file = std::fs::File::create(&path).expect("create");
            file.set_len(POLICY_FILE_MAX_BYTES + 1).expect("sparse");
            path
        }),
        ("link to a regular file", |dir| {
            link(dir, "link-regular", &write(dir, "target", b"{}"))
        }),
        ("link to a FIFO", |dir| {
            link(dir, "link-fifo", &fifo(dir, "target-fifo"))
        }),
        ("link to a device", |dir| {
            link(dir, "link-device", Path::new("/dev/zero"))
        }),
    ];

    fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    }

    fn fifo(dir: &Path, name: &str) -> PathBuf {
        let path = dir.join(name);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        path
    }

    fn link(dir: &Path, name: &str, target: &Path) -> PathBuf {
        let path = dir.join(name);
        std::os::unix::fs::symlink(target, &path).expect("symlink");
        path
    }

    /// What reading each kind gives, under each link rule: `Ok(true)` the bytes, `Ok(false)`
    /// nothing (absent), `Err(words)` an error whose message holds `words`.
    fn expected(kind: &str, links: Links) -> Result<bool, &'static str> {
        match (kind, links) {
            ("regular", _) | ("link to a regular file", Links::Follow) => Ok(true),
            ("missing", _) => Ok(false),
            ("fifo", _) | ("link to a FIFO", Links::Follow) => Err("a FIFO"),
            ("socket", _) => Err("a socket"),
            ("directory", _) => Err("a directory"),
            ("huge", _) => Err("larger than"),
            ("link to a device", Links::Follow) => Err("a character device"),
            (_, Links::Refuse) => Err("a symbolic link"),
            (other, Links::Follow) => panic!("no expectation for {other}"),
        }
    }

    /// Every kind is answered at once (a read that would wait fails the test after 10 s rather
    /// than hanging it) and as expected, with links followed and refused.
    #[test]
    fn every_kind_of_file_is_answered_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (kind, make) in KINDS {
            let path = make(dir.path());
            for links in [Links::Follow, Links::Refuse] {
                let (sender, receiver) = mpsc::channel();
                let reading = path.clone();
                std::thread::spawn(move || {
                    let _ = sender.send(read_policy_file(&reading, links));
                });
                let read = receiver
                    .recv_timeout(Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("reading {kind} ({links:?}) hangs"));
                match (read, expected(kind, links)) {
                    (Ok(bytes), Ok(present)) => assert_eq!(bytes.is_some(), present, "{kind}"),
                    (Err(err), Err(words)) => {
                        assert!(err.to_string().contains(words), "{kind} ({links:?}): {err}");
                    }
                    (read, expected) => {
                        panic!("{kind} ({links:?}): {read:?}, expected {expected:?}")
                    }
                }
            }
        }
    }

    #[test]
    fn text_must_be_utf8() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write(dir.path(), "latin1", b"{\"a\": \"\xe9\"}");
        let err = read_policy_text(&path, Links::Follow).expect_err("not UTF-8");
        assert!(err.to_string().contains("not UTF-8"), "{err}");
    }
}
