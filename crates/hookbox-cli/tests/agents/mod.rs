//! The real agents from npm, Claude Code and Gemini CLI, run non-interactively (`-p`) against a
//! fake model server of their own wire format (`fake_model.py`, on 127.0.0.1: no network), after
//! `hookbox install AGENT --project DIR --policy P` with a seed gate as `P`; then `--uninstall`.
//!
//! The agents come from `HOOKBOX_AGENTS_DIR` (an `npm install --prefix` folder; `.ci/run`
//! installs the pinned versions). Without it the tests skip with a printed reason, unless
//! `HOOKBOX_REQUIRE_AGENTS=1` (set by `.ci/run`): then a missing agent fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{code, seed_config};

/// How long one agent run may take before it is killed and the test fails.
const AGENT_TIMEOUT: Duration = Duration::from_secs(100);
/// What the scripted model says once every tool call has its result.
const FINAL: &str = "all tool calls answered";
const SECURITY_REASON: &str = "Destructive command blocked by security gate.";
const PRIVACY_REASON: &str = "Access to confidential `/private/` records is blocked by PII \
                              compliance policy. Query approved `/public/` summary tables instead.";

/// One agent CLI as these tests drive it.
struct Agent {
    /// hookbox's name for it (`hookbox hook NAME`, `hookbox install NAME`).
    name: &'static str,
    /// The executable in `node_modules/.bin`.
    bin: &'static str,
    /// The wire format of its model API, as `fake_model.py` names it.
    dialect: &'static str,
    /// Its project hook file, relative to the project.
    settings: &'static str,
    /// The project's own settings before hookbox is installed (odd formatting on purpose).
    original: &'static str,
    /// Its shell tool and its read tool.
    shell: &'static str,
    read: &'static str,
}

const CLAUDE_CODE: Agent = Agent {
    name: "claude-code",
    bin: "claude",
    dialect: "anthropic",
    settings: ".claude/settings.json",
    original: "{\"permissions\": {\"deny\": [\"WebFetch\"]},\n   \"env\": {\"OWN_SETTING\": \"kept\"}}\n",
    shell: "Bash",
    read: "Read",
};

const GEMINI_CLI: Agent = Agent {
    name: "gemini-cli",
    bin: "gemini",
    dialect: "gemini",
    settings: ".gemini/settings.json",
    original: "{\"ui\":   {\"hideTips\": true},\n\"general\": {\"vimMode\": false}}\n",
    shell: "run_shell_command",
    read: "read_file",
};

/// The installed agents' `node_modules/.bin`, or `None` (and a SKIPPED line) without them.
fn agent_bins(test: &str) -> Option<PathBuf> {
    let required = std::env::var_os("HOOKBOX_REQUIRE_AGENTS").is_some_and(|value| value == "1");
    let problem = match std::env::var_os("HOOKBOX_AGENTS_DIR").filter(|dir| !dir.is_empty()) {
        None => "HOOKBOX_AGENTS_DIR is not set".to_owned(),
        Some(dir) => {
            let bins = Path::new(&dir).join("node_modules/.bin");
            match [CLAUDE_CODE.bin, GEMINI_CLI.bin]
                .into_iter()
                .find(|bin| !bins.join(bin).exists())
            {
                None => return Some(bins),
                Some(bin) => format!("{} has no {bin}", bins.display()),
            }
        }
    };
    let reason = format!(
        "{problem}: install the agents with `npm install --prefix DIR --no-audit --no-fund \
         @anthropic-ai/claude-code@2.1.332 @google/gemini-cli@0.61.0` and set \
         HOOKBOX_AGENTS_DIR=DIR (.ci/run does)"
    );
    assert!(!required, "{test}: HOOKBOX_REQUIRE_AGENTS=1 but {reason}");
    hookbox_test_support::skip(test, reason);
    None
}

/// A scratch `HOME`, hookbox home, project and policy folder: no real user config is touched.
struct Scene {
    _dir: tempfile::TempDir,
    home: PathBuf,
    hookbox_home: PathBuf,
    project: PathBuf,
    policies: PathBuf,
}

impl Scene {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        let [home, hookbox_home, project, policies] =
            ["home", "hookbox", "project", "policies"].map(|name| root.join(name));
        for path in [&home, &hookbox_home, &project, &policies] {
            std::fs::create_dir(path).expect("mkdir");
        }
        Self {
            _dir: dir,
            home,
            hookbox_home,
            project,
            policies,
        }
    }

    /// `command` with only this scene's environment: the caller's locale and `PATH` (the
    /// seeds' gates run `python3`), this scene's `HOME` and `HOOKBOX_HOME`, and nothing else
    /// (no real API key or agent setting leaks in).
    fn env(&self, command: &mut Command) {
        command.env_clear();
        for name in ["PATH", "LANG", "LC_ALL", "TZ", "USER", "LOGNAME"] {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command
            .env("HOME", &self.home)
            .env("HOOKBOX_HOME", &self.hookbox_home)
            .current_dir(&self.project);
    }

    /// Runs `hookbox ARGS` in this scene.
    #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
    fn hookbox(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookbox"));
        self.env(&mut command);
        command.args(args).output().expect("run hookbox")
    }

    fn project_arg(&self) -> &str {
        self.project.to_str().expect("utf-8")
    }
}

/// `fake_model.py` serving one script; killed when dropped.
struct FakeModel {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
}

impl FakeModel {
    /// Starts the fake `dialect` server in `scene`, scripted to make `calls` (tool, args).
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the fake model server"
    )]
    fn start(scene: &Scene, dialect: &str, calls: &[(&str, Value)]) -> Self {
        use std::io::BufRead;
        let calls: Vec<Value> = calls
            .iter()
            .map(|(name, args)| json!({"name": name, "args": args}))
            .collect();
        let script = scene.policies.join("model-script.json");
        std::fs::write(&script, json!({"calls": calls, "final": FINAL}).to_string())
            .expect("script");
        let log = scene.policies.join("model-requests.jsonl");
        let mut child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/fake_model.py"))
            .args([Path::new(dialect), &script, &log])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start fake_model.py");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("read the port");
        let port = line
            .trim()
            .strip_prefix("listening ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("fake_model.py did not say its port: {line:?}"));
        Self { child, port, log }
    }

    /// The bodies of every request the agent made, in order.
    fn bodies(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).expect("log line")["body"].clone())
            .collect()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Agent {
    /// The agent run non-interactively in `scene` against `model`, its own settings in `HOME`
    /// (auth, no updates, no telemetry) and the project's hook file as installed.
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the real agent CLI"
    )]
    fn command(&self, bins: &Path, scene: &Scene, model: &FakeModel) -> Command {
        let base_url = format!("http://127.0.0.1:{}", model.port);
        let mut command = Command::new(bins.join(self.bin));
        scene.env(&mut command);
        command.env("NO_COLOR", "1").env("CI", "1");
        let prompt = "Run the tool calls you are asked for.";
        if self.dialect == "anthropic" {
            // IS_SANDBOX=1: as root, Claude Code refuses --dangerously-skip-permissions otherwise.
            command
                .envs([
                    ("ANTHROPIC_BASE_URL", base_url.as_str()),
                    ("ANTHROPIC_API_KEY", "fake"),
                    ("IS_SANDBOX", "1"),
                    ("DISABLE_TELEMETRY", "1"),
                    ("DISABLE_AUTOUPDATER", "1"),
                    ("DISABLE_ERROR_REPORTING", "1"),
                    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                ])
                .args(["-p", prompt, "--dangerously-skip-permissions"])
                .args(["--model", "sonnet"]);
        } else {
            let settings = json!({
                "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                "privacy": {"usageStatisticsEnabled": false},
                "telemetry": {"enabled": false},
                "security": {"auth": {"selectedType": "gemini-api-key"}},
            });
            std::fs::create_dir_all(scene.home.join(".gemini")).expect("mkdir");
            std::fs::write(
                scene.home.join(".gemini/settings.json"),
                settings.to_string(),
            )
            .expect("user settings");
            command
                .envs([
                    ("GOOGLE_GEMINI_BASE_URL", base_url.as_str()),
                    ("GEMINI_API_KEY", "fake"),
                    ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
                ])
                .args(["-p", prompt, "--yolo", "-m", "gemini-2.5-flash"]);
        }
        command
    }

    /// The tool results `body` (a model request) carries, in order, each as JSON text.
    fn results(&self, body: &Value) -> Vec<String> {
        let (turns, pieces, result) = if self.dialect == "anthropic" {
            ("messages", "content", "tool_result")
        } else {
            ("contents", "parts", "functionResponse")
        };
        let mut results = Vec::new();
        for turn in body[turns].as_array().into_iter().flatten() {
            for piece in turn[pieces].as_array().into_iter().flatten() {
                if piece["type"] == result {
                    results.push(piece.to_string());
                } else if let Some(response) = piece.get(result) {
                    results.push(response.to_string());
                }
            }
        }
        results
    }
}

/// What one gated run of an agent left behind.
struct Outcome {
    scene: Scene,
    /// The tool results of the model request that carried the most of them.
    results: Vec<String>,
    /// `hookbox log --agent AGENT --json`.
    decisions: Vec<Value>,
}

/// Installs hookbox into `agent`'s project settings with the seed policy `seed`, runs the
/// agent with a model that makes `calls`, uninstalls, and checks the settings are restored
/// byte for byte. `prepare` fills the project first.
fn gated_run(
    test: &str,
    agent: &Agent,
    seed: &str,
    prepare: impl FnOnce(&Path),
    calls: impl FnOnce(&Path) -> Vec<(&'static str, Value)>,
) -> Option<Outcome> {
    let bins = agent_bins(test)?;
    let scene = Scene::new();
    let settings = scene.project.join(agent.settings);
    std::fs::create_dir_all(settings.parent().expect("parent")).expect("mkdir");
    std::fs::write(&settings, agent.original).expect("original settings");
    prepare(&scene.project);
    let policy = seed_config(&scene.policies, seed);
    let install = ["install", agent.name, "--project", scene.project_arg()];
    let output = scene.hookbox(&[&install[..], &["--policy", &policy]].concat());
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let calls = calls(&scene.project);
    let model = FakeModel::start(&scene, agent.dialect, &calls);
    let output = run(agent.command(&bins, &scene, &model));
    let bodies = model.bodies();
    let transcript = format!(
        "{} exited {:?}\nstdout: {}\nstderr: {}\nmodel requests: {bodies:#?}",
        agent.bin,
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{transcript}");
    assert!(
        String::from_utf8_lossy(&output.stdout).contains(FINAL),
        "{transcript}"
    );
    let results = bodies
        .iter()
        .map(|body| agent.results(body))
        .max_by_key(Vec::len)
        .unwrap_or_default();
    assert_eq!(results.len(), calls.len(), "{transcript}");

    let output = scene.hookbox(&[&install[..], &["--uninstall"]].concat());
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).expect("settings"),
        agent.original,
        "--uninstall must restore the project's settings byte for byte"
    );

    let output = scene.hookbox(&["log", "--agent", agent.name, "--json"]);
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let decisions = serde_json::from_slice::<Value>(&output.stdout)
        .expect("log JSON")
        .as_array()
        .expect("decisions")
        .clone();
    Some(Outcome {
        scene,
        results,
        decisions,
    })
}

/// Runs `command` in its own process group; kills the group and fails after [`AGENT_TIMEOUT`].
fn run(mut command: Command) -> Output {
    use std::os::unix::process::CommandExt;
    let child = command
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the agent");
    let group = rustix::process::Pid::from_child(&child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let Ok(output) = receiver.recv_timeout(AGENT_TIMEOUT) else {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        panic!("the agent did not finish within {AGENT_TIMEOUT:?}: killed");
    };
    output.expect("wait for the agent")
}

/// The seeds' security gate on the agent's shell tool: `rm -rf victim` denied (the model sees
/// the reason; `victim` survives), `ls` runs.
fn security_gate(test: &str, agent: &Agent) {
    let Some(outcome) = gated_run(
        test,
        agent,
        "security-gate.hooks.json",
        |project| std::fs::write(project.join("victim"), "keep me").expect("victim"),
        |_| {
            vec![
                (
                    agent.shell,
                    json!({"command": "rm -rf victim", "description": "clean up"}),
                ),
                (agent.shell, json!({"command": "ls", "description": "list"})),
            ]
        },
    ) else {
        return;
    };
    let [denied, listed] = &outcome.results[..] else {
        unreachable!("gated_run checked there are two results")
    };
    assert!(denied.contains(SECURITY_REASON), "{denied}");
    assert!(
        listed.contains("victim") && !listed.contains(SECURITY_REASON),
        "{listed}"
    );
    assert_eq!(
        std::fs::read_to_string(outcome.scene.project.join("victim")).expect("victim survives"),
        "keep me"
    );
    assert_logged(&outcome.decisions, agent.shell, "deny", SECURITY_REASON);
    assert_logged(&outcome.decisions, agent.shell, "allow", Value::Null);
}

/// The seeds' privacy gate on the agent's read tool: a `/private/` file denied (the model sees
/// the reason, not the file), a `/public/` one read.
fn privacy_gate(test: &str, agent: &Agent) {
    let Some(outcome) = gated_run(
        test,
        agent,
        "privacy-gate.hooks.json",
        |project| {
            for (dir, content) in [("private", "ssn 078-05-1120"), ("public", "total 42")] {
                std::fs::create_dir(project.join(dir)).expect("mkdir");
                std::fs::write(project.join(dir).join("records.csv"), content).expect("write");
            }
        },
        |project| {
            ["private", "public"]
                .map(|dir| {
                    let path = project.join(dir).join("records.csv");
                    (agent.read, json!({"file_path": path}))
                })
                .to_vec()
        },
    ) else {
        return;
    };
    let [denied, read] = &outcome.results[..] else {
        unreachable!("gated_run checked there are two results")
    };
    assert!(denied.contains(PRIVACY_REASON), "{denied}");
    assert!(!denied.contains("078-05-1120"), "{denied}");
    assert!(read.contains("total 42"), "{read}");
    assert_logged(&outcome.decisions, agent.read, "deny", PRIVACY_REASON);
    assert_logged(&outcome.decisions, agent.read, "allow", Value::Null);
}

/// The decision log has a `decision` about `tool` with `reason`, decided by the seed's gate.
fn assert_logged(decisions: &[Value], tool: &str, decision: &str, reason: impl Into<Value>) {
    let reason = reason.into();
    assert!(
        decisions.iter().any(|d| d["tool"] == tool
            && d["decision"] == decision
            && d["reason"] == reason
            && d["handler"]
                .as_str()
                .is_some_and(|h| h.contains("fixtures/seeds/"))),
        "no logged {decision} of {tool}: {decisions:#?}"
    );
}

#[test]
fn claude_code_bash_rm_rf_is_denied_by_the_installed_security_gate_and_ls_runs() {
    security_gate(
        "claude_code_bash_rm_rf_is_denied_by_the_installed_security_gate_and_ls_runs",
        &CLAUDE_CODE,
    );
}

#[test]
fn claude_code_read_of_private_records_is_denied_by_the_installed_privacy_gate() {
    privacy_gate(
        "claude_code_read_of_private_records_is_denied_by_the_installed_privacy_gate",
        &CLAUDE_CODE,
    );
}

#[test]
fn gemini_cli_shell_rm_rf_is_denied_by_the_installed_security_gate_and_ls_runs() {
    security_gate(
        "gemini_cli_shell_rm_rf_is_denied_by_the_installed_security_gate_and_ls_runs",
        &GEMINI_CLI,
    );
}

#[test]
fn gemini_cli_read_of_private_records_is_denied_by_the_installed_privacy_gate() {
    privacy_gate(
        "gemini_cli_read_of_private_records_is_denied_by_the_installed_privacy_gate",
        &GEMINI_CLI,
    );
}
