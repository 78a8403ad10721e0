//! `hookbox install AGENT`: the agents' real hook files, written, merged and restored by the
//! real binary, and the command it writes run as the agent would run it.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use serde_json::{Value, json};

use super::{code, seed_config};

/// `hookbox doctor AGENT`, against each thing that keeps the policy from deciding.
mod doctor;

/// A scratch home (`HOME`), hookbox home (with a user policy, which `hookbox install` requires)
/// and project.
struct Places {
    _dir: tempfile::TempDir,
    home: PathBuf,
    hookbox_home: PathBuf,
    project: PathBuf,
}

fn places() -> Places {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(dir.path()).expect("canonical");
    let [home, hookbox_home, project] = ["home", "hookbox", "project"].map(|name| root.join(name));
    for path in [&home, &hookbox_home, &project] {
        std::fs::create_dir(path).expect("mkdir");
    }
    std::fs::write(hookbox_home.join("policy.json"), USER_POLICY).expect("user policy");
    Places {
        _dir: dir,
        home,
        hookbox_home,
        project,
    }
}

impl Places {
    /// Runs `hookbox ARGS` with these places' `HOME` and `HOOKBOX_HOME`, in the project.
    fn hookbox(&self, args: &[&str]) -> Output {
        self.hookbox_at(Path::new(env!("CARGO_BIN_EXE_hookbox")), args)
    }

    /// Runs the hookbox binary at `program` as [`Places::hookbox`] does.
    #[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
    fn hookbox_at(&self, program: &Path, args: &[&str]) -> Output {
        let mut command = std::process::Command::new(program);
        command
            .args(args)
            .env("HOME", &self.home)
            .env("HOOKBOX_HOME", &self.hookbox_home)
            .current_dir(&self.project)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::spawn_copied(&mut command)
            .and_then(std::process::Child::wait_with_output)
            .expect("run hookbox")
    }

    fn project_arg(&self) -> &str {
        self.project.to_str().expect("utf-8")
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("read")).expect("JSON")
}

/// A user policy that says nothing: a hook on an event the tests never send.
const USER_POLICY: &str =
    r#"{"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#;

/// The user's own settings: a hook of theirs, keys hookbox does not know, odd formatting.
const USER_SETTINGS: &str = "{\"permissions\": {\"allow\": [\"Bash(ls)\"]},\n   \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"./my-own-hook.sh\"}]}]},\n\"theme\": \"dark\"}";

/// The command of the `hookbox-hook` (or `hookbox hook`) handler under `event` in a
/// Claude-style settings file.
fn hookbox_command(settings: &Value, event: &str) -> String {
    settings["hooks"][event]
        .as_array()
        .expect("entries")
        .iter()
        .flat_map(|group| group["hooks"].as_array().expect("handlers"))
        .filter_map(|handler| handler["command"].as_str())
        .find(|command| command.contains("hook claude-code"))
        .unwrap_or_else(|| panic!("no hookbox entry under {event}: {settings:#}"))
        .to_owned()
}

#[test]
fn install_merges_once_and_uninstall_restores_the_original_byte_for_byte() {
    let places = places();
    let settings = places.project.join(".claude/settings.json");
    std::fs::create_dir(places.project.join(".claude")).expect("mkdir");
    std::fs::write(&settings, USER_SETTINGS).expect("write");
    let policy = seed_config(&places.project, "security-gate.hooks.json");
    let install = [
        "install",
        "claude-code",
        "--project",
        places.project_arg(),
        "--policy",
        &policy,
    ];

    let output = places.hookbox(&install);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let installed = read_json(&settings);
    // The user's hook and keys are kept; every mapped event runs the thin client installed
    // next to this binary with the policy.
    assert_eq!(installed["permissions"], json!({"allow": ["Bash(ls)"]}));
    assert_eq!(installed["theme"], "dark");
    assert_eq!(
        installed["hooks"]["PreToolUse"][0],
        json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "./my-own-hook.sh"}]})
    );
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox-hook")).expect("exe");
    let expected = format!(
        "{} claude-code --home {} --policy {policy}",
        exe.display(),
        places.hookbox_home.display()
    );
    for event in [
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "Notification",
        "SessionStart",
        "SessionEnd",
    ] {
        assert_eq!(hookbox_command(&installed, event), expected, "{event}");
    }
    assert_eq!(
        installed["hooks"]["PreToolUse"][1],
        json!({"matcher": "*", "hooks": [{"type": "command", "command": expected}]})
    );
    assert!(
        stdout(&output).contains("the original is backed up at"),
        "{}",
        stdout(&output)
    );

    // Twice changes nothing.
    let bytes = std::fs::read(&settings).expect("read");
    let again = places.hookbox(&install);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stdout(&again).contains("nothing changed"),
        "{}",
        stdout(&again)
    );
    assert_eq!(std::fs::read(&settings).expect("read"), bytes);

    // Another policy replaces hookbox's entries rather than adding a second set.
    let other = seed_config(&places.home, "privacy-gate.hooks.json");
    let output = places.hookbox(&[
        "install",
        "claude-code",
        "--project",
        places.project_arg(),
        "--policy",
        &other,
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let replaced = read_json(&settings);
    assert_eq!(
        replaced["hooks"]["PreToolUse"]
            .as_array()
            .expect("entries")
            .len(),
        2
    );
    assert!(hookbox_command(&replaced, "PreToolUse").ends_with(&other));

    let output = places.hookbox(&[
        "install",
        "claude-code",
        "--project",
        places.project_arg(),
        "--uninstall",
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("byte for byte"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).expect("read"),
        USER_SETTINGS
    );
    // The record and the backup are gone; a second uninstall says there is nothing to undo.
    assert_eq!(
        std::fs::read_dir(places.hookbox_home.join("install-backups"))
            .expect("dir")
            .count(),
        0
    );
    let output = places.hookbox(&[
        "install",
        "claude-code",
        "--project",
        places.project_arg(),
        "--uninstall",
    ]);
    assert_eq!(code(&output), 1);
    assert!(
        stderr(&output).contains("no `hookbox install claude-code` is recorded"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).expect("read"),
        USER_SETTINGS
    );
}

#[test]
fn the_installed_command_denies_claude_codes_rm_rf() {
    let places = places();
    let policy = seed_config(&places.home, "security-gate.hooks.json");
    let output = places.hookbox(&[
        "install",
        "claude-code",
        "--project",
        places.project_arg(),
        "--policy",
        &policy,
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let command = hookbox_command(
        &read_json(&places.project.join(".claude/settings.json")),
        "PreToolUse",
    );
    std::fs::write(places.project.join("victim"), "keep me").expect("victim");

    // Run the exact string, through a shell, as Claude Code runs a command hook.
    let run = |tool_command: &str| {
        let payload = json!({
            "session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": places.project,
            "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": tool_command}, "tool_use_id": "toolu_01",
        });
        run_hook(&places, "sh", &command, &payload)
    };
    let denied = run("rm -rf victim");
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    assert_eq!(
        serde_json::from_slice::<Value>(&denied.stdout).expect("JSON"),
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": "Destructive command blocked by security gate."}})
    );
    let allowed = run("ls");
    assert_eq!(code(&allowed), 0, "{}", stderr(&allowed));
    assert!(allowed.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(places.project.join("victim")).expect("victim"),
        "keep me"
    );
}

#[test]
fn every_agent_gets_its_own_file_listed_and_removed_again() {
    let places = places();
    let cases = [
        (
            "claude-code",
            "--user",
            ".claude/settings.json",
            "PreToolUse",
        ),
        (
            "gemini-cli",
            "--user",
            ".gemini/settings.json",
            "BeforeTool",
        ),
        ("codex", "--user", ".codex/hooks.json", "PreToolUse"),
        ("cursor", "--user", ".cursor/hooks.json", "preToolUse"),
        (
            "copilot",
            "--user",
            ".copilot/hooks/hookbox.json",
            "preToolUse",
        ),
        (
            "copilot",
            "--project",
            ".github/hooks/hookbox.json",
            "preToolUse",
        ),
    ];
    for (agent, scope, file, event) in cases {
        let base = if scope == "--user" {
            &places.home
        } else {
            &places.project
        };
        let mut args = vec!["install", agent, scope];
        if scope == "--project" {
            args.push(places.project_arg());
        }
        let output = places.hookbox(&args);
        assert_eq!(code(&output), 0, "{agent}: {}", stderr(&output));
        assert!(
            stdout(&output).contains("the file is new"),
            "{}",
            stdout(&output)
        );
        let config = read_json(&base.join(file));
        let entry = &config["hooks"][event][0];
        let command = match agent {
            "cursor" => entry["command"].as_str(),
            "copilot" => entry["bash"].as_str(),
            _ => entry["hooks"][0]["command"].as_str(),
        }
        .unwrap_or_else(|| panic!("{agent}: {config:#}"));
        let pinned = format!(
            "/hookbox-hook {agent} --home {}",
            places.hookbox_home.display()
        );
        let suffix = if agent == "copilot" {
            format!("{pinned} --event {event}")
        } else {
            pinned
        };
        assert!(command.ends_with(&suffix), "{agent}: {command}");
        if matches!(agent, "cursor" | "copilot") {
            assert_eq!(config["version"], 1, "{agent}");
        }
    }
    let list = places.hookbox(&["install", "--list"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let text = stdout(&list);
    for (agent, _, file, event) in cases {
        let line = format!("{}", places.home.join(file).display());
        let project_line = format!("{}", places.project.join(file).display());
        let at = text
            .find(&line)
            .filter(|_| !file.starts_with(".github"))
            .or_else(|| text.find(&project_line))
            .unwrap_or_else(|| panic!("{agent} {file} not listed: {text}"));
        let status = text[at..].lines().nth(1).expect("status line");
        assert!(status.contains(event), "{agent}: {status}");
        assert!(
            status.contains("installed by `hookbox install` (file created by it)"),
            "{status}"
        );
    }
    assert!(
        text.contains(&format!(
            "gemini-cli   project  {}\n  no file: not installed",
            places.project.join(".gemini/settings.json").display()
        )),
        "{text}"
    );
    for (agent, scope, file, _) in cases {
        let mut args = vec!["install", agent, scope, "--uninstall"];
        if scope == "--project" {
            args.insert(3, places.project_arg());
        }
        let output = places.hookbox(&args);
        assert_eq!(code(&output), 0, "{agent}: {}", stderr(&output));
        let base = if scope == "--user" {
            &places.home
        } else {
            &places.project
        };
        assert!(!base.join(file).exists(), "{agent}: {file} is left");
    }
    // The directories hookbox created went with the files.
    assert_eq!(std::fs::read_dir(&places.home).expect("home").count(), 0);
    assert_eq!(
        std::fs::read_dir(&places.project).expect("project").count(),
        0
    );
}

#[test]
fn uninstall_after_the_user_edited_the_file_removes_only_hookboxs_entries() {
    let places = places();
    let hooks = places.project.join(".cursor/hooks.json");
    std::fs::create_dir(places.project.join(".cursor")).expect("mkdir");
    let original = r#"{"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}"#;
    std::fs::write(&hooks, original).expect("write");
    let output = places.hookbox(&["install", "cursor", "--project", places.project_arg()]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    // The user adds a hook of their own after the install.
    let mut edited = read_json(&hooks);
    edited["hooks"]["stop"]
        .as_array_mut()
        .expect("stop entries")
        .push(json!({"command": "./notify.sh"}));
    std::fs::write(&hooks, serde_json::to_string_pretty(&edited).expect("JSON")).expect("write");

    let output = places.hookbox(&[
        "install",
        "cursor",
        "--project",
        places.project_arg(),
        "--uninstall",
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("changed since `hookbox install` wrote it, so it is not restored: removed hookbox's 14 entries only"),
        "{}",
        stdout(&output)
    );
    assert_eq!(
        read_json(&hooks),
        json!({"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}], "stop": [{"command": "./notify.sh"}]}})
    );
}

#[test]
fn a_symlinked_settings_file_or_directory_is_refused_and_nothing_is_written() {
    let places = places();
    let elsewhere = places.home.join("elsewhere.json");
    std::fs::write(&elsewhere, "{}").expect("write");
    std::fs::create_dir(places.project.join(".claude")).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, places.project.join(".claude/settings.json"))
        .expect("link");
    let output = places.hookbox(&["install", "claude-code", "--project", places.project_arg()]);
    assert_eq!(code(&output), 1);
    assert!(
        stderr(&output).contains("is a symbolic link"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_to_string(&elsewhere).expect("read"), "{}");

    // A linked agent directory would put the file elsewhere too.
    let target = places.home.join("gemini-dir");
    std::fs::create_dir(&target).expect("mkdir");
    std::os::unix::fs::symlink(&target, places.project.join(".gemini")).expect("link");
    let output = places.hookbox(&["install", "gemini-cli", "--project", places.project_arg()]);
    assert_eq!(code(&output), 1);
    assert!(
        stderr(&output).contains(".gemini is a symbolic link"),
        "{}",
        stderr(&output)
    );
    assert_eq!(std::fs::read_dir(&target).expect("dir").count(), 0);
    assert!(!places.hookbox_home.join("installs.json").exists());
}

#[test]
fn a_malformed_hook_file_is_named_with_its_json_path_and_left_alone() {
    let places = places();
    let settings = places.home.join(".claude/settings.json");
    std::fs::create_dir(places.home.join(".claude")).expect("mkdir");
    for (text, problem) in [
        ("{\"hooks\": [1]", "$: not valid JSON"),
        ("[]", "$: not a JSON object"),
        ("{\"hooks\": []}", "$.hooks: not an object"),
        (
            "{\"hooks\": {\"PreToolUse\": {}}}",
            "$.hooks.PreToolUse: not an array",
        ),
    ] {
        std::fs::write(&settings, text).expect("write");
        let output = places.hookbox(&["install", "claude-code", "--user"]);
        assert_eq!(code(&output), 1, "{text}");
        let message = stderr(&output);
        assert!(
            message.contains(&format!("{}: {problem}", settings.display()))
                && message.contains("nothing was written"),
            "{text}: {message}"
        );
        assert_eq!(std::fs::read_to_string(&settings).expect("read"), text);
    }
    assert!(!places.hookbox_home.join("installs.json").exists());
}

/// Runs `command` through `shell` (as the agent runs its hook) with `input` on stdin.
#[expect(
    clippy::disallowed_methods,
    reason = "runs the installed hook as the agent would"
)]
fn run_hook(places: &Places, shell: &str, command: &str, input: &Value) -> Output {
    use std::io::Write;
    let mut child = std::process::Command::new(shell)
        .args(["-c", command])
        .env("HOOKBOX_HOME", &places.hookbox_home)
        .current_dir(&places.project)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write");
    child.wait_with_output().expect("wait")
}

#[test]
fn the_installed_cursor_gemini_and_copilot_commands_deny_rm_rf() {
    let places = places();
    let policy = seed_config(&places.home, "security-gate.hooks.json");
    for agent in ["cursor", "gemini-cli", "copilot"] {
        let output = places.hookbox(&[
            "install",
            agent,
            "--project",
            places.project_arg(),
            "--policy",
            &policy,
        ]);
        assert_eq!(code(&output), 0, "{agent}: {}", stderr(&output));
    }
    let cursor = read_json(&places.project.join(".cursor/hooks.json"));
    let gemini = read_json(&places.project.join(".gemini/settings.json"));
    let copilot = read_json(&places.project.join(".github/hooks/hookbox.json"));
    let cases = [
        (
            cursor["hooks"]["preToolUse"][0]["command"].as_str(),
            json!({"conversation_id": "c", "generation_id": "g", "hook_event_name": "preToolUse",
                "workspace_roots": [places.project], "tool_name": "Shell",
                "tool_input": {"command": "rm -rf victim"}, "cwd": places.project}),
            "/permission",
        ),
        (
            gemini["hooks"]["BeforeTool"][0]["hooks"][0]["command"].as_str(),
            json!({"session_id": "s", "transcript_path": "/t", "cwd": places.project,
                "hook_event_name": "BeforeTool", "timestamp": "2026-12-02T06:40:00.000Z",
                "tool_name": "run_shell_command", "tool_input": {"command": "rm -rf victim"}}),
            "/decision",
        ),
        (
            copilot["hooks"]["preToolUse"][0]["bash"].as_str(),
            json!({"timestamp": 1, "cwd": places.project, "toolName": "bash",
                "toolArgs": json!({"command": "rm -rf victim"}).to_string()}),
            "/permissionDecision",
        ),
    ];
    for (command, input, decision) in cases {
        let command = command.expect("installed command");
        let output = run_hook(&places, "bash", command, &input);
        assert_eq!(code(&output), 0, "{command}: {}", stderr(&output));
        let answer: Value = serde_json::from_slice(&output.stdout).expect("JSON");
        assert_eq!(
            answer.pointer(decision),
            Some(&json!("deny")),
            "{command}: {answer}"
        );
    }
}

#[test]
fn list_shows_hand_written_entries_and_installs_in_other_projects() {
    let places = places();
    // A hand-written hookbox entry in the user's Codex file.
    std::fs::create_dir(places.home.join(".codex")).expect("mkdir");
    std::fs::write(
        places.home.join(".codex/hooks.json"),
        r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "/opt/bin/hookbox hook codex"}]}]}}"#,
    )
    .expect("write");
    // And one of the thin client in the user's Cursor file.
    std::fs::create_dir(places.home.join(".cursor")).expect("mkdir");
    std::fs::write(
        places.home.join(".cursor/hooks.json"),
        r#"{"version": 1, "hooks": {"preToolUse": [{"command": "/opt/bin/hookbox-hook cursor"}]}}"#,
    )
    .expect("write");
    // An install into another project than the one listed.
    let other = places.home.join("other");
    std::fs::create_dir(&other).expect("mkdir");
    let output = places.hookbox(&[
        "install",
        "claude-code",
        "--project",
        other.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));

    let list = places.hookbox(&["install", "--list"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    let text = stdout(&list);
    assert!(
        text.contains(&format!(
            "codex        user     {}\n  1 event runs `/opt/bin/hookbox hook codex`: PreToolUse; not written by `hookbox install`",
            places.home.join(".codex/hooks.json").display()
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "cursor       user     {}\n  1 event runs `/opt/bin/hookbox-hook cursor`: preToolUse; not written by `hookbox install`",
            places.home.join(".cursor/hooks.json").display()
        )),
        "{text}"
    );
    let other_settings = other.join(".claude/settings.json");
    assert!(
        text.contains(&format!(
            "claude-code  project  {}\n  30 events run",
            other_settings.display()
        )),
        "{text}"
    );
}

/// Each agent's own events without a hookbox counterpart, which `hookbox install` registers
/// beside the mapped ones (docs/agent-adapters.md, "Events passed through").
const PASSED_THROUGH: [(&str, &[&str]); 5] = [
    (
        "claude-code",
        &[
            "Setup",
            "InstructionsLoaded",
            "UserPromptExpansion",
            "MessageDisplay",
            "PermissionDenied",
            "PostToolBatch",
            "StopFailure",
            "TaskCreated",
            "TaskCompleted",
            "TeammateIdle",
            "ConfigChange",
            "CwdChanged",
            "DirectoryAdded",
            "FileChanged",
            "WorktreeRemove",
            "PostCompact",
            "Elicitation",
            "ElicitationResult",
        ],
    ),
    (
        "gemini-cli",
        &["BeforeModel", "AfterModel", "BeforeToolSelection"],
    ),
    ("codex", &["PostCompact", "Interrupt"]),
    (
        "cursor",
        &[
            "afterAgentResponse",
            "afterAgentThought",
            "beforeTabFileRead",
            "afterTabFileEdit",
        ],
    ),
    ("copilot", &["errorOccurred"]),
];

#[test]
fn every_passed_through_event_is_installed_and_answered_with_no_decision() {
    let places = places();
    // A policy with hooks on tool calls only: none names these events.
    let policy = seed_config(&places.home, "security-gate.hooks.json");
    for (agent, events) in PASSED_THROUGH {
        let install = ["install", agent, "--project", places.project_arg()];
        let output = places.hookbox(&[&install[..], &["--policy", &policy]].concat());
        assert_eq!(code(&output), 0, "{agent}: {}", stderr(&output));
        let file = match agent {
            "claude-code" => ".claude/settings.json",
            "gemini-cli" => ".gemini/settings.json",
            "codex" => ".codex/hooks.json",
            "cursor" => ".cursor/hooks.json",
            _ => ".github/hooks/hookbox.json",
        };
        let installed = read_json(&places.project.join(file));
        // Claude Code's WorktreeCreate hook must answer a path, which no policy gives.
        assert!(installed["hooks"].get("WorktreeCreate").is_none());
        for event in events {
            let entries = installed["hooks"][event].as_array();
            let [entry] = entries.map(Vec::as_slice).unwrap_or_default() else {
                panic!("{agent}: not one entry for {event}: {installed:#}");
            };
            let (command, matcher) = match agent {
                "cursor" => (&entry["command"], None),
                "copilot" => (&entry["bash"], None),
                _ => (&entry["hooks"][0]["command"], entry.get("matcher")),
            };
            let command = command.as_str().expect("command");
            // Only Claude Code's PermissionDenied is matched (on the tool): every tool.
            let expected = (*event == "PermissionDenied").then(|| json!("*"));
            assert_eq!(matcher, expected.as_ref(), "{agent} {event}");
            // The agent runs it with the event's input: no handler names it, so the answer is
            // no decision (exit 0, nothing on stdout or stderr).
            let input = match agent {
                "cursor" => json!({"conversation_id": "c", "generation_id": "g",
                    "hook_event_name": event, "workspace_roots": [places.project]}),
                "copilot" => json!({"timestamp": 1, "cwd": places.project,
                    "error": {"message": "boom", "name": "Error"}}),
                _ => json!({"session_id": "s", "transcript_path": "/t", "cwd": places.project,
                    "hook_event_name": event, "tool_name": "Bash",
                    "tool_input": {"command": "rm -rf victim"}}),
            };
            let output = run_hook(&places, "sh", command, &input);
            assert_eq!(
                (code(&output), stdout(&output), stderr(&output)),
                (0, String::new(), String::new()),
                "{agent} {event}: {command}"
            );
        }
        // Installing again changes nothing; uninstalling removes the file hookbox created.
        let again = places.hookbox(&[&install[..], &["--policy", &policy]].concat());
        assert!(
            stdout(&again).contains("nothing changed"),
            "{}",
            stdout(&again)
        );
        let output = places.hookbox(&[&install[..], &["--uninstall"]].concat());
        assert_eq!(code(&output), 0, "{agent}: {}", stderr(&output));
        assert!(!places.project.join(file).exists(), "{agent}");
    }
}

#[test]
fn a_hand_written_entry_for_a_passed_through_event_is_pinned_and_not_doubled() {
    let places = places();
    // What the docs used to say to do: an entry for BeforeModel running the same command.
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox")).expect("exe");
    let command = format!("{} hook gemini-cli", exe.display());
    let original = json!({"hooks": {"BeforeModel": [{"hooks": [
        {"type": "command", "command": command}]}]}})
    .to_string();
    let settings = places.project.join(".gemini/settings.json");
    std::fs::create_dir(places.project.join(".gemini")).expect("mkdir");
    std::fs::write(&settings, &original).expect("write");
    let install = ["install", "gemini-cli", "--project", places.project_arg()];
    let output = places.hookbox(&install);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    // It took the agent's `HOOKBOX_HOME`: it is replaced by the pinned form, once.
    let installed = read_json(&settings);
    let thin = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox-hook")).expect("thin");
    let pinned = format!(
        "{} gemini-cli --home {}",
        thin.display(),
        places.hookbox_home.display()
    );
    assert_eq!(
        installed["hooks"]["BeforeModel"],
        json!([{"hooks": [{"type": "command", "command": pinned}]}])
    );
    assert!(
        stdout(&output).contains("AfterModel"),
        "{}",
        stdout(&output)
    );
    let output = places.hookbox(&[&install[..], &["--uninstall"]].concat());
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&settings).expect("read"), original);
}

#[test]
fn an_install_by_an_older_hookbox_is_listed_upgraded_once_and_uninstalled() {
    let places = places();
    let settings = places.project.join(".claude/settings.json");
    std::fs::create_dir(places.project.join(".claude")).expect("mkdir");
    std::fs::write(&settings, USER_SETTINGS).expect("write");
    // A hookbox without the thin client next to it writes `hookbox hook AGENT`, as older ones did.
    let old = places.home.join("old/hookbox");
    std::fs::create_dir(places.home.join("old")).expect("mkdir");
    std::fs::copy(env!("CARGO_BIN_EXE_hookbox"), &old).expect("copy");
    let install = ["install", "claude-code", "--project", places.project_arg()];
    let output = places.hookbox_at(&old, &install);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    // Older hookboxes did not pin the home: their files and records, as they wrote them.
    let pin = format!(" --home {}", places.hookbox_home.display());
    let records = places.hookbox_home.join("installs.json");
    for path in [&settings, &records] {
        let text = std::fs::read_to_string(path).expect("read");
        std::fs::write(path, text.replace(&pin, "")).expect("write");
    }
    let old_command = format!("{} hook claude-code", old.display());
    assert_eq!(
        hookbox_command(&read_json(&settings), "PreToolUse"),
        old_command
    );
    let listed = |expected: &str| {
        let list = places.hookbox(&["install", "--list"]);
        let text = stdout(&list);
        assert!(
            text.contains(&format!(
                "claude-code  project  {}\n  30 events run `{expected}`",
                settings.display()
            )) && text.contains("installed by `hookbox install`"),
            "{text}"
        );
    };
    listed(&old_command);

    // This hookbox replaces the old entries with the thin client's, once.
    let output = places.hookbox(&install);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let thin = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox-hook")).expect("thin");
    let new_command = format!("{} claude-code{pin}", thin.display());
    let upgraded = read_json(&settings);
    assert_eq!(hookbox_command(&upgraded, "PreToolUse"), new_command);
    assert!(!upgraded.to_string().contains(&old_command), "{upgraded:#}");
    assert_eq!(
        upgraded["hooks"]["PreToolUse"]
            .as_array()
            .expect("entries")
            .len(),
        2
    );
    listed(&new_command);
    let bytes = std::fs::read(&settings).expect("read");
    let again = places.hookbox(&install);
    assert!(
        stdout(&again).contains("nothing changed"),
        "{}",
        stdout(&again)
    );
    assert_eq!(std::fs::read(&settings).expect("read"), bytes);

    let output = places.hookbox(&[&install[..], &["--uninstall"]].concat());
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(&settings).expect("read"),
        USER_SETTINGS
    );
}

/// `hookbox install` refuses, writing nothing, a policy that would not gate: one that does not
/// load (every event blocked), none at all (every call let through) and one with a gate that
/// cannot start (it fails open on every call); `--allow-empty` and `--allow-missing` install
/// the last two anyway, saying so. Each row: policy files to write (name under the hookbox
/// home, the project's untrusted `.agents/hooks.json`, or `--policy`'s `gate.json`), the flag
/// that allows it (if any) and what the refusal says.
#[test]
fn install_refuses_a_policy_that_would_not_gate() {
    let typo = |places: &Places| places.project.join("gaet.py").display().to_string();
    type Policy = fn(&Places, &str) -> Option<(&'static str, String)>;
    let cases: [(Policy, Option<&str>, &str); 6] = [
        (
            |_, _| {
                let gate = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
                    {"type": "command", "command": "cat"}]}]}});
                Some((".agents/hooks.json", gate.to_string()))
            },
            Some("--allow-empty"),
            ".agents/hooks.json is not trusted yet",
        ),
        (
            |_, _| Some(("policy.json", "{\"hooks\": ".to_owned())),
            None,
            "the policy does not load",
        ),
        (|_, _| None, Some("--allow-empty"), "no policy hooks in"),
        (
            |_, _| Some(("policy.json", "{}".to_owned())),
            Some("--allow-empty"),
            "no policy hooks in",
        ),
        (
            |_, typo| {
                let gate = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": format!("python3 {typo}")}]}]}});
                Some(("gate.json", gate.to_string()))
            },
            Some("--allow-missing"),
            "does not exist",
        ),
        (
            |_, _| {
                let gate = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
                    {"type": "command", "command": "$CLAUDE_PROJECT_DIR/.agents/gaet.sh"}]}]}});
                Some(("policy.json", gate.to_string()))
            },
            Some("--allow-missing"),
            "/.agents/gaet.sh does not exist",
        ),
    ];
    for (policy, allow, refusal) in cases {
        let places = places();
        std::fs::remove_file(places.hookbox_home.join("policy.json")).expect("no user policy");
        let mut args = vec!["install", "claude-code", "--project", places.project_arg()];
        let written = policy(&places, &typo(&places));
        let gate = places.project.join("gate.json");
        if let Some((name, text)) = &written {
            let path = match *name {
                "gate.json" => gate.clone(),
                ".agents/hooks.json" => places.project.join(name),
                _ => places.hookbox_home.join(name),
            };
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("policy");
        }
        if written
            .as_ref()
            .is_some_and(|(name, _)| *name == "gate.json")
        {
            args.extend(["--policy", gate.to_str().expect("utf-8")]);
        }
        let refused = places.hookbox(&args);
        assert_eq!(code(&refused), 1, "{refusal}: {}", stdout(&refused));
        assert!(
            stderr(&refused).contains(refusal) && stderr(&refused).contains("nothing was written"),
            "{}",
            stderr(&refused)
        );
        assert!(!places.project.join(".claude").exists(), "{refusal}");
        let Some(allow) = allow else { continue };
        args.push(allow);
        let installed = places.hookbox(&args);
        assert_eq!(code(&installed), 0, "{allow}: {}", stderr(&installed));
        assert!(places.project.join(".claude/settings.json").exists());
        if allow == "--allow-missing" {
            assert!(
                stdout(&installed).contains("warning:") && stdout(&installed).contains(refusal),
                "{}",
                stdout(&installed)
            );
        }
    }
}

/// `hookbox install --fail-closed` installs `hookbox hook AGENT --fail-closed`: once the gate's
/// script is gone, the installed command, run as Claude Code runs it, denies.
#[test]
fn an_install_with_fail_closed_denies_when_the_gate_cannot_start() {
    let places = places();
    let script = places.project.join("gate.py");
    std::fs::write(&script, "print('{}')\n").expect("gate");
    let policy = places.project.join("gate.json");
    let gate = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
        {"type": "command", "command": format!("python3 {}", script.display())}]}]}});
    std::fs::write(&policy, gate.to_string()).expect("policy");
    let output = places.hookbox(&[
        "install",
        "claude-code",
        "--project",
        places.project_arg(),
        "--policy",
        policy.to_str().expect("utf-8"),
        "--fail-closed",
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let command = hookbox_command(
        &read_json(&places.project.join(".claude/settings.json")),
        "PreToolUse",
    );
    assert!(command.contains(" --fail-closed"), "{command}");
    std::fs::remove_file(&script).expect("the gate goes missing");
    let payload = json!({
        "session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": places.project,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf victim"}, "tool_use_id": "toolu_01",
    });
    let denied = run_hook(&places, "sh", &command, &payload);
    assert_eq!(code(&denied), 0, "{}", stderr(&denied));
    let answer: Value = serde_json::from_slice(&denied.stdout).expect("JSON");
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{answer}"
    );
}

/// Entries that run hookbox's exact command, but not on every occurrence of the event: each
/// reads as installed while the gate never decides. Each row: how the look-alike narrows (the
/// entry's matcher and extra handler keys).
const LOOK_ALIKES: [(&str, &str); 5] = [
    ("NoSuchTool", "{}"),
    ("Read", "{}"),
    ("*", r#"{"if": "Bash(true)"}"#),
    ("*", r#"{"async": true}"#),
    ("*", r#"{"timeout": 1}"#),
];

/// The command `hookbox install claude-code` writes for these places.
fn pinned_command(places: &Places, agent: &str) -> String {
    let thin = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox-hook")).expect("thin");
    format!(
        "{} {agent} --home {}",
        thin.display(),
        places.hookbox_home.display()
    )
}

#[test]
fn a_look_alike_entry_is_replaced_not_taken_for_an_install() {
    for (matcher, extra) in LOOK_ALIKES {
        let places = places();
        let command = pinned_command(&places, "claude-code");
        let mut handler = json!({"type": "command", "command": command});
        let extra: Value = serde_json::from_str(extra).expect("extra");
        handler
            .as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        let seeded = json!({"hooks": {"PreToolUse": [{"matcher": matcher, "hooks": [handler]}]}});
        let settings = places.project.join(".claude/settings.json");
        std::fs::create_dir(places.project.join(".claude")).expect("mkdir");
        std::fs::write(&settings, seeded.to_string()).expect("write");

        let output = places.hookbox(&["install", "claude-code", "--project", places.project_arg()]);
        assert_eq!(code(&output), 0, "{}", stderr(&output));
        let said = stdout(&output);
        assert!(
            said.contains("replaced a look-alike entry under PreToolUse")
                && !said.contains("nothing changed"),
            "{matcher} {extra}: {said}"
        );
        assert_eq!(
            read_json(&settings)["hooks"]["PreToolUse"],
            json!([{"matcher": "*", "hooks": [{"type": "command", "command": command}]}]),
            "{matcher} {extra}"
        );
        // `--list` no longer shows a look-alike.
        let list = stdout(&places.hookbox(&["install", "--list"]));
        assert!(!list.contains("look-alike"), "{list}");
    }
}

#[test]
fn list_reports_a_look_alike_in_a_file_it_did_not_write() {
    let places = places();
    let command = pinned_command(&places, "claude-code");
    let settings = places.project.join(".claude/settings.json");
    std::fs::create_dir(places.project.join(".claude")).expect("mkdir");
    std::fs::write(
        &settings,
        json!({"hooks": {"PreToolUse": [{"matcher": "NoSuchTool", "hooks": [
            {"type": "command", "command": command}]}]}})
        .to_string(),
    )
    .expect("write");
    let list = stdout(&places.hookbox(&["install", "--list"]));
    assert!(
        list.contains("look-alike under PreToolUse")
            && list.contains("its matcher \"NoSuchTool\" does not match every occurrence")
            && list.contains("claude-code  merged   0 of 30 events reach the policy"),
        "{list}"
    );
}

/// The installed command answers with the policy of the home it pins, whatever
/// `HOOKBOX_HOME` the agent hands it (a project's `env` can set one), in-process and through
/// the daemon, and says it ignored it.
#[test]
fn the_pinned_home_wins_over_the_agents_hookbox_home() {
    let places = places();
    seed_config(&places.hookbox_home, "security-gate.hooks.json");
    std::fs::rename(
        places.hookbox_home.join("security-gate.hooks.json"),
        places.hookbox_home.join("policy.json"),
    )
    .expect("user policy");
    let output = places.hookbox(&["install", "claude-code", "--project", places.project_arg()]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    let command = hookbox_command(
        &read_json(&places.project.join(".claude/settings.json")),
        "PreToolUse",
    );
    // The project's choice: a home of its own with a policy that lets everything through.
    let theirs = places.project.join("their-home");
    std::fs::create_dir(&theirs).expect("mkdir");
    std::fs::write(theirs.join("policy.json"), USER_POLICY).expect("policy");
    let payload = json!({
        "session_id": "abc123", "transcript_path": "/tmp/t.jsonl", "cwd": places.project,
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "rm -rf victim"}, "tool_use_id": "toolu_01",
    });
    // The first call with the daemon on starts it, in the pinned home (not in the one the
    // agent's environment named), and answers itself; once it runs, the last is the daemon's.
    let running = || {
        let status = places.hookbox(&["daemon", "status"]);
        (code(&status) == 0).then(|| stdout(&status))
    };
    for daemon in ["off", "on", "on"] {
        if daemon == "on" && places.hookbox_home.join("daemon").exists() {
            let mut waited = 0;
            while running().is_none() {
                assert!(waited < 3000, "the daemon did not start");
                waited += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        let output = run_hook_in(&places, &command, &payload, &theirs, daemon);
        assert_eq!(code(&output), 0, "{daemon}: {}", stderr(&output));
        let answer = stdout_json_of(&output);
        assert_eq!(
            answer["hookSpecificOutput"]["permissionDecision"], "deny",
            "{daemon}: {answer:#}"
        );
        let warning = format!("HOOKBOX_HOME is {}", theirs.display());
        assert!(
            answer["systemMessage"]
                .as_str()
                .is_some_and(|message| message.contains(&warning))
                && stderr(&output).contains("ignored"),
            "{daemon}: {answer:#} {}",
            stderr(&output)
        );
    }
    let status = running().expect("the daemon runs in the pinned home");
    assert!(status.contains(", 1 calls answered"), "{status}");
    assert!(!theirs.join("daemon").exists());
    let stop = places.hookbox(&["daemon", "stop"]);
    assert_eq!(code(&stop), 0, "{}", stderr(&stop));
}

fn stdout_json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {}", stdout(output)))
}

/// Runs `command` through `sh` as Claude Code does, with `HOOKBOX_HOME` = `home` and
/// `HOOKBOX_DAEMON` = `daemon`, `input` on stdin.
#[expect(
    clippy::disallowed_methods,
    reason = "runs the installed hook as the agent would"
)]
fn run_hook_in(places: &Places, command: &str, input: &Value, home: &Path, daemon: &str) -> Output {
    use std::io::Write;
    let mut child = std::process::Command::new("sh")
        .args(["-c", command])
        .env("HOME", &places.home)
        .env("HOOKBOX_HOME", home)
        .env("HOOKBOX_DAEMON", daemon)
        .current_dir(&places.project)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.to_string().as_bytes())
        .expect("write");
    child.wait_with_output().expect("wait")
}

/// `--scope managed` writes the agent's managed settings, where the agent finds them (Gemini
/// CLI: `GEMINI_CLI_SYSTEM_SETTINGS_PATH`, which these tests point into a scratch directory),
/// and doctor sees every event reach the policy through them even when the project turns its
/// own hooks off; an agent whose managed hooks hookbox does not write is refused, naming why.
#[test]
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn scope_managed_writes_the_agents_managed_settings() {
    let places = places();
    let managed = places.home.join("etc-gemini/settings.json");
    std::fs::create_dir(places.home.join("etc-gemini")).expect("mkdir");
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
            .args(args)
            .env("HOME", &places.home)
            .env("HOOKBOX_HOME", &places.hookbox_home)
            .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", &managed)
            .current_dir(&places.project)
            .output()
            .expect("run hookbox")
    };
    // It serves every user: no one user's home, so the policy must be named.
    let refused = run(&["install", "gemini-cli", "--scope", "managed"]);
    assert_eq!(code(&refused), 1);
    assert!(
        stderr(&refused).contains("needs --policy FILE"),
        "{}",
        stderr(&refused)
    );
    assert!(!managed.exists());
    let policy = places.hookbox_home.join("policy.json");
    let policy = policy.to_str().expect("utf-8");
    let output = run(&[
        "install",
        "gemini-cli",
        "--scope",
        "managed",
        "--policy",
        policy,
    ]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("(managed scope)"),
        "{}",
        stdout(&output)
    );
    let thin = std::fs::canonicalize(env!("CARGO_BIN_EXE_hookbox-hook")).expect("thin");
    let command = format!("{} gemini-cli --policy {policy}", thin.display());
    assert_eq!(
        read_json(&managed)["hooks"]["BeforeTool"],
        json!([{"matcher": ".*", "hooks": [{"type": "command", "command": command}]}])
    );
    // The project cannot switch it off: the managed layer is read last.
    std::fs::create_dir(places.project.join(".gemini")).expect("mkdir");
    std::fs::write(
        places.project.join(".gemini/settings.json"),
        r#"{"hooksConfig": {"enabled": false}}"#,
    )
    .expect("write");
    std::fs::write(&managed, {
        let mut value = read_json(&managed);
        value["hooksConfig"] = json!({"enabled": true});
        value.to_string()
    })
    .expect("write");
    let doctor = run(&["doctor", "gemini-cli", "--project", places.project_arg()]);
    assert_eq!(code(&doctor), 0, "{}", stdout(&doctor));

    let refused = run(&["install", "codex", "--scope", "managed", "--policy", policy]);
    assert_eq!(code(&refused), 1);
    assert!(
        stderr(&refused).contains("/etc/codex/requirements.toml"),
        "{}",
        stderr(&refused)
    );
    let output = run(&["install", "gemini-cli", "--scope", "managed", "--uninstall"]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
}

/// Install judges what the agent will run with every layer merged: the project's entries are
/// written, but the user's own `disableAllHooks` keeps them from running, and install says so.
#[test]
fn install_warns_when_another_layer_switches_its_entries_off() {
    let places = places();
    std::fs::create_dir(places.home.join(".claude")).expect("mkdir");
    std::fs::write(
        places.home.join(".claude/settings.json"),
        r#"{"disableAllHooks": true}"#,
    )
    .expect("write");
    let output = places.hookbox(&["install", "claude-code", "--project", places.project_arg()]);
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stdout(&output).contains("0 of 30 events reach the policy")
            && stdout(&output).contains("`hookbox doctor claude-code --project"),
        "{}",
        stdout(&output)
    );
}
