//! Where the daemon listens, and the checks that keep another user out of it: the directory is
//! a real directory owned by this user with no group or other access (0700), the socket a
//! socket owned by this user, mode 0600, and the process at the other end runs as this user
//! (`SO_PEERCRED`), checked by both ends.

use std::ffi::OsString;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

/// The daemon's directory of one user (and one `HOOKBOX_HOME`).
#[derive(Debug, Clone)]
pub struct Place {
    dir: PathBuf,
}

/// Why the daemon's directory or socket may not be used.
#[derive(Debug)]
pub enum Unusable {
    /// There is no socket: no daemon runs.
    Absent,
    /// Something is there that this user did not make safely (or cannot be checked): refused.
    Unsafe(String),
}

impl Place {
    /// The place for a process whose environment `var` reads: `$HOOKBOX_HOME/daemon` when
    /// `HOOKBOX_HOME` is set, else `$XDG_RUNTIME_DIR/hookbox`, else `<home>/daemon` ([`home_in`]);
    /// `None` when there is no home either.
    pub fn in_env(var: impl Fn(&str) -> Option<OsString>) -> Option<Self> {
        let dir = match (set(&var, "HOOKBOX_HOME"), set(&var, "XDG_RUNTIME_DIR")) {
            (Some(home), _) => PathBuf::from(home).join("daemon"),
            (None, Some(runtime)) => PathBuf::from(runtime).join("hookbox"),
            (None, None) => home_in(var)?.join("daemon"),
        };
        Some(Self { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("hook.sock")
    }

    /// Creates the directory (mode 0700) unless it exists, then checks it.
    pub fn create(&self) -> Result<(), Unusable> {
        if let Some(parent) = self.dir.parent() {
            std::fs::create_dir_all(parent).map_err(|err| {
                Unusable::Unsafe(format!("cannot create {}: {err}", parent.display()))
            })?;
        }
        match std::fs::DirBuilder::new().mode(0o700).create(&self.dir) {
            Ok(()) => {}
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {}
            Err(err) => {
                return Err(Unusable::Unsafe(format!(
                    "cannot create {}: {err}",
                    self.dir.display()
                )));
            }
        }
        self.check_dir()
    }

    /// Checks that the directory is a directory (not a link to one) owned by this user with
    /// no access for anyone else.
    pub fn check_dir(&self) -> Result<(), Unusable> {
        let meta = match std::fs::symlink_metadata(&self.dir) {
            Ok(meta) => meta,
            Err(err) if err.kind() == ErrorKind::NotFound => return Err(Unusable::Absent),
            Err(err) => return Err(unsafe_at(&self.dir, &format!("cannot be read: {err}"))),
        };
        if !meta.file_type().is_dir() {
            return Err(unsafe_at(&self.dir, "is not a directory"));
        }
        if meta.uid() != euid() {
            return Err(unsafe_at(
                &self.dir,
                &format!("is owned by uid {}, not by you", meta.uid()),
            ));
        }
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(unsafe_at(
                &self.dir,
                &format!(
                    "has mode {:o}; it must be 700",
                    meta.permissions().mode() & 0o7777
                ),
            ));
        }
        Ok(())
    }

    /// Checks the directory, then that the socket is a socket owned by this user, mode 0600.
    pub fn check_socket(&self) -> Result<(), Unusable> {
        self.check_dir()?;
        let socket = self.socket();
        let meta = match std::fs::symlink_metadata(&socket) {
            Ok(meta) => meta,
            Err(err) if err.kind() == ErrorKind::NotFound => return Err(Unusable::Absent),
            Err(err) => return Err(unsafe_at(&socket, &format!("cannot be read: {err}"))),
        };
        if !meta.file_type().is_socket() {
            return Err(unsafe_at(&socket, "is not a socket"));
        }
        if meta.uid() != euid() {
            return Err(unsafe_at(
                &socket,
                &format!("is owned by uid {}, not by you", meta.uid()),
            ));
        }
        if meta.permissions().mode() & 0o777 != 0o600 {
            return Err(unsafe_at(
                &socket,
                &format!(
                    "has mode {:o}; it must be 600",
                    meta.permissions().mode() & 0o7777
                ),
            ));
        }
        Ok(())
    }

    /// Connects to the daemon, after checking the socket, and checks that it runs as this user.
    pub fn connect(&self) -> Result<UnixStream, Unusable> {
        self.check_socket()?;
        let socket = self.socket();
        let stream = match UnixStream::connect(&socket) {
            Ok(stream) => stream,
            // A socket nobody listens on: a daemon that died.
            Err(err) if err.kind() == ErrorKind::ConnectionRefused => {
                return Err(Unusable::Absent);
            }
            Err(err) => return Err(unsafe_at(&socket, &format!("cannot be reached: {err}"))),
        };
        match peer_uid(&stream) {
            Ok(uid) if uid == euid() => Ok(stream),
            Ok(uid) => Err(unsafe_at(
                &socket,
                &format!("is served by uid {uid}, not by you"),
            )),
            Err(err) => Err(unsafe_at(
                &socket,
                &format!("its server cannot be identified: {err}"),
            )),
        }
    }
}

/// What [`Place::in_env`] says when there is no home.
pub const NO_HOME: &str =
    "cannot tell where hookbox's home is: set HOOKBOX_HOME (or XDG_DATA_HOME or HOME)";

/// hookbox's home for a process whose environment `var` reads: `$HOOKBOX_HOME`, else
/// `$XDG_DATA_HOME/hookbox`, else `$HOME/.local/share/hookbox` (empty values count as unset);
/// `None` when none is set. (`hookbox_env::Environments::home_in` is this rule.)
pub fn home_in(var: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    if let Some(home) = set(&var, "HOOKBOX_HOME") {
        return Some(PathBuf::from(home));
    }
    if let Some(data) = set(&var, "XDG_DATA_HOME") {
        return Some(PathBuf::from(data).join("hookbox"));
    }
    set(&var, "HOME").map(|home| PathBuf::from(home).join(".local/share/hookbox"))
}

/// The variable `name` that `var` reads, unless unset or empty.
fn set(var: &impl Fn(&str) -> Option<OsString>, name: &str) -> Option<OsString> {
    var(name).filter(|value| !value.is_empty())
}

/// The uid of the process at the other end of `stream` (`SO_PEERCRED`).
pub fn peer_uid(stream: &UnixStream) -> std::io::Result<u32> {
    Ok(rustix::net::sockopt::socket_peercred(stream)?.uid.as_raw())
}

/// This process's effective uid.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The refusal of `path`, which `problem`.
fn unsafe_at(path: &Path, problem: &str) -> Unusable {
    Unusable::Unsafe(format!(
        "{} {problem}: refusing to use it (remove it, or `hookbox daemon stop`)",
        path.display()
    ))
}

/// A socket file's mode bits (the daemon sets 0600 after binding).
pub fn make_private(socket: &Path) -> std::io::Result<()> {
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_place_is_hookbox_home_then_the_runtime_dir_then_the_home() {
        let place = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, OsString)> = vars
                .iter()
                .map(|(name, value)| ((*name).to_owned(), OsString::from(value)))
                .collect();
            Place::in_env(|name| {
                vars.iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.clone())
            })
            .map(|place| place.socket())
        };
        let all = [
            ("HOOKBOX_HOME", "/h"),
            ("XDG_RUNTIME_DIR", "/run/user/1"),
            ("XDG_DATA_HOME", "/data"),
            ("HOME", "/home/u"),
        ];
        let socket = |path: &str| Some(PathBuf::from(path));
        assert_eq!(place(&all), socket("/h/daemon/hook.sock"));
        assert_eq!(place(&all[1..]), socket("/run/user/1/hookbox/hook.sock"));
        assert_eq!(place(&all[2..]), socket("/data/hookbox/daemon/hook.sock"));
        assert_eq!(
            place(&all[3..]),
            socket("/home/u/.local/share/hookbox/daemon/hook.sock")
        );
        assert_eq!(place(&[("HOOKBOX_HOME", ""), ("HOME", "")]), None);
    }
}
