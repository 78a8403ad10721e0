/// Durable audit delivery: an outage, restarts and kills lose no event.
mod audit;
/// Attacks on authentication and ownership.
mod auth;
/// Browsers turned against a local server.
mod browsers;
/// `kill -9` of a server in the middle of a hook, and its restart.
mod crash;
/// One server per home.
mod home;
/// The raw HTTP client the attacks use.
pub(crate) mod http;
/// Half-sent requests and the connection cap.
mod slowloris;
/// SIGTERM: no new connections, a bounded drain, a second signal.
mod stopping;
/// The taint check of owner hooks in the sandbox: they open nothing the model wrote.
mod taint;
/// Hook traces and fail-open reports.
mod traces;
/// Warm sandboxes: one per environment, their start, stops and rebuilds.
mod warm;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `hookbox serve` (or `hookbox mcp --listen`) and everything it wrote to stderr so
/// far.
pub(crate) struct Served {
    child: Child,
    /// The URL it said it serves on.
    pub(crate) base_url: String,
    stderr: Arc<Mutex<String>>,
}

/// Creates API key `name` with `hookbox api-keys create` and returns it (the last line of
/// standard output).
pub(crate) fn api_key(home: &Path, name: &str) -> String {
    let output = super::hookbox_in(home, &["api-keys", "create", name], b"");
    assert_eq!(super::code(&output), 0, "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .expect("the key")
        .to_owned()
}

/// Starts `hookbox serve` on a free port with `HOOKBOX_HOME` set to `home`.
fn serve(home: &Path, extra: &[&str]) -> Served {
    start(
        home,
        &[&["serve", "--listen", "127.0.0.1:0"], extra].concat(),
    )
}

/// Starts `hookbox ARGS`, a server that says `… serving on URL` on stderr, with `HOOKBOX_HOME`
/// set to `home`.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
pub(crate) fn start(home: &Path, args: &[&str]) -> Served {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(args)
        .env("HOOKBOX_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start hookbox serve");
    let stderr = Arc::new(Mutex::new(String::new()));
    let (address_tx, address_rx) = std::sync::mpsc::channel();
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let log = Arc::clone(&stderr);
    std::thread::spawn(move || {
        while let Some(Ok(line)) = lines.next() {
            if let Some((_, rest)) = line.split_once(" serving on ") {
                let url = rest
                    .split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                let _ = address_tx.send(url);
            }
            let mut log = log.lock().unwrap();
            log.push_str(&line);
            log.push('\n');
        }
    });
    let base_url = address_rx
        .recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("hookbox {args:?} did not start: {}", stderr.lock().unwrap()));
    Served {
        child,
        base_url,
        stderr,
    }
}

/// A test that fails before stopping its server must not leave it running.
impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl Served {
    /// Sends SIGTERM and waits for the exit status.
    pub(crate) fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                std::thread::sleep(Duration::from_millis(50));
                let log = self.stderr.lock().unwrap().clone();
                return (status, log);
            }
            assert!(Instant::now() < deadline, "hookbox serve ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn serve_reads_its_config_and_stops_cleanly_on_sigterm() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("custom.toml");
    // Every agent is checked at start, so agent `x` needs its script (relative: next to the file).
    std::fs::write(home.path().join("x.json"), r#"{"turns": [{"text": "hi"}]}"#).unwrap();
    std::fs::write(
        &config,
        "[server]\nlisten = \"127.0.0.1:1\"\nmax_body_bytes = 1024\n\n[agents.x]\nprovider = \"scripted\"\nscript = \"x.json\"\n",
    )
    .unwrap();
    api_key(home.path(), "ci");
    // --listen wins over the file's listen; the rest of the file applies.
    let served = serve(home.path(), &["--config", config.to_str().unwrap()]);
    assert!(
        served.base_url.starts_with("http://127.0.0.1:"),
        "{}",
        served.base_url
    );
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
    assert!(log.contains("hookbox serve: stopped"), "{log}");

    std::fs::write(&config, "[server]\nlisten = 8080\n").unwrap();
    let output = super::hookbox_in(
        home.path(),
        &["serve", "--config", config.to_str().unwrap()],
        b"",
    );
    assert_eq!(super::code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("custom.toml") && stderr.contains("listen"),
        "{stderr}"
    );
}

#[test]
fn serve_checks_every_agent_at_start_and_logs_the_agents_it_serves() {
    let home = tempfile::tempdir().unwrap();
    let etc = home.path().join("etc");
    std::fs::create_dir_all(etc.join("scripts")).unwrap();
    let config = etc.join("hookbox.toml");
    std::fs::write(
        &config,
        "[agents.good]\nprovider = \"scripted\"\nscript = \"scripts/good.json\"\n",
    )
    .unwrap();
    // The relative script is looked for next to the config file, not in the working directory.
    let output = super::hookbox_in(
        home.path(),
        &["serve", "--no-auth", "--config", config.to_str().unwrap()],
        b"",
    );
    assert_eq!(super::code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let expected = format!(
        "{}: [agents.good] script: {}: no such file",
        config.display(),
        etc.join("scripts/good.json").display()
    );
    assert!(stderr.contains(&expected), "{stderr}");

    std::fs::write(
        etc.join("scripts/good.json"),
        r#"{"turns": [{"text": "hi"}]}"#,
    )
    .unwrap();
    let served = serve(
        home.path(),
        &["--no-auth", "--config", config.to_str().unwrap()],
    );
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
    let line = log
        .lines()
        .find(|line| line.contains("serving agent"))
        .unwrap_or_else(|| panic!("no agent logged: {log}"));
    assert!(
        line.contains("agent=\"good\"") || line.contains("agent=good"),
        "{line}"
    );
    assert!(line.contains("good.json"), "{line}");

    // A model the provider needs, missing: refused at start too, naming the key.
    std::fs::write(&config, "[agents.g]\nprovider = \"gemini\"\n").unwrap();
    let output = super::hookbox_in(
        home.path(),
        &["serve", "--no-auth", "--config", config.to_str().unwrap()],
        b"",
    );
    assert_eq!(super::code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("[agents.g] model"), "{stderr}");
}

#[test]
fn serve_names_the_file_and_the_key_of_a_bad_value_once() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("hookbox.toml");
    for (text, expected) in [
        (
            "[network]\nresolve = { \"a b\" = \"10.77.0.2\" }\n",
            "[network] resolve.\"a b\": not a domain name; write a domain name such as \
             \"telemetry.example.com\"",
        ),
        (
            "[server]\nmax_connections = 0\n",
            "[server] max_connections: 0 is not allowed; write a whole number of connections, \
             at least 1",
        ),
        (
            "[server]\nlisten = \"nowhere\"\n",
            "[server] listen: cannot listen on nowhere",
        ),
        (
            "[server]\nshutdown_timeout_secs = 86401\n",
            "[server] shutdown_timeout_secs: 86401 is out of range; write a whole number of \
             seconds from 0 (cut short at once) to 86400 (one day)",
        ),
    ] {
        std::fs::write(&config, text).unwrap();
        let output = super::hookbox_in(
            home.path(),
            &["serve", "--no-auth", "--config", config.to_str().unwrap()],
            b"",
        );
        assert_eq!(super::code(&output), 1);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let expected = format!("{}: {expected}", config.display());
        assert_eq!(stderr.matches(&expected).count(), 1, "{stderr}");
        assert_eq!(
            stderr.matches("[server]").count() + stderr.matches("[network]").count(),
            1,
            "{stderr}"
        );
    }
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the SDK's Python client"
)]
fn the_google_genai_sdk_drives_the_environments_api() {
    let Some(python) = std::env::var_os("HOOKBOX_PYTHON").filter(|value| !value.is_empty()) else {
        hookbox_test_support::skip(
            "the_google_genai_sdk_drives_the_environments_api",
            "set HOOKBOX_PYTHON to a python with google-genai>=3.3.0 installed (.ci/run does)",
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let key = api_key(home.path(), "sdk");
    let served = serve(home.path(), &[]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hookbox-server/tests/sdk/environments.py");
    let output = std::process::Command::new(&python)
        .arg(&script)
        .arg(&served.base_url)
        .env("HOOKBOX_API_KEY", &key)
        .output()
        .expect("run the SDK script");
    let (_, log) = served.terminate();
    assert!(
        output.status.success(),
        "SDK script failed\nstdout:\n{}\nstderr:\n{}\nserver log:\n{log}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("ok"));
}

#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the SDK's Python client"
)]
fn the_google_genai_sdk_runs_the_seed_hook_examples() {
    let Some(python) = std::env::var_os("HOOKBOX_PYTHON").filter(|value| !value.is_empty()) else {
        hookbox_test_support::skip(
            "the_google_genai_sdk_runs_the_seed_hook_examples",
            "set HOOKBOX_PYTHON to a python with google-genai>=3.3.0 installed (.ci/run does)",
        );
        return;
    };
    let home = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    // A model that names a file the way the Files API does (`workspace/notes.txt`).
    let workspace_path = home.path().join("workspace-path.script.json");
    std::fs::write(
        &workspace_path,
        serde_json::json!([
            {"tool_calls": [{"name": "read_file", "args": {"path": "workspace/notes.txt"}}]},
            {"text": "read it"}
        ])
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[agents.\"scripted-security-gate\"]\nprovider = \"scripted\"\nscript = \"{}\"\n\n\
             [agents.\"scripted-privacy-gate\"]\nprovider = \"scripted\"\nscript = \"{}\"\n\n\
             [agents.\"scripted-workspace-path\"]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            demo.join("security-gate.script.json").display(),
            demo.join("privacy-gate.script.json").display(),
            workspace_path.display()
        ),
    )
    .unwrap();
    let key = api_key(home.path(), "sdk");
    let served = serve(home.path(), &[]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hookbox-server/tests/sdk/interactions.py");
    let output = std::process::Command::new(&python)
        .arg(&script)
        .arg(&served.base_url)
        .env("HOOKBOX_API_KEY", &key)
        .output()
        .expect("run the SDK script");
    let (_, log) = served.terminate();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "SDK script failed\nstdout:\n{stdout}\nstderr:\n{}\nserver log:\n{log}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("Destructive command") || stdout.contains("security gate"),
        "{stdout}"
    );
    assert!(stdout.trim_end().ends_with("ok"), "{stdout}");
}

/// The seeds' curl examples (security gate; privacy gate in two steps), as written but for the
/// host, against `hookbox serve` whose agent `antigravity-preview-05-2026` is scripted.
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the seeds' curl commands"
)]
fn the_seeds_curl_examples_work_against_hookbox_serve() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../hookbox-server/tests/sdk/curl_examples.sh");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
    for (example, agent_script) in [
        ("security", "security-gate.script.json"),
        ("privacy", "privacy-gate.script.json"),
    ] {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("hookbox.toml"),
            format!(
                "[agents.\"antigravity-preview-05-2026\"]\nprovider = \"scripted\"\nscript = \"{}\"\n",
                demo.join(agent_script).display()
            ),
        )
        .unwrap();
        let key = api_key(home.path(), "curl");
        let served = serve(home.path(), &[]);
        let output = std::process::Command::new("bash")
            .arg(&script)
            .arg(example)
            .arg(&served.base_url)
            .env("GEMINI_API_KEY", &key)
            .output()
            .expect("run the curl examples");
        let (_, log) = served.terminate();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{example}: curl failed\n{stdout}\n{}\nserver log:\n{log}",
            String::from_utf8_lossy(&output.stderr)
        );
        let replies: Vec<serde_json::Value> = stdout
            .lines()
            .filter(|line| !line.trim().is_empty())
            .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
            .collect();
        let text = |reply: &serde_json::Value| reply["steps"].to_string();
        match example {
            "security" => {
                assert_eq!(replies.len(), 1);
                assert_eq!(replies[0]["status"], "completed");
                assert!(
                    text(&replies[0]).contains("Destructive command blocked by security gate.")
                );
            }
            _ => {
                assert_eq!(replies.len(), 2);
                assert!(text(&replies[0]).contains("blocked by PII compliance policy"));
                assert_eq!(replies[1]["environment_id"], replies[0]["environment_id"]);
                assert_eq!(replies[1]["previous_interaction_id"], replies[0]["id"]);
                assert!(
                    text(&replies[1]).contains("team_size"),
                    "{}",
                    text(&replies[1])
                );
            }
        }
    }
}
