use std::path::Path;
use std::process::Output;

use serde_json::{Value, json};

use super::{code, hookbox_in, seeds, stdout_json};

/// The seeds' security-gate example sources, verbatim (hooks.json as `json.dumps(…, indent=2)`).
pub(crate) fn security_gate_sources() -> Value {
    let read = |name: &str| std::fs::read_to_string(seeds().join(name)).expect("seed file");
    json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": read("security-gate.hooks.json")},
        {"type": "inline", "target": ".agents/hooks-scripts/gate.py", "content": read("gate.py")}
    ])
}

/// The seeds' privacy-gate example sources, verbatim.
fn privacy_gate_sources() -> Value {
    let read = |name: &str| std::fs::read_to_string(seeds().join(name)).expect("seed file");
    json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": read("privacy-gate.hooks.json")},
        {"type": "inline", "target": ".agents/hooks-scripts/check_privacy.py", "content": read("check_privacy.py")},
        {"type": "inline", "target": "workspace/private/employees.json",
         "content": "{\"employees\": [{\"id\": 1, \"salary\": 150000, \"ssn\": \"000-00-0000\"}]}"},
        {"type": "inline", "target": "workspace/public/summary.json",
         "content": "{\"department\": \"Engineering\", \"team_size\": 42, \"status\": \"active\"}"}
    ])
}

/// Creates an environment from `spec` (through stdin) and returns its id.
pub(crate) fn create(home: &Path, spec: &Value) -> String {
    let output = hookbox_in(
        home,
        &["env", "create", "--spec", "-"],
        spec.to_string().as_bytes(),
    );
    assert_eq!(
        code(&output),
        0,
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .expect("utf-8")
        .trim()
        .to_owned()
}

fn exec(home: &Path, id: &str, tool: &str, args: &Value) -> Output {
    hookbox_in(
        home,
        &["exec", id, tool, "--args", &args.to_string(), "--json"],
        b"",
    )
}

#[test]
fn the_seed_security_gate_denies_rm_rf_inside_the_sandbox() {
    let home = tempfile::tempdir().expect("home");
    let id = create(
        home.path(),
        &json!({"type": "remote", "sources": security_gate_sources()}),
    );
    assert!(id.starts_with("env_"), "{id}");

    let denied = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "rm -rf /tmp/forbidden", "language": "bash"}),
    );
    assert_eq!(
        code(&denied),
        2,
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    let report = stdout_json(&denied);
    assert_eq!(report["denied"], true);
    assert_eq!(
        report["reason"],
        "Destructive command blocked by security gate."
    );
    assert_eq!(report["result"], Value::Null);

    let allowed = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "echo hello", "language": "bash"}),
    );
    assert_eq!(
        code(&allowed),
        0,
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    let report = stdout_json(&allowed);
    assert_eq!(report["result"]["stdout"], "hello\n");
    assert_eq!(report["result"]["exit_code"], 0);
    assert_eq!(report["trace"][0]["result"], json!({"decided": "allow"}));
}

#[test]
fn the_seed_privacy_gate_denies_private_and_serves_public() {
    let home = tempfile::tempdir().expect("home");
    let id = create(
        home.path(),
        &json!({"type": "remote", "sources": privacy_gate_sources()}),
    );

    let private = exec(
        home.path(),
        &id,
        "read_file",
        &json!({"path": "/workspace/private/employees.json"}),
    );
    assert_eq!(code(&private), 2);
    assert_eq!(
        stdout_json(&private)["reason"],
        "Access to confidential `/private/` records is blocked by PII compliance policy. \
         Query approved `/public/` summary tables instead."
    );
    let public = exec(
        home.path(),
        &id,
        "read_file",
        &json!({"path": "/workspace/public/summary.json"}),
    );
    assert_eq!(code(&public), 0);
    assert_eq!(
        stdout_json(&public)["result"]["content"],
        "{\"department\": \"Engineering\", \"team_size\": 42, \"status\": \"active\"}"
    );
}

#[test]
fn files_persist_across_calls_and_code_sees_them() {
    let home = tempfile::tempdir().expect("home");
    let id = create(home.path(), &json!({"sources": []}));
    let write = exec(
        home.path(),
        &id,
        "write_file",
        &json!({"path": "notes/a.txt", "content": "one"}),
    );
    assert_eq!(
        code(&write),
        0,
        "{}",
        String::from_utf8_lossy(&write.stdout)
    );
    let run = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "cat /workspace/notes/a.txt; echo two > b.txt", "language": "bash"}),
    );
    assert_eq!(stdout_json(&run)["result"]["stdout"], "one");
    let read = exec(
        home.path(),
        &id,
        "read_file",
        &json!({"path": "/workspace/b.txt"}),
    );
    assert_eq!(stdout_json(&read)["result"]["content"], "two\n");
    let python = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "print(open('b.txt').read().strip() * 2)", "language": "python"}),
    );
    assert_eq!(stdout_json(&python)["result"]["stdout"], "twotwo\n");
}

#[test]
fn the_agent_cannot_modify_its_hooks_by_default() {
    let home = tempfile::tempdir().expect("home");
    let id = create(home.path(), &json!({"sources": security_gate_sources()}));
    let write = exec(
        home.path(),
        &id,
        "write_file",
        &json!({"path": "/.agents/hooks.json", "content": "{}"}),
    );
    assert_eq!(code(&write), 3);
    assert!(
        stdout_json(&write)["error"]
            .as_str()
            .expect("error")
            .contains("read-only")
    );
    let shell = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "echo '{}' > /.agents/hooks.json", "language": "bash"}),
    );
    assert_eq!(code(&shell), 3);
    // The gate still works afterwards.
    let denied = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "rm -rf /", "language": "bash"}),
    );
    assert_eq!(code(&denied), 2);
}

#[test]
fn hooks_in_the_workspace_are_discovered_and_post_hooks_see_errors() {
    let home = tempfile::tempdir().expect("home");
    let hooks = json!({"audit": {"post_tool_execution": [{"matcher": ".*", "hooks": [
        {"type": "command", "command": "cat >> /workspace/audit.log; echo >> /workspace/audit.log"}
    ]}]}});
    let id = create(
        home.path(),
        &json!({"sources": [{"type": "inline", "target": "workspace/.agents/hooks.json", "content": hooks.to_string()}]}),
    );
    let failed = exec(
        home.path(),
        &id,
        "read_file",
        &json!({"path": "missing.txt"}),
    );
    assert_eq!(code(&failed), 3);
    let ok = exec(home.path(), &id, "list_files", &json!({}));
    assert_eq!(code(&ok), 0);
    let log = exec(home.path(), &id, "read_file", &json!({"path": "audit.log"}));
    let lines: Vec<Value> = stdout_json(&log)["result"]["content"]
        .as_str()
        .expect("log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json"))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[0]["tool_call"]["name"], "read_file");
    assert!(
        lines[0]["error"]
            .as_str()
            .expect("error")
            .contains("missing.txt")
    );
    assert_eq!(lines[0]["environment_id"], id.as_str());
    assert_eq!(lines[1]["tool_call"]["name"], "list_files");
    assert!(lines[1].get("error").is_none());
}

#[test]
fn env_commands_show_list_and_remove() {
    let home = tempfile::tempdir().expect("home");
    let id = create(home.path(), &json!({"sources": privacy_gate_sources()}));
    let show = hookbox_in(home.path(), &["env", "show", &id], b"");
    assert_eq!(code(&show), 0);
    let shown = stdout_json(&show);
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["status"], "active");
    assert_eq!(shown["sources"].as_array().expect("sources").len(), 4);
    let list = hookbox_in(home.path(), &["env", "list", "--json"], b"");
    assert_eq!(stdout_json(&list).as_array().expect("list").len(), 1);
    let more =
        json!({"sources": [{"type": "inline", "target": "workspace/new.txt", "content": "new"}]});
    let update = hookbox_in(
        home.path(),
        &["env", "update", &id, "--spec", "-"],
        more.to_string().as_bytes(),
    );
    assert_eq!(
        code(&update),
        0,
        "{}",
        String::from_utf8_lossy(&update.stderr)
    );
    let read = exec(home.path(), &id, "read_file", &json!({"path": "new.txt"}));
    assert_eq!(stdout_json(&read)["result"]["content"], "new");
    assert_eq!(code(&hookbox_in(home.path(), &["env", "rm", &id], b"")), 0);
    assert_eq!(
        code(&hookbox_in(home.path(), &["env", "show", &id], b"")),
        1
    );
}

#[test]
fn bad_input_exits_1_and_writes_nothing() {
    let home = tempfile::tempdir().expect("home");
    let bad = json!({"sources": [{"type": "inline", "target": "../etc/passwd", "content": "x"}]});
    let output = hookbox_in(
        home.path(),
        &["env", "create", "--spec", "-"],
        bad.to_string().as_bytes(),
    );
    assert_eq!(code(&output), 1);
    assert!(String::from_utf8_lossy(&output.stderr).contains("$.sources[0].target"));
    let list = hookbox_in(home.path(), &["env", "list", "--json"], b"");
    assert_eq!(stdout_json(&list), json!([]));

    let id = create(home.path(), &json!({"sources": []}));
    for args in [
        vec!["exec", id.as_str(), "rm_rf"],
        vec!["exec", "env_doesnotexist", "read_file"],
        vec!["exec", id.as_str(), "read_file", "--args", "[1]"],
    ] {
        let output = hookbox_in(home.path(), &args, b"");
        assert_eq!(
            code(&output),
            1,
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn a_hook_file_that_would_fail_silently_is_refused_at_create() {
    let home = tempfile::tempdir().expect("home");
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": "python3 /.agents/hooks-scripts/gate.py"}]}]}});
    let spec = json!({"sources": [
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}
    ]});
    let output = hookbox_in(
        home.path(),
        &["env", "create", "--spec", "-"],
        spec.to_string().as_bytes(),
    );
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    for phrase in [
        "$.sources[0]",
        "/.agents/hooks.json",
        "$.gate.pre_tool_execution[0].hooks[0].command",
        "/.agents/hooks-scripts/gate.py",
    ] {
        assert!(stderr.contains(phrase), "{stderr} lacks {phrase}");
    }
    let list = hookbox_in(home.path(), &["env", "list", "--json"], b"");
    assert_eq!(stdout_json(&list), json!([]));
}

#[test]
fn the_agent_cannot_modify_owner_supplied_workspace_hooks() {
    let home = tempfile::tempdir().expect("home");
    let hooks = std::fs::read_to_string(seeds().join("security-gate.hooks.json")).expect("seed");
    let gate = std::fs::read_to_string(seeds().join("gate.py")).expect("seed");
    let id = create(
        home.path(),
        &json!({"sources": [
            {"type": "inline", "target": "workspace/.agents/hooks.json", "content": hooks.replace("/.agents/hooks-scripts/", "/workspace/.agents/")},
            {"type": "inline", "target": "workspace/.agents/gate.py", "content": gate}
        ]}),
    );
    let write = exec(
        home.path(),
        &id,
        "write_file",
        &json!({"path": ".agents/hooks.json", "content": "{}"}),
    );
    assert_eq!(code(&write), 3);
    let shell = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "echo '{}' > /workspace/.agents/hooks.json", "language": "bash"}),
    );
    assert_eq!(code(&shell), 3);
    let denied = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "rm -rf /", "language": "bash"}),
    );
    assert_eq!(code(&denied), 2);
}

/// A command that mounted an environment's file system unmounts it when it ends: after
/// `env create`, `exec` and `env show` nothing of the home is mounted, and no loop device holds
/// one of its images.
#[test]
fn commands_leave_nothing_of_the_home_mounted() {
    if !hookbox_exec::disk::can_mount() {
        hookbox_test_support::skip(
            "commands_leave_nothing_of_the_home_mounted",
            "it needs root and /dev/loop-control",
        );
        return;
    }
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[sandbox]\ndisk_bytes = 8388608\n",
    )
    .expect("config");
    let released = |when: &str| {
        let prefix = home.path().to_str().expect("utf-8").to_owned();
        // The kernel detaches a loop device shortly after its unmount: allow it 10 s.
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let loops: Vec<String> = std::fs::read_dir("/sys/block")
                .expect("/sys/block")
                .filter_map(|entry| {
                    std::fs::read_to_string(entry.ok()?.path().join("loop/backing_file")).ok()
                })
                .filter(|file| file.starts_with(&prefix))
                .collect();
            if loops.is_empty() {
                return;
            }
            assert!(
                std::time::Instant::now() < give_up,
                "after {when}: {loops:?} still attached"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    let id = create(home.path(), &json!({}));
    released("env create");
    let run = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "echo hi > /workspace/hi", "language": "bash"}),
    );
    assert_eq!(code(&run), 0, "{}", String::from_utf8_lossy(&run.stderr));
    released("exec");
    let show = hookbox_in(home.path(), &["env", "show", &id], b"");
    assert_eq!(code(&show), 0);
    released("env show");
}

/// `[sandbox] disk_bytes` / `disk_inodes` of hookbox.toml are each new environment's budget:
/// code writing past it fails inside the sandbox with ENOSPC, and `env show` reports it.
#[test]
fn the_sandbox_section_sets_the_disk_budget() {
    if !hookbox_exec::disk::can_mount() {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[sandbox]\ndisk_bytes = 8388608\ndisk_inodes = 500\n",
    )
    .expect("config");
    let id = create(home.path(), &json!({}));
    let show = stdout_json(&hookbox_in(home.path(), &["env", "show", &id], b""));
    assert_eq!(
        show["limits"],
        json!({"disk_bytes": 8_388_608, "disk_inodes": 500})
    );
    let fill = exec(
        home.path(),
        &id,
        "code_execution",
        &json!({"code": "head -c 16777216 /dev/zero > /workspace/big", "language": "bash"}),
    );
    let result = &stdout_json(&fill)["result"];
    assert_ne!(result["exit_code"], 0, "{result}");
    assert!(
        result["stderr"]
            .as_str()
            .expect("stderr")
            .contains("No space left on device"),
        "{result}"
    );
    assert_eq!(code(&hookbox_in(home.path(), &["env", "rm", &id], b"")), 0);

    std::fs::write(
        home.path().join("hookbox.toml"),
        "[sandbox]\ndisk_bytes = 1024\n",
    )
    .expect("config");
    let refused = hookbox_in(home.path(), &["env", "list"], b"");
    assert_eq!(code(&refused), 1);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("[sandbox]") && stderr.contains("disk_bytes"),
        "{stderr}"
    );
}

/// hookbox, and the small `hookbox-sandbox-supervisor` installed next to it (which hookbox's
/// warm sandboxes run when it is there), are supervisors of warm sandboxes: re-executed as a
/// sandbox's init with the hidden argument, they run the calls; run any other way, they refuse.
#[tokio::test]
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
async fn hookbox_is_a_warm_sandbox_supervisor() {
    for supervisor in [
        env!("CARGO_BIN_EXE_hookbox"),
        env!("CARGO_BIN_EXE_hookbox-sandbox-supervisor"),
    ] {
        supervises(supervisor).await;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox-sandbox-supervisor"))
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only runs as a warm sandbox's supervisor"),
        "{out:?}"
    );

    let out = super::hookbox(&[hookbox_exec::SUPERVISOR_ARG, "40", "landlock", ""]);
    assert_eq!(code(&out), 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("for hookbox's own use"),
        "{out:?}"
    );
}

/// A warm sandbox supervised by `supervisor` runs three calls that see each other's files.
async fn supervises(supervisor: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    let warm = hookbox_exec::WarmSandbox::start(hookbox_exec::Sandbox::new(dir.path()), supervisor)
        .await
        .unwrap();
    for n in 0..3 {
        let out = warm
            .run(&hookbox_exec::ProcessSpec::shell(
                &format!("echo call {n} > /workspace/out; cat /workspace/out"),
                std::time::Duration::from_secs(30),
            ))
            .await
            .unwrap();
        assert_eq!(out.exit, hookbox_exec::ExitKind::Exited(0));
        assert_eq!(out.stdout.to_text(), format!("call {n}\n"), "{supervisor}");
    }
}
