//! `hookbox-hook AGENT …`: `hookbox hook AGENT …` as a small program, installed next to
//! `hookbox`, for the agents' hook configurations. An agent starts it for every hook event, and
//! a program this small starts several times faster than `hookbox`: it hands the call to the
//! daemon (as `hookbox hook` does, with the code of `hookbox_handoff`) and writes back the
//! answer. Every call the daemon does not answer is `hookbox hook`'s: it executes the
//! `hookbox` next to it, with stdin untouched or, once read, handed over
//! (`hookbox_handoff::handover`).

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};

use hookbox_handoff::client::{self, Handoff};
use hookbox_handoff::{handover, wire};

/// The exit code when the call cannot be answered at all (no `hookbox` next to this program):
/// Claude Code, Codex, Gemini CLI and Cursor block on it.
const UNANSWERED: u8 = 2;

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::iter::once(OsString::from("hook"))
        .chain(std::env::args_os().skip(1))
        .collect();
    let hookbox = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name("hookbox"),
        Err(err) => return unanswered(&format!("cannot find this program's path: {err}")),
    };
    let handoff = client::hand_off(&argv, wire::build_id_of(&hookbox));
    let stdin = match handoff {
        Handoff::Answered(code) => return code,
        // A read error (never seen on a pipe) is met again by `hookbox` reading the rest.
        Handoff::NotHanded(_) | Handoff::Returned { stdin: Err(_), .. } => None,
        Handoff::Returned {
            stdin: Ok(event),
            handed,
        } => match handover::write(&handed, &event) {
            Ok(file) => Some(file),
            Err(err) => return unanswered(&format!("cannot hand the event over: {err}")),
        },
    };
    let err = exec(&hookbox, &argv, stdin);
    unanswered(&format!(
        "cannot run {}: {err}; hookbox-hook needs hookbox installed next to it (`cargo install \
         --path crates/hookbox-cli` installs both)",
        hookbox.display()
    ))
}

/// Replaces this process with `hookbox ARGV…`, `stdin` (if any) as its stdin; returns only
/// when that fails.
#[expect(
    clippy::disallowed_methods,
    reason = "exec replaces this process: there is no child to manage"
)]
fn exec(hookbox: &Path, argv: &[OsString], stdin: Option<std::os::fd::OwnedFd>) -> std::io::Error {
    let mut command = std::process::Command::new(PathBuf::from(hookbox));
    command.args(argv);
    if let Some(file) = stdin {
        command.stdin(Stdio::from(file));
    }
    command.exec()
}

/// Says on stderr why the call cannot be answered, and exits [`UNANSWERED`].
fn unanswered(message: &str) -> ExitCode {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "hookbox-hook: {message} (denied)");
    ExitCode::from(UNANSWERED)
}
