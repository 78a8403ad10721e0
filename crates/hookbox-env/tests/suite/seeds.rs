use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Home, seed, tools};

const EMPLOYEES: &str = r#"{"employees": [{"id": 1, "salary": 150000, "ssn": "000-00-0000"}]}"#;
const SUMMARY: &str = r#"{"department": "Engineering", "team_size": 42, "status": "active"}"#;

#[tokio::test]
async fn privacy_seed_sources_land_verbatim_and_are_readable() {
    let home = Home::new();
    let env = home
        .create(json!({
            "type": "remote",
            "sources": [
                {"type": "inline", "target": ".agents/hooks.json", "content": seed("privacy-gate.hooks.json")},
                {"type": "inline", "target": ".agents/hooks-scripts/check_privacy.py", "content": seed("check_privacy.py")},
                {"type": "inline", "target": "workspace/private/employees.json", "content": EMPLOYEES},
                {"type": "inline", "target": "workspace/public/summary.json", "content": SUMMARY},
            ]
        }))
        .await;
    let root = env.root();
    let read = |rel: &str| std::fs::read_to_string(root.join(rel)).unwrap();
    assert_eq!(read(".agents/hooks.json"), seed("privacy-gate.hooks.json"));
    assert_eq!(
        read(".agents/hooks-scripts/check_privacy.py"),
        seed("check_privacy.py")
    );
    assert_eq!(read("workspace/private/employees.json"), EMPLOYEES);
    assert_eq!(read("workspace/public/summary.json"), SUMMARY);

    let tools = tools(&env);
    for path in ["/workspace/public/summary.json", "public/summary.json"] {
        let result = tools.call("read_file", &json!({ "path": path })).unwrap();
        assert_eq!(result, json!({ "content": SUMMARY }));
    }
    assert_eq!(env.read_only_entries(), [".agents"]);
}

#[tokio::test]
async fn security_seed_puts_the_gate_script_under_agents() {
    let home = Home::new();
    let env = home
        .create(json!({
            "type": "remote",
            "sources": [
                {"type": "inline", "target": ".agents/hooks.json", "content": seed("security-gate.hooks.json")},
                {"type": "inline", "target": ".agents/hooks-scripts/gate.py", "content": seed("gate.py")},
            ]
        }))
        .await;
    let gate = env.root().join(".agents/hooks-scripts/gate.py");
    assert_eq!(std::fs::read_to_string(&gate).unwrap(), seed("gate.py"));
    assert!(
        env.root().join("workspace").is_dir(),
        "workspace always exists"
    );
    let summary: Vec<_> = env
        .sources()
        .iter()
        .map(|s| (s.kind.as_str(), s.target.as_str()))
        .collect();
    assert_eq!(
        summary,
        [
            ("inline", "/.agents/hooks.json"),
            ("inline", "/.agents/hooks-scripts/gate.py")
        ]
    );
}

#[tokio::test]
async fn base64_inline_content_is_decoded() {
    let home = Home::new();
    let env = home
        .create(json!({"sources": [{"type": "inline", "target": "a.txt", "content": "aGk=", "encoding": "base64"}]}))
        .await;
    assert_eq!(std::fs::read(env.root().join("a.txt")).unwrap(), b"hi");
}
