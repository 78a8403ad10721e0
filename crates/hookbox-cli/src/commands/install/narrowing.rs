//! Whether an agent runs an entry of its hook file on every occurrence of its event. An entry
//! that runs hookbox's command but only sometimes (a matcher that matches nothing, an `if`
//! condition, `async`, a timeout too short to answer) is a look-alike: it reads as installed
//! while the gate never decides. The judgement is an allowlist: an entry passes only when
//! every key of it, and of its handler, is one known to leave it running on every occurrence.

use hookbox_hooks::adapter::Agent;
use serde_json::{Map, Value};

use super::target::Layout;

/// Matchers that match every occurrence, in every agent that reads matchers: missing, empty,
/// `*` (Claude Code and Gemini CLI read it as "all"), and the regex `.*`.
const EVERY: [&str; 3] = ["", "*", ".*"];

/// The shortest timeout an entry may set (seconds): hookbox answers far sooner, and a shorter
/// one would let the agent give up on the gate and go on.
const MIN_TIMEOUT_SECONDS: f64 = 30.0;

/// Why `agent` does not run `handler` of `entry` on every occurrence of its event; `None` when
/// it does. For a Cursor or Copilot file, `entry` is the handler.
pub(super) fn narrowing(
    agent: Agent,
    layout: Layout,
    entry: &Value,
    handler: &Value,
) -> Option<String> {
    match layout {
        Layout::Groups => {
            let group = entry.as_object()?;
            unknown_keys(group, &["matcher", "hooks", "sequential"], "entry")
                .or_else(|| match group.get("matcher") {
                    None => None,
                    Some(Value::String(matcher)) if EVERY.contains(&matcher.trim()) => None,
                    Some(matcher) => Some(format!(
                        "its matcher {matcher} does not match every occurrence"
                    )),
                })
                .or_else(|| {
                    let handler = handler.as_object()?;
                    unknown_keys(
                        handler,
                        &["type", "command", "timeout", "statusMessage"],
                        "handler",
                    )
                    .or_else(|| {
                        (handler.get("type") != Some(&Value::from("command")))
                            .then(|| "its handler is not of type `command`".to_owned())
                    })
                    .or_else(|| short_timeout(agent, handler.get("timeout")))
                })
        }
        Layout::Flat { key } => {
            let flat = entry.as_object()?;
            let allowed: &[&str] = match agent {
                Agent::Copilot => &["type", "bash", "timeoutSec"],
                _ => &["command", "type", "timeout"],
            };
            unknown_keys(flat, allowed, "entry")
                .or_else(|| {
                    (key == "bash" && flat.get("type") != Some(&Value::from("command")))
                        .then(|| "it is not of type `command`".to_owned())
                })
                .or_else(|| {
                    short_timeout(
                        agent,
                        flat.get("timeoutSec").or_else(|| flat.get("timeout")),
                    )
                })
        }
    }
}

/// The first key of `object` not in `allowed`, as the reason it may narrow.
fn unknown_keys(object: &Map<String, Value>, allowed: &[&str], what: &str) -> Option<String> {
    object
        .keys()
        .find(|key| !allowed.contains(&key.as_str()))
        .map(|key| format!("its {what} sets `{key}`, which can keep it from running"))
}

/// Why `timeout` (the agent's unit: Gemini CLI counts milliseconds) is too short, if it is.
fn short_timeout(agent: Agent, timeout: Option<&Value>) -> Option<String> {
    let timeout = timeout?;
    let seconds = timeout.as_f64().map(|value| match agent {
        Agent::GeminiCli => value / 1000.0,
        _ => value,
    });
    match seconds {
        Some(seconds) if seconds >= MIN_TIMEOUT_SECONDS => None,
        _ => Some(format!(
            "its timeout {timeout} is under {MIN_TIMEOUT_SECONDS}s, so the agent can give up on the gate"
        )),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Each row: the agent, an entry (its one handler), and whether it runs on every occurrence.
    #[test]
    fn only_entries_known_to_run_every_time_pass() {
        let groups = Layout::Groups;
        let cases = [
            (
                Agent::ClaudeCode,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c"}]}),
                true,
            ),
            (
                Agent::ClaudeCode,
                json!({"hooks": [{"type": "command", "command": "c"}]}),
                true,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "", "hooks": [{"type": "command", "command": "c", "timeout": 600}]}),
                true,
            ),
            (
                Agent::GeminiCli,
                json!({"matcher": ".*", "hooks": [{"type": "command", "command": "c", "timeout": 60000}]}),
                true,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "NoSuchTool", "hooks": [{"type": "command", "command": "c"}]}),
                false,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "Bash", "hooks": [{"type": "command", "command": "c"}]}),
                false,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": 1, "hooks": [{"type": "command", "command": "c"}]}),
                false,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "if": "Bash(x)"}]}),
                false,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "async": true}]}),
                false,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "timeout": 1}]}),
                false,
            ),
            (
                Agent::ClaudeCode,
                json!({"matcher": "*", "hooks": [{"type": "prompt", "command": "c"}]}),
                false,
            ),
            (
                Agent::GeminiCli,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "timeout": 600}]}),
                false,
            ),
            (
                Agent::GeminiCli,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c", "name": "n"}]}),
                false,
            ),
            (
                Agent::Codex,
                json!({"matcher": "*", "hooks": [{"type": "command", "command": "c"}], "when": "x"}),
                false,
            ),
        ];
        for (agent, entry, runs) in cases {
            let handler = &entry["hooks"][0];
            let found = narrowing(agent, groups, &entry, handler);
            assert_eq!(found.is_none(), runs, "{entry}: {found:?}");
        }
        let flat = [
            (
                Agent::Cursor,
                Layout::Flat { key: "command" },
                json!({"command": "c"}),
                true,
            ),
            (
                Agent::Cursor,
                Layout::Flat { key: "command" },
                json!({"command": "c", "matcher": "Shell"}),
                false,
            ),
            (
                Agent::Copilot,
                Layout::Flat { key: "bash" },
                json!({"type": "command", "bash": "c", "timeoutSec": 30}),
                true,
            ),
            (
                Agent::Copilot,
                Layout::Flat { key: "bash" },
                json!({"type": "command", "bash": "c", "timeoutSec": 1}),
                false,
            ),
        ];
        for (agent, layout, entry, runs) in flat {
            let found = narrowing(agent, layout, &entry, &entry);
            assert_eq!(found.is_none(), runs, "{entry}: {found:?}");
        }
    }
}
