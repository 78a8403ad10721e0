//! The real agents from npm, Claude Code, Gemini CLI and Codex, run non-interactively (`-p`,
//! `exec`) against a fake model server of their own wire format (`fake_model.py`, on 127.0.0.1:
//! no network), after `hookbox install AGENT --project DIR --policy P` with a seed gate as `P`;
//! then `--uninstall`. Each also with `hookbox mcp` as its MCP server (`mcp.rs`).
//!
//! The agents come from `HOOKBOX_AGENTS_DIR` (an `npm install --prefix` folder; `.ci/run`
//! installs the pinned versions). Without it the tests skip with a printed reason, unless
//! `HOOKBOX_REQUIRE_AGENTS=1` (set by `.ci/run`): then a missing agent fails the test.

/// A gate that cannot start: refused by install, shown to the agent's user, or failing closed.
mod fail_open;
/// A pre-seeded look-alike entry and project `HOOKBOX_HOME` do not switch the gate off.
mod lookalike;
/// Claude Code, Gemini CLI and Codex calling an environment's tools through `hookbox mcp`.
mod mcp;
/// Agents' own events, installed by `hookbox install`, reaching the policy through the agent.
mod passthrough;
/// A rewritten input runs only once every gate has seen it, through the real Claude Code.
mod rewrite;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::{code, seed_config};

/// How long one agent run may take before it is killed and the test fails.
const AGENT_TIMEOUT: Duration = Duration::from_secs(100);
/// What the scripted model says once every tool call has its result.
const FINAL: &str = "all tool calls answered";
/// What the agents are asked.
const PROMPT: &str = "Run the tool calls you are asked for.";
const SECURITY_REASON: &str = "Destructive command blocked by security gate.";
const PRIVACY_REASON: &str = "Access to confidential `/private/` records is blocked by PII \
                              compliance policy. Query approved `/public/` summary tables instead.";

/// The wire format of an agent's model API.
#[derive(Clone, Copy)]
enum Wire {
    /// Anthropic Messages (Claude Code).
    Anthropic,
    /// Gemini `generateContent` (Gemini CLI).
    Gemini,
    /// OpenAI Responses (Codex).
    Responses,
}

impl Wire {
    /// `fake_model.py`'s name for it.
    fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Gemini => "gemini",
            Self::Responses => "responses",
        }
    }
}

/// One of an agent's tools.
struct Tool {
    /// Its name in the model API.
    model: &'static str,
    /// Its argument holding the command or path.
    argument: &'static str,
    /// Its name in the agent's hook events (and so in `hookbox log`).
    hooked: &'static str,
}

/// One agent CLI as these tests drive it.
struct Agent {
    /// hookbox's name for it (`hookbox hook NAME`, `hookbox install NAME`).
    name: &'static str,
    /// The executable in `node_modules/.bin`.
    bin: &'static str,
    wire: Wire,
    /// Its project hook file, relative to the project.
    settings: &'static str,
    /// The project's own settings before hookbox is installed (odd formatting on purpose).
    original: &'static str,
    shell: Tool,
    /// Its read tool (Codex has none: it reads files with its shell).
    read: Option<Tool>,
    /// The flags that let a non-interactive run use every tool without asking (the hook
    /// tests' runs: the installed hooks decide).
    unattended: &'static [&'static str],
}

const CLAUDE_CODE: Agent = Agent {
    name: "claude-code",
    bin: "claude",
    wire: Wire::Anthropic,
    settings: ".claude/settings.json",
    original: "{\"permissions\": {\"deny\": [\"WebFetch\"]},\n   \"env\": {\"OWN_SETTING\": \"kept\"}}\n",
    shell: Tool {
        model: "Bash",
        argument: "command",
        hooked: "Bash",
    },
    read: Some(Tool {
        model: "Read",
        argument: "file_path",
        hooked: "Read",
    }),
    unattended: &["--dangerously-skip-permissions"],
};

const GEMINI_CLI: Agent = Agent {
    name: "gemini-cli",
    bin: "gemini",
    wire: Wire::Gemini,
    settings: ".gemini/settings.json",
    original: "{\"ui\":   {\"hideTips\": true},\n\"general\": {\"vimMode\": false}}\n",
    shell: Tool {
        model: "run_shell_command",
        argument: "command",
        hooked: "run_shell_command",
    },
    read: Some(Tool {
        model: "read_file",
        argument: "file_path",
        hooked: "read_file",
    }),
    unattended: &["--yolo"],
};

/// Codex: its shell tool reaches its hooks as Claude Code's `Bash`.
const CODEX: Agent = Agent {
    name: "codex",
    bin: "codex",
    wire: Wire::Responses,
    settings: ".codex/hooks.json",
    original: "{\"hooks\": {\"SessionStart\": [{\"hooks\": [\n  {\"type\": \"command\", \"command\": \"true\"}]}]}}\n",
    shell: Tool {
        model: "exec_command",
        argument: "cmd",
        hooked: "Bash",
    },
    read: None,
    // Codex runs a new hook only once a person trusts it in its `/hooks` view;
    // `--dangerously-bypass-hook-trust` is its switch for automation. Its own sandbox is off
    // (it may not work here): the hooks are under test, not it.
    unattended: &[
        "--dangerously-bypass-approvals-and-sandbox",
        "--dangerously-bypass-hook-trust",
    ],
};

/// The installed agents' `node_modules/.bin`, or `None` (and a SKIPPED line) without them.
fn agent_bins(test: &str) -> Option<PathBuf> {
    let required = std::env::var_os("HOOKBOX_REQUIRE_AGENTS").is_some_and(|value| value == "1");
    let problem = match std::env::var_os("HOOKBOX_AGENTS_DIR").filter(|dir| !dir.is_empty()) {
        None => "HOOKBOX_AGENTS_DIR is not set".to_owned(),
        Some(dir) => {
            let bins = Path::new(&dir).join("node_modules/.bin");
            match [CLAUDE_CODE.bin, GEMINI_CLI.bin, CODEX.bin]
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
         @anthropic-ai/claude-code@2.1.332 @google/gemini-cli@0.61.0 @openai/codex@0.171.0` \
         and set HOOKBOX_AGENTS_DIR=DIR (.ci/run does)"
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
    /// Starts the fake `wire` server in `scene`, scripted to make `calls` (`fake_model.py`'s
    /// `{"name", "args"}`, and `"namespace"` in the Responses API).
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the fake model server"
    )]
    fn start(scene: &Scene, wire: Wire, calls: &[Value]) -> Self {
        use std::io::BufRead;
        let script = scene.policies.join("model-script.json");
        std::fs::write(&script, json!({"calls": calls, "final": FINAL}).to_string())
            .expect("script");
        let log = scene.policies.join("model-requests.jsonl");
        let mut child = Command::new("python3")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents/fake_model.py"))
            .args([Path::new(wire.name()), &script, &log])
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

impl FakeModel {
    /// The tool results of the request that carried the most of them, each as JSON text.
    fn results(&self, agent: &Agent) -> Vec<String> {
        self.bodies()
            .iter()
            .map(|body| agent.results(body))
            .max_by_key(Vec::len)
            .unwrap_or_default()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Agent {
    /// The agent run non-interactively in `scene` against `model`, with `permissions` (its
    /// own permission flags), its own settings in `HOME` (auth, no updates, no telemetry) and
    /// the project's files as the test left them.
    #[expect(
        clippy::disallowed_methods,
        reason = "the test runs the real agent CLI"
    )]
    fn command(
        &self,
        bins: &Path,
        scene: &Scene,
        model: &FakeModel,
        permissions: &[&str],
    ) -> Command {
        let base_url = format!("http://127.0.0.1:{}", model.port);
        let mut command = Command::new(bins.join(self.bin));
        scene.env(&mut command);
        command.env("NO_COLOR", "1").env("CI", "1");
        match self.wire {
            Wire::Anthropic => {
                // IS_SANDBOX=1: as root, Claude Code refuses --dangerously-skip-permissions
                // otherwise.
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
                    .args(["-p", PROMPT])
                    .args(permissions)
                    .args(["--model", "sonnet"]);
            }
            Wire::Gemini => {
                let settings = json!({
                    "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
                    "privacy": {"usageStatisticsEnabled": false},
                    "telemetry": {"enabled": false},
                    "security": {"auth": {"selectedType": "gemini-api-key"}},
                });
                write_file(
                    &scene.home.join(".gemini/settings.json"),
                    &settings.to_string(),
                );
                command
                    .envs([
                        ("GOOGLE_GEMINI_BASE_URL", base_url.as_str()),
                        ("GEMINI_API_KEY", "fake"),
                        ("GEMINI_CLI_TRUST_WORKSPACE", "true"),
                    ])
                    .args(["-p", PROMPT, "-m", "gemini-2.5-flash"])
                    .args(permissions);
            }
            Wire::Responses => {
                // A custom provider speaking the Responses API; the project trusted, so its
                // `.codex/` layer (the installed hooks.json) is loaded.
                let codex_home = scene.home.join(".codex");
                let config = format!(
                    "model = \"gpt-5.1-codex\"\nmodel_provider = \"fake\"\n\
                     check_for_update_on_startup = false\n\n\
                     [model_providers.fake]\nname = \"fake\"\nbase_url = \"{base_url}/v1\"\n\
                     wire_api = \"responses\"\nenv_key = \"FAKE_OPENAI_API_KEY\"\n\n\
                     [projects.{:?}]\ntrust_level = \"trusted\"\n",
                    scene.project_arg()
                );
                write_file(&codex_home.join("config.toml"), &config);
                command
                    .env("CODEX_HOME", &codex_home)
                    .env("FAKE_OPENAI_API_KEY", "fake")
                    .args(["exec", "--skip-git-repo-check"])
                    .args(permissions)
                    .arg(PROMPT);
            }
        }
        command
    }

    /// The tool results `body` (a model request) carries, in order, each as JSON text.
    fn results(&self, body: &Value) -> Vec<String> {
        let items = |list: &Value| list.as_array().cloned().unwrap_or_default();
        let pieces: Vec<Value> = match self.wire {
            Wire::Anthropic => items(&body["messages"])
                .iter()
                .flat_map(|message| items(&message["content"]))
                .filter(|block| block["type"] == "tool_result")
                .collect(),
            Wire::Gemini => items(&body["contents"])
                .iter()
                .flat_map(|content| items(&content["parts"]))
                .filter_map(|part| part.get("functionResponse").cloned())
                .collect(),
            Wire::Responses => items(&body["input"])
                .into_iter()
                .filter(|item| item["type"] == "function_call_output")
                .collect(),
        };
        pieces.iter().map(Value::to_string).collect()
    }
}

/// Writes `text` to `path`, creating its directories.
fn write_file(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
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
    write_file(&settings, agent.original);
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
    // The agent runs the thin client installed next to hookbox.
    let thin = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox-hook")).expect("thin client");
    let installed = std::fs::read_to_string(&settings).expect("settings");
    assert!(
        installed.contains(&format!("{} {}", thin.display(), agent.name)),
        "{installed}"
    );

    let calls: Vec<Value> = calls(&scene.project)
        .into_iter()
        .map(|(name, args)| json!({"name": name, "args": args}))
        .collect();
    let model = FakeModel::start(&scene, agent.wire, &calls);
    let output = run(agent.command(&bins, &scene, &model, agent.unattended));
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
    let results = model.results(agent);
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
            let shell = &agent.shell;
            ["rm -rf victim", "ls"]
                .map(|command| (shell.model, json!({shell.argument: command})))
                .to_vec()
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
    assert_logged(
        &outcome.decisions,
        agent.shell.hooked,
        "deny",
        SECURITY_REASON,
    );
    assert_logged(&outcome.decisions, agent.shell.hooked, "allow", Value::Null);
}

/// The seeds' privacy gate on the agent's read tool: a `/private/` file denied (the model sees
/// the reason, not the file), a `/public/` one read.
fn privacy_gate(test: &str, agent: &Agent) {
    let read = agent.read.as_ref().expect("an agent with a read tool");
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
                    (read.model, json!({read.argument: path}))
                })
                .to_vec()
        },
    ) else {
        return;
    };
    let [denied, public] = &outcome.results[..] else {
        unreachable!("gated_run checked there are two results")
    };
    assert!(denied.contains(PRIVACY_REASON), "{denied}");
    assert!(!denied.contains("078-05-1120"), "{denied}");
    assert!(public.contains("total 42"), "{public}");
    assert_logged(&outcome.decisions, read.hooked, "deny", PRIVACY_REASON);
    assert_logged(&outcome.decisions, read.hooked, "allow", Value::Null);
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

#[test]
fn codex_shell_rm_rf_is_denied_by_the_installed_security_gate_and_ls_runs() {
    security_gate(
        "codex_shell_rm_rf_is_denied_by_the_installed_security_gate_and_ls_runs",
        &CODEX,
    );
}
