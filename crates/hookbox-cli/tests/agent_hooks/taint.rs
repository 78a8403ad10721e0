//! The taint check of `hookbox hook` with a trusted project policy: nothing the agent's model
//! writes into the project after the review is executed, imported, sourced or even found by a
//! process hookbox starts for the call.
//!
//! The project's policy has gates in Python, Node and bash. Once it is trusted, the test,
//! acting as the agent's model with its file tools, writes a marker at every path of a
//! generated list: every well-known start-up file of those interpreters (and of the tools a
//! gate commonly calls: git, jq, npm) in every directory of the project that is an ancestor of
//! a hook script. Then `hookbox hook` answers one tool event of each agent (Claude Code,
//! Gemini CLI, Codex shapes) under `strace -ff -e trace=%file,execve`, and the test fails if
//! any traced process (hookbox, the sandbox, the shell, the interpreters) opens, executes,
//! stats or reads a link at a marker successfully. A new start-up file is one line of
//! [`STARTUP_FILES`].
//!
//! The defended set is the project directory: the agent's model writes there with its file
//! tools without asking. Out of scope, because the model of a host agent can write whatever its
//! user can when the agent lets it (its own permission rules and the policy's gates on its
//! tools guard those): directories above the project (the trusted hooks' sandbox does not show
//! them anyway), the user's home (`~/.bashrc`, `~/.gitconfig`, `~/.npmrc`), `$HOOKBOX_HOME`
//! (the policy, the trust records and the snapshots), the system's directories and the
//! environment the agent hands `hookbox hook` (`PYTHONPATH`, `NODE_OPTIONS`, `BASH_ENV`: the
//! sandboxed hooks start from a cleared environment).

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::super::{code, hookbox_in};
use super::{Answerer, codex_pre_tool_use, hook_once, pre_tool_use, stderr};

/// The start-up files an interpreter or a tool a gate runs may look for in (or above) its
/// script's directory or its working directory, with what the model would put there.
const STARTUP_FILES: &[(&str, &str)] = &[
    // Node: the module type and the packages of the scope, its configuration.
    (
        "package.json",
        r##"{"type": "module", "imports": {"#x": "./x.js"}}"##,
    ),
    ("node_modules/fs/index.js", "process.exit(3)"),
    ("node_modules/.package-lock.json", "{}"),
    (".npmrc", "node-options=--require=./x.js"),
    (".noderc", "{}"),
    ("deno.json", "{}"),
    (".env", "NODE_OPTIONS=--require=./x.js"),
    // Python: modules shadowing the standard library beside the script, site hooks, venvs.
    ("json.py", "raise SystemExit('planted json')"),
    ("os.py", "raise SystemExit('planted os')"),
    ("sys.py", "raise SystemExit('planted sys')"),
    (
        "encodings/__init__.py",
        "raise SystemExit('planted encodings')",
    ),
    (
        "sitecustomize.py",
        "raise SystemExit('planted sitecustomize')",
    ),
    (
        "usercustomize.py",
        "raise SystemExit('planted usercustomize')",
    ),
    ("x.pth", "import os; os._exit(3)"),
    ("pyvenv.cfg", "home = /nonexistent"),
    (".python-version", "2.7"),
    ("__pycache__/gate.cpython-312.pyc", "not bytecode"),
    // Shells, and what a gate calls.
    (".bashrc", "exit 3"),
    (".bash_profile", "exit 3"),
    (".profile", "exit 3"),
    (".bash_logout", "exit 3"),
    (".inputrc", "set editing-mode vi"),
    (".gitconfig", "[core]\n\tfsmonitor = ./x.sh"),
    (".git/config", "[core]\n\tfsmonitor = ./x.sh"),
    (".jq", "def x: halt_error;"),
    (".curlrc", "proxy = http://127.0.0.1:9"),
    (".wgetrc", "use_proxy = on"),
];

/// The project's hook scripts: (path relative to the project, content, the command).
const HOOKS: &[(&str, &str, &str)] = &[
    (
        ".agents/hooks/gate.py",
        "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({}))\n",
        "python3 .agents/hooks/gate.py",
    ),
    (
        ".agents/hooks/node/gate.js",
        "let s = '';\nprocess.stdin.on('data', (d) => (s += d));\n\
         process.stdin.on('end', () => { JSON.parse(s); console.log('{}'); });\n",
        r#"node "$CLAUDE_PROJECT_DIR/.agents/hooks/node/gate.js""#,
    ),
    (
        "scripts/gate.sh",
        "#!/bin/bash\ncat > /dev/null\necho '{}'\n",
        "bash scripts/gate.sh",
    ),
];

/// Every directory of the project that is an ancestor of a hook script (the root included),
/// relative to the project.
fn script_ancestors() -> BTreeSet<PathBuf> {
    HOOKS
        .iter()
        .flat_map(|(script, ..)| Path::new(script).ancestors().skip(1))
        .map(Path::to_path_buf)
        .collect()
}

#[test]
fn nothing_the_model_writes_in_a_trusted_project_is_touched_by_hookbox_hook() {
    let test = "nothing_the_model_writes_in_a_trusted_project_is_touched_by_hookbox_hook";
    if !hookbox_test_support::require_root(test) {
        return;
    }
    if !Path::new("/usr/bin/strace").exists() {
        hookbox_test_support::skip(test, "strace is not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (home, project) = (dir.path().join("home"), dir.path().join("project"));
    std::fs::create_dir_all(project.join(".agents")).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    let project = project.canonicalize().expect("canonical");
    for (script, text, _) in HOOKS {
        write(&project.join(script), text);
    }
    let hooks: Vec<Value> = HOOKS
        .iter()
        .map(|(.., command)| json!({"type": "command", "command": command}))
        .collect();
    let policy = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": hooks}]}});
    std::fs::write(project.join(".agents/hooks.json"), policy.to_string()).expect("policy");
    super::trust(&home, &project.join(".agents/hooks.json"));

    // The model writes its markers.
    let mut markers = BTreeSet::new();
    for ancestor in script_ancestors() {
        for (file, text) in STARTUP_FILES {
            let marker = project.join(&ancestor).join(file);
            write(&marker, text);
            markers.insert(marker);
        }
    }

    let events: [(&str, &str, Vec<u8>); 3] = [
        (
            "claude-code",
            "CLAUDE_PROJECT_DIR",
            pre_tool_use(&project, "Bash", json!({"command": "ls"})),
        ),
        (
            "gemini-cli",
            "GEMINI_PROJECT_DIR",
            super::gemini_cli::event(
                &project,
                "BeforeTool",
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
            )
            .to_string()
            .into_bytes(),
        ),
        (
            "codex",
            "HOOKBOX_TEST_UNUSED",
            codex_pre_tool_use(&project, "ls"),
        ),
    ];
    for (agent, variable, event) in events {
        for answerer in [Answerer::InProcess, Answerer::Daemon] {
            let case = format!("{agent} answered {answerer:?}");
            let traces = dir.path().join(format!("trace-{agent}-{answerer:?}"));
            std::fs::create_dir_all(&traces).expect("mkdir");
            let output = if answerer == Answerer::InProcess {
                traced_hook(agent, &home, &project, variable, &event, &traces)
            } else {
                let daemon = TracedDaemon::start(&home, &project, &traces);
                let output = hook_once(answerer, agent, &home, &project, &[], &event);
                drop(daemon);
                output
            };
            let calls = traced_calls(&traces, &project);
            let touched: Vec<&Call> = calls
                .iter()
                .filter(|call| call.succeeded && markers.contains(&call.path))
                .collect();
            assert!(
                touched.is_empty(),
                "{case}: processes of `hookbox hook` touched what the model wrote:\n{}",
                touched
                    .iter()
                    .map(|call| call.line.as_str())
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            assert_eq!(code(&output), 0, "{case}: {}", stderr(&output));
            assert!(
                !stderr(&output).contains("failed") && !stderr(&output).contains("not trusted"),
                "{case}: a gate did not run as trusted: {}",
                stderr(&output)
            );
            for program in ["python3", "node", "bash"] {
                assert!(
                    calls.iter().any(|call| call.succeeded
                        && call.name == "execve"
                        && call.path.ends_with(program)),
                    "{case}: {program} did not run under the trace"
                );
            }
        }
    }
}

/// `hookbox daemon run` for `home` under `strace -ff` (its traces in `traces`), started in
/// `project` and answering once `hookbox daemon status` says so; stopped, and its trace
/// finished, when dropped.
struct TracedDaemon {
    strace: std::process::Child,
    home: PathBuf,
}

impl TracedDaemon {
    #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
    fn start(home: &Path, project: &Path, traces: &Path) -> Self {
        let strace = std::process::Command::new("/usr/bin/strace")
            .args(["-ff", "-s", "4096", "-e", "trace=%file,execve", "-o"])
            .arg(traces.join("trace"))
            .arg(env!("CARGO_BIN_EXE_hookbox"))
            .args(["daemon", "run", "--idle", "120"])
            .current_dir(project)
            .env("HOOKBOX_HOME", home)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("run strace");
        let daemon = Self {
            strace,
            home: home.to_path_buf(),
        };
        // Until it answers (a daemon started by the call itself would not be traced).
        for _ in 0..600 {
            if code(&hookbox_in(home, &["daemon", "status"], b"")) == 0 {
                return daemon;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("the traced daemon did not start");
    }
}

impl Drop for TracedDaemon {
    fn drop(&mut self) {
        let _ = hookbox_in(&self.home, &["daemon", "stop"], b"");
        let _ = self.strace.wait();
    }
}

/// Writes `text` at `path`, executable, creating its directories.
fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// `hookbox hook AGENT` answered in process, in the project, under `strace -ff`, its traces
/// written in `traces`.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn traced_hook(
    agent: &str,
    home: &Path,
    project: &Path,
    variable: &str,
    event: &[u8],
    traces: &Path,
) -> std::process::Output {
    use std::io::Write;
    let mut child = std::process::Command::new("/usr/bin/strace")
        .args(["-ff", "-s", "4096", "-e", "trace=%file,execve", "-o"])
        .arg(traces.join("trace"))
        .arg(env!("CARGO_BIN_EXE_hookbox"))
        .args(["hook", agent])
        .current_dir(project)
        .env("HOOKBOX_HOME", home)
        .env("HOOKBOX_DAEMON", "off")
        .env(variable, project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run strace");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(event)
        .expect("write stdin");
    child.wait_with_output().expect("wait for strace")
}

/// One traced system call on a path.
struct Call {
    /// The system call.
    name: String,
    /// The path it names, absolute (a relative one is taken as relative to the project, the
    /// working directory of every process of the call).
    path: PathBuf,
    /// Whether it succeeded.
    succeeded: bool,
    /// The trace's line.
    line: String,
}

/// The path-naming calls in every trace file under `traces` (one per process).
fn traced_calls(traces: &Path, project: &Path) -> Vec<Call> {
    let mut calls = Vec::new();
    for entry in std::fs::read_dir(traces).expect("traces") {
        let text = std::fs::read_to_string(entry.expect("entry").path()).expect("trace");
        for line in text.lines() {
            let Some((name, rest)) = line.split_once('(') else {
                continue;
            };
            let Some(result) = line.rsplit_once(") = ").map(|(_, result)| result) else {
                continue;
            };
            let succeeded = !result.starts_with('-') && !result.starts_with('?');
            for path in quoted(rest) {
                let path = Path::new(&path);
                calls.push(Call {
                    name: name.trim().to_owned(),
                    path: if path.is_absolute() {
                        path.to_path_buf()
                    } else {
                        project.join(path)
                    },
                    succeeded,
                    line: line.to_owned(),
                });
            }
        }
    }
    calls
}

/// The double-quoted strings of a trace line's arguments (escapes kept as written, which no
/// marker path holds).
fn quoted(arguments: &str) -> Vec<String> {
    arguments
        .split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}
