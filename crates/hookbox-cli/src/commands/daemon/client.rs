//! `hookbox hook`'s side of the daemon: the call is handed to it with
//! `hookbox_handoff::client` (or was already, by the thin client `hookbox-hook`, which then
//! hands what is left over with `hookbox_handoff::handover`), before the command-line parser or
//! any runtime is built; what the daemon leaves to do (start a daemon, answer in-process, with
//! the policy's failure answer when the daemon failed after it was handed the call) is done
//! here.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use hookbox_handoff::client::{self, Handed, NotHanded, note};
use hookbox_handoff::place::{Place, Unusable};
use hookbox_handoff::{handover, wire};

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

/// Hands the call of this process (`argv`: the arguments after `hookbox`) to the daemon, unless
/// the thin client did, and does what the daemon left to do.
pub(crate) fn hand_off(argv: &[OsString]) -> Handoff {
    let handoff = match handover::take() {
        Some(Ok((handed, event))) => client::Handoff::Returned {
            stdin: Ok(event),
            handed,
        },
        Some(Err(err)) => client::Handoff::Returned {
            stdin: Err(format!(
                "cannot read the call handed over by hookbox-hook: {err}"
            )),
            handed: Handed::InProcess,
        },
        None => client::hand_off(argv, wire::build_id_of(Path::new("/proc/self/exe"))),
    };
    let words: Vec<String> = argv
        .iter()
        .map(|word| word.to_string_lossy().into_owned())
        .collect();
    let env = client::pinned_env(&words);
    let in_process = |stdin, daemon_failed| Handoff::InProcess {
        stdin,
        daemon_failed,
    };
    match handoff {
        client::Handoff::Answered(code) => Handoff::Answered(code),
        client::Handoff::NotHanded(NotHanded::Declined) => in_process(None, None),
        client::Handoff::NotHanded(NotHanded::Absent(place)) => {
            if let Err(err) = start(&place, &env, false) {
                note(&format!("cannot start the daemon: {err:#}"));
            }
            in_process(None, None)
        }
        client::Handoff::NotHanded(NotHanded::Unusable(message)) => {
            note(&message);
            in_process(None, None)
        }
        client::Handoff::Returned { stdin, handed } => match handed {
            Handed::InProcess => in_process(Some(stdin), None),
            Handed::Restart => {
                let place = Place::in_env(&env).context(hookbox_handoff::place::NO_HOME);
                if let Err(err) = place.and_then(|place| start(&place, &env, false)) {
                    note(&format!("cannot start the daemon: {err:#}"));
                }
                in_process(Some(stdin), None)
            }
            Handed::DaemonFailed(message) => in_process(Some(stdin), Some(message)),
        },
    }
}

/// The daemon's place for this process's environment.
pub(crate) fn place() -> anyhow::Result<Place> {
    Place::in_env(|name| std::env::var_os(name)).context(hookbox_handoff::place::NO_HOME)
}

/// Starts a daemon for `place`, detached, its output appended to `$HOOKBOX_HOME/daemon.log`,
/// with the variables `env` reads (this process's, the home a call pins); returns its pid
/// without waiting for it to listen. Only a daemon the user starts (`operator`: `hookbox daemon
/// start`) takes its call deadline from the environment: one started by a hook call would take
/// it from the agent's, which a project's settings can set.
pub(crate) fn start(
    place: &Place,
    env: &dyn Fn(&str) -> Option<OsString>,
    operator: bool,
) -> anyhow::Result<u32> {
    place.create().map_err(|unusable| match unusable {
        Unusable::Absent => anyhow::anyhow!("{} vanished", place.dir().display()),
        Unusable::Unsafe(message) => anyhow::anyhow!(message),
    })?;
    let home = hookbox_env::Environments::home_in(env)?;
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
    let deadline = operator.then_some(super::server::DEADLINE_VARIABLE);
    let env = DAEMON_ENVIRONMENT
        .iter()
        .copied()
        .chain(deadline)
        .filter_map(|name| Some((OsString::from(name), env(name)?)))
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
