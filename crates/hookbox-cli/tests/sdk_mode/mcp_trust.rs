//! Nothing the model can write is trusted with an MCP server's secret, enumerated: every place
//! an `--mcp-config` file or a stdio server's script can lie (inline, outside the project, in
//! it, in a subdirectory, in an `--add-dir`, through a link either way) against what the model
//! can do there (have put `${HOOKBOX_SDK_TEST_KEY}`, hookbox's provider key, in the config;
//! rewrite the script from its sandboxed `Bash`). The test speaks stream-json to `hookbox`
//! itself; the server is the standard-library one, run by the sandbox's `python3`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::protocol::Cli;
use super::{KEY, KEY_ENV, World, call};
use hookbox_test_support::FakeTurn;

/// The server's name in every configuration.
const SERVER: &str = "srv";

/// The secret a trusted configuration gives the server as a literal.
const LITERAL: &str = "literal-secret-for-the-server";

/// The directories of one case: the project (the session's working directory), one outside
/// it, and one added with `--add-dir`.
struct Places<'a> {
    project: &'a Path,
    outside: &'a Path,
    added: &'a Path,
}

/// Writes `text` at `relative` below `base`, its directories made; its path.
fn put(base: &Path, relative: &str, text: &str) -> PathBuf {
    let path = base.join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// The stdio server config running `script` with the environment variable `GREETING`
/// (`whoami` reports it, and whether hookbox's own key variable reached the server).
fn server(script: &Path, greeting: &str) -> Value {
    json!({"mcpServers": {SERVER: {
        "command": "/usr/bin/python3", "args": [script], "env": {"GREETING": greeting}
    }}})
}

/// Runs one session over `places.project` (with `places.added` added) whose model calls the
/// server's `whoami`, then runs `attack` in `Bash`; with `--mcp-config config`. Returns the
/// final result message, the `mcp_status` answer and the tool results the model saw.
fn session(places: &Places, config: &str, attack: &str) -> (Value, Value, Vec<(String, bool)>) {
    let world = World::new(vec![
        call("toolu_1", &format!("mcp__{SERVER}__whoami"), json!({})),
        call("toolu_2", "Bash", json!({"command": attack})),
        FakeTurn::text("done"),
    ]);
    let project = places.project.display().to_string();
    let added = places.added.display().to_string();
    let mut cli = Cli::start(
        &world,
        &[
            "--workdir",
            &project,
            "--add-dir",
            &added,
            "--permission-mode",
            "bypassPermissions",
            "--mcp-config",
            config,
        ],
    );
    cli.initialize(Value::Null, json!({}));
    cli.prompt("use the server");
    let result = cli.result();
    cli.send(&json!({"type": "control_request", "request_id": "status",
                     "request": {"subtype": "mcp_status"}}));
    let status = cli.response_to("status")["response"].clone();
    cli.exit_within(Duration::from_secs(20));
    (result, status, world.tool_results())
}

/// What a case must show.
#[derive(Debug)]
enum Expect {
    /// The server connects and its env holds `greeting` (a trusted configuration's own).
    Connects { greeting: &'static str },
    /// The session does not start: the error names the config file, the server and the
    /// variable.
    ConfigRefused,
    /// The server is refused with words saying why; it never runs.
    ServerRefused(&'static str),
    /// The script does not exist: the server fails to start, and the model cannot create
    /// the script for a later session.
    Missing,
}

/// Where a case's `--mcp-config` comes from, given where its script lies.
type Config = fn(&Places, &Path) -> String;

/// The config file `relative` below the project, using `${KEY_ENV}`.
fn config_file_in(base: &Path, relative: &str, script: &Path) -> String {
    let text = server(script, &format!("${{{KEY_ENV}}}")).to_string();
    put(base, relative, &text).display().to_string()
}

#[test]
fn no_host_secret_reaches_a_server_the_model_could_change() {
    // Where the config lies, the model having written `${KEY_ENV}` into it when it could; the
    // server script lies in a directory of its own in the project. Inline JSON and a file out of the model's reach are
    // the SDK user's own: they expand.
    let configs: Vec<(&str, Config, Expect)> = vec![
        (
            "inline JSON",
            |_, script| server(script, &format!("${{{KEY_ENV}}}")).to_string(),
            Expect::Connects { greeting: KEY },
        ),
        (
            "file outside the project",
            |places, script| config_file_in(places.outside, "mcp.json", script),
            Expect::Connects { greeting: KEY },
        ),
        (
            "file in the project",
            |places, script| config_file_in(places.project, ".mcp.json", script),
            Expect::ConfigRefused,
        ),
        (
            "file in a project subdirectory",
            |places, script| config_file_in(places.project, "conf/mcp.json", script),
            Expect::ConfigRefused,
        ),
        (
            "file in the added directory",
            |places, script| config_file_in(places.added, "mcp.json", script),
            Expect::ConfigRefused,
        ),
        (
            "link outside to a file in the project",
            |places, script| {
                let target = config_file_in(places.project, "mcp.json", script);
                let link = places.outside.join("mcp.json");
                std::os::unix::fs::symlink(target, &link).unwrap();
                link.display().to_string()
            },
            Expect::ConfigRefused,
        ),
        (
            "file outside through a link in the project",
            |places, script| {
                config_file_in(places.outside, "conf/mcp.json", script);
                std::os::unix::fs::symlink(places.outside.join("conf"), places.project.join("l"))
                    .unwrap();
                places.project.join("l/mcp.json").display().to_string()
            },
            Expect::ConfigRefused,
        ),
    ];
    for (name, config, expect) in configs {
        let (project, outside, added) = (scratch(), scratch(), scratch());
        let places = Places {
            project: project.path(),
            outside: outside.path(),
            added: added.path(),
        };
        let script = put(places.project, "mcp/s/server.py", SCRIPT);
        let config = config(&places, &script);
        let (result, status, results) = session(&places, &config, "echo nothing");
        check(name, &expect, &result, &status, &results);
        if let Expect::ConfigRefused = expect {
            let error = result["errors"][0].as_str().unwrap_or_default();
            let named = format!(
                "--mcp-config {config}: $.mcpServers.{SERVER}.env.GREETING uses ${{{KEY_ENV}}}"
            );
            assert!(error.contains(&named), "{name}: {error}");
        }
    }

    // Where the script lies, the config being the SDK user's (inline) with a literal secret,
    // and the model's `Bash` trying to rewrite the script and plant a file beside it.
    type Script = fn(&Places) -> PathBuf;
    let scripts: Vec<(&str, Script, Expect)> = vec![
        (
            "in a project subdirectory",
            |places| put(places.project, "mcp/s/server.py", SCRIPT),
            Expect::Connects { greeting: LITERAL },
        ),
        (
            "deep in a project subdirectory",
            |places| put(places.project, "a/b/c/server.py", SCRIPT),
            Expect::Connects { greeting: LITERAL },
        ),
        (
            "in the project's .claude",
            |places| put(places.project, ".claude/mcp/s/server.py", SCRIPT),
            Expect::Connects { greeting: LITERAL },
        ),
        (
            "in an added directory's subdirectory",
            |places| put(places.added, "tools/server.py", SCRIPT),
            Expect::Connects { greeting: LITERAL },
        ),
        (
            "missing in a project subdirectory",
            |places| places.project.join("mcp/s/server.py"),
            Expect::Missing,
        ),
        (
            "missing directly in the project",
            |places| places.project.join("server.py"),
            Expect::Missing,
        ),
        (
            "directly in the project",
            |places| put(places.project, "server.py", SCRIPT),
            Expect::ServerRefused("directly in a directory the model writes in"),
        ),
        (
            "directly in the added directory",
            |places| put(places.added, "server.py", SCRIPT),
            Expect::ServerRefused("directly in a directory the model writes in"),
        ),
        (
            "outside, through a link in the project",
            |places| {
                put(places.outside, "mcp/s/server.py", SCRIPT);
                std::os::unix::fs::symlink(places.outside.join("mcp"), places.project.join("l"))
                    .unwrap();
                places.project.join("l/s/server.py")
            },
            Expect::ServerRefused("is reached through"),
        ),
    ];
    for (name, script, expect) in scripts {
        let (project, outside, added) = (scratch(), scratch(), scratch());
        let places = Places {
            project: project.path(),
            outside: outside.path(),
            added: added.path(),
        };
        let script = script(&places);
        let real = script.canonicalize().unwrap_or_else(|_| script.clone());
        let dir = real.parent().unwrap();
        let attack = format!(
            "mkdir -p {dir}; rmdir {script}; printf evil > {script}; printf evil > \
             {dir}/planted.py; mv {dir} {dir}-moved; rm -rf {dir}; echo attempted",
            script = real.display(),
            dir = dir.display()
        );
        let config = server(&script, LITERAL).to_string();
        let (result, status, results) = session(&places, &config, &attack);
        check(name, &expect, &result, &status, &results);
        assert!(
            results.iter().any(|(text, _)| text.contains("attempted")),
            "{name}: the attack did not run: {results:?}"
        );
        if let Expect::Connects { .. } = expect {
            assert_eq!(
                std::fs::read_to_string(&real).ok().as_deref(),
                Some(SCRIPT),
                "{name}: the model rewrote the server's script"
            );
            assert!(
                !dir.join("planted.py").exists(),
                "{name}: the model planted a file beside the server's script"
            );
        }
        if let Expect::Missing = expect {
            assert!(
                std::fs::read_to_string(&real).is_err(),
                "{name}: the model created the server's script"
            );
        }
    }
}

/// The standard-library MCP server.
const SCRIPT: &str = include_str!("stdio_mcp_server.py");

/// A scratch directory.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Checks case `name` against `expect`: the result, the server's status and what `whoami`
/// told the model; in every case the model saw neither hookbox's key nor an unexpected
/// secret, and hookbox's own environment did not reach the server.
fn check(name: &str, expect: &Expect, result: &Value, status: &Value, results: &[(String, bool)]) {
    let seen: String = results.iter().map(|(text, _)| text.as_str()).collect();
    let server = &status["mcpServers"][0];
    match expect {
        Expect::Connects { greeting } => {
            assert_eq!(server["status"], "connected", "{name}: {status}");
            let whoami = &results[0].0;
            assert!(
                whoami.contains(&format!("greeting={greeting} key=False")),
                "{name}: {whoami}"
            );
        }
        Expect::ConfigRefused => {
            assert_eq!(result["is_error"], true, "{name}: {result}");
            assert!(results.is_empty(), "{name}: the session ran: {results:?}");
        }
        Expect::Missing => {
            assert_eq!(server["status"], "failed", "{name}: {status}");
            let error = server["error"].as_str().unwrap_or_default();
            assert!(error.contains("did not connect"), "{name}: {error}");
        }
        Expect::ServerRefused(words) => {
            assert_eq!(server["status"], "failed", "{name}: {status}");
            let error = server["error"].as_str().unwrap_or_default();
            assert!(error.contains(words), "{name}: {error}");
            assert!(
                !seen.contains("greeting="),
                "{name}: the server ran: {seen}"
            );
        }
    }
    if !matches!(expect, Expect::Connects { greeting } if *greeting == KEY) {
        assert!(!seen.contains(KEY), "{name}: the model saw the key: {seen}");
    }
}
