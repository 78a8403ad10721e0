//! Trust in a project's policy follows content, not paths: `hookbox trust` covers the policy
//! and every file of the project its hooks name, for that project only; a link never carries
//! trust; a changed file makes the project untrusted again, and `hookbox hook` names it and the
//! command that trusts it; the hooks run from a snapshot of what was trusted, so a module the
//! agent plants beside a script is never imported.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::json;

use super::super::{code, hookbox_in, stdout_json};
use super::{Answerer, hook, hook_once, pre_tool_use, stderr, trust};

/// A home and a project in a fresh directory.
struct Setup {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let (home, project) = (dir.path().join("home"), dir.path().join("project"));
        std::fs::create_dir_all(project.join(".agents/hooks")).expect("mkdir");
        std::fs::create_dir_all(&home).expect("mkdir");
        Self {
            _dir: dir,
            home,
            project,
        }
    }

    /// The project's policy file.
    fn policy(&self) -> PathBuf {
        self.project.join(".agents/hooks.json")
    }

    /// Writes a project policy whose one gate, on every tool, runs `command`.
    fn gate(&self, command: &str) {
        write_policy(&self.project, command);
    }

    /// `hookbox hook claude-code` for a `Bash` `ls` in the project (in process, by the
    /// daemon and by the thin client, which must agree).
    fn ls(&self) -> std::process::Output {
        hook(
            &self.home,
            &self.project,
            &[],
            &pre_tool_use(&self.project, "Bash", json!({"command": "ls"})),
        )
    }

    /// The reason the answer to [`Self::ls`] gives (empty when none).
    fn reason(&self) -> (String, String) {
        let output = self.ls();
        let reason = if output.stdout.is_empty() {
            String::new()
        } else {
            stdout_json(&output)["hookSpecificOutput"]["permissionDecisionReason"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        (reason, stderr(&output))
    }
}

/// Writes `project`'s policy: one gate on every tool that runs `command`.
fn write_policy(project: &Path, command: &str) {
    let policy = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
        {"type": "command", "command": command}]}]}});
    std::fs::write(project.join(".agents/hooks.json"), policy.to_string()).expect("policy");
}

/// Writes an executable `file` (relative to `project`) holding `text`.
fn script(project: &Path, file: &str, text: &str) {
    let path = project.join(file);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, text).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A shell gate that denies with `reason`.
fn denying(reason: &str) -> String {
    format!("#!/bin/sh\ncat >/dev/null\necho '{{\"decision\":\"deny\",\"reason\":\"{reason}\"}}'\n")
}

/// The trust command `hookbox hook` must print for `setup`'s project.
fn trust_command(setup: &Setup) -> String {
    format!(
        "`HOOKBOX_HOME={} hookbox trust {}`",
        setup.home.display(),
        setup.policy().display()
    )
}

/// A trusted project's gate runs; once a file its hooks name changes, the project is
/// untrusted again: nothing of it runs, and `hookbox hook` names the file and prints the exact
/// command that trusts it. Each row changes one file (a script changed, a file the policy names
/// that appears after the trust, a script removed) and gives the reason once trusted again; a
/// new change is one line.
#[test]
fn a_changed_script_is_untrusted_again_naming_the_file_and_the_command() {
    type Change = fn(&Path);
    let changes: [(&str, Change, &str, &str); 4] = [
        (
            ".agents/hooks.json",
            |project| write_policy(project, "sh .agents/hooks/gate.sh # edited"),
            "changed",
            "trusted gate",
        ),
        (
            ".agents/hooks/gate.sh",
            |project| script(project, ".agents/hooks/gate.sh", &denying("changed gate")),
            "changed",
            "changed gate",
        ),
        (
            ".agents/hooks/rules.txt",
            |project| script(project, ".agents/hooks/rules.txt", "planted later"),
            "is new",
            "trusted gate",
        ),
        (
            ".agents/hooks/gate.sh",
            |project| std::fs::remove_file(project.join(".agents/hooks/gate.sh")).expect("rm"),
            "is gone",
            "",
        ),
    ];
    for (file, change, how, retrusted) in changes {
        let setup = Setup::new();
        setup.gate("cat .agents/hooks/rules.txt >/dev/null 2>&1; sh .agents/hooks/gate.sh");
        script(
            &setup.project,
            ".agents/hooks/gate.sh",
            &denying("trusted gate"),
        );
        trust(&setup.home, &setup.policy());
        assert_eq!(setup.reason().0, "trusted gate", "{file} {how}");
        change(&setup.project);
        let (reason, message) = setup.reason();
        assert_eq!(reason, "", "{file} {how}: the untrusted project's gate ran");
        assert!(
            message.contains("is not trusted"),
            "{file} {how}: {message}"
        );
        assert!(
            message.contains(&format!("{file} {how}")),
            "{file} {how}: {message}"
        );
        assert!(
            message.contains(&trust_command(&setup)),
            "{file} {how}: {message}"
        );
        // Trusted again as it is now (naming the project's directory), it runs again.
        trust(&setup.home, &setup.project);
        let (reason, message) = setup.reason();
        assert!(
            !message.contains("is not trusted"),
            "{file} {how}: {message}"
        );
        assert_eq!(reason, retrusted, "{file} {how}: {message}");
    }
}

/// A module the agent plants beside a trusted script (`json.py` beside `gate.py`, which
/// imports `json`) is never imported: the hooks run from the snapshot of what was trusted,
/// where it is not. The planted file is no file of the closure, so the project stays trusted.
#[test]
fn a_module_planted_beside_a_trusted_script_is_not_imported() {
    let setup = Setup::new();
    setup.gate("python3 .agents/hooks/gate.py");
    script(
        &setup.project,
        ".agents/hooks/gate.py",
        "import json, sys\njson.load(sys.stdin)\n\
         print(json.dumps({'decision': 'deny', 'reason': 'trusted gate'}))\n",
    );
    trust(&setup.home, &setup.policy());
    assert_eq!(setup.reason().0, "trusted gate");
    for planted in ["json.py", "sitecustomize.py", "usercustomize.py"] {
        script(
            &setup.project,
            &format!(".agents/hooks/{planted}"),
            "import sys\nsys.stdin.read()\n\
             print('{\"decision\": \"deny\", \"reason\": \"planted module ran\"}')\nsys.exit(0)\n",
        );
    }
    let (reason, message) = setup.reason();
    assert_eq!(reason, "trusted gate", "{message}");
    assert!(!message.contains("is not trusted"), "{message}");
}

/// Trust is kept for one project root: another project with the very same files (copied, or
/// its policy a hard link to the trusted one) is not trusted, and no link carries trust, at
/// the policy, at its directory, at a script or at a directory on a script's way. Each row
/// makes project B from the trusted project A; a new way is one line.
#[test]
fn trust_is_for_one_project_and_a_link_never_carries_it() {
    type Make = fn(&Path, &Path, &Path);
    let ways: [(&str, Make, &str); 6] = [
        (
            "a copy of A",
            |a, b, _| {
                copy(a, b, ".agents/hooks.json");
                copy(a, b, ".agents/hooks/gate.sh");
            },
            "new: it was never trusted for this project",
        ),
        (
            "a hard link to A's policy",
            |a, b, _| {
                std::fs::hard_link(a.join(".agents/hooks.json"), b.join(".agents/hooks.json"))
                    .expect("link");
                copy(a, b, ".agents/hooks/gate.sh");
            },
            "new: it was never trusted for this project",
        ),
        (
            "a symbolic link to A's policy",
            |a, b, _| {
                std::os::unix::fs::symlink(
                    a.join(".agents/hooks.json"),
                    b.join(".agents/hooks.json"),
                )
                .expect("link");
            },
            "symbolic link",
        ),
        (
            "a symbolic link to A's .agents",
            |a, b, _| {
                std::fs::remove_dir_all(b.join(".agents")).expect("rm");
                std::os::unix::fs::symlink(a.join(".agents"), b.join(".agents")).expect("link");
            },
            "symbolic link",
        ),
        (
            "B trusted, then its script a symbolic link to A's",
            |a, b, home| {
                copy(a, b, ".agents/hooks.json");
                script(b, ".agents/hooks/gate.sh", "#!/bin/sh\n");
                trust(home, &b.join(".agents/hooks.json"));
                std::fs::remove_file(b.join(".agents/hooks/gate.sh")).expect("rm");
                std::os::unix::fs::symlink(
                    a.join(".agents/hooks/gate.sh"),
                    b.join(".agents/hooks/gate.sh"),
                )
                .expect("link");
            },
            "a link never carries trust",
        ),
        (
            "B trusted, then its scripts' directory a symbolic link to A's",
            |a, b, home| {
                copy(a, b, ".agents/hooks.json");
                script(b, ".agents/hooks/gate.sh", "#!/bin/sh\n");
                trust(home, &b.join(".agents/hooks.json"));
                std::fs::remove_dir_all(b.join(".agents/hooks")).expect("rm");
                std::os::unix::fs::symlink(a.join(".agents/hooks"), b.join(".agents/hooks"))
                    .expect("link");
            },
            "a link never carries trust",
        ),
    ];
    for (way, make, words) in ways {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().join("home");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for project in [&a, &b] {
            std::fs::create_dir_all(project.join(".agents/hooks")).expect("mkdir");
        }
        write_policy(&a, "sh .agents/hooks/gate.sh");
        script(&a, ".agents/hooks/gate.sh", &denying("A's gate"));
        std::fs::create_dir_all(&home).expect("mkdir");
        trust(&home, &a.join(".agents/hooks.json"));
        make(&a, &b, &home);
        let output = hook(
            &home,
            &b,
            &[],
            &pre_tool_use(&b, "Bash", json!({"command": "ls"})),
        );
        assert!(
            !String::from_utf8_lossy(&output.stdout).contains("A's gate"),
            "{way}: A's trust ran a hook for B"
        );
        assert!(
            stderr(&output).contains(words),
            "{way}: {}",
            stderr(&output)
        );
    }
}

/// Copies `file` of project `from` to project `to`.
fn copy(from: &Path, to: &Path, file: &str) {
    std::fs::copy(from.join(file), to.join(file)).expect("copy");
}

/// A trust record an earlier hookbox wrote (the policy's path and SHA-256) no longer counts:
/// the user is told so, with the command that trusts the project as it is now.
#[test]
fn a_path_based_trust_record_is_no_longer_honoured() {
    let setup = Setup::new();
    setup.gate("sh .agents/hooks/gate.sh");
    script(
        &setup.project,
        ".agents/hooks/gate.sh",
        &denying("trusted gate"),
    );
    #[expect(
        clippy::disallowed_methods,
        reason = "the test computes a digest with coreutils"
    )]
    let sum = std::process::Command::new("sha256sum")
        .arg(setup.policy())
        .output()
        .expect("sha256sum");
    let digest = String::from_utf8_lossy(&sum.stdout)[..64].to_owned();
    let canonical = setup.policy().canonicalize().expect("canonical");
    std::fs::write(
        setup.home.join("trusted-policies.json"),
        json!({canonical.display().to_string(): digest}).to_string(),
    )
    .expect("old record");
    let (reason, message) = setup.reason();
    assert_eq!(reason, "", "a path-based record still counts");
    assert!(
        message.contains("an earlier hookbox trusted it by its path alone"),
        "{message}"
    );
    assert!(message.contains(&trust_command(&setup)), "{message}");
}

/// `hookbox trust` refuses a project whose closure holds a link, saying which file and why.
#[test]
fn trust_refuses_a_link_in_the_closure() {
    let setup = Setup::new();
    setup.gate("sh .agents/hooks/gate.sh");
    let elsewhere = setup.home.join("gate.sh");
    script(&setup.home, "gate.sh", &denying("elsewhere"));
    std::os::unix::fs::symlink(&elsewhere, setup.project.join(".agents/hooks/gate.sh"))
        .expect("link");
    let output = hookbox_in(
        &setup.home,
        &["trust", setup.policy().to_str().expect("utf-8")],
        b"",
    );
    assert_eq!(code(&output), 1, "{}", stderr(&output));
    assert!(
        stderr(&output).contains(".agents/hooks/gate.sh")
            && stderr(&output).contains("a link never carries trust"),
        "{}",
        stderr(&output)
    );
}

/// Every spelling of a script in a hook's command puts the script in the trusted closure:
/// after the trust, a change to it makes the project untrusted, naming it. Each row is a
/// command (`{root}`: the project's absolute path) and the file it runs; a new spelling is
/// one line.
#[test]
fn every_spelling_of_a_script_puts_it_in_the_closure() {
    let spellings: &[(&str, &str)] = &[
        ("python3 .agents/hooks/gate.py", ".agents/hooks/gate.py"),
        (
            "python3 -u ./.agents/hooks/gate.py",
            ".agents/hooks/gate.py",
        ),
        (
            r#"python3 "$CLAUDE_PROJECT_DIR/.agents/hooks/gate.py""#,
            ".agents/hooks/gate.py",
        ),
        (
            r#"python3 "${CLAUDE_PROJECT_DIR}"/.agents/hooks/gate.py"#,
            ".agents/hooks/gate.py",
        ),
        (
            "python3 $GEMINI_PROJECT_DIR/.agents/hooks/gate.py",
            ".agents/hooks/gate.py",
        ),
        (
            r#"node "$CLAUDE_PROJECT_DIR/.agents/hooks/gate.mjs""#,
            ".agents/hooks/gate.mjs",
        ),
        ("node .agents/hooks/gate.js", ".agents/hooks/gate.js"),
        ("bash x.sh", "x.sh"),
        ("sh ./x.sh", "x.sh"),
        ("./run", "run"),
        ("{root}/.agents/hooks/abs.py", ".agents/hooks/abs.py"),
        (
            "python3 {root}/.agents/hooks/abs.py",
            ".agents/hooks/abs.py",
        ),
        ("'{root}/.agents/hooks/abs.py'", ".agents/hooks/abs.py"),
        (
            "cat | python3 .agents/hooks/gate.py | jq .",
            ".agents/hooks/gate.py",
        ),
        (
            "FOO=1 python3 .agents/hooks/gate.py",
            ".agents/hooks/gate.py",
        ),
        ("env python3 .agents/hooks/gate.py", ".agents/hooks/gate.py"),
        ("exec perl .agents/hooks/gate.pl", ".agents/hooks/gate.pl"),
        (
            "timeout 5 python3 .agents/hooks/gate.py",
            ".agents/hooks/gate.py",
        ),
        ("jq -f .agents/hooks/filter.jq", ".agents/hooks/filter.jq"),
        (
            "python3 .agents/hooks/gate.py --rules=.agents/hooks/rules.txt",
            ".agents/hooks/rules.txt",
        ),
        (
            "bash -c '. .agents/hooks/lib.sh; gate'",
            ".agents/hooks/lib.sh",
        ),
        (
            r"python3 .agents/hooks/sp\ ace.py",
            ".agents/hooks/sp ace.py",
        ),
        (
            "python3 '.agents/hooks/sp ace.py'",
            ".agents/hooks/sp ace.py",
        ),
        (
            "true && python3 .agents/hooks/gate.py; false",
            ".agents/hooks/gate.py",
        ),
        (
            "python3 .agents/hooks/../hooks/gate.py",
            ".agents/hooks/gate.py",
        ),
    ];
    for (spelling, file) in spellings {
        let setup = Setup::new();
        let root = setup.project.canonicalize().expect("canonical");
        let command = spelling.replace("{root}", &root.display().to_string());
        setup.gate(&command);
        script(&setup.project, file, "trusted\n");
        trust(&setup.home, &setup.policy());
        let event = pre_tool_use(&setup.project, "Bash", json!({"command": "ls"}));
        let output = hook_once(
            Answerer::InProcess,
            "claude-code",
            &setup.home,
            &setup.project,
            &[],
            &event,
        );
        assert!(
            !stderr(&output).contains("is not trusted"),
            "{spelling}: untrusted before any change: {}",
            stderr(&output)
        );
        script(&setup.project, file, "changed\n");
        let output = hook_once(
            Answerer::InProcess,
            "claude-code",
            &setup.home,
            &setup.project,
            &[],
            &event,
        );
        assert!(
            stderr(&output).contains(&format!("{file} changed")),
            "{spelling}: {}",
            stderr(&output)
        );
    }
}

/// A trusted project's policy that the agent replaced with something that does not parse is
/// untrusted (its words are not followed), not an error that blocks every call.
#[test]
fn a_trusted_policy_replaced_by_garbage_is_untrusted_and_blocks_nothing() {
    let setup = Setup::new();
    setup.gate("sh .agents/hooks/gate.sh");
    script(
        &setup.project,
        ".agents/hooks/gate.sh",
        &denying("trusted gate"),
    );
    trust(&setup.home, &setup.policy());
    std::fs::write(setup.policy(), "{ not json").expect("garbage");
    let output = setup.ls();
    assert_eq!(code(&output), 0, "{}", stderr(&output));
    assert!(
        stderr(&output).contains(".agents/hooks.json changed"),
        "{}",
        stderr(&output)
    );
}

/// A trusted project never loses its gates silently. Each row breaks a trusted project one way
/// (a file of its closure edited, a BOM before its policy, a script gone or made a link, a file
/// appearing at a path its hooks name, its policy gone, its snapshot gone or edited); each
/// column is how its policy fails: open by default (the call goes on, the agent's user is told
/// in `systemMessage` and the log says `fail-open` with the cause), closed under
/// `--fail-closed` or when the policy *as trusted* says `on_error: deny` (what the changed
/// file says never counts: the last row's break rewrites it to `allow`). A new break is one
/// line.
#[test]
fn a_trusted_project_whose_closure_changes_fails_as_its_trusted_policy_says() {
    type Break = fn(&Setup);
    let breaks: [(&str, Break, &str); 9] = [
        (
            "script edited",
            |s| append(&s.project.join(".agents/hooks/gate.sh"), "#\n"),
            "gate.sh changed",
        ),
        (
            "BOM before the policy",
            |s| prepend(&s.policy(), "\u{feff}"),
            "hooks.json changed",
        ),
        (
            "script removed",
            |s| std::fs::remove_file(s.project.join(".agents/hooks/gate.sh")).expect("rm"),
            "gate.sh is gone",
        ),
        (
            "script made a link",
            |s| relink(&s.project.join(".agents/hooks/gate.sh")),
            "a link never carries trust",
        ),
        (
            "named file appears",
            |s| script(&s.project, ".agents/hooks/rules.txt", "planted"),
            "rules.txt is new",
        ),
        (
            "policy removed",
            |s| std::fs::remove_file(s.policy()).expect("rm"),
            "hooks.json is gone",
        ),
        (
            "snapshot removed",
            |s| std::fs::remove_dir_all(s.home.join("trusted")).expect("rm"),
            "is gone from hookbox's home",
        ),
        (
            "snapshot edited",
            |s| edit_snapshot(&s.home),
            "is not the file trusted",
        ),
        (
            "policy says allow",
            |s| {
                write_gate(&s.project, "allow");
                append(&s.policy(), "\n");
            },
            "hooks.json changed",
        ),
    ];
    // (policy's on_error, --fail-closed, exit, logged)
    let columns = [
        (None, false, 0, "fail-open"),
        (None, true, 2, "deny"),
        (Some("deny"), false, 2, "deny"),
    ];
    for (name, change, cause) in breaks {
        for (on_error, fail_closed, exit, logged) in columns {
            let case = format!("{name}, on_error {on_error:?}, --fail-closed {fail_closed}");
            let setup = Setup::new();
            write_gate(&setup.project, on_error.unwrap_or("allow"));
            script(
                &setup.project,
                ".agents/hooks/gate.sh",
                &denying("trusted gate"),
            );
            trust(&setup.home, &setup.policy());
            change(&setup);
            let extra: &[&str] = if fail_closed { &["--fail-closed"] } else { &[] };
            let output = hook(
                &setup.home,
                &setup.project,
                extra,
                &pre_tool_use(&setup.project, "Bash", json!({"command": "ls"})),
            );
            assert_eq!(code(&output), exit, "{case}: {}", stderr(&output));
            let told = stderr(&output);
            assert!(
                told.contains("gates are off") && told.contains(cause),
                "{case}: {told}"
            );
            if exit == 0 {
                let shown = stdout_json(&output)["systemMessage"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                assert!(
                    shown.contains("gates are off") && shown.contains(cause),
                    "{case}: {shown}"
                );
            }
            let log = hookbox_in(&setup.home, &["log", "--json", "--limit", "1"], b"");
            let last = &stdout_json(&log)[0];
            assert_eq!(last["decision"], logged, "{case}: {last:#}");
            assert!(
                last["reason"]
                    .as_str()
                    .is_some_and(|reason| reason.contains(cause)),
                "{case}: {last:#}"
            );
        }
    }
}

/// Writes `project`'s policy: its gate runs `gate.sh` after reading `rules.txt` if there, with
/// the file's `on_error`.
fn write_gate(project: &Path, on_error: &str) {
    let policy = json!({"on_error": on_error, "g": {"pre_tool_execution": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "cat .agents/hooks/rules.txt >/dev/null 2>&1; sh .agents/hooks/gate.sh"}]}]}});
    std::fs::write(project.join(".agents/hooks.json"), policy.to_string()).expect("policy");
}

/// Appends `text` to `path`.
fn append(path: &Path, text: &str) {
    let old = std::fs::read_to_string(path).expect("read");
    std::fs::write(path, old + text).expect("write");
}

/// Puts `text` before what `path` holds.
fn prepend(path: &Path, text: &str) {
    let old = std::fs::read_to_string(path).expect("read");
    std::fs::write(path, format!("{text}{old}")).expect("write");
}

/// Replaces `path` by a link to a copy of it.
fn relink(path: &Path) {
    let copy = path.with_extension("copy");
    std::fs::rename(path, &copy).expect("mv");
    std::os::unix::fs::symlink(&copy, path).expect("ln");
}

/// Rewrites the trusted snapshot's `gate.sh` (read-only, but the user's) to allow.
fn edit_snapshot(home: &Path) {
    let snapshots = std::fs::read_dir(home.join("trusted")).expect("snapshots");
    for entry in snapshots.flatten() {
        let gate = entry.path().join(".agents/hooks/gate.sh");
        std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::write(&gate, "#!/bin/sh\ncat >/dev/null\n").expect("forge");
    }
}

/// A home inside the project (an agent started in `~`, where the default home is) lets the
/// model rewrite the trust records, snapshots and user policy: `hookbox trust` and `hookbox
/// hook` say so, each time; a snapshot it edits there is not run (the table above).
#[test]
fn a_home_inside_the_trusted_project_is_said() {
    let setup = Setup::new();
    let home = setup.project.join(".local/share/hookbox");
    std::fs::create_dir_all(&home).expect("mkdir");
    write_gate(&setup.project, "allow");
    script(
        &setup.project,
        ".agents/hooks/gate.sh",
        &denying("trusted gate"),
    );
    let trusted = hookbox_in(
        &home,
        &["trust", setup.project.to_str().expect("utf-8")],
        b"",
    );
    assert_eq!(code(&trusted), 0, "{}", stderr(&trusted));
    assert!(
        stderr(&trusted).contains("lies inside the project"),
        "{}",
        stderr(&trusted)
    );
    let output = hook(
        &home,
        &setup.project,
        &[],
        &pre_tool_use(&setup.project, "Bash", json!({"command": "ls"})),
    );
    assert!(
        stderr(&output).contains("lies inside the project"),
        "{}",
        stderr(&output)
    );
    assert_eq!(
        stdout_json(&output)["hookSpecificOutput"]["permissionDecisionReason"],
        "trusted gate"
    );
}

/// Agents that name no project root (Cursor, Codex, Copilot) give the event's `cwd`: in a
/// subdirectory of a trusted project (after the model's `cd`), the project's gate still runs,
/// found by walking up to the nearest project policy. One row per agent: its name, its
/// arguments, its event in `cwd`.
#[test]
fn a_working_directory_below_a_trusted_project_keeps_its_gate() {
    type Event = fn(&Path) -> Vec<u8>;
    let agents: [(&str, &[&str], Event); 3] = [
        ("cursor", &[], |cwd| {
            let fields = json!({"command": "rm -rf victim", "cwd": cwd, "sandbox": false});
            super::cursor::event(cwd, "beforeShellExecution", fields)
                .to_string()
                .into_bytes()
        }),
        ("codex", &[], |cwd| {
            super::codex_pre_tool_use(cwd, "rm -rf victim")
        }),
        ("copilot", &["--event", "preToolUse"], |cwd| {
            json!({"timestamp": 1, "cwd": cwd, "toolName": "bash",
                "toolArgs": json!({"command": "rm -rf victim"}).to_string()})
            .to_string()
            .into_bytes()
        }),
    ];
    for (agent, extra, event) in agents {
        let setup = Setup::new();
        write_gate(&setup.project, "allow");
        script(
            &setup.project,
            ".agents/hooks/gate.sh",
            &denying("trusted gate"),
        );
        trust(&setup.home, &setup.policy());
        let below = setup.project.join("sub/deeper");
        std::fs::create_dir_all(&below).expect("mkdir");
        for cwd in [&setup.project, &below] {
            let output = super::hook_as(agent, &setup.home, cwd, extra, &event(cwd));
            let answer = String::from_utf8_lossy(&output.stdout);
            assert!(
                answer.contains("deny") && answer.contains("trusted gate"),
                "{agent} in {}: {answer} {}",
                cwd.display(),
                stderr(&output)
            );
        }
    }
}

/// Two `hookbox trust` at once (two projects, one home) keep both records and both snapshots:
/// neither loses the other's record nor deletes the snapshot it just wrote. Repeated, since
/// the two may or may not overlap in any one round.
#[test]
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn two_trusts_at_once_keep_both_projects_trusted() {
    let setup = Setup::new();
    let other = setup.project.with_file_name("other");
    for (project, reason) in [(&setup.project, "first"), (&other, "second")] {
        std::fs::create_dir_all(project.join(".agents/hooks")).expect("mkdir");
        write_gate(project, "allow");
        script(project, ".agents/hooks/gate.sh", &denying(reason));
    }
    for round in 0..20 {
        let _ = std::fs::remove_file(setup.home.join("trusted-projects.json"));
        let children: Vec<_> = [&setup.project, &other]
            .iter()
            .map(|project| {
                std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
                    .args(["trust", project.to_str().expect("utf-8")])
                    .env("HOOKBOX_HOME", &setup.home)
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .expect("hookbox trust")
            })
            .collect();
        for mut child in children {
            assert!(child.wait().expect("wait").success(), "round {round}");
        }
        let records: serde_json::Value = serde_json::from_slice(
            &std::fs::read(setup.home.join("trusted-projects.json")).expect("records"),
        )
        .expect("json");
        let projects = records["projects"].as_object().expect("projects");
        assert_eq!(projects.len(), 2, "round {round}: {records:#}");
        for record in projects.values() {
            let closure = record["closure"].as_str().expect("closure");
            assert!(
                setup.home.join("trusted").join(closure).is_dir(),
                "round {round}: the snapshot {closure} is gone"
            );
        }
    }
}

/// `hookbox trust` refuses a policy that `hookbox hook` would refuse to load (over the bounds
/// of a file the model can write), with the same words, instead of trusting a policy that then
/// blocks every call. One row per bound.
#[test]
fn trust_refuses_a_policy_over_the_model_file_bounds() {
    type Grow = fn(&Path);
    let bounds: [(&str, Grow); 2] = [
        ("262144-byte limit", |policy| {
            append(policy, &" ".repeat(300_000));
        }),
        ("over the limit of 256", |policy| {
            let hooks: Vec<_> = (0..300)
                .map(|n| json!({"type": "command", "command": format!("echo {n}")}))
                .collect();
            let text = json!({"g": {"pre_tool_execution": [{"matcher": "*", "hooks": hooks}]}});
            std::fs::write(policy, text.to_string()).expect("policy");
        }),
    ];
    for (words, grow) in bounds {
        let setup = Setup::new();
        write_gate(&setup.project, "allow");
        script(
            &setup.project,
            ".agents/hooks/gate.sh",
            &denying("trusted gate"),
        );
        grow(&setup.policy());
        let output = hookbox_in(
            &setup.home,
            &["trust", setup.policy().to_str().expect("utf-8")],
            b"",
        );
        assert_ne!(code(&output), 0, "{words}: trusted");
        assert!(
            stderr(&output).contains(words),
            "{words}: {}",
            stderr(&output)
        );
        assert!(
            !setup.home.join("trusted-projects.json").exists(),
            "{words}: recorded"
        );
    }
}

/// The snapshot's name covers each file's mode: the same bytes executable in one project and
/// not in another are two snapshots, each with its own modes.
#[test]
fn a_snapshot_keeps_the_modes_of_its_project() {
    let setup = Setup::new();
    let other = setup.project.with_file_name("other");
    std::fs::create_dir_all(other.join(".agents/hooks")).expect("mkdir");
    for project in [&setup.project, &other] {
        write_gate(project, "allow");
        script(project, ".agents/hooks/gate.sh", &denying("gate"));
    }
    let gate = other.join(".agents/hooks/gate.sh");
    std::fs::set_permissions(&gate, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    trust(&setup.home, &setup.policy());
    trust(&setup.home, &other);
    let snapshots = std::fs::read_dir(setup.home.join("trusted")).expect("snapshots");
    let mut modes: Vec<u32> = snapshots
        .flatten()
        .map(|entry| {
            let gate = entry.path().join(".agents/hooks/gate.sh");
            std::fs::metadata(gate).expect("gate").permissions().mode() & 0o777
        })
        .collect();
    modes.sort_unstable();
    assert_eq!(modes, [0o444, 0o555]);
}
