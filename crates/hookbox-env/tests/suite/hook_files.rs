//! Never fail silently, at the owner's door: hook files that would not work are refused at
//! create and update, naming file, JSON path and fix, and nothing is written.

use hookbox_env::{EnvironmentSpec, StoreError};
use serde_json::{Value, json};

use super::support::{Home, snapshot};

fn hooks_source(target: &str, hooks: &Value) -> Value {
    json!({"type": "inline", "target": target, "content": hooks.to_string()})
}

fn gate(handler: Value) -> Value {
    json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [handler]}]}})
}

/// The message of the refusal of `spec`, checking that nothing was written.
async fn refused(home: &Home, spec: Value) -> String {
    let before = snapshot(home.dir.path());
    let spec = EnvironmentSpec::from_json(&spec).expect("spec");
    let err = match home.envs.create(&spec).await {
        Ok(env) => panic!("created {}", env.id()),
        Err(err) => err,
    };
    assert!(matches!(err, StoreError::Misplaced { .. }), "{err:?}");
    assert_eq!(snapshot(home.dir.path()), before, "nothing may be written");
    err.to_string()
}

#[tokio::test]
async fn hook_files_that_would_fail_silently_are_refused_at_create() {
    let home = Home::new();
    let cases: Vec<(Value, &[&str])> = vec![
        (
            json!({"sources": [{"type": "inline", "target": ".agents/hooks.json", "content": "{not json"}]}),
            &["`$.sources[0]`", "/.agents/hooks.json", "not valid JSON"],
        ),
        (
            json!({"sources": [
                {"type": "inline", "target": "workspace/readme", "content": "x"},
                hooks_source("workspace/.agents/hooks.json", &json!({"gate": {"pre_tool_executin": []}}))
            ]}),
            &[
                "`$.sources[1]`",
                "/workspace/.agents/hooks.json",
                "`$.gate.pre_tool_executin`",
                "did you mean `pre_tool_execution`",
            ],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &gate(json!({"type": "http", "url": "http://hooks.example.com/x"})))]}),
            &[
                "`$.gate.pre_tool_execution[0].hooks[0].url`",
                "https://hooks.example.com/x",
            ],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &json!({"gate": {"pre_tool_execution": [{"matcher": "*_file", "hooks": [{"type": "command", "command": "true"}]}]}}))]}),
            &["`$.gate.pre_tool_execution[0].matcher`"],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": "python3 /.agents/hooks-scripts/gate.py"})))]}),
            &[
                "`$.gate.pre_tool_execution[0].hooks[0].command`",
                "`/.agents/hooks-scripts/gate.py`",
                "does not exist",
            ],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": "no-such-gate-program --check"})))]}),
            &[
                "`$.gate.pre_tool_execution[0].hooks[0].command`",
                "`no-such-gate-program` is not on the PATH the hook gets",
            ],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": "/workspace/tools/gaet.sh --check"})))]}),
            &[
                "`$.gate.pre_tool_execution[0].hooks[0].command`",
                "`/workspace/tools/gaet.sh`",
                "does not exist",
            ],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": "/usr/bin/no-such-gate-program"})))]}),
            &[
                "`$.gate.pre_tool_execution[0].hooks[0].command`",
                "/usr/bin/no-such-gate-program does not exist",
            ],
        ),
        (
            json!({"sources": [hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": "true", "on_eror": "deny"})))]}),
            &["on_eror", "did you mean `on_error`"],
        ),
    ];
    for (spec, phrases) in cases {
        let message = refused(&home, spec.clone()).await;
        for phrase in phrases {
            assert!(message.contains(phrase), "{spec}: {message} lacks {phrase}");
        }
    }
}

#[tokio::test]
async fn scripts_supplied_with_the_hook_file_or_before_it_pass() {
    let home = Home::new();
    let hooks = gate(
        json!({"type": "command", "command": "python3 /.agents/hooks-scripts/gate.py; sh /workspace/.agents/x.sh"}),
    );
    let env = home
        .create(json!({"sources": [
            hooks_source(".agents/hooks.json", &hooks),
            {"type": "inline", "target": ".agents/hooks-scripts/gate.py", "content": "print()"},
            {"type": "inline", "target": "workspace/.agents/x.sh", "content": "true"}
        ]}))
        .await;
    // Programs named by path: in the environment's files, or in the host's system directories.
    for command in ["/workspace/tools/gate.sh --check", "/usr/bin/env true"] {
        home.create(json!({"sources": [
            hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": command}))),
            {"type": "inline", "target": "workspace/tools/gate.sh", "content": "true"}
        ]}))
        .await;
    }
    // An update may name a script the environment already has.
    let update = EnvironmentSpec::from_json(&json!({"sources": [hooks_source(
        "workspace/.agents/hooks.json",
        &gate(json!({"type": "command", "command": "python3 /.agents/hooks-scripts/gate.py"}))
    )]}))
    .expect("spec");
    home.envs.update(env.id(), &update).await.expect("update");
}

#[tokio::test]
async fn a_bad_update_changes_nothing() {
    let home = Home::new();
    let env = home.create(json!({})).await;
    let before = snapshot(home.dir.path());
    let update = EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": "workspace/a.txt", "content": "a"},
        hooks_source(".agents/hooks.json", &gate(json!({"type": "command", "command": "sh /.agents/missing.sh"})))
    ]}))
    .expect("spec");
    let err = home
        .envs
        .update(env.id(), &update)
        .await
        .expect_err("refused");
    assert!(err.to_string().contains("`$.sources[1]`"), "{err}");
    assert!(err.to_string().contains("/.agents/missing.sh"), "{err}");
    assert_eq!(snapshot(home.dir.path()), before);
}

#[tokio::test]
async fn an_owner_file_check_covers_uploads_of_hook_files_only() {
    let home = Home::new();
    let env = home.create(json!({})).await;
    let bad = gate(json!({"type": "http", "url": "http://x.example/h"})).to_string();
    let err = home
        .envs
        .check_owner_file(&env, "workspace/.agents/hooks.json", bad.as_bytes())
        .expect_err("refused");
    assert!(
        err.to_string().contains("/workspace/.agents/hooks.json"),
        "{err}"
    );
    home.envs
        .check_owner_file(&env, "workspace/notes/hooks.json", b"{not json")
        .expect("not a hook file");
    home.envs
        .check_owner_file(&env, ".agents/hooks.json", b"{}")
        .expect("valid");
}

#[tokio::test]
async fn uploads_into_agents_make_the_directory_the_owners() {
    let home = Home::new();
    let env = home.create(json!({})).await;
    assert!(env.owner_agents().is_empty());
    let env = home
        .envs
        .record_owner_write(env.id(), "workspace/notes.txt")
        .expect("record");
    assert!(env.owner_agents().is_empty());
    let env = home
        .envs
        .record_owner_write(env.id(), "workspace/.agents/hooks.json")
        .expect("record");
    assert!(
        env.owner_agents().is_empty(),
        "`/workspace/.agents` is the owner's only when supplied at creation"
    );
    let env = home
        .envs
        .record_owner_write(env.id(), ".agents/hooks.json")
        .expect("record");
    assert_eq!(env.owner_agents(), ["/.agents"]);
    assert_eq!(
        home.envs.get(env.id()).expect("get").read_only_entries(),
        [".agents"]
    );
}

/// Every file an owner hook runs is one the owner wrote, and the model never writes into an
/// owner hook directory: after creation the owner cannot take over `/workspace/.agents`
/// (model-made or absent), since a session opened before keeps it writable for its later calls
/// and a call running meanwhile could write there; nor turn `agents_writable` off. Refused,
/// naming the directory and what to do, nothing written. `/.agents`, which no sandbox lets the
/// model write, may still be added.
#[tokio::test]
async fn the_owner_cannot_take_over_a_directory_the_model_can_write_after_creation() {
    use hookbox_env::EnvironmentFiles;
    let hooks = gate(json!({"type": "command", "command": "true"}));
    // (where the owner writes, whether the model made `/workspace/.agents` first, how, refused)
    let cases = [
        ("workspace/.agents/hooks.json", true, "update", true),
        ("workspace/.agents/hooks.json", true, "upload", true),
        ("workspace/.agents/hooks.json", false, "update", true),
        ("workspace/.agents/hooks.json", false, "upload", true),
        ("workspace/.agents/lib/x.js", false, "upload", true),
        (".agents/hooks.json", true, "update", false),
        (".agents/hooks.json", false, "upload", false),
    ];
    for (target, model_made, how, expect_refused) in cases {
        let case = format!("{how} {target} (model made /workspace/.agents: {model_made})");
        let home = Home::new();
        let env = home.create(json!({})).await;
        let agents = env.root().join("workspace/.agents");
        if model_made {
            // Written as the model's code would.
            std::fs::create_dir_all(&agents).unwrap();
            std::fs::write(agents.join("gate.js"), "the model's").unwrap();
        }
        let before = snapshot(env.root());
        let written = match how {
            "update" => {
                let spec =
                    EnvironmentSpec::from_json(&json!({"sources": [hooks_source(target, &hooks)]}))
                        .unwrap();
                home.envs
                    .update(env.id(), &spec)
                    .await
                    .map(drop)
                    .map_err(|err| err.to_string())
            }
            _ => EnvironmentFiles::open(&env)
                .unwrap()
                .write(target, &mut hooks.to_string().as_bytes(), true)
                .map(drop)
                .map_err(|err| err.to_string()),
        };
        let owners = home.envs.get(env.id()).unwrap().owner_agents().to_vec();
        if expect_refused {
            let refused = written.expect_err(&case);
            assert!(
                refused.contains("`/workspace/.agents` was not supplied when the environment")
                    && refused.contains("from_environment"),
                "{case}: {refused}"
            );
            assert_eq!(
                snapshot(env.root()),
                before,
                "{case}: nothing may be written"
            );
            assert!(owners.is_empty(), "{case}: {owners:?}");
        } else {
            written.unwrap_or_else(|err| panic!("{case}: {err}"));
        }
    }

    let home = Home::new();
    let env = home.create(json!({"agents_writable": true})).await;
    let spec = EnvironmentSpec::from_json(&json!({"agents_writable": false})).unwrap();
    let refused = home.envs.update(env.id(), &spec).await.unwrap_err();
    assert!(
        refused.to_string().contains("`$.agents_writable`")
            && refused.to_string().contains("create a new environment"),
        "{refused}"
    );
    assert!(
        home.envs
            .get(env.id())
            .unwrap()
            .protected_agents_dirs()
            .is_empty()
    );
    let env = home.create(json!({})).await;
    let spec = EnvironmentSpec::from_json(&json!({"agents_writable": true})).unwrap();
    home.envs
        .update(env.id(), &spec)
        .await
        .expect("loosening is allowed");
}

/// A copy (`from_environment`) keeps a `.agents` directory the model made in the base as the
/// model's (its files, not read-only, never scripts the owner supplied), unless the copy's own
/// sources write there: then the owner takes it over, emptied of the model's files first.
#[tokio::test]
async fn a_copy_keeps_the_models_agents_directory_the_models_unless_its_sources_take_it_over() {
    let home = Home::new();
    let base = home.create(json!({})).await;
    let agents = base.root().join("workspace/.agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("package.json"), r#"{"type": "module"}"#).unwrap();
    std::fs::write(agents.join("gate.js"), "the model's").unwrap();
    let hooks = gate(json!({"type": "command", "command": "node /workspace/.agents/gate.js"}));

    let copy = home.create(json!({"from_environment": base.id()})).await;
    assert!(copy.owner_agents().is_empty(), "{:?}", copy.owner_agents());
    assert!(copy.root().join("workspace/.agents/package.json").exists());

    let refused = refused(
        &home,
        json!({"from_environment": base.id(),
            "sources": [hooks_source(".agents/hooks.json", &hooks)]}),
    )
    .await;
    assert!(
        refused.contains("`/workspace/.agents/gate.js`, which does not exist"),
        "{refused}"
    );

    let taken = home
        .create(json!({"from_environment": base.id(), "sources": [
            {"type": "inline", "target": "workspace/.agents/gate.js", "content": "the owner's"},
            hooks_source("workspace/.agents/hooks.json", &hooks)]}))
        .await;
    assert_eq!(taken.owner_agents(), ["/workspace/.agents"]);
    let left: Vec<String> = snapshot(&taken.root().join("workspace/.agents"))
        .keys()
        .map(|path| path.display().to_string())
        .collect();
    assert_eq!(left, ["gate.js", "hooks.json"]);
}

/// A link in an owner's `.agents` directory that leads out of it (absolute, or climbing above
/// it) is refused at create and update, naming the link, where it points and the fix: an
/// owner hook would run what lies there, which the model may write. Links that stay inside
/// pass.
#[tokio::test]
async fn links_out_of_an_owners_agents_directory_are_refused() {
    use std::os::unix::fs::symlink;
    // (link below the `.agents` directory, where it points, refused); a new case is one line.
    let cases = [
        ("gate.js", "/workspace/gate.js", true),
        ("gate.js", "/.agents/real.js", true),
        ("lib", "../lib", true),
        ("sub/lib", "../../workspace/lib", true),
        ("sub/deep/x.js", "../../../x.js", true),
        ("sub/deep/top.js", "../../real.js", false),
        ("alias.js", "real.js", false),
        ("sub/alias.js", "../real.js", false),
        ("sub/deep/alias.js", "../../sub/../real.js", false),
    ];
    for agents in ["workspace/.agents", ".agents"] {
        for (link, points_to, expect_refused) in cases {
            let case = format!("{agents}/{link} -> {points_to}");
            let tree = tempfile::tempdir().unwrap();
            std::fs::write(tree.path().join("real.js"), "owner").unwrap();
            let at = tree.path().join(link);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            symlink(points_to, &at).unwrap();
            let source = json!({"type": "local", "source": tree.path(), "target": agents});
            let home = Home::with_host_sources();
            let spec = json!({"sources": [{"type": "inline", "target": "workspace/x", "content": "x"}, source]});
            if expect_refused {
                let message = refused(&home, spec).await;
                assert!(
                    message.contains("`$.sources[1]`")
                        && message.contains(&format!(
                            "`/{agents}/{link}` is a symbolic link to `{points_to}`"
                        )),
                    "{case}: {message}"
                );
                // And as an update, leaving the environment as it was.
                let env = home.create(json!({"sources": [{"type": "inline", "target": "workspace/.agents/a", "content": "x"}]})).await;
                let spec = EnvironmentSpec::from_json(&json!({"sources": [source]})).unwrap();
                let before = snapshot(env.root());
                let err = home.envs.update(env.id(), &spec).await.expect_err(&case);
                assert!(err.to_string().contains("symbolic link"), "{case}: {err}");
                assert_eq!(snapshot(env.root()), before, "{case}");
            } else {
                let spec = EnvironmentSpec::from_json(&spec).unwrap();
                home.envs
                    .create(&spec)
                    .await
                    .unwrap_or_else(|err| panic!("{case}: {err}"));
            }
        }
    }
}
