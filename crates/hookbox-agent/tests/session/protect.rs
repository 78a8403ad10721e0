//! What the host runs later (settings, git, hooks) is out of the model's reach: Write/Edit to
//! it always ask (but in bypassPermissions), Bash in the sandbox cannot change it, settings
//! hooks get `CLAUDE_PROJECT_DIR`, and a hook that fails says so.

use super::*;

fn write(id: &str, path: &str, content: &str) -> FakeTurn {
    FakeTurn::tool_call(
        "",
        id,
        "Write",
        json!({"file_path": path, "content": content}),
    )
}

fn edit(id: &str, path: &str) -> FakeTurn {
    FakeTurn::tool_call(
        "",
        id,
        "Edit",
        json!({"file_path": path, "old_string": "[core]", "new_string": "[core]\n\tfsmonitor = touch /tmp/pwned"}),
    )
}

const EVIL: &str =
    r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch pwned"}]}]}}"#;

#[tokio::test]
async fn write_and_edit_to_protected_paths_ask_in_every_mode_but_bypass() {
    for mode in [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
    ] {
        let f = fixture(vec![
            write("t1", ".claude/settings.json", EVIL),
            write("t2", ".claude/settings.local.json", EVIL),
            edit("t3", ".git/config"),
            write("t4", ".git/hooks/pre-commit", "#!/bin/sh\ntouch pwned\n"),
            write("t5", ".agents/hooks.json", "{}"),
            write("t6", "notes.txt", "plain file"),
            FakeTurn::text("done"),
        ])
        .await;
        std::fs::create_dir(f.dir.path().join(".git")).expect(".git");
        std::fs::write(f.dir.path().join(".git/config"), "[core]\n").expect("config");
        // Everything that could allow without asking says allow.
        let (_, allow) = recorder(
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}),
        );
        let (requests, request_matcher) = recorder(json!({}));
        let asked = Arc::new(Mutex::new(Vec::<PermissionQuery>::new()));
        let log = Arc::clone(&asked);
        let messages = run_once(
            f.session()
                .permission_mode(mode)
                .allowed_tools(["Write", "Edit"])
                .hook(HookEvent::PreToolUse, allow)
                .hook(HookEvent::PermissionRequest, request_matcher)
                .can_use_tool(move |query: PermissionQuery| {
                    log.lock().expect("log").push(query);
                    async {
                        PermissionAnswer::Deny {
                            message: "not the settings".into(),
                            interrupt: false,
                        }
                    }
                }),
            "go",
        )
        .await;
        let results = tool_results(&messages);
        let cwd = f.dir.path();
        let asked: Vec<String> = asked
            .lock()
            .expect("log")
            .iter()
            .map(|query| query.input["file_path"].as_str().unwrap_or("").to_owned())
            .collect();
        if mode == PermissionMode::BypassPermissions {
            assert!(asked.is_empty(), "{asked:?}");
            assert!(cwd.join(".claude/settings.json").exists());
            continue;
        }
        assert_eq!(
            asked,
            [
                ".claude/settings.json",
                ".claude/settings.local.json",
                ".git/config",
                ".git/hooks/pre-commit",
                ".agents/hooks.json"
            ],
            "{mode}"
        );
        assert_eq!(seen(&requests).len(), 5, "{mode}");
        for (text, is_error) in &results[..5] {
            assert!(
                *is_error && text.contains("not the settings"),
                "{mode}: {text}"
            );
        }
        assert!(!results[5].1, "{mode}: {:?}", results[5]);
        assert!(!cwd.join(".claude").exists(), "{mode}");
        assert_eq!(
            std::fs::read_to_string(cwd.join(".git/config")).expect("config"),
            "[core]\n"
        );
        assert!(!cwd.join(".git/hooks").exists());
        assert!(!cwd.join(".agents").exists());
        assert!(cwd.join("notes.txt").exists());
    }
}

#[tokio::test]
async fn a_permission_request_hook_can_still_allow_a_protected_write() {
    let f = fixture(vec![
        write("t1", ".claude/settings.json", "{}"),
        FakeTurn::text("done"),
    ])
    .await;
    let (requests, allow) = recorder(
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}),
    );
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::AcceptEdits)
            .hook(HookEvent::PermissionRequest, allow),
        "go",
    )
    .await;
    assert_eq!(seen(&requests).len(), 1);
    assert!(!tool_results(&messages)[0].1, "{messages:?}");
    assert!(f.dir.path().join(".claude/settings.json").exists());
}

#[tokio::test]
async fn bash_cannot_plant_settings_or_git_hooks_for_the_next_session() {
    if let Err(err) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip(
            "bash_cannot_plant_settings_or_git_hooks_for_the_next_session",
            err,
        );
        return;
    }
    let attacks = [
        "mkdir -p .claude; echo '{}' > .claude/settings.json; echo done",
        "echo '{}' > .claude/settings.local.json; echo done",
        "git init -q . ; git config core.fsmonitor 'touch pwned'; echo done",
        "mkdir -p .git/hooks; printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit; echo done",
        "mv .git x; mkdir -p x/hooks; mv x .git; echo done",
        "mkdir real; echo '{}' > real/settings.json; rmdir .claude; ln -s real .claude; echo done",
        "echo 'evil' > scripts/gate.sh; rm -f scripts/gate.sh; mv scripts s2; echo done",
    ];
    let mut turns: Vec<FakeTurn> = attacks
        .iter()
        .enumerate()
        .map(|(index, attack)| bash(&format!("t{index}"), &attack.replace("{}", EVIL)))
        .collect();
    turns.push(FakeTurn::text("done"));
    let f = fixture(turns).await;
    let cwd = f.dir.path().canonicalize().expect("cwd");
    std::fs::create_dir(cwd.join("scripts")).expect("scripts");
    std::fs::write(cwd.join("scripts/gate.sh"), "exit 0\n").expect("gate");
    let settings = cwd.join("hookbox-settings.json");
    std::fs::write(
        &settings,
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"sh scripts/gate.sh"}]}]}}"#,
    )
    .expect("settings");
    let messages = run_once(f.sandboxed().settings_file(&settings), "go").await;
    for (text, _) in tool_results(&messages) {
        assert!(text.contains("done"), "{text}");
    }
    for entry in [".claude", ".git", ".agents"] {
        let meta = std::fs::symlink_metadata(cwd.join(entry)).expect(entry);
        assert!(meta.is_dir(), "{entry}");
        assert_eq!(std::fs::read_dir(cwd.join(entry)).expect(entry).count(), 0);
    }
    assert_eq!(
        std::fs::read_to_string(cwd.join("scripts/gate.sh")).expect("gate"),
        "exit 0\n"
    );
    assert!(!cwd.join("s2").exists());
    assert!(!cwd.join("pwned").exists());
}

#[tokio::test]
async fn settings_hooks_get_claude_project_dir() {
    let f = fixture(vec![bash("t1", "echo hi"), FakeTurn::text("done")]).await;
    let cwd = f.dir.path().canonicalize().expect("cwd");
    std::fs::create_dir_all(cwd.join(".claude/hooks")).expect("hooks");
    std::fs::write(
        cwd.join(".claude/hooks/record.sh"),
        "#!/bin/sh\nprintf '%s' \"$CLAUDE_PROJECT_DIR\" > \"$CLAUDE_PROJECT_DIR/seen.txt\"\necho '{}'\n",
    )
    .expect("script");
    let settings = cwd.join(".claude/settings.json");
    std::fs::write(
        &settings,
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"sh \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/record.sh"}]}]}}"#,
    )
    .expect("settings");
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .settings_file(&settings),
        "go",
    )
    .await;
    assert!(
        !messages
            .iter()
            .any(|message| SessionMessage::hook_failure_warning(message).is_some()),
        "{messages:?}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("seen.txt")).expect("the hook ran"),
        cwd.display().to_string()
    );
}

/// The hook failures reported in `messages`.
fn hook_responses(messages: &[SessionMessage]) -> Vec<HookFailure> {
    messages
        .iter()
        .filter_map(|message| match message {
            SessionMessage::HookFailed(failure) => Some(failure.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn every_failed_hook_is_reported_with_its_outcome_and_cause() {
    let f = fixture(vec![bash("t1", "echo hi"), FakeTurn::text("done")]).await;
    let cwd = f.dir.path().canonicalize().expect("cwd");
    let settings = cwd.join("settings.json");
    std::fs::write(
        &settings,
        r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[
            {"type":"command","command":"echo broken >&2; exit 1"},
            {"type":"command","command":"sleep 5","timeout":1},
            {"type":"command","command":"/nonexistent/hook"}]}]}}"#,
    )
    .expect("settings");
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .settings_file(&settings),
        "go",
    )
    .await;
    assert_eq!(tool_results(&messages)[0], ("hi".to_owned(), false));
    let responses = hook_responses(&messages);
    assert_eq!(responses.len(), 3, "{responses:?}");
    for response in &responses {
        assert_eq!(response.event, HookEvent::PreToolUse);
        assert_eq!(response.matcher.as_deref(), Some("Bash"));
        assert!(!response.failed_closed, "{response:?}");
        assert_eq!(response.handler, "command");
        assert!(
            response.origin.source.ends_with("settings.json"),
            "{response:?}"
        );
    }
    assert!(responses[0].cause.contains("broken"));
    assert_eq!(responses[0].exit_code, Some(1));
    assert!(responses[1].cause.contains("timed out"));
    assert!(responses[2].cause.contains("not found"));
    assert!(
        messages[..]
            .iter()
            .filter_map(SessionMessage::hook_failure_warning)
            .all(|line| line.contains("failed open")),
    );

    // A callback that fails blocks, and says so too.
    let f = fixture(vec![bash("t1", "echo hi"), FakeTurn::text("done")]).await;
    let failing = HookMatcher::new(Some("Bash")).hook(|_input: Value, _id: Option<String>| async {
        Err::<Value, _>(CallbackError("gate crashed".into()))
    });
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .hook(HookEvent::PreToolUse, failing),
        "go",
    )
    .await;
    assert!(tool_results(&messages)[0].1);
    let responses = hook_responses(&messages);
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert!(responses[0].failed_closed, "{responses:?}");
    assert!(responses[0].cause.contains("gate crashed"));
}

#[tokio::test]
async fn settings_hooks_are_read_once_when_the_session_starts() {
    let blocking = r#"{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"echo 'blocked by new settings' >&2; exit 2"}]}]}}"#;
    let f = fixture(vec![
        write("t1", ".claude/settings.json", blocking),
        bash("t2", "echo still runs"),
        FakeTurn::text("done"),
    ])
    .await;
    let cwd = f.dir.path().canonicalize().expect("cwd");
    std::fs::create_dir(cwd.join(".claude")).expect(".claude");
    std::fs::write(cwd.join(".claude/settings.json"), "{}").expect("settings");
    let messages = run_once(
        f.session()
            .permission_mode(PermissionMode::BypassPermissions)
            .settings_file(&cwd.join(".claude/settings.json")),
        "go",
    )
    .await;
    let results = tool_results(&messages);
    assert!(!results[0].1, "{results:?}");
    assert_eq!(results[1], ("still runs".to_owned(), false));
}

#[tokio::test]
async fn a_session_end_hook_that_fails_is_reported_by_close() {
    let f = fixture(vec![FakeTurn::text("hi")]).await;
    let settings = f.dir.path().join("end-settings.json");
    std::fs::write(
        &settings,
        r#"{"hooks":{"SessionEnd":[{"hooks":[{"type":"command","command":"exit 7"}]}]}}"#,
    )
    .expect("settings");
    let session = f
        .session()
        .settings_file(&settings)
        .build()
        .expect("session");
    run(&session, "hello").await;
    let produced = session.close("prompt_input_exit").await;
    let responses = hook_responses(&produced);
    assert_eq!(responses.len(), 1, "{produced:?}");
    assert_eq!(responses[0].event, HookEvent::SessionEnd);
    assert_eq!(responses[0].exit_code, Some(7));
    assert!(!responses[0].failed_closed, "{responses:?}");
}
