//! `hookbox doctor AGENT`: after `hookbox install AGENT --project DIR`, each thing that keeps
//! the policy from deciding (or switches it) is written into the agent's real settings, and
//! doctor must name it, give the fix and exit 1; the clean install exits 0.

use std::path::Path;

use serde_json::{Value, json};

use super::{Places, code, places, read_json, stderr, stdout};

/// Rewrites the JSON file at `path` with `change`.
fn edit(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut value = read_json(path);
    change(&mut value);
    std::fs::write(path, value.to_string()).expect("write");
}

/// The command hookbox installed for `agent` under `event` (Claude-style groups).
fn installed(path: &Path, event: &str) -> String {
    read_json(path)["hooks"][event][0]["hooks"][0]["command"]
        .as_str()
        .expect("installed command")
        .to_owned()
}

/// One case: the agent, what to do to the installed project, and what doctor must say.
type Case = (&'static str, fn(&Places, &Path), &'static str);

const CASES: [Case; 11] = [
    (
        "claude-code",
        |_, _| {},
        "ok: every event reaches the policy",
    ),
    (
        "claude-code",
        |_, settings| edit(settings, |value| value["disableAllHooks"] = json!(true)),
        "`disableAllHooks: true` in",
    ),
    (
        "claude-code",
        |_, settings| {
            edit(settings, |value| {
                value["hooks"]["PreToolUse"][0]["matcher"] = json!("NoSuchTool")
            })
        },
        "will NOT fire on PreToolUse: a look-alike in",
    ),
    (
        "claude-code",
        |places, settings| {
            // An entry by hand without --home, and the project's own home in `env`.
            let unpinned = format!("{} hook claude-code", env!("CARGO_BIN_EXE_hookbox"));
            edit(settings, |value| {
                value["env"] = json!({"HOOKBOX_HOME": places.project.join("theirs")});
                for (_, entries) in value["hooks"].as_object_mut().expect("hooks").iter_mut() {
                    entries[0]["hooks"][0]["command"] = json!(unpinned);
                }
            });
        },
        "hands the hook HOOKBOX_HOME=",
    ),
    (
        "claude-code",
        |places, _| {
            let policy = places.project.join(".agents/hooks.json");
            std::fs::create_dir_all(policy.parent().expect("parent")).expect("mkdir");
            std::fs::write(
                &policy,
                r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}"#,
            )
            .expect("write");
        },
        "is not trusted (new: it was never trusted for this project), so its hooks do not run; fix: review it and the files its hooks run, then `hookbox trust",
    ),
    (
        "claude-code",
        |places, _| {
            std::fs::write(
                places.hookbox_home.join("policy.json"),
                r#"{"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "python3 /nonexistent/gate.py"}]}]}}"#,
            )
            .expect("write");
        },
        "cannot start",
    ),
    (
        "claude-code",
        |_, settings| {
            let command = installed(settings, "PreToolUse").replacen(
                "/hookbox-hook",
                "/gone/hookbox-hook",
                1,
            );
            edit(settings, |value| {
                value["hooks"]["PreToolUse"][0]["hooks"][0]["command"] = json!(command)
            });
        },
        "which is not there",
    ),
    (
        "gemini-cli",
        |_, settings| {
            edit(settings, |value| {
                value["hooksConfig"] = json!({"enabled": false})
            })
        },
        "`hooksConfig.enabled: false` in",
    ),
    (
        "gemini-cli",
        |_, settings| {
            let command = installed(settings, "BeforeTool");
            edit(settings, |value| {
                value["hooksConfig"] = json!({"disabled": [command]})
            });
        },
        "`hooksConfig.disabled` in",
    ),
    (
        "gemini-cli",
        |places, settings| {
            let unpinned = format!("{} hook gemini-cli", env!("CARGO_BIN_EXE_hookbox"));
            edit(settings, |value| {
                for (_, entries) in value["hooks"].as_object_mut().expect("hooks").iter_mut() {
                    entries[0]["hooks"][0]["command"] = json!(unpinned);
                }
            });
            std::fs::write(places.project.join(".env"), "HOOKBOX_HOME=/tmp/theirs\n").expect("env");
        },
        "`HOOKBOX_HOME` in `.env` in",
    ),
    (
        "codex",
        |places, _| {
            std::fs::write(
                places.project.join(".codex/config.toml"),
                "[features]\nhooks = false\n",
            )
            .expect("write");
        },
        "`[features] hooks = false` in",
    ),
];

#[test]
fn doctor_names_each_thing_that_keeps_the_policy_from_deciding() {
    for (index, (agent, break_it, expected)) in CASES.iter().enumerate() {
        let places = places();
        let output = places.hookbox(&["install", agent, "--project", places.project_arg()]);
        assert_eq!(code(&output), 0, "case {index}: {}", stderr(&output));
        let settings = places.project.join(match *agent {
            "claude-code" => ".claude/settings.json",
            "gemini-cli" => ".gemini/settings.json",
            _ => ".codex/hooks.json",
        });
        break_it(&places, &settings);
        let output = places.hookbox(&["doctor", agent, "--project", places.project_arg()]);
        let said = stdout(&output);
        assert!(
            said.contains(expected),
            "case {index} ({agent}): {said}{}",
            stderr(&output)
        );
        let clean = index == 0;
        assert_eq!(
            code(&output),
            if clean { 0 } else { 1 },
            "case {index}: {said}"
        );
        if !clean {
            assert!(said.contains("fix: "), "case {index}: {said}");
        }
    }
}
