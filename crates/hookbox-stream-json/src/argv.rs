//! The SDKs' command lines (`docs/wire/sdk-control-protocol.md` §1): detecting SDK mode, and a
//! tolerant parse that keeps the flags hookbox honours and ignores every other flag either SDK may
//! pass.

use std::path::PathBuf;

/// Flags that take a value (`--flag VALUE` or `--flag=VALUE`), from both SDKs' flag sets.
const VALUE_FLAGS: &[&str] = &[
    "--output-format",
    "--input-format",
    "--model",
    "--fallback-model",
    "--permission-mode",
    "--allowed-tools",
    "--disallowed-tools",
    "--allowedTools",
    "--disallowedTools",
    "--max-turns",
    "--system-prompt",
    "--system-prompt-file",
    "--append-system-prompt",
    "--workdir",
    "--resume",
    "--session-id",
    "--resume-session-at",
    "--add-dir",
    "--mcp-config",
    "--setting-sources",
    "--plugin-dir",
    "--json-schema",
    "--effort",
    "--connection",
    "--profile",
    "--settings",
    "--max-budget-usd",
    "--task-budget",
    "--betas",
    "--thinking",
    "--thinking-display",
    "--max-thinking-tokens",
    "--tools",
    "--permission-prompt-tool",
    "--config",
    "--agents",
];

/// Flags without a value.
const BOOLEAN_FLAGS: &[&str] = &[
    "--verbose",
    "--print",
    "-p",
    "--plan",
    "--auto-accept-plans",
    "--dangerously-allow-all-tool-calls",
    "--dangerously-skip-permissions",
    "--allow-dangerously-skip-permissions",
    "--continue",
    "--fork-session",
    "--include-partial-messages",
    "--include-hook-events",
    "--strict-mcp-config",
    "--no-mcp",
    "--snowflake-sandbox",
    "--session-mirror",
    "--unsandboxed",
    "--no-session-persistence",
];

/// Whether `args` (without the program name) is an SDK's launch: it names the stream-json
/// input or output format.
pub fn is_sdk_mode(args: &[String]) -> bool {
    args.iter().enumerate().any(|(index, arg)| {
        arg == "--input-format"
            || arg.starts_with("--input-format=")
            || arg == "--output-format=stream-json"
            || (arg == "--output-format"
                && args.get(index + 1).map(String::as_str) == Some("stream-json"))
    })
}

/// Whether `args` is the cortex SDK's version probe, exactly `-v`.
pub fn is_version_probe(args: &[String]) -> bool {
    args.len() == 1 && args[0] == "-v"
}

/// What hookbox takes from an SDK's command line.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SdkArgs {
    /// `--model NAME`: the hookbox.toml agent.
    pub model: Option<String>,
    /// `--permission-mode M`, `--plan` (→ `plan`), `--dangerously-allow-all-tool-calls`
    /// (→ `bypassPermissions`).
    pub permission_mode: Option<String>,
    /// `--allowed-tools X` (repeated) / `--allowedTools a,b`.
    pub allowed_tools: Vec<String>,
    /// `--disallowed-tools X` (repeated) / `--disallowedTools a,b`.
    pub disallowed_tools: Vec<String>,
    /// `--max-turns N` (an unparsable value is reported in `problems`).
    pub max_turns: Option<u32>,
    /// `--system-prompt S` (empty = none).
    pub system_prompt: Option<String>,
    /// `--system-prompt-file P`.
    pub system_prompt_file: Option<PathBuf>,
    /// `--append-system-prompt S`.
    pub append_system_prompt: Option<String>,
    /// `--workdir D`.
    pub workdir: Option<PathBuf>,
    /// `--session-id ID`.
    pub session_id: Option<String>,
    /// `--resume ID`: the session whose conversation goes on.
    pub resume: Option<String>,
    /// `--continue`: go on with the latest session of the working directory.
    pub continue_latest: bool,
    /// `--fork-session`: a resumed conversation goes on under a new session id.
    pub fork_session: bool,
    /// `--resume-session-at UUID`: resume only up to and including that message.
    pub resume_session_at: Option<String>,
    /// `--no-session-persistence`: write no transcript.
    pub no_session_persistence: bool,
    /// `--add-dir D` (repeated; the SDKs' `add_dirs` / `additional_directories`).
    pub add_dirs: Vec<PathBuf>,
    /// `--settings FILE|JSON`, in order.
    pub settings: Vec<String>,
    /// `--setting-sources a,b` (`None` = all of user, project, local).
    pub setting_sources: Option<Vec<String>>,
    /// `--config FILE`: the hookbox.toml.
    pub config: Option<PathBuf>,
    /// `--unsandboxed`: run `Bash` on the host.
    pub unsandboxed: bool,
    /// `--permission-prompt-tool stdio`: ask the SDK's `can_use_tool`.
    pub permission_prompt_stdio: bool,
    /// `--include-partial-messages`: send `stream_event` messages while the model answers.
    pub include_partial_messages: bool,
    /// `--max-thinking-tokens N`: the extended-thinking budget (an unparsable value is
    /// reported in `problems`).
    pub max_thinking_tokens: Option<u32>,
    /// `--thinking disabled`: no extended thinking, whatever asks for it.
    pub thinking_disabled: bool,
    /// `--json-schema JSON`: the schema the final output must match (parsed by the setup).
    pub json_schema: Option<String>,
    /// `--mcp-config JSON|FILE` (repeated): the MCP servers (parsed by the setup).
    pub mcp_configs: Vec<String>,
    /// `--no-mcp` (the cortex SDK's `no_mcp`): no MCP server at all, neither `--mcp-config`'s
    /// nor the SDK-hosted ones.
    pub no_mcp: bool,
    /// Values hookbox could not use (reported, not fatal).
    pub problems: Vec<String>,
}

/// Parses an SDK command line (without the program name). Never fails: unknown flags are
/// skipped (with the next argument when it does not look like a flag), bad values noted in
/// [`SdkArgs::problems`].
pub fn parse(args: &[String]) -> SdkArgs {
    let mut parsed = SdkArgs::default();
    let mut index = 0;
    while index < args.len() {
        let arg = &args[index];
        index += 1;
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        if BOOLEAN_FLAGS.contains(&flag) {
            match flag {
                "--plan" => parsed.permission_mode = Some("plan".to_owned()),
                "--dangerously-allow-all-tool-calls" | "--dangerously-skip-permissions" => {
                    parsed.permission_mode = Some("bypassPermissions".to_owned());
                }
                "--unsandboxed" => parsed.unsandboxed = true,
                "--include-partial-messages" => parsed.include_partial_messages = true,
                "--continue" => parsed.continue_latest = true,
                "--fork-session" => parsed.fork_session = true,
                "--no-session-persistence" => parsed.no_session_persistence = true,
                "--no-mcp" => parsed.no_mcp = true,
                _ => {}
            }
            continue;
        }
        let known = VALUE_FLAGS.contains(&flag);
        let value = match inline {
            Some(value) => Some(value),
            None if known => {
                let value = args.get(index).cloned();
                index += usize::from(value.is_some());
                value
            }
            None => {
                // An unknown flag (e.g. from `extra_args`): take the next argument as its value
                // unless it looks like a flag itself.
                match args.get(index) {
                    Some(next) if flag.starts_with('-') && !next.starts_with('-') => {
                        index += 1;
                        Some(next.clone())
                    }
                    _ => None,
                }
            }
        };
        let Some(value) = value else { continue };
        apply(&mut parsed, flag, value);
    }
    parsed
}

fn apply(parsed: &mut SdkArgs, flag: &str, value: String) {
    let list = |value: &str| -> Vec<String> {
        value
            .split(',')
            .map(str::trim)
            .filter(|item| !item.is_empty())
            .map(str::to_owned)
            .collect()
    };
    match flag {
        "--model" if !value.is_empty() => parsed.model = Some(value),
        "--permission-mode" => parsed.permission_mode = Some(value),
        "--allowed-tools" | "--allowedTools" => parsed.allowed_tools.extend(list(&value)),
        "--disallowed-tools" | "--disallowedTools" => parsed.disallowed_tools.extend(list(&value)),
        "--max-turns" => match value.trim().parse() {
            Ok(turns) => parsed.max_turns = Some(turns),
            Err(_) => parsed.problems.push(format!(
                "ignoring --max-turns {value:?}: not a whole number"
            )),
        },
        "--system-prompt" => parsed.system_prompt = Some(value).filter(|text| !text.is_empty()),
        "--system-prompt-file" => parsed.system_prompt_file = Some(PathBuf::from(value)),
        "--append-system-prompt" if !value.is_empty() => {
            parsed.append_system_prompt = Some(value);
        }
        "--workdir" => parsed.workdir = Some(PathBuf::from(value)),
        "--session-id" => parsed.session_id = Some(value),
        "--resume" => parsed.resume = Some(value),
        "--resume-session-at" => parsed.resume_session_at = Some(value),
        "--add-dir" if !value.is_empty() => parsed.add_dirs.push(PathBuf::from(value)),
        "--settings" if !value.is_empty() => parsed.settings.push(value),
        "--setting-sources" => parsed.setting_sources = Some(list(&value)),
        "--config" => parsed.config = Some(PathBuf::from(value)),
        "--permission-prompt-tool" => parsed.permission_prompt_stdio = value == "stdio",
        "--max-thinking-tokens" => match value.trim().parse() {
            Ok(tokens) => parsed.max_thinking_tokens = Some(tokens),
            Err(_) => parsed.problems.push(format!(
                "ignoring --max-thinking-tokens {value:?}: not a whole number"
            )),
        },
        "--thinking" => parsed.thinking_disabled = value == "disabled",
        "--json-schema" if !value.is_empty() => parsed.json_schema = Some(value),
        "--mcp-config" if !value.is_empty() => parsed.mcp_configs.push(value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn detects_sdk_launches_and_the_version_probe() {
        assert!(is_sdk_mode(&args(&[
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json"
        ])));
        assert!(is_sdk_mode(&args(&[
            "--verbose",
            "--input-format",
            "stream-json"
        ])));
        assert!(!is_sdk_mode(&args(&["serve", "--listen", "x"])));
        assert!(!is_sdk_mode(&args(&["--output-format", "json"])));
        assert!(is_version_probe(&args(&["-v"])));
        assert!(!is_version_probe(&args(&["-v", "x"])));
    }

    #[test]
    fn parses_the_cortex_flag_set() {
        let parsed = parse(&args(&[
            "--output-format",
            "stream-json",
            "--input-format",
            "stream-json",
            "--workdir",
            "/w",
            "--model",
            "fake",
            "--allowed-tools",
            "Read",
            "--allowed-tools",
            "Bash(ls:*)",
            "--disallowed-tools",
            "Write",
            "--plan",
            "--max-turns",
            "7",
            "--permission-prompt-tool",
            "stdio",
            "--session-id",
            "abc",
            "--add-dir",
            "/x",
            "--no-mcp",
            "--setting-sources",
            "project,local",
            "--connection",
            "c",
            "--custom-extra",
            "v",
            "--lonely-extra",
        ]));
        assert_eq!(parsed.workdir, Some(PathBuf::from("/w")));
        assert_eq!(parsed.model.as_deref(), Some("fake"));
        assert_eq!(parsed.allowed_tools, ["Read", "Bash(ls:*)"]);
        assert_eq!(parsed.disallowed_tools, ["Write"]);
        assert_eq!(parsed.permission_mode.as_deref(), Some("plan"));
        assert_eq!(parsed.max_turns, Some(7));
        assert!(parsed.permission_prompt_stdio);
        assert_eq!(parsed.session_id.as_deref(), Some("abc"));
        assert_eq!(parsed.add_dirs, [PathBuf::from("/x")]);
        assert!(parsed.no_mcp);
        assert_eq!(
            parsed.setting_sources,
            Some(vec!["project".to_owned(), "local".to_owned()])
        );
        assert!(parsed.problems.is_empty());
    }

    #[test]
    fn parses_the_claude_flag_set() {
        let parsed = parse(&args(&[
            "--output-format",
            "stream-json",
            "--verbose",
            "--system-prompt",
            "",
            "--allowedTools",
            "Read,Glob",
            "--disallowedTools",
            "Bash",
            "--permission-mode",
            "acceptEdits",
            "--session-id=s-1",
            "--setting-sources=user",
            "--thinking",
            "adaptive",
            "--max-thinking-tokens",
            "2048",
            "--settings",
            "/tmp/s.json",
            "--max-turns",
            "many",
            "--extra=-x",
            "--input-format",
            "stream-json",
        ]));
        assert_eq!(parsed.system_prompt, None);
        assert_eq!(parsed.allowed_tools, ["Read", "Glob"]);
        assert_eq!(parsed.disallowed_tools, ["Bash"]);
        assert_eq!(parsed.permission_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(parsed.session_id.as_deref(), Some("s-1"));
        assert_eq!(parsed.setting_sources, Some(vec!["user".to_owned()]));
        assert_eq!(parsed.settings, ["/tmp/s.json"]);
        assert_eq!(parsed.max_turns, None);
        assert_eq!(parsed.max_thinking_tokens, Some(2048));
        assert!(!parsed.thinking_disabled);
        assert_eq!(parsed.problems.len(), 1);
        let parsed = parse(&args(&[
            "--resume=550e8400-e29b-41d4-a716-446655440000",
            "--fork-session",
            "--resume-session-at=u-1",
            "--continue",
            "--no-session-persistence",
        ]));
        assert_eq!(
            parsed.resume.as_deref(),
            Some("550e8400-e29b-41d4-a716-446655440000")
        );
        assert_eq!(parsed.resume_session_at.as_deref(), Some("u-1"));
        assert!(parsed.fork_session && parsed.continue_latest && parsed.no_session_persistence);
    }

    #[test]
    fn bypass_and_unsandboxed() {
        let parsed = parse(&args(&[
            "--dangerously-allow-all-tool-calls",
            "--unsandboxed",
            "--include-partial-messages",
            "--thinking=disabled",
        ]));
        assert!(parsed.thinking_disabled);
        assert_eq!(parsed.permission_mode.as_deref(), Some("bypassPermissions"));
        assert!(parsed.unsandboxed);
        assert!(parsed.include_partial_messages);
    }
}
