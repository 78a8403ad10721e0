//! The model writes only `/workspace` (and `/.agents` with `agents_writable`): every other
//! top-level entry an owner supplies (`/package.json`, `/node_modules`…) sits in `/`, above
//! every owner hook script, where interpreters look for their start-up files, so code cannot
//! change it, whenever it was supplied.

use hookbox_env::{BuiltinTools, Environment, EnvironmentSpec, Isolation};
use serde_json::json;

use super::support::Home;

/// Runs bash `code` with `code_execution` in `env`'s sandbox; returns its stdout.
async fn run(env: &Environment, code: &str) -> String {
    let tools = BuiltinTools::new(env.clone(), Isolation::Sandboxed).unwrap();
    let args = json!({"code": code, "language": "bash"});
    let resolved = tools.resolve("code_execution", &args).expect("arguments");
    let outcome = tools.call_resolved("code_execution", &resolved).await;
    let result = outcome
        .result
        .unwrap_or_else(|| panic!("{:?}", outcome.error));
    result["stdout"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn code_writes_only_the_allowed_top_level_entries() {
    if let Err(reason) = hookbox_exec::check_isolation() {
        hookbox_test_support::skip(module_path!(), format_args!("no sandbox here: {reason}"));
        return;
    }
    let inline = |target: &str| json!({"type": "inline", "target": target, "content": "owner"});
    let home = Home::new();
    let sources = json!([
        inline("package.json"),
        inline("node_modules/x/index.js"),
        inline("data/a.txt"),
        inline(".agents/gate.js"),
        inline("workspace/w.txt")
    ]);
    let env = home.create(json!({"sources": sources})).await;
    let writable_env = home
        .create(json!({"sources": sources, "agents_writable": true}))
        .await;
    let added = EnvironmentSpec::from_json(&json!({"sources": [inline("later.json")]})).unwrap();
    // (environment, attempt, whether it may succeed); a new case is one line.
    let cases: &[(&Environment, &str, bool)] = &[
        (&env, "echo x > /package.json", false),
        (&env, "rm /package.json", false),
        (&env, "echo x > /node_modules/x/index.js", false),
        (&env, "mkdir /node_modules/evil", false),
        (&env, "echo x > /data/b.txt", false),
        (&env, "mv /data /data2", false),
        (&env, "echo x > /later.json", false),
        (&env, "echo x > /.agents/gate.js", false),
        (&env, "echo x > /new.json", false),
        (&env, "echo x > /workspace/w.txt", true),
        (&env, "mkdir -p /workspace/node_modules/y", true),
        (&writable_env, "echo x > /.agents/gate.js", true),
        (&writable_env, "echo x > /package.json", false),
        (&writable_env, "echo x > /data/b.txt", false),
    ];
    for environment in [&env, &writable_env] {
        home.envs
            .update(environment.id(), &added)
            .await
            .expect("update");
    }
    for (environment, attempt, allowed) in cases {
        let out = run(
            environment,
            &format!("if ( {attempt} ) 2>/dev/null; then echo DONE; fi"),
        )
        .await;
        assert_eq!(out.contains("DONE"), *allowed, "{attempt}: {out}");
    }
    for file in [
        "package.json",
        "node_modules/x/index.js",
        "data/a.txt",
        "later.json",
    ] {
        assert_eq!(
            std::fs::read_to_string(env.root().join(file)).unwrap(),
            "owner",
            "{file}"
        );
    }
}
