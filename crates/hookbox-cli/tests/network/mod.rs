//! The seeds' audit-logging example end to end through the CLI: `hookbox env create` with the
//! seed's hooks.json and network allowlist verbatim, `hookbox exec` of `write_file` and
//! `read_file`, and an HTTPS receiver for `telemetry.example.com` in a network namespace of its
//! own (reached through `[network]` of hookbox.toml: the test subnet admitted, the name resolved
//! to the receiver, its CA trusted). Needs root (for the namespace) and the sandbox; skipped with
//! a printed reason otherwise.

use std::path::Path;
use std::process::Output;

use hookbox_test_support::{Reply, TestCertificates, TestHttpServer};
use serde_json::{Value, json};

use super::{code, seeds, stdout_json};

const HOST: &str = "telemetry.example.com";
/// The seed's bearer token, only ever in the environment's network policy.
const TOKEN: &str = "telemetry_secret_token_123";
/// A regular expression matching [`TOKEN`] whose own text does not contain it, so a search
/// never finds itself (in `/proc/*/cmdline`, or in hookbox's echo of the tool's arguments).
const TOKEN_PATTERN: &str = "telemetry_secret_token_12[3]";

/// Runs `hookbox ARGS…` with `HOOKBOX_HOME=home`, `stdin` fed in, and `RUST_LOG=debug` when
/// `debug`.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn hookbox(home: &Path, args: &[&str], stdin: &[u8], debug: bool) -> Output {
    use std::io::Write;
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"));
    command
        .args(args)
        .env("HOOKBOX_HOME", home)
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if debug {
        command.env("RUST_LOG", "debug");
    }
    let mut child = command.spawn().expect("run hookbox");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    child.wait_with_output().expect("wait for hookbox")
}

fn everything(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Every regular file under `dir` (symbolic links are not followed).
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir") {
            let entry = entry.expect("entry");
            let kind = entry.file_type().expect("file type");
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle)
}

/// The environment spec of the seed's audit example: its hooks.json (`json.dumps(…, indent=2)`)
/// as the inline source at `.agents/hooks.json`, and its network allowlist, both verbatim.
fn seed_audit_spec() -> Value {
    let hooks =
        std::fs::read_to_string(seeds().join("audit-logging.hooks.json")).expect("seed hooks");
    // The same document as the seed's REST example spells inline.
    assert_eq!(
        serde_json::from_str::<Value>(&hooks).expect("json"),
        serde_json::from_str::<Value>(
            "{\"audit-logging\": {\"post_tool_execution\": [{\"matcher\": \"read_file|write_file\", \
             \"hooks\": [{\"type\": \"http\", \"url\": \
             \"https://telemetry.example.com/api/v1/agent-events\", \"timeout\": 10}]}]}}"
        )
        .expect("json")
    );
    json!({
        "type": "remote",
        "sources": [
            {"type": "inline", "target": ".agents/hooks.json", "content": hooks}
        ],
        "network": {
            "allowlist": [
                {
                    "domain": "telemetry.example.com",
                    "transform": {
                        "Authorization": "Bearer telemetry_secret_token_123"
                    }
                },
                {"domain": "*"}
            ]
        }
    })
}

/// The seed's audit example: two post_tool_execution events, delivered by hookbox itself under
/// the environment's network policy with the `transform` header injected; the token is nowhere
/// but in the environment's metadata: not in the sandbox root, not in the sandbox, not in
/// hookbox's output.
#[test]
fn the_seed_audit_example_delivers_two_events_with_the_token_injected() {
    const TEST: &str =
        "network::the_seed_audit_example_delivers_two_events_with_the_token_injected";
    let Some(netns) = super::sandbox_and_netns(TEST) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let certificates = TestCertificates::for_names(&[HOST]).expect("certificates");
    let listener = netns.bind_inside(443).expect("bind inside");
    let receiver = runtime
        .block_on(async {
            TestHttpServer::start_https_on(listener, &certificates, |_| {
                Reply::json(200, &json!({}))
            })
        })
        .expect("receiver");

    let home = tempfile::tempdir().expect("home");
    std::fs::write(home.path().join("telemetry-ca.pem"), certificates.ca_pem()).expect("ca");
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[network]\nallow_private_cidrs = [\"{}\"]\nextra_ca_certs = [\"telemetry-ca.pem\"]\n\
             resolve = {{ \"{HOST}\" = \"{}\" }}\n\
             [sandbox]\ndisk_bytes = 16777216\n",
            netns.cidr(),
            netns.inside_address()
        ),
    )
    .expect("config");

    let mut outputs: Vec<(String, Output)> = Vec::new();
    let created = hookbox(
        home.path(),
        &["env", "create", "--spec", "-"],
        seed_audit_spec().to_string().as_bytes(),
        true,
    );
    assert_eq!(code(&created), 0, "{}", everything(&created));
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    assert!(id.starts_with("env_"), "{id}");
    outputs.push(("env create".to_owned(), created));

    let write = hookbox(
        home.path(),
        &[
            "exec",
            &id,
            "write_file",
            "--args",
            r#"{"path":"/workspace/audit.log","content":"event 1"}"#,
            "--json",
        ],
        b"",
        false,
    );
    assert_eq!(code(&write), 0, "{}", everything(&write));
    let write_report = stdout_json(&write);
    outputs.push(("exec write_file".to_owned(), write));
    let read = hookbox(
        home.path(),
        &[
            "exec",
            &id,
            "read_file",
            "--args",
            r#"{"path":"/workspace/audit.log"}"#,
            "--json",
        ],
        b"",
        true,
    );
    assert_eq!(code(&read), 0, "{}", everything(&read));
    let read_report = stdout_json(&read);
    assert_eq!(read_report["result"]["content"], "event 1");
    outputs.push(("exec read_file (RUST_LOG=debug)".to_owned(), read));
    // Each call's trace shows the one HTTP hook run, succeeded.
    for report in [&write_report, &read_report] {
        let trace = report["trace"].as_array().expect("trace");
        assert_eq!(trace.len(), 1, "{report}");
        assert!(
            report["trace"][0]["failure"].is_null(),
            "the delivery failed: {report}"
        );
    }

    // Exactly two events, in order, in the seed's payload shape, with the token injected.
    let requests = receiver.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for (request, (tool, args)) in requests.iter().zip([
        (
            "write_file",
            json!({"path": "/workspace/audit.log", "content": "event 1"}),
        ),
        ("read_file", json!({"path": "/workspace/audit.log"})),
    ]) {
        assert_eq!(request.method, "POST");
        assert_eq!(request.path, "/api/v1/agent-events");
        let authorizations: Vec<&str> = request
            .headers
            .iter()
            .filter(|(name, _)| name == "authorization")
            .map(|(_, value)| value.as_str())
            .collect();
        assert_eq!(authorizations, [format!("Bearer {TOKEN}")], "{request:?}");
        let event = request.json();
        assert_eq!(event["hook_event_name"], "post_tool_execution", "{event}");
        assert_eq!(event["tool_call"]["name"], tool, "{event}");
        assert_eq!(event["tool_call"]["args"], args, "{event}");
        assert_eq!(event["environment_id"], id.as_str(), "{event}");
        assert!(event.get("result").is_some(), "{event}");
        assert!(event.get("error").is_none(), "{event}");
        assert!(!contains(&request.body, TOKEN.as_bytes()), "{event}");
    }
    assert_eq!(requests[1].json()["result"]["content"], "event 1");

    // Inside the sandbox: not in its environment, its processes, or any file it can see apart
    // from the host's read-only /usr (too large to search; nothing of an environment is there).
    let search = format!(
        "env | grep -c '{TOKEN_PATTERN}'\n\
         cat /workspace/* /.agents/* 2>/dev/null | grep -c '{TOKEN_PATTERN}'\n\
         for d in /* /.[!.]*; do\n\
           [ -L \"$d\" ] && continue\n\
           case \"$d\" in /usr|/proc|/sys|/dev) continue;; esac\n\
           grep -rl '{TOKEN_PATTERN}' \"$d\" 2>/dev/null\n\
         done\n\
         grep -l '{TOKEN_PATTERN}' /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null\n\
         echo searched"
    );
    let sandbox = hookbox(
        home.path(),
        &[
            "exec",
            &id,
            "code_execution",
            "--args",
            &json!({"code": search, "language": "bash"}).to_string(),
            "--json",
        ],
        b"",
        true,
    );
    assert_eq!(code(&sandbox), 0, "{}", everything(&sandbox));
    let result = &stdout_json(&sandbox)["result"];
    assert_eq!(result["stdout"], "0\n0\nsearched\n", "{result}");
    outputs.push(("exec code_execution (RUST_LOG=debug)".to_owned(), sandbox));
    // No further event: code_execution does not match the seed's matcher.
    assert_eq!(receiver.requests().len(), 2);

    for (args, debug) in [
        (vec!["env", "list"], false),
        (vec!["env", "list", "--json"], false),
        (vec!["env", "show", &id], false),
        (vec!["exec", &id, "list_files", "--args", "{}"], true),
    ] {
        let output = hookbox(home.path(), &args, b"", debug);
        assert_eq!(code(&output), 0, "{args:?}: {}", everything(&output));
        outputs.push((args.join(" "), output));
    }
    assert_eq!(receiver.requests().len(), 2);

    // Not in anything hookbox printed.
    for (what, output) in &outputs {
        let all = everything(output);
        assert!(
            !all.contains(TOKEN),
            "`hookbox {what}` printed the token: {all}"
        );
    }

    // On disk, only the environment's private network file (outside the sandbox's root; the
    // database holds the record with the value redacted) holds it: not its disk image (16 MiB, read whole: every file of the root is in it).
    let environments = home.path().join("environments");
    let holding: Vec<String> = files_under(&environments)
        .into_iter()
        .filter(|path| contains(&std::fs::read(path).expect("read"), TOKEN.as_bytes()))
        .map(|path| {
            path.strip_prefix(&environments)
                .expect("under")
                .display()
                .to_string()
        })
        .collect();
    assert_eq!(holding, [format!("{id}/network.json")]);
    drop(receiver);
    drop(netns);
}

/// The `transform` values of an environment's allowlist are secrets (the seed: "define
/// authentication tokens in your environment's network configuration"), so, like credentials,
/// they should not be printed by `env show` / `env list --json` nor kept in a world-readable
/// file.
#[test]
fn the_environments_transform_values_stay_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().expect("home");
    let created = hookbox(
        home.path(),
        &["env", "create", "--spec", "-"],
        seed_audit_spec().to_string().as_bytes(),
        false,
    );
    assert_eq!(code(&created), 0, "{}", everything(&created));
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    for args in [vec!["env", "show", &id], vec!["env", "list", "--json"]] {
        let output = hookbox(home.path(), &args, b"", false);
        assert_eq!(code(&output), 0, "{args:?}: {}", everything(&output));
        let all = everything(&output);
        assert!(
            !all.contains(TOKEN),
            "`hookbox {}` printed the token: {all}",
            args.join(" ")
        );
    }
    let metadata = home
        .path()
        .join("environments")
        .join(&id)
        .join("network.json");
    let mode = std::fs::metadata(&metadata)
        .expect("metadata")
        .permissions()
        .mode();
    assert_eq!(mode & 0o077, 0, "{} is {mode:o}", metadata.display());
}
