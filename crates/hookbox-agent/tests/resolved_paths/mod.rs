//! Pre and post hooks see the path a file tool acts on, not the model's spelling of it: a gate
//! on `/workspace/private/` cannot be walked around with a relative path, `..`, or a link made
//! by `code_execution`, a link swapped in after the gate makes the tool fail, and a hard link
//! cannot carry a private file past it.

use serde_json::{Value, json};

use super::{environment, tools};

/// Exchanges (`RENAME_EXCHANGE`) between the gate and the tool.
mod exchange;

fn seed(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/seeds")
        .join(name);
    std::fs::read_to_string(path).expect("seed file")
}

const EMPLOYEES: &str = "{\"employees\": [{\"id\": 1, \"salary\": 150000}]}";
const SUMMARY: &str = "{\"team_size\": 42}";

/// Links the model makes with `code_execution`: relative, absolute, through `..`, and a chain.
const LINKS: &str = "ln -s private pub && ln -s /workspace/private abs && mkdir nest && \
                     ln -s ../private nest/up && ln -s pub chain && ln -s public open";

fn data_sources(hooks: &str) -> Value {
    json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": hooks},
        {"type": "inline", "target": ".agents/hooks-scripts/check_privacy.py", "content": seed("check_privacy.py")},
        {"type": "inline", "target": "workspace/private/employees.json", "content": EMPLOYEES},
        {"type": "inline", "target": "workspace/public/summary.json", "content": SUMMARY},
    ])
}

async fn make_links(tools: &hookbox_agent::SandboxTools) {
    let made = tools
        .call(
            "code_execution",
            json!({"code": LINKS, "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    assert_eq!(made.error, None, "{:?}", made.result);
}

#[tokio::test]
async fn the_seeds_privacy_gate_denies_every_spelling_of_a_private_path() {
    let (_home, store, id) = environment(data_sources(&seed("privacy-gate.hooks.json"))).await;
    let tools = tools(&store, &id);
    make_links(&tools).await;
    for path in [
        "/workspace/private/employees.json",
        "private/employees.json",
        "./private/../private/employees.json",
        "pub/employees.json",
        "/workspace/pub/employees.json",
        "abs/employees.json",
        "nest/up/employees.json",
        "chain/employees.json",
        "../workspace/pub/employees.json",
        "public/../pub/./employees.json",
    ] {
        let report = tools
            .call("read_file", json!({ "path": path }), None)
            .await
            .expect("call");
        assert!(report.denied, "{path}: {:?}", report.result);
        assert!(
            report.reason.as_deref().unwrap_or_default().contains("PII"),
            "{path}: {:?}",
            report.reason
        );
    }
    for path in ["public/summary.json", "open/summary.json"] {
        let report = tools
            .call("read_file", json!({ "path": path }), None)
            .await
            .expect("call");
        assert!(!report.denied, "{path}: {:?}", report.reason);
        assert_eq!(report.result, Some(json!({ "content": SUMMARY })), "{path}");
    }
}

/// Denies any file tool whose `args.path` is under `/workspace/private`, with the event's
/// `tool_call` as the reason.
const GATE: &str = "python3 -c 'import json,sys; e=json.load(sys.stdin); c=e[\"tool_call\"]; \
                    p=c[\"args\"].get(\"path\",\"\"); \
                    print(json.dumps({\"decision\":\"deny\",\"reason\":json.dumps(c)}) \
                    if p.startswith(\"/workspace/private\") else \"{}\")'";

/// Keeps the post event's `tool_call` in `/workspace/post.json`.
const RECORD: &str = "python3 -c 'import json,sys; e=json.load(sys.stdin); \
                      open(\"/workspace/post.json\",\"w\").write(json.dumps(e[\"tool_call\"]))'";

fn gate_hooks(extra_pre: &[&str]) -> String {
    let mut pre = vec![json!({"type": "command", "command": GATE})];
    pre.extend(
        extra_pre
            .iter()
            .map(|command| json!({"type": "command", "command": command})),
    );
    json!({"gate": {
        "pre_tool_execution": [{"matcher": "read_file|write_file|list_files|delete_file", "hooks": pre}],
        "post_tool_execution": [{"matcher": "read_file|write_file|list_files|delete_file",
                                 "hooks": [{"type": "command", "command": RECORD}]}]
    }})
    .to_string()
}

#[tokio::test]
async fn every_file_tool_shows_hooks_the_resolved_path_and_keeps_the_raw_one() {
    let (home, store, id) = environment(data_sources(&gate_hooks(&[]))).await;
    let tools = tools(&store, &id);
    make_links(&tools).await;
    for (tool, args, resolved) in [
        (
            "write_file",
            json!({"path": "pub/new.txt", "content": "x"}),
            "/workspace/private/new.txt",
        ),
        (
            "write_file",
            json!({"path": "abs/deep/er/new.txt", "content": "x"}),
            "/workspace/private/deep/er/new.txt",
        ),
        (
            "delete_file",
            json!({"path": "nest/up/employees.json"}),
            "/workspace/private/employees.json",
        ),
        ("list_files", json!({"path": "chain"}), "/workspace/private"),
        (
            "read_file",
            json!({"path": "./pub/employees.json"}),
            "/workspace/private/employees.json",
        ),
    ] {
        let report = tools.call(tool, args.clone(), None).await.expect("call");
        assert!(report.denied, "{tool} {args}: {:?}", report.result);
        let seen: Value =
            serde_json::from_str(report.reason.as_deref().expect("reason")).expect("json");
        let mut expected = args.clone();
        expected["path"] = resolved.into();
        assert_eq!(
            seen,
            json!({"name": tool, "args": expected, "raw_args": args}),
            "{tool}"
        );
    }
    let root = store.get(&id).expect("environment").root().to_path_buf();
    assert!(root.join("workspace/private/employees.json").is_file());
    assert!(!root.join("workspace/private/new.txt").exists());

    // Allowed calls: the post hooks see the same resolved arguments.
    let report = tools
        .call("read_file", json!({"path": "open/summary.json"}), None)
        .await
        .expect("call");
    assert_eq!(report.result, Some(json!({ "content": SUMMARY })));
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("workspace/post.json")).unwrap())
            .unwrap();
    assert_eq!(
        post,
        json!({"name": "read_file", "args": {"path": "/workspace/public/summary.json"},
               "raw_args": {"path": "open/summary.json"}})
    );
    let report = tools
        .call("list_files", json!({}), None)
        .await
        .expect("call");
    assert_eq!(report.error, None);
    let post: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("workspace/post.json")).unwrap())
            .unwrap();
    assert_eq!(post["args"], json!({"path": "/workspace"}));
    drop(home);
}

#[tokio::test]
async fn a_link_swapped_in_after_the_gate_makes_the_tool_fail() {
    // The second pre hook stands for a concurrent call: once the gate has allowed
    // `/workspace/dir/employees.json`, it replaces `dir` by a link to `private`.
    let swap = "mv /workspace/dir /workspace/dir.old && ln -s private /workspace/dir && echo '{}'";
    let mut sources = data_sources(&gate_hooks(&[swap]));
    sources.as_array_mut().unwrap().push(
        json!({"type": "inline", "target": "workspace/dir/employees.json", "content": "decoy"}),
    );
    let (_home, store, id) = environment(sources).await;
    let tools = tools(&store, &id);
    let report = tools
        .call("read_file", json!({"path": "dir/employees.json"}), None)
        .await
        .expect("call");
    assert!(!report.denied, "{:?}", report.reason);
    let root = store.get(&id).expect("environment").root().to_path_buf();
    assert!(
        std::fs::symlink_metadata(root.join("workspace/dir"))
            .unwrap()
            .is_symlink(),
        "the swap did not happen: {:?}",
        report.trace
    );
    assert_eq!(report.result, None, "the tool followed the new link");
    assert!(
        report
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("changed"),
        "{:?}",
        report.error
    );
}

#[tokio::test]
async fn a_hard_link_cannot_carry_a_private_file_past_the_gate() {
    let (_home, store, id) = environment(data_sources(&seed("privacy-gate.hooks.json"))).await;
    let tools = tools(&store, &id);
    // The model cannot make one: the sandbox refuses `link`.
    let made = tools
        .call(
            "code_execution",
            json!({"code": "ln private/employees.json public/hard.json", "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    assert!(
        made.result
            .as_ref()
            .is_some_and(|result| result.to_string().contains("Operation not permitted")),
        "{:?} {:?}",
        made.result,
        made.error
    );
    // One made outside the sandbox (say by a source) passes the gate under its public name,
    // and `read_file` refuses it.
    let root = store.get(&id).expect("environment").root().to_path_buf();
    std::fs::hard_link(
        root.join("workspace/private/employees.json"),
        root.join("workspace/public/hard.json"),
    )
    .unwrap();
    let report = tools
        .call("read_file", json!({"path": "public/hard.json"}), None)
        .await
        .expect("call");
    assert!(!report.denied, "{:?}", report.reason);
    assert_eq!(report.result, None, "the private file was read");
    assert!(
        report
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("hard links"),
        "{:?}",
        report.error
    );
}
