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

/// A case: what configures the host (git configuration lines, or a hook's command), the
/// files that exist before the session (path, text), and the path the model attacks.
type Case = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
);

/// Every way git's configuration (in `.git/config`) or a settings hook makes the host run or
/// read a file, one line each: the configuration lines, the files that exist before the
/// session, and a path the model's sandboxed `Bash` then tries to create or change (the file
/// itself, a neighbour it would import, a file its interpreter reads above it).
#[rustfmt::skip]
const GIT_CASES: &[Case] = &[
    ("[core]\n\thooksPath = .husky", &[], ".husky/pre-commit"),
    ("[include]\n\tpath = ../.gitconfig", &[], ".gitconfig"),
    ("[includeIf \"gitdir:/nowhere/\"]\n\tpath = ../cond.inc", &[], "cond.inc"),
    ("[includeIf \"onbranch:main\"]\n\tpath = ../conf/branch.inc", &[], "conf/branch.inc"),
    ("[include]\n\tpath = ../inc/a.inc", &[("inc/a.inc", "[include]\n\tpath = b.inc\n")], "inc/b.inc"),
    ("[include]\n\tpath = ../inc/a.inc", &[("inc/a.inc", "[include]\n\tpath = b.inc\n")], "inc/a.inc"),
    ("[core]\n\tfsmonitor = tools/fsmon/watch.sh", &[("tools/fsmon/watch.sh", "exit 0")], "tools/fsmon/watch.sh"),
    ("[core]\n\tfsmonitor = tools/fsmon/watch.sh", &[("tools/fsmon/watch.sh", "exit 0")], "tools/fsmon/lib.sh"),
    ("[core]\n\tfsmonitor = missing/fsmon.sh", &[], "missing/fsmon.sh"),
    ("[core]\n\tsshCommand = ssh -F ssh/config", &[("ssh/config", "Host *")], "ssh/config"),
    ("[diff \"x\"]\n\ttextconv = python3 conv/tc.py", &[("conv/tc.py", "")], "conv/json.py"),
    ("[diff \"y\"]\n\tcommand = diffcmd/d.sh", &[("diffcmd/d.sh", "")], "diffcmd/x.sh"),
    ("[diff]\n\texternal = ext/diff.sh", &[("ext/diff.sh", "")], "ext/lib.sh"),
    ("[merge \"m\"]\n\tdriver = ./drivers/merge.sh %O %A %B", &[("drivers/merge.sh", "")], "drivers/lib.sh"),
    ("[filter \"f\"]\n\tclean = perl filters/clean.pl", &[("filters/clean.pl", "")], "filters/Evil.pm"),
    ("[filter \"f\"]\n\tsmudge = filters2/smudge.rb", &[("filters2/smudge.rb", "")], "filters2/x.rb"),
    ("[filter \"p\"]\n\tprocess = node tools/js/proc.mjs", &[("tools/js/proc.mjs", "")], "tools/js/x.mjs"),
    ("[filter \"p\"]\n\tprocess = node tools/js/proc.mjs", &[("tools/js/proc.mjs", "")], "tools/package.json"),
    ("[filter \"p\"]\n\tprocess = node tools/js/proc.mjs", &[("tools/js/proc.mjs", "")], "package.json"),
    ("[filter \"p\"]\n\tprocess = node tools/js/proc.mjs", &[("tools/js/proc.mjs", "")], "node_modules/x/index.js"),
    ("[alias]\n\thi = !sh aliases/hi.sh", &[("aliases/hi.sh", "")], "aliases/evil.sh"),
    ("[credential]\n\thelper = !creds/helper.sh", &[("creds/helper.sh", "")], "creds/lib.sh"),
    ("[credential \"https://x\"]\n\thelper = !creds2/helper.sh", &[("creds2/helper.sh", "")], "creds2/lib.sh"),
    ("[gpg]\n\tprogram = gpg/sign.sh", &[("gpg/sign.sh", "")], "gpg/lib.sh"),
    ("[gpg \"ssh\"]\n\tprogram = gpgssh/sign.sh", &[("gpgssh/sign.sh", "")], "gpgssh/lib.sh"),
    ("[core]\n\teditor = editor/ed.sh", &[("editor/ed.sh", "")], "editor/lib.sh"),
    ("[core]\n\tpager = pager/p.sh", &[("pager/p.sh", "")], "pager/lib.sh"),
    ("[core]\n\taskPass = askpass/a.sh", &[("askpass/a.sh", "")], "askpass/lib.sh"),
    ("[sequence]\n\teditor = seqed/e.sh", &[("seqed/e.sh", "")], "seqed/lib.sh"),
    ("[pager]\n\tlog = pagerlog/p.sh", &[("pagerlog/p.sh", "")], "pagerlog/lib.sh"),
    ("[hook \"h\"]\n\tcommand = hooks2/run.sh", &[("hooks2/run.sh", "")], "hooks2/lib.sh"),
    ("[difftool \"d\"]\n\tcmd = difftool/d.sh $LOCAL", &[("difftool/d.sh", "")], "difftool/lib.sh"),
    ("[mergetool \"m\"]\n\tcmd = mergetool/m.sh", &[("mergetool/m.sh", "")], "mergetool/lib.sh"),
    ("[interactive]\n\tdiffFilter = dfilter/f.sh", &[("dfilter/f.sh", "")], "dfilter/lib.sh"),
    ("[init]\n\ttemplateDir = templates", &[], "templates/hooks/pre-commit"),
    ("[include]\r\n\tpath = ../crlf.inc\r", &[], "crlf.inc"),
    ("[include]\n\tpath = ../bom.inc", &[("bom.inc", "\u{feff}[core]\n\tfsmonitor = bomfs/f.sh\n")], "bomfs/f.sh"),
    ("[core]\n\talternateRefsCommand = altrefs/a.sh", &[("altrefs/a.sh", "")], "altrefs/lib.sh"),
    ("[trailer \"t\"]\n\tcmd = trailer/t.sh", &[("trailer/t.sh", "")], "trailer/lib.sh"),
    ("[difftool \"p\"]\n\tpath = dtpath/d.sh", &[("dtpath/d.sh", "")], "dtpath/lib.sh"),
    ("[mergetool \"p\"]\n\tpath = mtpath/m.sh", &[("mtpath/m.sh", "")], "mtpath/lib.sh"),
    ("[browser \"b\"]\n\tcmd = browser/b.sh", &[("browser/b.sh", "")], "browser/lib.sh"),
    ("[man \"m\"]\n\tcmd = man/m.sh", &[("man/m.sh", "")], "man/lib.sh"),
    ("[sendemail]\n\tsendmailCmd = sendmail/s.sh", &[("sendmail/s.sh", "")], "sendmail/lib.sh"),
];

/// Every way a settings hook makes the host load a file, one line each: the hook's command,
/// the files that exist before the session, and a path the model's `Bash` tries to create or
/// change.
#[rustfmt::skip]
const HOOK_CASES: &[Case] = &[
    ("python3 scripts/gate.py", &[("scripts/gate.py", "")], "scripts/json.py"),
    ("python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/gate.py", &[(".claude/hooks/gate.py", "")], ".claude/hooks/json.py"),
    ("node hooks/js/gate.js", &[("hooks/js/gate.js", "")], "hooks/js/util.js"),
    ("node hooks/js/gate.js", &[("hooks/js/gate.js", "")], "hooks/package.json"),
    ("node hooks/js/gate.js", &[("hooks/js/gate.js", ""), ("package.json", "{}")], "package.json"),
    ("node hooks/js/gate.js", &[("hooks/js/gate.js", "")], "node_modules/fs-extra/index.js"),
    ("bash ./sh/gate.sh", &[("sh/gate.sh", "")], "sh/lib.sh"),
    ("sh/run", &[("sh/run", "#!/bin/sh")], "sh/run"),
    (".venv/bin/python3 -c pass", &[(".venv/bin/python3", "#!/bin/sh"), (".venv/pyvenv.cfg", "home = /usr/bin")], ".venv/lib/python3/site-packages/evil.pth"),
];

#[tokio::test]
async fn nothing_git_or_a_hook_names_is_the_models() {
    if let Err(err) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip("nothing_git_or_a_hook_names_is_the_models", err);
        return;
    }
    let attacked: Vec<&str> = GIT_CASES
        .iter()
        .chain(HOOK_CASES)
        .map(|(_, _, path)| *path)
        .collect();
    let attack: String = attacked
        .iter()
        .map(|path| {
            format!(
                "mkdir -p \"$(dirname {path})\" 2>/dev/null; printf evil >> {path} 2>/dev/null; "
            )
        })
        .collect();
    let f = fixture(vec![
        bash("t1", &format!("{attack}echo done")),
        FakeTurn::text("done"),
    ])
    .await;
    let cwd = f.dir.path().canonicalize().expect("cwd");
    let config: Vec<&str> = GIT_CASES.iter().map(|(config, _, _)| *config).collect();
    let files = [
        (".git/HEAD", "ref: refs/heads/main\n".to_owned()),
        (".git/config", config.join("\n") + "\n"),
    ];
    let files = files
        .iter()
        .map(|(path, text)| (*path, text.as_str()))
        .chain(
            GIT_CASES
                .iter()
                .chain(HOOK_CASES)
                .flat_map(|(_, files, _)| files.iter().copied()),
        );
    for (path, text) in files {
        let path = cwd.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(&path, text).expect("file");
    }
    for (path, text) in HOOK_CASES.iter().flat_map(|(_, files, _)| files.iter()) {
        if text.starts_with("#!") {
            std::fs::set_permissions(
                cwd.join(path),
                std::os::unix::fs::PermissionsExt::from_mode(0o755),
            )
            .expect("program");
        }
    }
    let hooks: Vec<Value> = HOOK_CASES
        .iter()
        .map(|(command, _, _)| json!({"type": "command", "command": command}))
        .collect();
    let settings = tempfile::NamedTempFile::new().expect("settings");
    std::fs::write(
        settings.path(),
        json!({"hooks": {"PreToolUse": [{"matcher": "NoSuchTool", "hooks": hooks}]}}).to_string(),
    )
    .expect("settings");
    let messages = run_once(
        f.sandboxed()
            .permission_mode(PermissionMode::BypassPermissions)
            .settings_file(settings.path()),
        "go",
    )
    .await;
    assert!(
        tool_results(&messages)
            .iter()
            .any(|(text, _)| text.contains("done")),
        "{messages:?}"
    );
    let planted: Vec<&str> = attacked
        .into_iter()
        .filter(|path| {
            std::fs::read_to_string(cwd.join(path)).is_ok_and(|text| text.contains("evil"))
        })
        .collect();
    assert!(planted.is_empty(), "the model wrote: {planted:?}");
}

#[tokio::test]
async fn a_hook_script_directly_in_the_working_directory_is_refused() {
    let f = fixture(vec![FakeTurn::text("done")]).await;
    let cwd = f.dir.path().canonicalize().expect("cwd");
    std::fs::write(cwd.join("gate.py"), "").expect("gate");
    let settings = tempfile::NamedTempFile::new().expect("settings");
    std::fs::write(
        settings.path(),
        r#"{"hooks":{"PreToolUse":[{"hooks":[{"type":"command","command":"python3 gate.py"}]}]}}"#,
    )
    .expect("settings");
    let Err(err) = f.sandboxed().settings_file(settings.path()).build() else {
        panic!("the session started");
    };
    let message = err.to_string();
    assert!(
        message.contains("gate.py") && message.contains("directly in"),
        "{message}"
    );
}
