//! SIGTERM: `hookbox serve` stops accepting at once, lets what is in flight finish within
//! `[server] shutdown_timeout_secs`, then (or at a second signal) ends what is left `failed`,
//! answers its requests and leaves nothing running.

use std::io::ErrorKind;
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::warm::{started_pids, wait_for_log, wait_gone};
use super::{Served, api_key, http, serve};

/// Writes a hookbox.toml (with `server`'s lines under `[server]`) whose agent `slow` runs
/// `code` in `code_execution`, then answers.
fn configure(home: &Path, server: &str, code: &str) {
    let script = home.join("slow.script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "code_execution", "args": {"code": code}}]},
            {"text": "done"}]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.join("hookbox.toml"),
        format!(
            "[server]\n{server}\n\n[agents.slow]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ),
    )
    .unwrap();
}

/// The body of a create running agent `slow` in a new environment without network.
fn slow_create(background: bool) -> Value {
    json!({"agent": "slow", "input": "run", "tools": [{"type": "code_execution"}],
           "background": background,
           "environment": {"type": "remote", "network": "disabled", "sources": []}})
}

/// Sends SIGTERM to `served`.
fn sigterm(served: &Served) {
    let pid = rustix::process::Pid::from_child(&served.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
}

/// Waits (at most two minutes, a guard against a hang) for `served` to exit; returns whether it
/// succeeded and its log.
fn wait_exit(served: &mut Served) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(status) = served.child.try_wait().expect("wait") {
            std::thread::sleep(Duration::from_millis(50));
            return (status.success(), served.stderr.lock().unwrap().clone());
        }
        assert!(
            Instant::now() < deadline,
            "hookbox serve did not stop: {}",
            served.stderr.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The stored status and error of interaction `id` in `home`'s store (read after the server
/// stopped, before any restart could recover it).
fn stored(home: &Path, id: &str) -> (String, Value) {
    let db = rusqlite::Connection::open(home.join("hookbox.db")).unwrap();
    let (status, error): (String, Option<String>) = db
        .query_row(
            "SELECT status, error FROM interactions WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    let error = error.map_or(Value::Null, |text| serde_json::from_str(&text).unwrap());
    (status, error)
}

#[test]
fn a_connection_during_the_drain_is_refused_and_the_request_in_flight_is_answered() {
    let home = tempfile::tempdir().unwrap();
    configure(
        home.path(),
        "shutdown_timeout_secs = 120",
        "sleep 3; echo S''LEPT",
    );
    let key = api_key(home.path(), "ci");
    let mut served = serve(home.path(), &[]);
    let url = served.base_url.clone();
    let in_flight = std::thread::spawn({
        let url = url.clone();
        move || http::json(&url, &key, "POST", "/v1/interactions", &slow_create(false))
    });
    wait_for_log(&served, "the call's sandbox", |log| {
        log.contains("warm sandbox started")
    });
    sigterm(&served);
    let log = wait_for_log(&served, "what the drain waits for", |log| {
        log.contains("waiting for")
    });
    // Refused at once, not accepted and left unanswered.
    match TcpStream::connect(http::authority(&url)) {
        Err(err) => assert_eq!(err.kind(), ErrorKind::ConnectionRefused, "{err}"),
        Ok(_) => panic!("a connection was accepted during the drain: {log}"),
    }
    let reply = in_flight.join().unwrap();
    assert_eq!(reply.status, 200, "{reply:?}");
    let interaction = reply.json();
    assert_eq!(interaction["status"], "completed", "{interaction}");
    assert!(reply.body.contains("SLEPT"), "{reply:?}");
    let (success, log) = wait_exit(&mut served);
    assert!(success, "{log}");
    // The log said what it waited for: the run, by its interaction's id.
    let id = interaction["id"].as_str().unwrap();
    let waiting = log
        .lines()
        .find(|line| line.contains("waiting for"))
        .unwrap();
    assert!(waiting.contains(id), "{waiting}");
}

/// Ways a drain ends before what is in flight finishes: the `[server]` lines, how many
/// SIGTERMs are sent, and what the error of the interactions left then says.
const CUT_SHORT: &[(&str, &str, usize, &str)] = &[
    (
        "the bound",
        "shutdown_timeout_secs = 1",
        1,
        "shutdown_timeout_secs",
    ),
    (
        "a second signal",
        "shutdown_timeout_secs = 600",
        2,
        "second signal",
    ),
];

#[test]
fn what_is_left_at_the_bound_or_a_second_signal_ends_failed_and_is_answered() {
    for (case, server, signals, reason) in CUT_SHORT {
        let home = tempfile::tempdir().unwrap();
        configure(home.path(), server, "sleep 600");
        let key = api_key(home.path(), "ci");
        let mut served = serve(home.path(), &[]);
        let url = served.base_url.clone();
        // One run in the background, one behind a request still waiting for it.
        let background = http::json(&url, &key, "POST", "/v1/interactions", &slow_create(true));
        assert_eq!(background.status, 200, "{case}: {background:?}");
        let background = background.json()["id"].as_str().unwrap().to_owned();
        let in_flight = std::thread::spawn({
            let (url, key) = (url.clone(), key.clone());
            move || http::json(&url, &key, "POST", "/v1/interactions", &slow_create(false))
        });
        wait_for_log(&served, "both calls' sandboxes", |log| {
            started_pids(log).len() == 2
        });
        let supervisors = started_pids(&served.stderr.lock().unwrap());
        sigterm(&served);
        if *signals == 2 {
            wait_for_log(&served, "the drain", |log| log.contains("waiting for"));
            sigterm(&served);
        }
        let reply = in_flight.join().unwrap();
        assert_eq!(reply.status, 200, "{case}: {reply:?}");
        let interaction = reply.json();
        assert_eq!(interaction["status"], "failed", "{case}: {interaction}");
        assert_eq!(
            interaction["errors"][0]["code"], "server_stopped",
            "{case}: {interaction}"
        );
        let message = interaction["errors"][0]["message"].as_str().unwrap();
        assert!(message.contains(reason), "{case}: {message}");
        let (success, log) = wait_exit(&mut served);
        assert!(success, "{case}: {log}");
        let (status, error) = stored(home.path(), &background);
        assert_eq!(status, "failed", "{case}: {error}");
        assert_eq!(error["code"], "server_stopped", "{case}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(reason),
            "{case}: {error}"
        );
        // Nothing is left running.
        for pid in supervisors {
            wait_gone(pid);
        }
    }
}
