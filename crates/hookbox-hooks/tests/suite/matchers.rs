use hookbox_hooks::{HookEvent, HookSet};
use serde_json::json;

/// Which of the built-in tools a sandbox matcher selects, via a real loaded config.
fn selected(matcher: Option<&str>) -> Vec<&'static str> {
    let mut rule = json!({"hooks": [{"type": "command", "command": "true"}]});
    if let Some(matcher) = matcher {
        rule["matcher"] = json!(matcher);
    }
    let config = json!({"g": {"pre_tool_execution": [rule]}});
    let mut builder = HookSet::builder();
    builder
        .load_str("m.json", &config.to_string(), None)
        .expect("loads");
    let hooks = builder.build();
    [
        "code_execution",
        "read_file",
        "write_file",
        "list_files",
        "delete_file",
        "my_code_execution",
        "code_execution_v2",
        "Read_file",
    ]
    .into_iter()
    .filter(|tool| !hooks.select(HookEvent::PreToolExecution, tool).is_empty())
    .collect()
}

#[test]
fn matcher_table() {
    let all = [
        "code_execution",
        "read_file",
        "write_file",
        "list_files",
        "delete_file",
        "my_code_execution",
        "code_execution_v2",
        "Read_file",
    ];
    let cases: &[(Option<&str>, &[&str])] = &[
        // The seeds' common matcher expressions.
        (Some("code_execution"), &["code_execution"]),
        (Some("write_file"), &["write_file"]),
        (Some("read_file|write_file"), &["read_file", "write_file"]),
        // Full match: `list_files` ends in `_files`, so `.*_file` does not select it (the
        // seed's examples for it are read_file, write_file and delete_file).
        (
            Some(".*_file"),
            &["read_file", "write_file", "delete_file", "Read_file"],
        ),
        (
            Some(".*_files?"),
            &[
                "read_file",
                "write_file",
                "list_files",
                "delete_file",
                "Read_file",
            ],
        ),
        (Some(".*"), &all),
        (Some("*"), &all),
        (Some(""), &all),
        (None, &all),
        // A shell glob is not a regular expression: it matches nothing.
        (Some("*_file"), &[]),
        // Anchored full match: no substring or prefix matches.
        (Some("execution"), &[]),
        (Some("code"), &[]),
        (Some("file"), &[]),
        // Case-sensitive.
        (Some("READ_FILE"), &[]),
        (Some("(?i)read_file"), &["read_file", "Read_file"]),
        // Explicit anchors are harmless.
        (Some("^read_file$"), &["read_file"]),
        // Alternation binds inside the anchors.
        (Some("read_file|code"), &["read_file"]),
        (Some("(read|write)_file"), &["read_file", "write_file"]),
        (Some("[a-z]+_files"), &["list_files"]),
        // Invalid syntax matches nothing.
        (Some("read_file("), &[]),
    ];
    for (matcher, expected) in cases {
        assert_eq!(selected(*matcher), expected.to_vec(), "matcher {matcher:?}");
    }
}

#[test]
fn invalid_matcher_is_reported_and_traced_in_the_binding() {
    let config = json!({"g": {"pre_tool_execution": [
        {"matcher": "*_file", "hooks": [{"type": "command", "command": "true"}]}
    ]}});
    let mut builder = HookSet::builder();
    builder
        .load_str("m.json", &config.to_string(), None)
        .expect("loads");
    let hooks = builder.build();
    assert!(hooks.has_errors());
    let diagnostic = &hooks.diagnostics()[0];
    assert_eq!(diagnostic.json_path, "$.g.pre_tool_execution[0].matcher");
    assert!(
        diagnostic.message.contains(".*_file"),
        "{}",
        diagnostic.message
    );
    let binding = hooks.bindings().next().expect("binding kept");
    assert!(matches!(
        binding.matcher_kind,
        hookbox_hooks::MatcherKind::Invalid(_)
    ));
}

#[test]
fn sdk_matchers_test_the_event_field() {
    let config = json!({"hooks": {
        "Notification": [{"matcher": "idle_prompt", "hooks": [{"type": "command", "command": "true"}]}],
        "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "true"}]}],
        "SubagentStart": [{"matcher": "review.*", "hooks": [{"type": "command", "command": "true"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "true"}]}]
    }});
    let mut builder = HookSet::builder();
    builder
        .load_str("s.json", &config.to_string(), None)
        .expect("loads");
    let hooks = builder.build();
    assert_eq!(
        hooks.select(HookEvent::Notification, "idle_prompt").len(),
        1
    );
    assert_eq!(
        hooks
            .select(HookEvent::Notification, "permission_prompt")
            .len(),
        0
    );
    assert_eq!(hooks.select(HookEvent::PreCompact, "manual").len(), 1);
    assert_eq!(hooks.select(HookEvent::PreCompact, "auto").len(), 0);
    assert_eq!(hooks.select(HookEvent::SubagentStart, "reviewer").len(), 1);
    assert_eq!(hooks.select(HookEvent::Stop, "anything").len(), 1);
}

#[test]
fn thousand_rules_select_in_order() {
    let rules: Vec<_> = (0..1000)
        .map(|i| json!({"matcher": format!("tool_{i}|shared"), "hooks": [{"type": "command", "command": format!("echo {i}")}]}))
        .collect();
    let config = json!({"g": {"pre_tool_execution": rules}});
    let mut builder = HookSet::builder();
    builder
        .load_str("big.json", &config.to_string(), None)
        .expect("loads");
    let hooks = builder.build();
    assert_eq!(
        hooks.select(HookEvent::PreToolExecution, "tool_512").len(),
        1
    );
    let shared = hooks.select(HookEvent::PreToolExecution, "shared");
    assert_eq!(shared.len(), 1000);
    let labels: Vec<_> = shared
        .iter()
        .map(|b| b.handler.label().to_owned())
        .collect();
    let expected: Vec<_> = (0..1000).map(|i| format!("echo {i}")).collect();
    assert_eq!(labels, expected);
}
