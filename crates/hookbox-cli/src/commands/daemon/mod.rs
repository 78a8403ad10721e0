//! `hookbox daemon`: the per-user process that answers `hookbox hook` calls with the policy
//! kept parsed and the async runtime and HTTP client built ([`server`], [`warm`]); `hookbox
//! hook` and the thin client `hookbox-hook` hand their calls to it ([`client`]) through a socket
//! that only this user can reach, in the frames of `hookbox_handoff::wire`.

mod argv;
pub(crate) mod client;
mod python;
pub(crate) mod server;
mod stamp;
mod warm;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::cli::DaemonCommand;
use hookbox_handoff::place::{Place, Unusable};
use hookbox_handoff::wire::{self, Request, Response};

/// The variable that sets how many seconds the daemon waits for a call before it exits.
pub(crate) const IDLE_VARIABLE: &str = "HOOKBOX_DAEMON_IDLE";

/// The idle time when neither `--idle` nor `HOOKBOX_DAEMON_IDLE` sets one.
const DEFAULT_IDLE: Duration = Duration::from_secs(600);

/// How long `start` and `stop` wait for the daemon.
const WAIT: Duration = Duration::from_secs(10);

/// Exit status of `hookbox daemon status` when no daemon runs.
const NOT_RUNNING: u8 = 3;

/// Runs `hookbox daemon COMMAND`.
pub(crate) fn run(command: &DaemonCommand) -> anyhow::Result<ExitCode> {
    let place = client::place()?;
    match command {
        DaemonCommand::Run { idle } => {
            server::serve(&place, idle_time(*idle)?)?;
            Ok(ExitCode::SUCCESS)
        }
        DaemonCommand::Start => {
            if let Some(status) = status(&place)? {
                print_line(&status)?;
                return Ok(ExitCode::SUCCESS);
            }
            let pid = client::start(&place, &|name| std::env::var_os(name), true)?;
            let deadline = Instant::now() + WAIT;
            while Instant::now() < deadline {
                if let Some(status) = status(&place)? {
                    print_line(&status)?;
                    return Ok(ExitCode::SUCCESS);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            anyhow::bail!(
                "the daemon (pid {pid}) did not answer within {}s; see {}",
                WAIT.as_secs(),
                hookbox_env::Environments::default_home()?
                    .join("daemon.log")
                    .display()
            )
        }
        DaemonCommand::Status => Ok(match status(&place)? {
            Some(status) => {
                print_line(&status)?;
                ExitCode::SUCCESS
            }
            None => {
                print_line(&format!("not running ({})", place.socket().display()))?;
                ExitCode::from(NOT_RUNNING)
            }
        }),
        DaemonCommand::Stop => {
            if ask(&place, &Request::Stop)?.is_none() {
                print_line("not running")?;
                return Ok(ExitCode::SUCCESS);
            }
            let deadline = Instant::now() + WAIT;
            while Instant::now() < deadline {
                if !place.socket().exists() {
                    print_line("stopped")?;
                    return Ok(ExitCode::SUCCESS);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            print_line("stopping once the calls in progress are answered")?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Prints `line` and a newline on stdout.
fn print_line(line: &str) -> std::io::Result<()> {
    crate::render::print_text(&format!("{line}\n"))
}

/// The idle time: `explicit`, else `HOOKBOX_DAEMON_IDLE`, else ten minutes.
fn idle_time(explicit: Option<u64>) -> anyhow::Result<Duration> {
    let seconds = match (explicit, std::env::var_os(IDLE_VARIABLE)) {
        (Some(seconds), _) => seconds,
        (None, Some(value)) => value
            .to_str()
            .and_then(|value| value.trim().parse().ok())
            .with_context(|| {
                format!(
                    "{IDLE_VARIABLE} is {value:?}; set it to a whole number of seconds, e.g. 600"
                )
            })?,
        (None, None) => return Ok(DEFAULT_IDLE),
    };
    Ok(Duration::from_secs(seconds))
}

/// The daemon's state in one line, `None` when none runs.
fn status(place: &Place) -> anyhow::Result<Option<String>> {
    Ok(match ask(place, &Request::Status)? {
        Some(Response::Status {
            pid,
            build,
            calls,
            active,
            idle_seconds,
        }) => Some(format!(
            "running: pid {pid}, build {build}, {calls} calls answered, {active} in progress, \
             idle {idle_seconds}s ({})",
            place.socket().display()
        )),
        Some(other) => anyhow::bail!("the daemon answered {other:?}"),
        None => None,
    })
}

/// Sends `request` to the daemon; `None` when none runs.
fn ask(place: &Place, request: &Request) -> anyhow::Result<Option<Response>> {
    let mut stream = match place.connect() {
        Ok(stream) => stream,
        Err(Unusable::Absent) => return Ok(None),
        Err(Unusable::Unsafe(message)) => anyhow::bail!(message),
    };
    let exchanged = wire::write_json(&mut stream, request)
        .context("cannot reach the daemon")
        .and_then(|()| wire::read_json(&mut stream).context("the daemon did not answer"));
    let response = match exchanged {
        Ok(response) => response,
        // It exited (idle, or replaced) between the connection and the answer.
        Err(_) if !place.socket().exists() => return Ok(None),
        Err(err) => return Err(err),
    };
    if let Response::Refused { reason } = response {
        anyhow::bail!(reason);
    }
    Ok(Some(response))
}
