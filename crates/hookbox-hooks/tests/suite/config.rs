//! Loading hook configuration: the seeds' files, Claude-style settings, and a table of bad
//! configurations, each with the exact JSON path, severity and wording of its diagnostics.

use std::time::Duration;

use Severity::{Error, Warning};
use hookbox_hooks::config::{GroupInfo, ParsedConfig, parse};
use hookbox_hooks::{Binding, Dialect, Handler, HookEvent, MatcherKind, OnError, Severity};
use serde_json::json;

/// The sandbox tools of the seeds, the vocabulary matchers are checked against.
fn seed_tools() -> Vec<String> {
    [
        "code_execution",
        "read_file",
        "write_file",
        "list_files",
        "delete_file",
    ]
    .map(String::from)
    .to_vec()
}

/// The schema example of the sandbox seed ("Schéma hooks.json"), verbatim.
const SCHEMA_EXAMPLE: &str = r#"{
  "security-gate": {
    "enabled": true,
    "pre_tool_execution": [
      {
        "matcher": "code_execution",
        "hooks": [
          {
            "type": "command",
            "command": "python3 /.agents/hooks-scripts/gate.py",
            "timeout": 10
          }
        ]
      }
    ]
  },
  "auto-format": {
    "post_tool_execution": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "python3 /.agents/hooks-scripts/auto_lint.py",
            "timeout": 15
          }
        ]
      }
    ]
  }
}"#;

/// The sandbox seed's privacy-gate example, as its Python writes it (`json.dumps(indent=2)`).
const PRIVACY_GATE: &str = r#"{
  "privacy-gate": {
    "pre_tool_execution": [
      {
        "matcher": "read_file",
        "hooks": [
          {
            "type": "command",
            "command": "python3 /.agents/hooks-scripts/check_privacy.py",
            "timeout": 5
          }
        ]
      }
    ]
  }
}"#;

/// The sandbox seed's audit-logging example, as its REST example sends it.
const AUDIT_LOGGING: &str = r#"{"audit-logging": {"post_tool_execution": [{"matcher": "read_file|write_file", "hooks": [{"type": "http", "url": "https://telemetry.example.com/api/v1/agent-events", "timeout": 10}]}]}}"#;

/// A Claude Code `settings.json` with several events and settings that are not hooks.
const CLAUDE_SETTINGS: &str = r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "permissions": {"allow": ["Bash(npm run lint)"], "deny": ["Read(./.env)"]},
  "env": {"NODE_ENV": "development"},
  "model": "claude-sonnet-4-5",
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check-bash.sh", "timeout": 30}
        ]
      },
      {
        "matcher": "Write|Edit",
        "timeout": 5,
        "hooks": [
          {"type": "http", "url": "https://hooks.example.com/pre-write", "headers": {"X-Source": "claude"}},
          {"type": "command", "command": "./guard.sh", "timeout": 1.5, "on_error": "deny"}
        ]
      }
    ],
    "PostToolUse": [
      {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "npx prettier --write ."}]}
    ],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./add-context.sh"}]}],
    "Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "notify-send Claude"}]}],
    "PreCompact": [{"matcher": "auto", "hooks": [{"type": "command", "command": "./save.sh"}]}],
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "./start.sh"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}]
  }
}"#;

/// Parses `text` and asserts it is clean.
fn parse_clean(source: &str, text: &str) -> ParsedConfig {
    let parsed = match parse(source, text, None, &seed_tools()) {
        Ok(parsed) => parsed,
        Err(err) => panic!("{source}: {err}"),
    };
    assert!(
        parsed.diagnostics.is_empty(),
        "{source}: {:#?}",
        parsed.diagnostics
    );
    parsed
}

/// `(event, matcher, kind, label, timeout in ms, group)` of a binding, for comparisons.
type Summary<'a> = (
    HookEvent,
    Option<&'a str>,
    &'a str,
    &'a str,
    u128,
    Option<&'a str>,
);

/// The [`Summary`] of each binding.
fn summary(bindings: &[Binding]) -> Vec<Summary<'_>> {
    bindings
        .iter()
        .map(|binding| {
            (
                binding.event,
                binding.matcher.as_deref(),
                binding.handler.kind(),
                binding.handler.label(),
                binding.handler.timeout().as_millis(),
                binding.origin.group.as_deref(),
            )
        })
        .collect()
}

#[test]
fn the_seed_schema_example_parses_cleanly() {
    let parsed = parse_clean(".agents/hooks.json", SCHEMA_EXAMPLE);
    assert_eq!(parsed.dialect, Dialect::Sandbox);
    assert_eq!(
        parsed.groups,
        [
            GroupInfo {
                name: "security-gate".into(),
                enabled: true
            },
            GroupInfo {
                name: "auto-format".into(),
                enabled: true
            },
        ]
    );
    assert_eq!(
        summary(&parsed.bindings),
        [
            (
                HookEvent::PreToolExecution,
                Some("code_execution"),
                "command",
                "python3 /.agents/hooks-scripts/gate.py",
                10_000,
                Some("security-gate"),
            ),
            (
                HookEvent::PostToolExecution,
                Some("*"),
                "command",
                "python3 /.agents/hooks-scripts/auto_lint.py",
                15_000,
                Some("auto-format"),
            ),
        ]
    );
    assert_eq!(parsed.bindings[1].matcher_kind, MatcherKind::All);
    assert_eq!(parsed.bindings[0].origin.source, ".agents/hooks.json");
    assert_eq!(
        parsed.bindings[0].origin.json_path,
        r#"$["security-gate"].pre_tool_execution[0].hooks[0]"#
    );
}

#[test]
fn the_seed_privacy_gate_parses_cleanly() {
    let parsed = parse_clean("hooks.json", PRIVACY_GATE);
    assert_eq!(
        summary(&parsed.bindings),
        [(
            HookEvent::PreToolExecution,
            Some("read_file"),
            "command",
            "python3 /.agents/hooks-scripts/check_privacy.py",
            5_000,
            Some("privacy-gate"),
        )]
    );
    let Handler::Command(command) = &parsed.bindings[0].handler else {
        panic!("{:?}", parsed.bindings[0].handler);
    };
    assert_eq!(command.on_error, OnError::Allow);
}

#[test]
fn the_seed_audit_logging_parses_cleanly() {
    let parsed = parse_clean("hooks.json", AUDIT_LOGGING);
    assert_eq!(
        summary(&parsed.bindings),
        [(
            HookEvent::PostToolExecution,
            Some("read_file|write_file"),
            "http",
            "https://telemetry.example.com/api/v1/agent-events",
            10_000,
            Some("audit-logging"),
        )]
    );
    let Handler::Http(http) = &parsed.bindings[0].handler else {
        panic!("{:?}", parsed.bindings[0].handler);
    };
    assert!(http.headers.is_empty());
    assert!(matches!(
        parsed.bindings[0].matcher_kind,
        MatcherKind::Pattern(_)
    ));
}

#[test]
fn sandbox_defaults_and_disabled_groups() {
    let text = json!({
        "off": {"enabled": false, "pre_tool_execution": [{"hooks": [{"type": "command", "command": "a"}]}]},
        "on": {"pre_tool_execution": [{"hooks": [{"type": "command", "command": "b"}]}]},
    });
    let parsed = parse_clean("hooks.json", &text.to_string());
    assert_eq!(
        parsed.groups,
        [
            GroupInfo {
                name: "off".into(),
                enabled: false
            },
            GroupInfo {
                name: "on".into(),
                enabled: true
            },
        ]
    );
    assert_eq!(
        summary(&parsed.bindings),
        [(
            HookEvent::PreToolExecution,
            None,
            "command",
            "b",
            30_000,
            Some("on")
        )]
    );
}

#[test]
fn a_claude_settings_file_with_several_events_parses() {
    let parsed = parse_clean(".claude/settings.json", CLAUDE_SETTINGS);
    assert_eq!(parsed.dialect, Dialect::Sdk);
    assert!(parsed.groups.is_empty());
    assert_eq!(
        summary(&parsed.bindings),
        [
            (
                HookEvent::PreToolUse,
                Some("Bash"),
                "command",
                "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check-bash.sh",
                30_000,
                None,
            ),
            (
                HookEvent::PreToolUse,
                Some("Write|Edit"),
                "http",
                "https://hooks.example.com/pre-write",
                5_000,
                None,
            ),
            (
                HookEvent::PreToolUse,
                Some("Write|Edit"),
                "command",
                "./guard.sh",
                1_500,
                None
            ),
            (
                HookEvent::PostToolUse,
                Some("Write|Edit"),
                "command",
                "npx prettier --write .",
                60_000,
                None
            ),
            (
                HookEvent::UserPromptSubmit,
                None,
                "command",
                "./add-context.sh",
                60_000,
                None
            ),
            (
                HookEvent::Notification,
                Some("idle_prompt"),
                "command",
                "notify-send Claude",
                60_000,
                None
            ),
            (
                HookEvent::PreCompact,
                Some("auto"),
                "command",
                "./save.sh",
                60_000,
                None
            ),
            (
                HookEvent::SessionStart,
                Some("startup"),
                "command",
                "./start.sh",
                60_000,
                None
            ),
            (HookEvent::Stop, None, "command", "./stop.sh", 60_000, None),
        ]
    );
    let Handler::Command(guard) = &parsed.bindings[2].handler else {
        panic!("{:?}", parsed.bindings[2].handler);
    };
    assert_eq!(guard.on_error, OnError::Deny);
    assert_eq!(guard.timeout, Duration::from_millis(1_500));
    assert_eq!(
        parsed.bindings[2].origin.json_path,
        "$.hooks.PreToolUse[1].hooks[1]"
    );
}

#[test]
fn bare_sdk_options_and_plugin_files_parse() {
    let bare = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x"}]}]});
    let parsed = parse_clean("sdk", &bare.to_string());
    assert_eq!(parsed.dialect, Dialect::Sdk);
    assert_eq!(
        parsed.bindings[0].origin.json_path,
        "$.PreToolUse[0].hooks[0]"
    );

    let plugin = json!({"description": "formatter", "hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "fmt"}]}]}});
    let parsed = parse_clean("hooks/hooks.json", &plugin.to_string());
    assert_eq!(parsed.bindings.len(), 1);
}

#[test]
fn an_invalid_matcher_is_reported_and_kept_matching_nothing() {
    let text = json!({"g": {"pre_tool_execution": [{"matcher": "*_file", "hooks": [{"type": "command", "command": "x"}]}]}});
    let Ok(parsed) = parse("hooks.json", &text.to_string(), None, &seed_tools()) else {
        panic!("parses");
    };
    assert_eq!(parsed.bindings.len(), 1);
    assert!(matches!(
        parsed.bindings[0].matcher_kind,
        MatcherKind::Invalid(_)
    ));
    assert_eq!(parsed.diagnostics.len(), 1);
    let diagnostic = &parsed.diagnostics[0];
    assert_eq!(diagnostic.severity, Severity::Error);
    assert_eq!(diagnostic.json_path, "$.g.pre_tool_execution[0].matcher");
    assert!(
        diagnostic.message.contains("`.*_file`"),
        "{}",
        diagnostic.message
    );
}

#[test]
fn unusable_documents_are_errors_at_the_root() {
    for (text, phrase) in [
        (
            "{\"g\": {\"enabled\": true,}}",
            "not valid JSON at line 1, column 24",
        ),
        ("// comment\n{}", "not valid JSON at line 1, column 1"),
        ("", "not valid JSON"),
        (
            "\"hooks\"",
            "the top level must be an object, found a string",
        ),
        ("[{}]", "found an array"),
        (r#"{"permissions": {"allow": ["Bash"]}}"#, "cannot tell"),
        (r#"{"gate": {"hooks": []}}"#, "cannot tell"),
    ] {
        for dialect in [None, Some(Dialect::Sandbox), Some(Dialect::Sdk)] {
            match parse("x.json", text, dialect, &seed_tools()) {
                Err(err) => {
                    assert_eq!(err.json_path, "$");
                    assert_eq!(err.severity, Severity::Error);
                    assert_eq!(err.source, "x.json");
                    assert!(err.message.contains(phrase), "{text}: {}", err.message);
                    let hint = err.hint.unwrap_or_default();
                    assert!(
                        hint.contains("pre_tool_execution") && hint.contains("PreToolUse"),
                        "{hint}"
                    );
                }
                // A forced dialect reads any object.
                Ok(_) => assert!(dialect.is_some() && phrase == "cannot tell", "{text}"),
            }
        }
    }
}

/// One expected diagnostic: exact path, severity, and a phrase of its message or hint.
type Expected = (&'static str, Severity, &'static str);

/// Bad configurations, each with every diagnostic it must produce, in order.
fn bad_configs() -> Vec<(&'static str, String, Option<Dialect>, Vec<Expected>)> {
    /// A sandbox document with one `pre_tool_execution` rule holding `handler`.
    fn pre(handler: serde_json::Value) -> String {
        json!({"g": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [handler]}]}})
            .to_string()
    }
    /// A sandbox document with one `post_tool_execution` rule holding `handler`.
    fn post(handler: serde_json::Value) -> String {
        json!({"g": {"post_tool_execution": [{"hooks": [handler]}]}}).to_string()
    }
    /// An SDK settings document with one `event` matcher group holding `handler`.
    fn sdk(event: &str, handler: serde_json::Value) -> String {
        json!({"hooks": {event: [{"hooks": [handler]}]}}).to_string()
    }
    const H: &str = "$.g.pre_tool_execution[0].hooks[0]";
    let command = |extra: serde_json::Value| {
        let mut handler = json!({"type": "command", "command": "x"});
        if let (Some(handler), Some(extra)) = (handler.as_object_mut(), extra.as_object()) {
            handler.extend(extra.clone());
        }
        handler
    };
    vec![
        // Sandbox: group and rule level.
        (
            "event key typo",
            json!({"g": {"pre_tool_use": []}}).to_string(),
            None,
            vec![("$.g.pre_tool_use", Error, "did you mean `pre_tool_execution`?")],
        ),
        (
            "enabled typo",
            json!({"g": {"enable": false, "post_tool_execution": [{"hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.g.enable", Error, "did you mean `enabled`?")],
        ),
        (
            "Claude event in a sandbox group",
            json!({"g": {"PreToolUse": [{"hooks": []}]}}).to_string(),
            None,
            vec![("$.g.PreToolUse", Error, "sandbox dialect")],
        ),
        (
            "enabled as a string",
            json!({"g": {"enabled": "false"}}).to_string(),
            None,
            vec![("$.g.enabled", Error, "write false without quotes")],
        ),
        (
            "group is not an object",
            json!({"g": {"enabled": true}, "h": []}).to_string(),
            None,
            vec![("$.h", Error, "expected an object, found an array")],
        ),
        (
            "rules are not an array",
            json!({"g": {"pre_tool_execution": {"matcher": "x"}}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution", Error, "expected an array, found an object")],
        ),
        (
            "empty rules",
            json!({"g": {"pre_tool_execution": []}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution", Warning, "empty list")],
        ),
        (
            "empty hooks",
            json!({"g": {"pre_tool_execution": [{"matcher": "read_file", "hooks": []}]}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution[0].hooks", Warning, "does nothing")],
        ),
        (
            "rule without hooks",
            json!({"g": {"pre_tool_execution": [{"matcher": "read_file"}]}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution[0]", Error, "has no `hooks`")],
        ),
        (
            "rule-level timeout",
            json!({"g": {"pre_tool_execution": [{"timeout": 5, "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution[0].timeout", Error, "set on each handler")],
        ),
        (
            "matcher of the wrong type",
            json!({"g": {"pre_tool_execution": [{"matcher": ["read_file"], "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution[0].matcher", Error, "expected a string, found an array")],
        ),
        (
            "shell glob matcher",
            json!({"g": {"pre_tool_execution": [{"matcher": "*_file", "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution[0].matcher", Error, "not shell globs")],
        ),
        (
            "SDK tool name as a sandbox matcher",
            json!({"g": {"pre_tool_execution": [{"matcher": "Bash", "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.g.pre_tool_execution[0].matcher", Warning, "none of the sandbox's built-in tools")],
        ),
        (
            "duplicate group",
            r#"{"g": {"enabled": true}, "g": {"enabled": false}}"#.to_owned(),
            None,
            vec![("$.g", Warning, "later one wins")],
        ),
        // Sandbox: handlers.
        (
            "command typo",
            pre(json!({"type": "command", "comand": "x"})),
            None,
            vec![
                ("$.g.pre_tool_execution[0].hooks[0].comand", Error, "did you mean `command`?"),
                (H, Error, "has no `command`"),
            ],
        ),
        (
            "no type",
            pre(json!({"command": "x"})),
            None,
            vec![(H, Error, r#"add "type": "command""#)],
        ),
        (
            "unknown type",
            pre(json!({"type": "shell", "command": "x"})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].type", Error, "unknown handler type `shell`")],
        ),
        (
            "Claude prompt type in the sandbox dialect",
            pre(json!({"type": "prompt", "prompt": "x"})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].type", Error, "`type` is `command` or `http`")],
        ),
        (
            "type of the wrong type",
            pre(json!({"type": 1, "command": "x"})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].type", Error, "expected a string, found a number")],
        ),
        (
            "handler is not an object",
            pre(json!("python3 gate.py")),
            None,
            vec![(H, Error, "expected an object, found a string")],
        ),
        (
            "empty command",
            pre(json!({"type": "command", "command": "  "})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].command", Error, "`command` is empty")],
        ),
        (
            "command of the wrong type",
            pre(json!({"type": "command", "command": ["python3", "gate.py"]})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].command", Error, "expected a string, found an array")],
        ),
        (
            "timeout as a string, in a hyphenated group",
            json!({"security-gate": {"pre_tool_execution": [{"hooks": [command(json!({"timeout": "10"}))]}]}}).to_string(),
            None,
            vec![(r#"$["security-gate"].pre_tool_execution[0].hooks[0].timeout"#, Error, "write 10 without quotes")],
        ),
        (
            "zero timeout",
            pre(command(json!({"timeout": 0}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].timeout", Error, "must be positive")],
        ),
        (
            "negative timeout",
            pre(command(json!({"timeout": -3}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].timeout", Error, "must be positive")],
        ),
        (
            "fractional sandbox timeout",
            pre(command(json!({"timeout": 2.5}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].timeout", Error, "whole number of seconds")],
        ),
        (
            "timeout in milliseconds",
            pre(command(json!({"timeout": 30_000_000}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].timeout", Error, "not milliseconds")],
        ),
        (
            "unknown on_error",
            pre(command(json!({"on_error": "block"}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].on_error", Error, "unknown `on_error` value `block`")],
        ),
        (
            "on_error on a post hook",
            post(command(json!({"on_error": "deny"}))),
            None,
            vec![("$.g.post_tool_execution[0].hooks[0].on_error", Warning, "cannot block")],
        ),
        (
            "url on a command handler",
            pre(command(json!({"url": "https://x.example"}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].url", Error, "belongs to `http` handlers")],
        ),
        (
            "Claude field in the sandbox dialect",
            pre(command(json!({"statusMessage": "checking"}))),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].statusMessage", Error, "unknown key `statusMessage`")],
        ),
        (
            "http handler without url",
            pre(json!({"type": "http", "timeout": 10})),
            None,
            vec![(H, Error, "has no `url`")],
        ),
        (
            "http url without a scheme",
            pre(json!({"type": "http", "url": "telemetry.example.com/events"})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].url", Error, "not an http:// or https:// URL")],
        ),
        (
            "http url with another scheme",
            pre(json!({"type": "http", "url": "ftp://telemetry.example.com"})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].url", Error, "not an http:// or https:// URL")],
        ),
        (
            "headers",
            pre(json!({"type": "http", "url": "https://x.example", "headers": {
                "X-Event-Source": "agent-sandbox",
                "X-Count": 3,
                "Bad Name": "x",
                "Authorization": "Bearer telemetry_secret_token_123",
                "X-Auth-Token": "t",
            }})),
            None,
            vec![
                ("$.g.pre_tool_execution[0].hooks[0].headers[\"X-Count\"]", Error, "expected a string, found a number"),
                ("$.g.pre_tool_execution[0].hooks[0].headers[\"Bad Name\"]", Error, "not a valid HTTP header name"),
                ("$.g.pre_tool_execution[0].hooks[0].headers.Authorization", Warning, "network.allowlist[].transform"),
                ("$.g.pre_tool_execution[0].hooks[0].headers[\"X-Auth-Token\"]", Warning, "looks like a credential"),
            ],
        ),
        (
            "headers of the wrong type",
            pre(json!({"type": "http", "url": "https://x.example", "headers": ["X-A: 1"]})),
            None,
            vec![("$.g.pre_tool_execution[0].hooks[0].headers", Error, "expected an object, found an array")],
        ),
        // SDK dialect.
        (
            "sandbox-style event name in settings",
            json!({"hooks": {"PreToolExecution": []}}).to_string(),
            None,
            vec![("$.hooks.PreToolExecution", Error, "did you mean `PreToolUse`?")],
        ),
        (
            "lower-case event",
            json!({"hooks": {"pretooluse": []}}).to_string(),
            None,
            vec![("$.hooks.pretooluse", Error, "did you mean `PreToolUse`?")],
        ),
        (
            "sandbox event in SDK options",
            json!({"Stop": [{"hooks": [command(json!({}))]}], "pre_tool_execution": []}).to_string(),
            None,
            vec![("$.pre_tool_execution", Error, "sandbox-dialect event")],
        ),
        (
            "Claude event hookbox cannot pass through",
            json!({"hooks": {"WorktreeCreate": [{"hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.hooks.WorktreeCreate", Error, "cannot pass through")],
        ),
        (
            "misspelt agent event",
            json!({"hooks": {"BeforeModle": [{"hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.hooks.BeforeModle", Error, "unknown event `BeforeModle`")],
        ),
        (
            "event value is not a list",
            json!({"hooks": {"Stop": {"hooks": []}}}).to_string(),
            None,
            vec![("$.hooks.Stop", Error, "expected an array, found an object")],
        ),
        (
            "hooks is not an object",
            json!({"hooks": [], "PreToolUse": []}).to_string(),
            Some(Dialect::Sdk),
            vec![("$.hooks", Error, "expected an object, found an array")],
        ),
        (
            "prompt handler",
            sdk("Stop", json!({"type": "prompt", "prompt": "Are all tasks done?"})),
            None,
            vec![("$.hooks.Stop[0].hooks[0].type", Error, "not supported by hookbox")],
        ),
        (
            "agent handler",
            sdk("PreToolUse", json!({"type": "agent", "prompt": "check"})),
            None,
            vec![("$.hooks.PreToolUse[0].hooks[0].type", Error, "not supported by hookbox")],
        ),
        (
            "mcp_tool handler",
            sdk("PreToolUse", json!({"type": "mcp_tool", "server": "s", "tool": "t"})),
            None,
            vec![("$.hooks.PreToolUse[0].hooks[0].type", Error, "not supported by hookbox")],
        ),
        (
            "Claude fields hookbox ignores",
            sdk("PreToolUse", command(json!({
                "if": "Bash(git *)", "async": true, "args": ["-v"], "shell": "bash",
                "statusMessage": "checking", "once": true, "asyncRewake": true,
            }))),
            None,
            vec![
                ("$.hooks.PreToolUse[0].hooks[0].if", Warning, "the hook runs for every match"),
                ("$.hooks.PreToolUse[0].hooks[0].async", Warning, "runs synchronously"),
                ("$.hooks.PreToolUse[0].hooks[0].args", Warning, "via sh -c"),
                ("$.hooks.PreToolUse[0].hooks[0].shell", Warning, "/bin/sh -c"),
                ("$.hooks.PreToolUse[0].hooks[0].statusMessage", Warning, "is ignored"),
                ("$.hooks.PreToolUse[0].hooks[0].once", Warning, "is ignored"),
                ("$.hooks.PreToolUse[0].hooks[0].asyncRewake", Warning, "is ignored"),
            ],
        ),
        (
            "allowedEnvVars on an http handler",
            sdk("PostToolUse", json!({"type": "http", "url": "https://x.example", "allowedEnvVars": ["TOKEN"]})),
            None,
            vec![("$.hooks.PostToolUse[0].hooks[0].allowedEnvVars", Warning, "not expanded")],
        ),
        (
            "matcher on an event without one",
            json!({"hooks": {"UserPromptSubmit": [{"matcher": "Bash", "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.hooks.UserPromptSubmit[0].matcher", Warning, "ignored for this event")],
        ),
        (
            "matcher-level timeout of zero",
            json!({"hooks": {"PreToolUse": [{"timeout": 0, "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.hooks.PreToolUse[0].timeout", Error, "must be positive")],
        ),
        (
            "absurd handler timeout",
            sdk("PreToolUse", command(json!({"timeout": 600_000}))),
            None,
            vec![("$.hooks.PreToolUse[0].hooks[0].timeout", Error, "more than a day")],
        ),
        (
            "matcher group key typo",
            json!({"hooks": {"PreToolUse": [{"matchers": "Bash", "hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.hooks.PreToolUse[0].matchers", Error, "did you mean `matcher`?")],
        ),
        (
            "on_error on a notification hook",
            sdk("Notification", command(json!({"on_error": "deny"}))),
            None,
            vec![("$.hooks.Notification[0].hooks[0].on_error", Warning, "Notification hooks cannot block")],
        ),
        (
            "disableAllHooks",
            json!({"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [command(json!({}))]}]}}).to_string(),
            None,
            vec![("$.disableAllHooks", Warning, "still run")],
        ),
        // Forced dialects.
        (
            "sandbox file read as SDK",
            json!({"gate": {"pre_tool_execution": []}}).to_string(),
            Some(Dialect::Sdk),
            vec![("$.gate", Error, "looks like a group of the sandbox dialect")],
        ),
        (
            "settings read as sandbox",
            json!({"hooks": {"PreToolUse": []}}).to_string(),
            Some(Dialect::Sandbox),
            vec![("$.hooks.PreToolUse", Error, "did you mean `pre_tool_execution`?")],
        ),
        (
            "settings without hooks read as SDK",
            json!({"permissions": {}}).to_string(),
            Some(Dialect::Sdk),
            vec![("$", Warning, "declares no hooks")],
        ),
    ]
}

#[test]
fn bad_configs_are_diagnosed_exactly() {
    let mut failures = Vec::new();
    for (name, text, dialect, expected) in bad_configs() {
        let parsed = match parse("hooks.json", &text, dialect, &seed_tools()) {
            Ok(parsed) => parsed,
            Err(err) => {
                failures.push(format!("{name}: unusable: {err}"));
                continue;
            }
        };
        let found = &parsed.diagnostics;
        let matches = found.len() == expected.len()
            && found
                .iter()
                .zip(&expected)
                .all(|(diagnostic, (path, severity, phrase))| {
                    diagnostic.json_path == *path
                        && diagnostic.severity == *severity
                        && (diagnostic.message.contains(phrase)
                            || diagnostic
                                .hint
                                .as_deref()
                                .is_some_and(|hint| hint.contains(phrase)))
                        && diagnostic.source == "hooks.json"
                });
        if !matches {
            failures.push(format!("{name}: expected {expected:#?}\nfound {found:#?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn elements_with_errors_are_left_out_and_the_rest_kept() {
    let text = json!({"g": {"pre_tool_execution": [
        {"matcher": "code_execution", "hooks": [
            {"type": "command", "command": "first"},
            {"type": "command", "command": "bad", "timeout": 0},
            {"type": "prompt", "prompt": "?"},
            {"type": "command", "command": "last", "on_error": "maybe", "extra": 1},
        ]},
        {"matcher": 5, "hooks": [{"type": "command", "command": "dropped"}]},
    ]}});
    let Ok(parsed) = parse("hooks.json", &text.to_string(), None, &seed_tools()) else {
        panic!("parses");
    };
    let labels: Vec<&str> = parsed.bindings.iter().map(|b| b.handler.label()).collect();
    assert_eq!(labels, ["first", "last"]);
    assert_eq!(
        parsed.bindings[1].origin.json_path,
        "$.g.pre_tool_execution[0].hooks[3]"
    );
    let Handler::Command(last) = &parsed.bindings[1].handler else {
        panic!("{:?}", parsed.bindings[1].handler);
    };
    assert_eq!(last.on_error, OnError::Allow);
    assert!(
        parsed
            .diagnostics
            .iter()
            .all(|d| d.severity == Severity::Error)
    );
    assert_eq!(parsed.diagnostics.len(), 5, "{:#?}", parsed.diagnostics);
}
