//! A directory or file exchanged (`renameat2(RENAME_EXCHANGE)`) with its private twin between
//! the gate and the tool: the call fails as changed, and never reads, lists, writes or deletes
//! in `private/`. The exchange is made by code in the sandbox (a second pre hook, standing for
//! a concurrent call) after the gate allowed, every time, so each row hits the window.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use super::gate_hooks;
use crate::{environment, tools};

const SECRET: &str = "{\"salary\": 150000}";
const PUBLIC: &str = "{\"team_size\": 42}";

/// Exchanges the two `/workspace` paths named in `/workspace/race` (if any), then allows.
const EXCHANGE: &str = "python3 -c 'import ctypes,os; l=ctypes.CDLL(None,use_errno=True); \
                        p=\"/workspace/race\"; \
                        a,b=open(p).read().split() if os.path.exists(p) else (\"-\",\"-\"); \
                        r=l.renameat2(-100,a.encode(),-100,b.encode(),2); \
                        open(\"/workspace/raced\",\"w\").write(str(r and ctypes.get_errno()))' \
                        && echo '{}'";

/// Every tool with the path it acts on (`path`, relative to `/workspace`).
fn calls() -> Vec<(&'static str, Value)> {
    vec![
        ("read_file", json!({"path": "up/mid/a.json"})),
        (
            "write_file",
            json!({"path": "up/mid/a.json", "content": "model"}),
        ),
        (
            "write_file",
            json!({"path": "up/mid/new.json", "content": "model"}),
        ),
        (
            "write_file",
            json!({"path": "up/new/x.json", "content": "model"}),
        ),
        ("delete_file", json!({"path": "up/mid/a.json"})),
        ("list_files", json!({"path": "up/mid/d"})),
        ("list_files", json!({"path": "up/mid/d", "recursive": true})),
    ]
}

/// What is exchanged with its twin under `private/`, for a tool's path `target`: the file (or
/// listed directory) itself, its parent, the ancestor two levels up, those that exist.
fn exchanged(workspace: &Path, target: &str) -> Vec<String> {
    let parent = Path::new(target).parent().unwrap().to_str().unwrap();
    let grandparent = Path::new(parent).parent().unwrap().to_str().unwrap();
    [target, parent, grandparent]
        .into_iter()
        .filter(|path| workspace.join(path).exists())
        .map(str::to_owned)
        .collect()
}

/// Every file under `dir` with its content, and every directory (as `/`).
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(next) = todo.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            let key = path.strip_prefix(dir).unwrap().display().to_string();
            if path.is_dir() {
                files.insert(key, "/".to_owned());
                todo.push(path);
            } else {
                files.insert(key, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    files
}

/// Exchanges `a` and `b` back after a call; both must still be there.
fn exchange(a: &Path, b: &Path, case: &str) {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        a,
        rustix::fs::CWD,
        b,
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap_or_else(|errno| panic!("{case}: cannot exchange back ({errno}): one was removed"));
}

#[tokio::test]
async fn an_exchange_after_the_gate_never_lets_a_tool_act_in_private() {
    let mut sources = json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": gate_hooks(&[EXCHANGE])},
    ]);
    for (path, content) in [
        ("up/mid/a.json", PUBLIC),
        ("up/mid/d/open.json", PUBLIC),
        ("private/up/mid/a.json", SECRET),
        ("private/up/mid/d/payroll.json", SECRET),
    ] {
        sources.as_array_mut().unwrap().push(
            json!({"type": "inline", "target": format!("workspace/{path}"), "content": content}),
        );
    }
    let (_home, store, id) = environment(sources).await;
    let tools = tools(&store, &id);
    let workspace = store.get(&id).unwrap().root().join("workspace");
    let private = snapshot(&workspace.join("private"));
    for (tool, args) in calls() {
        let target = args["path"].as_str().unwrap();
        for swapped in exchanged(&workspace, target) {
            let case = format!("{tool} {args} with {swapped} exchanged");
            let (ours, twin) = (
                workspace.join(&swapped),
                workspace.join("private").join(&swapped),
            );
            let race = format!("/workspace/{swapped} /workspace/private/{swapped}");
            std::fs::write(workspace.join("race"), race).unwrap();
            let report = tools.call(tool, args.clone(), None).await.expect("call");
            assert!(!report.denied, "{case}: {:?}", report.reason);
            let raced = std::fs::read_to_string(workspace.join("raced")).unwrap_or_default();
            assert_eq!(
                raced, "0",
                "{case}: the exchange did not happen: {:?}",
                report.trace
            );
            std::fs::remove_file(workspace.join("raced")).unwrap();
            exchange(&ours, &twin, &case);
            let result = report
                .result
                .as_ref()
                .map(Value::to_string)
                .unwrap_or_default();
            assert!(
                !result.contains("salary") && !result.contains("payroll"),
                "{case}: private content returned: {result}"
            );
            assert_eq!(
                snapshot(&workspace.join("private")),
                private,
                "{case}: private changed"
            );
            assert!(
                report
                    .error
                    .as_deref()
                    .unwrap_or_default()
                    .contains("changed"),
                "{case}: {:?} {:?}",
                report.result,
                report.error
            );
        }
        // The same call without a race acts (and puts the public tree back as it was).
        std::fs::remove_file(workspace.join("race")).unwrap();
        let report = tools.call(tool, args.clone(), None).await.expect("call");
        assert_eq!(
            report.error, None,
            "{tool} {args} unraced: {:?}",
            report.result
        );
        std::fs::write(workspace.join("up/mid/a.json"), PUBLIC).unwrap();
        let _ = std::fs::remove_file(workspace.join("up/mid/new.json"));
        let _ = std::fs::remove_dir_all(workspace.join("up/new"));
        std::fs::remove_file(workspace.join("raced")).unwrap();
    }
}
