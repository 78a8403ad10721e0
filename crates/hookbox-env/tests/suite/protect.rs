//! What the host runs later stays out of the session's reach: `.claude`, `.git` (and a
//! `gitdir:` it names), `.agents` and the hook scripts are read-only to `Bash` in the sandbox,
//! and `Write` / `Edit` name them as protected (the session then asks).

use std::os::unix::fs::symlink;
use std::path::Path;

use hookbox_env::{CodingTools, Isolation};
use serde_json::json;

fn sandbox_unavailable() -> Option<String> {
    hookbox_exec::check_isolation()
        .err()
        .map(|error| error.to_string())
}

macro_rules! require_sandbox {
    () => {
        if let Some(reason) = sandbox_unavailable() {
            hookbox_test_support::skip(module_path!(), format_args!("no sandbox here: {reason}"));
            return;
        }
    };
}

/// Runs `command` with `Bash` in the sandbox; returns stdout + stderr.
async fn bash(tools: &CodingTools, command: &str) -> String {
    let out = tools.call("Bash", &json!({ "command": command })).await;
    out.text
}

/// Each attempt is run on its own; the ones that worked are echoed as `DONE …`.
fn attempts(list: &[&str]) -> String {
    list.iter()
        .map(|attempt| format!("if ( {attempt} ) 2>/dev/null; then echo 'DONE {attempt}'; fi"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test]
async fn bash_cannot_plant_settings_or_git_hooks_that_exist() {
    require_sandbox!();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join(".claude")).unwrap();
    std::fs::write(cwd.join(".claude/settings.json"), "{}").unwrap();
    std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
    std::fs::write(cwd.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(cwd.join(".agents")).unwrap();
    let tools = CodingTools::new(&cwd, Isolation::Sandboxed).unwrap();
    let evil = r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}"#;
    let script = attempts(&[
        &format!("echo '{evil}' > .claude/settings.json"),
        &format!("echo '{evil}' > .claude/settings.local.json"),
        "git config core.fsmonitor 'touch /tmp/pwned'",
        "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> .git/config",
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit",
        "mv .git x && mkdir .git",
        "mv .claude y",
        "rm -rf .claude",
        "echo '{}' > .agents/hooks.json",
        "ln -s /tmp .claude/evil",
    ]);
    let out = bash(&tools, &format!("{script}\necho END")).await;
    assert!(!out.contains("DONE"), "{out}");
    assert!(out.contains("END"), "{out}");
    assert_eq!(read(&cwd.join(".claude/settings.json")), "{}");
    assert!(!cwd.join(".claude/settings.local.json").exists());
    assert_eq!(read(&cwd.join(".git/config")), "[core]\n");
    assert!(!cwd.join(".git/hooks/pre-commit").exists());
    assert!(!cwd.join(".agents/hooks.json").exists());
    assert!(!cwd.join("x").exists() && !cwd.join("y").exists());
    // The rest of the directory stays writable.
    let out = bash(&tools, "echo ok > made.txt && mkdir -p src/a && echo done").await;
    assert!(out.contains("done"), "{out}");
    assert!(cwd.join("made.txt").exists());
}

#[tokio::test]
async fn bash_cannot_create_what_does_not_exist_yet() {
    require_sandbox!();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let mut tools = CodingTools::new(&cwd, Isolation::Sandboxed).unwrap();
    // A script inside a protected entry needs no mask of its own.
    tools.protect_files([".claude/hooks/later.sh".into()]);
    let script = attempts(&[
        "mkdir -p .claude && echo '{}' > .claude/settings.json",
        "echo '{}' > .claude/settings.json",
        "git init -q .",
        "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
        "echo 'gitdir: evil' > .git",
        "mkdir -p .agents && echo '{}' > .agents/hooks.json",
        "rmdir .claude",
        "mkdir real && ln -sfn real .claude",
    ]);
    let out = bash(&tools, &format!("{script}\necho END")).await;
    assert!(!out.contains("DONE"), "{out}");
    assert!(out.contains("END"), "{out}");
    for entry in [".claude", ".git", ".agents"] {
        let path = cwd.join(entry);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_dir(), "{entry} is the empty mask directory");
        assert_eq!(std::fs::read_dir(&path).unwrap().count(), 0, "{entry}");
    }
}

#[tokio::test]
async fn a_gitdir_and_hook_scripts_are_read_only_and_pinned() {
    require_sandbox!();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join("repo-git/hooks")).unwrap();
    std::fs::write(cwd.join("repo-git/config"), "[core]\n").unwrap();
    std::fs::write(cwd.join(".git"), "gitdir: repo-git\n").unwrap();
    std::fs::create_dir_all(cwd.join("scripts/gates")).unwrap();
    std::fs::write(cwd.join("scripts/gates/check.sh"), "exit 0\n").unwrap();
    let mut tools = CodingTools::new(&cwd, Isolation::Sandboxed).unwrap();
    tools.protect_files([
        cwd.join("scripts/gates/check.sh"),
        "tools/later.py".into(),
        "/elsewhere/outside.sh".into(),
    ]);
    let script = attempts(&[
        "echo evil >> repo-git/config",
        "echo evil > repo-git/hooks/pre-commit",
        "echo 'gitdir: other' > .git",
        "echo evil > scripts/gates/check.sh",
        "mv scripts/gates/check.sh scripts/gates/old.sh",
        "mv scripts scripts2 && mkdir -p scripts/gates && echo evil > scripts/gates/check.sh",
        "mv scripts/gates scripts/g2",
        "mkdir -p tools && echo evil > tools/later.py",
        "rmdir tools/later.py",
    ]);
    let out = bash(
        &tools,
        &format!("{script}\necho ok > scripts/gates/other.sh && echo END"),
    )
    .await;
    assert!(!out.contains("DONE"), "{out}");
    assert!(out.contains("END"), "{out}");
    assert_eq!(read(&cwd.join("repo-git/config")), "[core]\n");
    assert_eq!(read(&cwd.join("scripts/gates/check.sh")), "exit 0\n");
    assert_eq!(read(&cwd.join(".git")), "gitdir: repo-git\n");
    assert!(
        cwd.join("tools/later.py").is_dir(),
        "the missing script is masked"
    );
    assert!(cwd.join("scripts/gates/other.sh").exists());
}

#[tokio::test]
async fn a_protected_symlink_refuses_bash() {
    require_sandbox!();
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir(cwd.join("elsewhere")).unwrap();
    symlink("elsewhere", cwd.join(".claude")).unwrap();
    let tools = CodingTools::new(&cwd, Isolation::Sandboxed).unwrap();
    let out = tools
        .call("Bash", &json!({ "command": "echo ran > ran.txt" }))
        .await;
    let error = out.error.unwrap();
    assert!(error.contains(".claude is a symbolic link"), "{error}");
    assert!(!cwd.join("ran.txt").exists());
}

#[tokio::test]
async fn write_and_edit_targets_that_are_protected_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(cwd.join("repo-git")).unwrap();
    std::fs::write(cwd.join(".git"), "gitdir: ./repo-git\n").unwrap();
    std::fs::create_dir(cwd.join("src")).unwrap();
    symlink(".claude", cwd.join("settings-link")).unwrap();
    symlink(cwd.join("repo-git"), cwd.join("abs-link")).unwrap();
    let mut tools = CodingTools::new(&cwd, Isolation::Sandboxed).unwrap();
    tools.protect_files(["hooks/gate.sh".into()]);
    for (path, protected) in [
        (".claude/settings.json", Some(".claude")),
        (".claude/settings.local.json", Some(".claude")),
        ("./.git/hooks/pre-commit", Some(".git")),
        (".git", Some(".git")),
        (".agents/hooks.json", Some(".agents")),
        ("repo-git/config", Some("repo-git")),
        ("src/../.claude/x", Some(".claude")),
        ("settings-link/settings.json", Some(".claude")),
        ("abs-link/hooks/post-checkout", Some("repo-git")),
        ("hooks/gate.sh", Some("hooks/gate.sh")),
        ("src/main.rs", None),
        ("settings-link", None),
        ("hooks/other.sh", None),
        (".claudex", None),
    ] {
        let expected = protected.map(|rel| cwd.join(rel));
        assert_eq!(tools.protected(path), expected, "{path}");
        let absolute = cwd.join(path).display().to_string();
        assert_eq!(tools.protected(&absolute), expected, "{absolute}");
    }
}
