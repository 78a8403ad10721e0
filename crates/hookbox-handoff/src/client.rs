//! The client's side of a `hookbox hook` call: the call (command line, working directory,
//! environment, the event on stdin) is handed to the daemon and the daemon's answer written
//! back. When the daemon cannot be used the caller answers the call itself ([`Handoff`] says
//! what is left to do); when the daemon fails after it was handed the call, the answer must be
//! the policy's failure answer.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

use crate::place::{Place, Unusable};
use crate::wire::{self, Request, Response};

/// The variable that turns the daemon off (`off`, `0`, `false` or `no`): every call is then
/// answered in-process, and no daemon is started.
pub const DAEMON_VARIABLE: &str = "HOOKBOX_DAEMON";

/// What became of a `hookbox hook` call offered to the daemon.
pub enum Handoff {
    /// The daemon answered; the answer is written; exit with this.
    Answered(ExitCode),
    /// The call was not handed over and stdin is untouched.
    NotHanded(NotHanded),
    /// The event was read from stdin but the daemon did not answer: answer it in-process, as
    /// [`Handed`] says (a note on stderr already said why, when something is wrong).
    Returned {
        /// The event, or why it could not be read.
        stdin: Result<Vec<u8>, String>,
        /// What is left to do.
        handed: Handed,
    },
}

/// Why a call was not handed to the daemon.
pub enum NotHanded {
    /// The daemon is off, or the command line is not one it answers (`--help`, non-UTF-8).
    Declined,
    /// No daemon runs at `Place`: start one, and answer this call in-process.
    Absent(Place),
    /// The daemon's place cannot be used (the message says why): answer in-process.
    Unusable(String),
}

/// How a call the daemon did not answer is to be answered in-process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", content = "message", rename_all = "snake_case")]
pub enum Handed {
    /// As if there were no daemon.
    InProcess,
    /// As if there were no daemon, after starting a new one: the one asked is of a replaced
    /// binary and is exiting.
    Restart,
    /// With the policy's failure answer: the daemon failed after it was handed the call (the
    /// message says how), so it may have acted on it.
    DaemonFailed(String),
}

/// Hands the call of this process (`argv`: the arguments after `hookbox`) to the daemon, as a
/// client of the `hookbox` binary whose [`wire::build_id_of`] is `build`.
pub fn hand_off(argv: &[OsString], build: String) -> Handoff {
    if !allowed() {
        return Handoff::NotHanded(NotHanded::Declined);
    }
    let Some(argv) = argv
        .iter()
        .map(|arg| arg.to_str().map(str::to_owned))
        .collect::<Option<Vec<String>>>()
    else {
        return Handoff::NotHanded(NotHanded::Declined);
    };
    // `hookbox hook --help` and the like are the parser's, and read no event from stdin.
    let answerable = argv.get(1).is_some_and(|agent| !agent.starts_with('-'))
        && !argv
            .iter()
            .any(|arg| matches!(arg.as_str(), "-h" | "--help" | "-V" | "--version"));
    if !answerable {
        return Handoff::NotHanded(NotHanded::Declined);
    }
    let Some(cwd) = std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.into_os_string().into_string().ok())
    else {
        return Handoff::NotHanded(NotHanded::Declined);
    };
    let Some(place) = Place::in_env(pinned_env(&argv)) else {
        return Handoff::NotHanded(NotHanded::Unusable(crate::place::NO_HOME.to_owned()));
    };
    let stream = match place.connect() {
        Ok(stream) => stream,
        Err(Unusable::Absent) => return Handoff::NotHanded(NotHanded::Absent(place)),
        Err(Unusable::Unsafe(message)) => {
            return Handoff::NotHanded(NotHanded::Unusable(message));
        }
    };
    let mut stdin = Vec::new();
    if let Err(err) = std::io::stdin().read_to_end(&mut stdin) {
        return Handoff::Returned {
            stdin: Err(format!("cannot read the hook input: {err}")),
            handed: Handed::InProcess,
        };
    }
    exchange(stream, Request::Hook { build, argv, cwd }, stdin)
}

/// The home that `hook … --home DIR` (or `--home=DIR`) in `argv` pins, if any: the call's
/// daemon is that home's, whatever `HOOKBOX_HOME` the agent's environment says.
pub fn pinned_home(argv: &[String]) -> Option<&str> {
    let mut words = argv.iter().skip(1);
    while let Some(word) = words.next() {
        if word == "--home" {
            return words.next().map(String::as_str);
        }
        if let Some(home) = word.strip_prefix("--home=") {
            return Some(home);
        }
    }
    None
}

/// This process's environment as the call sees it: `HOOKBOX_HOME` is the home `argv` pins
/// ([`pinned_home`]) when it pins one.
pub fn pinned_env(argv: &[String]) -> impl Fn(&str) -> Option<OsString> + '_ {
    move |name| match pinned_home(argv) {
        Some(home) if name == "HOOKBOX_HOME" => Some(OsString::from(home)),
        _ => std::env::var_os(name),
    }
}

/// Sends the call (`request` and `stdin`) on `stream` and writes back the answer.
fn exchange(mut stream: UnixStream, request: Request, stdin: Vec<u8>) -> Handoff {
    // One write: the daemon reads the whole call without waiting for the rest of it.
    let mut call = Vec::with_capacity(stdin.len() + 4096);
    let sent = wire::write_json(&mut call, &request)
        .and_then(|()| wire::write_frame(&mut call, &wire::environ(std::env::vars_os())))
        .and_then(|()| wire::write_frame(&mut call, &stdin))
        .and_then(|()| stream.write_all(&call));
    if let Err(err) = sent {
        // The daemon did not get the whole call, so it cannot have acted on it.
        note(&format!("cannot hand the call to the daemon: {err}"));
        return Handoff::Returned {
            stdin: Ok(stdin),
            handed: Handed::InProcess,
        };
    }
    let handed = match wire::read_json::<Response>(&mut stream) {
        Ok(Response::Answer {
            stdout,
            stderr,
            exit_code,
        }) => {
            let _ = std::io::stdout().write_all(stdout.as_bytes());
            let _ = std::io::stderr().write_all(stderr.as_bytes());
            return Handoff::Answered(ExitCode::from(exit_code));
        }
        Ok(Response::InProcess { stale: true, .. }) => Handed::Restart,
        Ok(Response::InProcess { stale: false, .. }) => Handed::InProcess,
        Ok(Response::Refused { reason }) => {
            note(&reason);
            Handed::InProcess
        }
        Ok(other) => Handed::DaemonFailed(format!(
            "the hookbox daemon answered {other:?} to a hook call"
        )),
        Err(err) => {
            Handed::DaemonFailed(format!("the hookbox daemon failed during this call: {err}"))
        }
    };
    Handoff::Returned {
        stdin: Ok(stdin),
        handed,
    }
}

/// Whether `HOOKBOX_DAEMON` lets calls go to the daemon.
fn allowed() -> bool {
    std::env::var(DAEMON_VARIABLE).map_or(true, |value| {
        !matches!(
            value.to_ascii_lowercase().as_str(),
            "off" | "0" | "false" | "no"
        )
    })
}

/// One line on stderr: why this call is answered without the daemon.
pub fn note(message: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "hookbox hook: {message}; answering this call without the daemon"
    );
}
