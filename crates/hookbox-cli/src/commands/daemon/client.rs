//! The thin client: `hookbox hook` hands its call (command line, working directory,
//! environment, the event on stdin) to the daemon, starting it on demand, and writes back the
//! daemon's answer, before the command-line parser or any runtime is built. When the daemon
//! cannot be used the call is answered in this process (one stderr line says why when
//! something is wrong); when it fails after it was handed the call, the answer is the
//! policy's failure answer.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;

use anyhow::Context;

use super::place::{Place, Unusable};
use super::wire::{self, Request, Response};

/// The variable that turns the daemon off (`off`, `0`, `false` or `no`): every call is then
/// answered in-process, and no daemon is started.
pub(crate) const DAEMON_VARIABLE: &str = "HOOKBOX_DAEMON";

/// The variables a daemon started on demand gets (nothing else of the caller's environment:
/// each call brings its own).
const DAEMON_ENVIRONMENT: [&str; 6] = [
    "HOOKBOX_HOME",
    "XDG_RUNTIME_DIR",
    "XDG_DATA_HOME",
    "HOME",
    "PATH",
    super::IDLE_VARIABLE,
];

/// What became of a `hookbox hook` call handed to the daemon.
pub(crate) enum Handoff {
    /// The daemon answered; the answer is written; exit with this.
    Answered(ExitCode),
    /// Answer it in this process.
    InProcess {
        /// The event, when it was already read from stdin (or why it could not be).
        stdin: Option<Result<Vec<u8>, String>>,
        /// How the daemon failed after it was handed the call: answer with the policy's
        /// failure answer.
        daemon_failed: Option<String>,
    },
}

/// Hands the call of this process (`argv`: the arguments after `hookbox`) to the daemon.
pub(crate) fn hand_off(argv: &[OsString]) -> Handoff {
    let in_process = |stdin| Handoff::InProcess {
        stdin,
        daemon_failed: None,
    };
    if !allowed() {
        return in_process(None);
    }
    let Some(argv) = argv
        .iter()
        .map(|arg| arg.to_str().map(str::to_owned))
        .collect::<Option<Vec<String>>>()
    else {
        return in_process(None);
    };
    // `hookbox hook --help` and the like are the parser's, and read no event from stdin.
    let answerable = argv.get(1).is_some_and(|agent| !agent.starts_with('-'))
        && !argv
            .iter()
            .any(|arg| matches!(arg.as_str(), "-h" | "--help" | "-V" | "--version"));
    if !answerable {
        return in_process(None);
    }
    let Some(cwd) = std::env::current_dir()
        .ok()
        .and_then(|cwd| cwd.into_os_string().into_string().ok())
    else {
        return in_process(None);
    };
    let place = match Place::of_this_process() {
        Ok(place) => place,
        Err(err) => {
            note(&format!("{err:#}"));
            return in_process(None);
        }
    };
    let stream = match place.connect() {
        Ok(stream) => stream,
        Err(Unusable::Absent) => {
            if let Err(err) = start(&place) {
                note(&format!("cannot start the daemon: {err:#}"));
            }
            return in_process(None);
        }
        Err(Unusable::Unsafe(message)) => {
            note(&message);
            return in_process(None);
        }
    };
    let mut stdin = Vec::new();
    if let Err(err) = std::io::stdin().read_to_end(&mut stdin) {
        return in_process(Some(Err(format!("cannot read the hook input: {err}"))));
    }
    exchange(&place, stream, argv, cwd, stdin)
}

/// Sends the call on `stream` and writes back the answer.
fn exchange(
    place: &Place,
    mut stream: std::os::unix::net::UnixStream,
    argv: Vec<String>,
    cwd: String,
    stdin: Vec<u8>,
) -> Handoff {
    let request = Request::Hook {
        build: wire::build_id(),
        argv,
        cwd,
    };
    // One write: the daemon reads the whole call without waiting for the rest of it.
    let mut call = Vec::with_capacity(stdin.len() + 4096);
    let sent = wire::write_json(&mut call, &request)
        .and_then(|()| wire::write_frame(&mut call, &wire::environ(std::env::vars_os())))
        .and_then(|()| wire::write_frame(&mut call, &stdin))
        .and_then(|()| stream.write_all(&call));
    if let Err(err) = sent {
        // The daemon did not get the whole call, so it cannot have acted on it.
        note(&format!("cannot hand the call to the daemon: {err}"));
        return Handoff::InProcess {
            stdin: Some(Ok(stdin)),
            daemon_failed: None,
        };
    }
    let (stdin, daemon_failed) = match wire::read_json::<Response>(&mut stream) {
        Ok(Response::Answer {
            stdout,
            stderr,
            exit_code,
        }) => {
            let _ = std::io::stdout().write_all(stdout.as_bytes());
            let _ = std::io::stderr().write_all(stderr.as_bytes());
            return Handoff::Answered(ExitCode::from(exit_code));
        }
        Ok(Response::InProcess { stale, .. }) => {
            if stale && let Err(err) = start(place) {
                note(&format!("cannot start the daemon: {err:#}"));
            }
            (stdin, None)
        }
        Ok(Response::Refused { reason }) => {
            note(&reason);
            (stdin, None)
        }
        Ok(other) => (
            stdin,
            Some(format!(
                "the hookbox daemon answered {other:?} to a hook call"
            )),
        ),
        Err(err) => (
            stdin,
            Some(format!("the hookbox daemon failed during this call: {err}")),
        ),
    };
    Handoff::InProcess {
        stdin: Some(Ok(stdin)),
        daemon_failed,
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

/// Starts a daemon for `place`, detached, its output appended to `$HOOKBOX_HOME/daemon.log`;
/// returns its pid without waiting for it to listen.
pub(crate) fn start(place: &Place) -> anyhow::Result<u32> {
    place.create().map_err(|unusable| match unusable {
        Unusable::Absent => anyhow::anyhow!("{} vanished", place.dir().display()),
        Unusable::Unsafe(message) => anyhow::anyhow!(message),
    })?;
    let home = hookbox_env::Environments::default_home()?;
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let log_path = home.join("daemon.log");
    let log = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    let program = std::env::current_exe().context("cannot find this program's path")?;
    let env = DAEMON_ENVIRONMENT
        .iter()
        .filter_map(|&name| Some((OsString::from(name), std::env::var_os(name)?)))
        .collect();
    let pid = hookbox_exec::spawn_detached(hookbox_exec::DetachedSpec {
        program,
        args: vec!["daemon".into(), "run".into()],
        env,
        log,
    })
    .context("cannot start `hookbox daemon run`")?;
    Ok(pid)
}

/// One line on stderr: why this call is answered in-process.
fn note(message: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "hookbox hook: {message}; answering this call without the daemon"
    );
}
