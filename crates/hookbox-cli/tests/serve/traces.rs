//! Hook traces are visible where the user looks: a gate that fails open is logged by the
//! server, listed by `GET /{v}/interactions/{id}/hook_traces` and printed by `hookbox traces`.

use serde_json::json;

use super::http;
use super::{api_key, serve};

#[test]
fn a_failing_gate_is_logged_listed_and_printed() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("tool.script.json");
    std::fs::write(
        &script,
        r#"{"turns": [{"tool_calls": [{"name": "code_execution", "args": {"code": "echo ran", "language": "bash"}}]}, {"text": "done"}]}"#,
    )
    .unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[agents.tool]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ),
    )
    .unwrap();
    let alice = api_key(home.path(), "alice");
    let bob = api_key(home.path(), "bob");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;
    let hooks = json!({"broken-gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": "echo gate is broken >&2; exit 3"}]}]}});
    let created = http::json(
        url,
        &alice,
        "POST",
        "/v1/interactions",
        &json!({"agent": "tool", "input": "run it", "tools": [{"type": "code_execution"}],
            "environment": {"type": "remote", "sources": [
                {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}]}}),
    );
    assert_eq!(created.status, 200, "{created:?}");
    let interaction = created.json()["id"].as_str().unwrap().to_owned();
    assert!(
        created.body.contains("ran"),
        "the gate failed open: {created:?}"
    );

    let path = format!("/v1/interactions/{interaction}/hook_traces");
    let traces = http::json(url, &alice, "GET", &path, &serde_json::Value::Null);
    assert_eq!(traces.status, 200, "{traces:?}");
    let traces = traces.json();
    let entries = traces["hook_traces"].as_array().expect("hook_traces");
    let failed = entries
        .iter()
        .find(|entry| entry["fail_open"] == true)
        .unwrap_or_else(|| panic!("no fail-open entry: {traces}"));
    assert_eq!(failed["failure"]["kind"], "non_zero_exit", "{failed}");
    assert!(failed["duration_ms"].is_number(), "{failed}");
    assert!(
        failed["label"].as_str().unwrap().contains("exit 3"),
        "{failed}"
    );
    assert_eq!(failed["tool"], "code_execution", "{failed}");
    let other = http::json(url, &bob, "GET", &path, &serde_json::Value::Null);
    assert_eq!(other.status, 404, "{other:?}");

    let printed = super::super::hookbox_in(home.path(), &["traces", &interaction], b"");
    assert_eq!(super::super::code(&printed), 0, "{printed:?}");
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(
        printed.contains("FAIL-OPEN") && printed.contains("exited with status 3"),
        "{printed}"
    );
    let unknown = super::super::hookbox_in(home.path(), &["traces", "int_nope"], b"");
    assert_eq!(super::super::code(&unknown), 1);
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("int_nope"));

    let (_, log) = served.terminate();
    let warning = log
        .lines()
        .find(|line| line.contains("WARN") && line.contains("fail"))
        .unwrap_or_else(|| panic!("no fail-open warning in the log: {log}"));
    assert!(
        warning.contains(&interaction)
            && warning.contains("code_execution")
            && warning.contains("exit 3")
            && warning.contains("exited with status 3"),
        "{warning}"
    );
}

/// A group of the owner's file that a model-written file names again is ignored, and that is
/// visible too: in the server log, in the interaction's hook traces and in `hookbox traces`.
#[test]
fn an_ignored_group_is_logged_listed_and_printed() {
    let home = tempfile::tempdir().unwrap();
    let script = home.path().join("shadowing.script.json");
    let takeover = json!({"gate": {"enabled": false}}).to_string();
    std::fs::write(
        &script,
        json!({"turns": [
            {"tool_calls": [{"name": "write_file",
                "args": {"path": "/workspace/.agents/hooks.json", "content": takeover}}]},
            {"tool_calls": [{"name": "code_execution",
                "args": {"code": "echo rm -rf gone", "language": "bash"}}]},
            {"text": "done"}
        ]})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        format!(
            "[agents.tool]\nprovider = \"scripted\"\nscript = \"{}\"\n",
            script.display()
        ),
    )
    .unwrap();
    let alice = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;
    let gate = r#"grep -q 'rm -rf' && echo '{"decision":"deny","reason":"no rm -rf"}' || true"#;
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": gate}]}]}});
    let created = http::json(
        url,
        &alice,
        "POST",
        "/v1/interactions",
        &json!({"agent": "tool", "input": "take the gate over", "tools": [{"type": "code_execution"}],
            "environment": {"type": "remote", "sources": [
                {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}]}}),
    );
    assert_eq!(created.status, 200, "{created:?}");
    assert!(
        created.body.contains("no rm -rf"),
        "the owner's gate must still deny: {created:?}"
    );
    let interaction = created.json()["id"].as_str().unwrap().to_owned();

    let path = format!("/v1/interactions/{interaction}/hook_traces");
    let traces = http::json(url, &alice, "GET", &path, &serde_json::Value::Null).json();
    let ignored = traces["hook_traces"]
        .as_array()
        .expect("hook_traces")
        .iter()
        .find_map(|entry| entry.get("diagnostic"))
        .unwrap_or_else(|| panic!("no diagnostic entry: {traces}"));
    assert_eq!(
        ignored["source"], "/workspace/.agents/hooks.json",
        "{ignored}"
    );
    assert!(
        ignored["message"].as_str().unwrap().contains("gate"),
        "{ignored}"
    );

    let printed = super::super::hookbox_in(home.path(), &["traces", &interaction], b"");
    let printed = String::from_utf8_lossy(&printed.stdout);
    assert!(
        printed.contains("hook configuration") && printed.contains("/workspace/.agents/hooks.json"),
        "{printed}"
    );
    let (_, log) = served.terminate();
    assert!(
        log.lines().any(|line| line.contains("WARN")
            && line.contains("hook configuration")
            && line.contains(&interaction)),
        "no warning for the ignored group in the log: {log}"
    );
}
