//! Events the model can shape never turn a gate off: a tool argument nested past what a JSON
//! reader accepts (the model chooses its tool arguments) is either judged by the policy's gate
//! or denied, for every agent, at every depth, answered in-process, by the daemon and by the
//! thin client, and nothing panics or overflows its stack. The gate fails open (a Claude-style
//! hook's default), so only the unreadable event's own answer can keep the call out.

use std::path::Path;

use serde_json::{Value, json};

use super::{hook_as, stderr, with_fields};
use crate::{code, write};

/// Nesting depths of the tool argument `x` (arrays in arrays); a new one is one entry.
const DEPTHS: &[usize] = &[1, 127, 128, 129, 10_000, 100_000];

/// Bytes of `[` that follow the event's start, never closed.
const UNCLOSED: usize = 4 * 1024 * 1024;

/// Where the nested argument goes in each agent's event.
const DEEP: &str = "__DEEP__";

/// Each agent's tool event with `x` = [`DEEP`] among the tool's arguments, and the extra
/// arguments of its command line.
fn events(dir: &Path) -> Vec<(&'static str, Vec<&'static str>, String)> {
    let args = json!({"command": "ls", "x": DEEP});
    let claude = json!({
        "session_id": "s", "transcript_path": "/t.jsonl", "cwd": dir,
        "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": "Bash", "tool_input": args, "tool_use_id": "toolu_1",
    });
    let codex = with_fields(
        claude.clone(),
        json!({"model": "gpt-5-codex", "turn_id": "t"}),
    );
    let gemini = super::gemini_cli::event(
        dir,
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": args}),
    );
    let cursor = super::cursor::event(
        dir,
        "preToolUse",
        json!({"tool_name": "Shell", "tool_input": args}),
    );
    let copilot =
        json!({"timestamp": 1, "cwd": dir, "toolName": "bash", "toolArgs": args.to_string()});
    vec![
        ("claude-code", vec![], claude.to_string()),
        ("codex", vec![], codex.to_string()),
        ("gemini-cli", vec![], gemini.to_string()),
        ("cursor", vec![], cursor.to_string()),
        (
            "copilot",
            vec!["--event", "preToolUse"],
            copilot.to_string(),
        ),
    ]
}

/// `event` with its [`DEEP`] placeholder (quoted, or escaped-quoted inside a JSON string)
/// replaced by `x` unquoted.
fn with_deep(event: &str, x: &str) -> Vec<u8> {
    event
        .replacen(&format!("\\\"{DEEP}\\\""), x, 1)
        .replacen(&format!("\"{DEEP}\""), x, 1)
        .into_bytes()
}

/// Whether `output` is `agent`'s blocking answer.
fn blocked(agent: &str, output: &std::process::Output) -> bool {
    match agent {
        "copilot" => serde_json::from_slice::<Value>(&output.stdout)
            .is_ok_and(|answer| answer["permissionDecision"] == "deny"),
        _ => code(output) == 2,
    }
}

#[test]
fn no_tool_call_is_let_through_unjudged_however_deep_its_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("judged.log");
    let gate = dir.path().join("gate.py");
    std::fs::write(
        &gate,
        format!(
            "import json, sys\njson.load(sys.stdin)\nopen({:?}, 'a').write('judged\\n')\nprint('{{}}')\n",
            log.display().to_string()
        ),
    )
    .expect("gate");
    let command = format!("python3 {}", gate.display());
    let policy = write(
        dir.path(),
        "open.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
            {"type": "command", "command": command}]}]}}),
    );
    let judged = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    for (agent, extra, event) in events(dir.path()) {
        let mut cases: Vec<(String, Vec<u8>)> = DEPTHS
            .iter()
            .map(|depth| {
                let x = format!("{}{}", "[".repeat(*depth), "]".repeat(*depth));
                (format!("{agent}, depth {depth}"), with_deep(&event, &x))
            })
            .collect();
        let start = event
            .split(DEEP)
            .next()
            .expect("start")
            .trim_end_matches(['"', '\\']);
        cases.push((
            format!("{agent}, {UNCLOSED} bytes of ["),
            [start.as_bytes(), "[".repeat(UNCLOSED).as_bytes()].concat(),
        ));
        for (case, input) in cases {
            let before = judged();
            let args: Vec<&str> = ["--policy", policy.as_str()]
                .into_iter()
                .chain(extra.iter().copied())
                .collect();
            // Answered in-process, by the daemon and by the thin client, all alike.
            let output = hook_as(agent, dir.path(), dir.path(), &args, &input);
            let stderr = stderr(&output);
            assert!(
                output.status.code().is_some() && !stderr.contains("panicked"),
                "{case}: hookbox crashed: {:?}\n{stderr}",
                output.status
            );
            let gated = judged() == before + 3;
            assert!(
                gated || !case.ends_with("depth 1"),
                "{case}: the gate never ran"
            );
            assert!(
                gated || blocked(agent, &output),
                "{case}: let through without its gate judging it: {:?}\n{}\n{stderr}",
                output.status,
                String::from_utf8_lossy(&output.stdout)
            );
            if !gated {
                assert!(
                    stderr.contains("denied whatever the policy's on_error"),
                    "{case}: the denial does not say why: {stderr}"
                );
            }
        }
    }
}
