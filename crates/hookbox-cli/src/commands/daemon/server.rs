//! The daemon: accepts connections on its socket, each answered by the thread that accepted it
//! while another waits for the next (so a hung hook holds only its own call), the call's work in
//! a thread of its own that the answer waits for until the call's deadline; refuses other
//! users, answers `hookbox hook` calls exactly as the in-process path does (same code, with the
//! caller's working directory and environment), and exits when idle, when stopped, or when its
//! socket is no longer its own (removed, or replaced by a newer daemon).

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::argv;
use hookbox_handoff::place::{self, Place, Unusable};
use hookbox_handoff::wire::{self, Request, Response};

use super::warm::Warm;
use crate::commands::hook::{self, Call};

/// How often the daemon checks whether it is idle or its socket is gone.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// Threads kept waiting for calls once the calls that woke them are answered.
const SPARE_ACCEPTERS: usize = 2;

/// How long a client may take to send its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// The variable that sets how many seconds one call may take in the daemon.
pub(crate) const DEADLINE_VARIABLE: &str = "HOOKBOX_DAEMON_DEADLINE";

/// A call's deadline when `HOOKBOX_DAEMON_DEADLINE` sets none: under the 60 s that Gemini CLI
/// gives a hook by default, after which it lets the call through.
const DEFAULT_DEADLINE: Duration = Duration::from_secs(55);

/// The daemon's state, shared by its threads.
struct State {
    /// This binary's build id, taken at start.
    build: String,
    /// Where this binary was started from (to see it replaced: the file there is then of
    /// another build, or gone).
    exe: Option<PathBuf>,
    warm: Warm,
    calls: AtomicU64,
    active: AtomicUsize,
    last_call: Mutex<Instant>,
    stopping: AtomicBool,
    /// Threads waiting for a call (see [`accept_calls`]).
    waiting: AtomicUsize,
    /// How long one call may take before it is answered with the policy's failure answer.
    deadline: Duration,
}

/// Serves `place` until idle for `idle`, stopped, or replaced. Fails when the directory or a
/// file at the socket's path is not safe to use.
///
/// The socket is bound under a name of its own and renamed over the socket's path, so a
/// client never sees a half-made socket, and a newer daemon (another build, or a second one
/// started at the same moment) takes the path over atomically; the one replaced exits once
/// its calls in progress are answered.
pub(super) fn serve(place: &Place, idle: Duration) -> anyhow::Result<()> {
    rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o077));
    place.create().map_err(refusal)?;
    match place.check_socket() {
        Ok(()) | Err(Unusable::Absent) => {}
        Err(unusable) => return Err(refusal(unusable)),
    }
    let socket = place.socket();
    let fresh = place
        .dir()
        .join(format!("hook.sock.{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    let listener =
        UnixListener::bind(&fresh).with_context(|| format!("cannot bind {}", fresh.display()))?;
    place::make_private(&fresh)?;
    let identity = std::fs::symlink_metadata(&fresh)?.ino();
    std::fs::rename(&fresh, &socket)
        .with_context(|| format!("cannot move the socket to {}", socket.display()))?;
    let state = Arc::new(State {
        build: wire::build_id_of(Path::new("/proc/self/exe")),
        exe: std::fs::read_link("/proc/self/exe").ok(),
        warm: Warm::new()?,
        calls: AtomicU64::new(0),
        active: AtomicUsize::new(0),
        last_call: Mutex::new(Instant::now()),
        stopping: AtomicBool::new(false),
        waiting: AtomicUsize::new(0),
        deadline: deadline()?,
    });
    log(&format!(
        "serving {} (pid {}, build {}, idle exit after {}s)",
        socket.display(),
        std::process::id(),
        state.build,
        idle.as_secs()
    ));
    let watched = Arc::clone(&state);
    std::thread::spawn(move || watch(&watched, &socket, identity, idle));
    state.waiting.fetch_add(1, Ordering::SeqCst);
    accept_calls(&state, &Arc::new(listener), true);
    Ok(())
}

/// Accepts calls and answers each in this thread (the thread woken by the client is the one
/// that answers it, the call's work done in a thread of its own: [`answer_hook`]). The last thread waiting for a call
/// starts another before it answers, so that a call that takes long (a hung hook) holds up
/// only itself; a thread that finds [`SPARE_ACCEPTERS`] others waiting once it has answered
/// exits, unless it is `permanent` (the daemon's main thread).
fn accept_calls(state: &Arc<State>, listener: &Arc<UnixListener>, permanent: bool) {
    loop {
        let accepted = listener.accept();
        if state.waiting.fetch_sub(1, Ordering::SeqCst) == 1 {
            start_accepter(state, listener);
        }
        match accepted {
            Ok((stream, _)) => serve_connection(state, stream),
            Err(err) => log(&format!("accept failed: {err}")),
        }
        if state.waiting.fetch_add(1, Ordering::SeqCst) >= SPARE_ACCEPTERS && !permanent {
            state.waiting.fetch_sub(1, Ordering::SeqCst);
            return;
        }
    }
}

/// Starts one more thread waiting for calls (when it cannot, the threads answering calls
/// wait again once they have answered).
fn start_accepter(state: &Arc<State>, listener: &Arc<UnixListener>) {
    state.waiting.fetch_add(1, Ordering::SeqCst);
    let (state_, listener_) = (Arc::clone(state), Arc::clone(listener));
    let started = std::thread::Builder::new()
        .name("hookbox-call".to_owned())
        .spawn(move || accept_calls(&state_, &listener_, false));
    if let Err(err) = started {
        state.waiting.fetch_sub(1, Ordering::SeqCst);
        log(&format!("cannot start a thread for calls: {err}"));
    }
}

/// Exits the process once no call is in progress and the daemon has been idle for `idle`,
/// was stopped, or no longer owns `socket` (inode `identity`: another daemon took it over);
/// at once when the socket's directory is gone (nothing left to serve).
fn watch(state: &State, socket: &Path, identity: u64, idle: Duration) {
    loop {
        std::thread::sleep(WATCH_INTERVAL);
        if !socket.parent().is_some_and(Path::is_dir) {
            log("the socket's directory was removed; exiting");
            std::process::exit(0);
        }
        let ours = std::fs::symlink_metadata(socket).is_ok_and(|meta| meta.ino() == identity);
        if !ours {
            state.stopping.store(true, Ordering::SeqCst);
        }
        let quiet = state.active.load(Ordering::SeqCst) == 0;
        let idle_for = state
            .last_call
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed();
        let stopping = state.stopping.load(Ordering::SeqCst);
        // A call past its deadline was answered: its work left running (a hung hook) does not
        // keep the daemon up.
        if quiet && (stopping || idle_for >= idle) {
            if ours {
                let _ = std::fs::remove_file(socket);
            }
            log(match (ours, stopping) {
                (false, _) => "another daemon took the socket over; exiting",
                (true, true) => "stopped",
                (true, false) => "idle; exiting",
            });
            std::process::exit(0);
        }
    }
}

/// Answers one connection; problems are logged (the client then fails closed or answers
/// the call itself).
fn serve_connection(state: &Arc<State>, mut stream: UnixStream) {
    if let Err(err) = answer_connection(state, &mut stream) {
        log(&format!("a connection failed: {err:#}"));
    }
}

fn answer_connection(state: &Arc<State>, stream: &mut UnixStream) -> anyhow::Result<()> {
    let uid = place::peer_uid(stream).context("cannot identify the client")?;
    if uid != place::euid() {
        log(&format!("refused a client of uid {uid}"));
        return Ok(wire::write_json(
            stream,
            &Response::Refused {
                reason: format!(
                    "this hookbox daemon serves uid {} only, not uid {uid}",
                    place::euid()
                ),
            },
        )?);
    }
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    // The client writes a call at once: read it in as few reads as it arrives in.
    let mut input = std::io::BufReader::new(&*stream);
    let response = match wire::read_json::<Request>(&mut input)? {
        Request::Status => Response::Status {
            pid: std::process::id(),
            build: state.build.clone(),
            calls: state.calls.load(Ordering::SeqCst),
            active: state.active.load(Ordering::SeqCst),
            idle_seconds: state
                .last_call
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .elapsed()
                .as_secs(),
        },
        Request::Stop => {
            stop(state);
            Response::Stopping
        }
        Request::Hook { build, argv, cwd } => {
            let environ = wire::parse_environ(&wire::read_frame(&mut input)?);
            let stdin = wire::read_frame(&mut input)?;
            if build != state.build {
                stale_build(state, &build)
            } else if state.stopping.load(Ordering::SeqCst) {
                Response::InProcess {
                    reason: "the daemon is stopping".to_owned(),
                    stale: false,
                }
            } else {
                state.active.fetch_add(1, Ordering::SeqCst);
                let response = answer_hook(state, &argv, cwd, environ, stdin);
                state.calls.fetch_add(1, Ordering::SeqCst);
                *state
                    .last_call
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Instant::now();
                state.active.fetch_sub(1, Ordering::SeqCst);
                response
            }
        }
    };
    Ok(wire::write_json(stream, &response)?)
}

/// The answer to a client of build `theirs`: when this daemon's own binary was replaced, it
/// stops (and the client starts a new one); else the client answers the call itself.
fn stale_build(state: &State, theirs: &str) -> Response {
    let replaced = state
        .exe
        .as_ref()
        .is_none_or(|exe| wire::build_id_of(exe) != state.build);
    if replaced {
        log(&format!(
            "a client of build {theirs} called; this binary was replaced, stopping"
        ));
        stop(state);
    }
    Response::InProcess {
        reason: format!("the daemon is build {}, the client {theirs}", state.build),
        stale: replaced,
    }
}

/// Stops taking calls (the next ones are answered by their clients); the watcher exits once
/// the calls in progress are answered.
fn stop(state: &State) {
    state.stopping.store(true, Ordering::SeqCst);
}

/// Answers a `hookbox hook` command line, `argv`, for a caller in `cwd` with `env`, with the
/// daemon's warm engine, in a thread of its own: past the daemon's deadline the call is
/// answered at once with the policy's failure answer, and this thread goes back to taking
/// calls while the work left (a hung hook) ends on its own.
fn answer_hook(
    state: &Arc<State>,
    argv: &[String],
    cwd: String,
    env: Vec<(OsString, OsString)>,
    stdin: Vec<u8>,
) -> Response {
    let Some(args) = argv::hook_args(argv) else {
        return Response::InProcess {
            reason: "not a hook call the daemon answers".to_owned(),
            stale: false,
        };
    };
    let arrived = Instant::now();
    let call = Arc::new(Call::new(args, Ok(stdin), PathBuf::from(cwd), env));
    let (sender, receiver) = std::sync::mpsc::channel();
    let (worker_state, worker_call) = (Arc::clone(state), Arc::clone(&call));
    let started = std::thread::Builder::new()
        .name("hookbox-work".to_owned())
        .spawn(move || {
            // The receiver is gone when the call was answered at its deadline.
            let _ = sender.send(hook::respond(&worker_call, &worker_state.warm));
        });
    let reply = match started {
        Err(err) => hook::deadline_reply(&call, &format!("cannot start a thread: {err}"), arrived),
        Ok(_) => match receiver.recv_timeout(state.deadline) {
            Ok(reply) => reply,
            Err(_) => {
                let message = format!(
                    "the call took longer than the daemon's deadline of {}s ({DEADLINE_VARIABLE})",
                    state.deadline.as_secs()
                );
                log(&format!(
                    "{message}; answered with the policy's failure answer, its work left to end"
                ));
                hook::deadline_reply(&call, &message, arrived)
            }
        },
    };
    Response::Answer {
        stdout: reply.stdout,
        stderr: reply.stderr,
        exit_code: reply.exit_code,
    }
}

/// The deadline of one call: `HOOKBOX_DAEMON_DEADLINE` seconds, else [`DEFAULT_DEADLINE`].
fn deadline() -> anyhow::Result<Duration> {
    match std::env::var_os(DEADLINE_VARIABLE) {
        None => Ok(DEFAULT_DEADLINE),
        Some(value) => value
            .to_str()
            .and_then(|value| value.trim().parse().ok())
            .filter(|&seconds| seconds > 0)
            .map(Duration::from_secs)
            .with_context(|| {
                format!(
                    "{DEADLINE_VARIABLE} is {value:?}; set it to a whole number of seconds above \
                     0, e.g. 55"
                )
            }),
    }
}

/// A refusal as an error.
fn refusal(unusable: Unusable) -> anyhow::Error {
    match unusable {
        Unusable::Absent => anyhow::anyhow!("the daemon's directory vanished"),
        Unusable::Unsafe(message) => anyhow::anyhow!(message),
    }
}

/// One line of the daemon's log (its stderr, `$HOOKBOX_HOME/daemon.log` when started on
/// demand).
pub(super) fn log(line: &str) {
    crate::render::print_error(&format!(
        "{} hookbox daemon: {line}\n",
        hookbox_store::Timestamp::now()
    ));
}
