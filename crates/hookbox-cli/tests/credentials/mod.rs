use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Output;

use hookbox_test_support::{Reply, TEST_CA_PEM, TestHttpServer};
use serde_json::{Value, json};

use super::{code, hookbox_in, stdout_json};

const SECRET: &str = "s3cret-t0ken-value";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn everything(output: &Output) -> String {
    format!("{}{}", text(&output.stdout), text(&output.stderr))
}

fn add(home: &Path, args: &[&str], value: &[u8]) -> Output {
    let mut all = vec!["credentials", "add"];
    all.extend_from_slice(args);
    hookbox_in(home, &all, value)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[test]
fn add_reads_stdin_stores_privately_and_list_never_shows_the_value() {
    let home = tempfile::tempdir().expect("home");
    let added = add(
        home.path(),
        &[
            "telemetry",
            "--domain",
            "Telemetry.Example.com.",
            "--prefix",
            "Bearer ",
        ],
        format!("{SECRET}\n").as_bytes(),
    );
    assert_eq!(code(&added), 0, "{}", everything(&added));
    assert!(
        !everything(&added).contains(SECRET),
        "{}",
        everything(&added)
    );
    assert!(text(&added.stdout).contains("telemetry"));

    let other = add(
        home.path(),
        &[
            "api.key-2",
            "--header",
            "X-Api-Key",
            "--domain",
            "*.example.com",
            "--domain",
            "api.example.org",
        ],
        b"k3y",
    );
    assert_eq!(code(&other), 0, "{}", everything(&other));

    let dir = home.path().join("credentials");
    assert_eq!(mode(&dir), 0o700);
    let file = dir.join("telemetry.json");
    assert_eq!(mode(&file), 0o600);
    let stored: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("file")).expect("json");
    assert_eq!(stored["value"], format!("Bearer {SECRET}"));
    assert_eq!(stored["header"], "Authorization");
    assert_eq!(stored["name"], "telemetry");
    assert_eq!(stored["domains"], json!(["telemetry.example.com"]));

    let listed = hookbox_in(home.path(), &["credentials", "list"], b"");
    assert_eq!(code(&listed), 0, "{}", everything(&listed));
    let listing = everything(&listed);
    assert!(
        listing.contains("telemetry") && listing.contains("api.key-2"),
        "{listing}"
    );
    assert!(listing.contains("X-Api-Key"), "{listing}");
    assert!(
        listing.contains("*.example.com,api.example.org"),
        "{listing}"
    );
    assert!(
        !listing.contains(SECRET) && !listing.contains("k3y"),
        "{listing}"
    );

    let listed = hookbox_in(home.path(), &["credentials", "list", "--json"], b"");
    assert_eq!(code(&listed), 0, "{}", everything(&listed));
    assert!(!everything(&listed).contains(SECRET));
    let all = stdout_json(&listed);
    let names: Vec<&str> = all
        .as_array()
        .expect("array")
        .iter()
        .map(|entry| entry["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["api.key-2", "telemetry"]);
    assert_eq!(all[0]["header"], "X-Api-Key");
    assert!(all[0].get("value").is_none(), "{all}");
    assert!(all[0]["created"].as_str().expect("created").ends_with('Z'));
}

#[test]
fn rm_removes_and_a_second_rm_fails() {
    let home = tempfile::tempdir().expect("home");
    assert_eq!(
        code(&add(home.path(), &["gone", "--domain", "a.example"], b"v")),
        0
    );
    let removed = hookbox_in(home.path(), &["credentials", "rm", "gone"], b"");
    assert_eq!(code(&removed), 0, "{}", everything(&removed));
    assert!(!home.path().join("credentials/gone.json").exists());
    let listed = hookbox_in(home.path(), &["credentials", "list", "--json"], b"");
    assert_eq!(stdout_json(&listed), json!([]));
    let again = hookbox_in(home.path(), &["credentials", "rm", "gone"], b"");
    assert_eq!(code(&again), 1);
    assert!(
        text(&again.stderr).contains("no credential named `gone`"),
        "{}",
        everything(&again)
    );
}

#[test]
fn bad_names_and_empty_values_are_refused() {
    let home = tempfile::tempdir().expect("home");
    for name in ["a/b", "has space", "../up", &"x".repeat(65)] {
        let output = add(
            home.path(),
            &[name, "--domain", "a.example"],
            SECRET.as_bytes(),
        );
        assert_eq!(code(&output), 1, "{name}");
        let message = text(&output.stderr);
        assert!(message.contains("invalid credential name"), "{message}");
        assert!(!message.contains(SECRET), "{message}");
    }
    for empty in [&b""[..], b"\n", b"\r\n"] {
        let output = add(home.path(), &["empty", "--domain", "a.example"], empty);
        assert_eq!(code(&output), 1);
        assert!(
            text(&output.stderr).contains("no credential value"),
            "{}",
            everything(&output)
        );
    }
    let output = add(
        home.path(),
        &["ok", "--header", "Bad Header", "--domain", "a.example"],
        b"v",
    );
    assert_eq!(code(&output), 1);
    assert!(
        text(&output.stderr).contains("invalid header name"),
        "{}",
        everything(&output)
    );
    // A credential must say where it may go.
    let output = add(home.path(), &["ok"], b"v");
    assert_ne!(code(&output), 0);
    assert!(
        text(&output.stderr).contains("--domain"),
        "{}",
        everything(&output)
    );
    for domain in ["*", "a.*.example", "bad host"] {
        let output = add(home.path(), &["ok", "--domain", domain], SECRET.as_bytes());
        assert_eq!(code(&output), 1, "{domain}");
        let message = text(&output.stderr);
        assert!(message.contains("invalid domains"), "{message}");
        assert!(!message.contains(SECRET), "{message}");
    }
    let listed = hookbox_in(home.path(), &["credentials", "list", "--json"], b"");
    assert_eq!(stdout_json(&listed), json!([]));
}

#[test]
fn a_bad_network_section_is_a_clear_config_error() {
    let home = tempfile::tempdir().expect("home");
    let config = home.path().join("hookbox.toml");
    std::fs::write(
        &config,
        "[network]\nallow_private_cidrs = [\"10.77.0.0/24\", \"10.77.0.0/40\"]\n",
    )
    .expect("config");
    let serve = hookbox_in(home.path(), &["serve", "--listen", "127.0.0.1:0"], b"");
    assert_eq!(code(&serve), 1);
    let message = text(&serve.stderr);
    assert!(message.contains("allow_private_cidrs[1]"), "{message}");
    assert!(message.contains("10.77.0.0/40"), "{message}");

    let exec = hookbox_in(
        home.path(),
        &["exec", "env_missing", "list_files", "--unsandboxed"],
        b"",
    );
    assert_eq!(code(&exec), 1);
    assert!(
        text(&exec.stderr).contains("allow_private_cidrs[1]"),
        "{}",
        everything(&exec)
    );

    std::fs::write(
        &config,
        "[network]\nextra_ca_certs = [\"missing-ca.pem\"]\n",
    )
    .expect("config");
    let exec = hookbox_in(
        home.path(),
        &["exec", "env_missing", "list_files", "--unsandboxed"],
        b"",
    );
    assert_eq!(code(&exec), 1);
    let message = text(&exec.stderr);
    assert!(message.contains("extra_ca_certs[0]"), "{message}");
    assert!(
        message.contains(&home.path().join("missing-ca.pem").display().to_string()),
        "{message}"
    );
}

/// `hookbox exec` end to end: an HTTP hook to `https://localhost:PORT` under an allowlist entry
/// naming a credential gets the stored credential as its header, with `[network]` permitting the
/// loopback receiver and trusting the test CA.
#[test]
fn an_http_hook_gets_its_credential_through_exec() {
    let home = tempfile::tempdir().expect("home");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let receiver = runtime
        .block_on(TestHttpServer::start_https(|_| {
            Reply::json(200, &json!({}))
        }))
        .expect("receiver");
    let port = receiver.addr().port();
    std::fs::write(home.path().join("test-ca.pem"), TEST_CA_PEM).expect("ca");
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[network]\npermit_loopback_hooks = true\nextra_ca_certs = [\"test-ca.pem\"]\n\
         resolve = { \"localhost\" = \"127.0.0.1\" }\n",
    )
    .expect("config");
    assert_eq!(
        code(&add(
            home.path(),
            &["audit", "--domain", "localhost", "--prefix", "Bearer "],
            SECRET.as_bytes()
        )),
        0
    );
    let hooks = json!({"audit": {"post_tool_execution": [{"matcher": ".*", "hooks": [
        {"type": "http", "url": format!("https://localhost:{port}/events"),
         "headers": {"Authorization": "Bearer from-config"}, "timeout": 10}
    ]}]}});
    let spec = json!({
        "sources": [{"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}],
        "network": {"allowlist": [{"domain": "localhost", "credential": "audit"}]},
    });
    let created = hookbox_in(
        home.path(),
        &["env", "create", "--spec", "-"],
        spec.to_string().as_bytes(),
    );
    assert_eq!(code(&created), 0, "{}", everything(&created));
    let id = text(&created.stdout).trim().to_owned();

    let output = hookbox_in(
        home.path(),
        &["exec", &id, "list_files", "--json", "--unsandboxed"],
        b"",
    );
    assert_eq!(code(&output), 0, "{}", everything(&output));
    let all = everything(&output);
    assert!(all.contains("permit_loopback_hooks"), "{all}");
    assert!(!all.contains(SECRET), "{all}");
    let requests = receiver.requests();
    assert_eq!(requests.len(), 1, "{all}");
    let authorizations: Vec<&str> = requests[0]
        .headers
        .iter()
        .filter(|(name, _)| name == "authorization")
        .map(|(_, value)| value.as_str())
        .collect();
    assert_eq!(authorizations, [format!("Bearer {SECRET}")]);

    // Without the credential the hook is refused before anything is sent, naming it.
    let removed = hookbox_in(home.path(), &["credentials", "rm", "audit"], b"");
    assert_eq!(code(&removed), 0);
    let output = hookbox_in(
        home.path(),
        &["exec", &id, "list_files", "--json", "--unsandboxed"],
        b"",
    );
    let all = everything(&output);
    assert!(all.contains("credential `audit`"), "{all}");
    assert_eq!(receiver.requests().len(), 1, "{all}");
}

/// Issue 11: an environment whose allowlist binds a credential to a domain the credential does
/// not list is refused by `hookbox env create` at the entry's JSON path, and so is one naming a
/// credential stored before credentials had domains (with how to re-add it).
#[test]
fn env_create_refuses_a_credential_bound_to_a_domain_it_does_not_list() {
    let home = tempfile::tempdir().expect("home");
    let added = add(
        home.path(),
        &["api", "--domain", "api.example.com"],
        SECRET.as_bytes(),
    );
    assert_eq!(code(&added), 0, "{}", everything(&added));
    let create = |allowlist: Value| {
        let spec = json!({"network": {"allowlist": allowlist}});
        hookbox_in(
            home.path(),
            &["env", "create", "--spec", "-"],
            spec.to_string().as_bytes(),
        )
    };
    let created = create(json!([{"domain": "api.example.com", "credential": "api"}]));
    assert_eq!(code(&created), 0, "{}", everything(&created));
    for domain in ["attacker.example", "*.example.com", "*"] {
        let refused = create(json!([
            {"domain": "api.example.com", "credential": "api"},
            {"domain": domain, "credential": "api"},
        ]));
        assert_eq!(code(&refused), 1, "{domain}: {}", everything(&refused));
        let message = text(&refused.stderr);
        assert!(
            message.contains("$.network.allowlist[1].credential"),
            "{message}"
        );
        assert!(
            message.contains("may only be sent to `api.example.com`"),
            "{message}"
        );
        assert!(!message.contains(SECRET), "{message}");
    }

    std::fs::write(
        home.path().join("credentials/legacy.json"),
        r#"{"name":"legacy","header":"Authorization","value":"Bearer x","created":"2026-01-01T00:00:00Z"}"#,
    )
    .expect("legacy file");
    let listed = hookbox_in(home.path(), &["credentials", "list"], b"");
    assert!(
        text(&listed.stdout).contains("legacy  header Authorization  domains NONE (re-add it"),
        "{}",
        everything(&listed)
    );
    let refused = create(json!([{"domain": "api.example.com", "credential": "legacy"}]));
    assert_eq!(code(&refused), 1, "{}", everything(&refused));
    let message = text(&refused.stderr);
    assert!(
        message.contains("$.network.allowlist[0].credential") && message.contains("--domain"),
        "{message}"
    );
}

/// On a terminal (a pseudo-terminal made by util-linux `script`), `add` prompts on the
/// terminal, the typed value is not echoed, and it is stored without its newline.
#[test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the binary under `script`"
)]
fn add_on_a_terminal_prompts_and_does_not_echo() {
    use std::io::{Read, Write};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let home = tempfile::tempdir().expect("home");
    let command = format!(
        "'{}' credentials add typed --domain a.example",
        env!("CARGO_BIN_EXE_hookbox")
    );
    let mut child = std::process::Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env("HOOKBOX_HOME", home.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run `script` (util-linux) to give hookbox a terminal");
    let mut stdout = child.stdout.take().expect("stdout");
    let (chunks, received) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 4096];
        while let Ok(read) = stdout.read(&mut buffer) {
            if read == 0 || chunks.send(buffer[..read].to_vec()).is_err() {
                break;
            }
        }
    });
    let mut terminal = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut typed = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok(chunk) => terminal.extend_from_slice(&chunk),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                panic!(
                    "no prompt and no exit in time; terminal: {}",
                    text(&terminal)
                );
            }
        }
        // Type the value once the prompt is there, and a moment later: the prompt is written
        // just before echo is turned off, and a value typed in between would be echoed.
        if !typed && text(&terminal).contains("not shown as you type") {
            std::thread::sleep(Duration::from_secs(1));
            let stdin = child.stdin.as_mut().expect("stdin");
            stdin
                .write_all(format!("{SECRET}\r").as_bytes())
                .expect("type the value");
            stdin.flush().expect("flush");
            typed = true;
        }
    }
    let status = child.wait().expect("wait");
    let terminal = text(&terminal);
    assert!(typed, "no prompt: {terminal}");
    assert!(status.success(), "{status}: {terminal}");
    assert!(terminal.contains("added credential `typed`"), "{terminal}");
    assert!(
        !terminal.contains(SECRET),
        "the value was echoed: {terminal}"
    );
    let stored: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join("credentials/typed.json")).expect("stored"),
    )
    .expect("json");
    assert_eq!(stored["value"], SECRET);
}
