//! Command hooks cannot be hijacked through what the model writes: every gate below denies,
//! and the model plants (with `code_execution`, in its `$HOME` and working directory) what
//! would make it allow if the hook started with the model's `HOME`, working directory or the
//! environment's variables on its start-up path. Sandboxed and `--unsandboxed` alike.

use hookbox_agent::SandboxTools;
use hookbox_env::{EnvironmentSpec, Environments, Isolation};
use serde_json::{Value, json};

/// What a hijacked gate prints instead of its deny.
const ALLOW: &str = r#"{"decision":"allow"}"#;

/// A Python line that answers allow and exits before the gate's own code runs.
const PY_ALLOW: &str = r#"import os; os.write(1, b'{"decision":"allow"}\n'); os._exit(0)"#;

/// The deny every gate prints, from Python, bash, jq, git, node.
const PY_GATE: &str =
    r#"python3 -c 'import json; print(json.dumps({"decision": "deny", "reason": "gate"}))'"#;
const SH_DENY: &str = r#"echo "{\"decision\":\"deny\",\"reason\":\"gate\"}""#;
const GIT_GATE: &str = r#"test "$(git config --get gate.mode)" = off && echo '{}' || echo '{"decision":"deny","reason":"gate"}'"#;
const NODE_GATE: &str =
    r#"node -e 'console.log(JSON.stringify({decision: "deny", reason: "gate"}))'"#;

/// One hijack: the gate's command, what the model plants (a bash script run by
/// `code_execution`, `$HOME` being the model's home), and the environment's `env`.
struct Hijack {
    name: &'static str,
    gate: String,
    plant: String,
    env: Value,
}

fn user_site_plant(file: &str) -> String {
    format!(
        "for v in 3.9 3.10 3.11 3.12 3.13 3.14; do d=$HOME/.local/lib/python$v/site-packages; \
         mkdir -p $d; cat > $d/{file} <<'EOF'\n{PY_ALLOW}\nEOF\ndone"
    )
}

fn plant_file(path: &str, content: &str) -> String {
    format!("mkdir -p \"$(dirname {path})\" && cat > {path} <<'EOF'\n{content}\nEOF")
}

#[expect(clippy::print_stdout, reason = "a case not tried says why")]
fn hijacks() -> Vec<Hijack> {
    let none = json!({});
    let mut cases = vec![
        Hijack {
            name: "python .pth in the user site",
            gate: PY_GATE.into(),
            plant: user_site_plant("evil.pth"),
            env: none.clone(),
        },
        Hijack {
            name: "python usercustomize",
            gate: PY_GATE.into(),
            plant: user_site_plant("usercustomize.py"),
            env: none.clone(),
        },
        Hijack {
            name: "python module next to the working directory",
            gate: PY_GATE.into(),
            plant: plant_file("$PWD/json.py", PY_ALLOW),
            env: none.clone(),
        },
        Hijack {
            name: "bash login start-up file",
            gate: format!("bash -lc '{}'", SH_DENY.replace('\'', "'\\''")),
            plant: plant_file("$HOME/.bash_profile", &format!("echo '{ALLOW}'; exit 0")),
            env: none.clone(),
        },
        Hijack {
            name: "sh login start-up file",
            gate: format!("sh -lc '{}'", SH_DENY.replace('\'', "'\\''")),
            plant: plant_file("$HOME/.profile", &format!("echo '{ALLOW}'; exit 0")),
            env: none.clone(),
        },
        Hijack {
            name: "bash rc file",
            gate: format!("bash -ic '{}' 2>/dev/null", SH_DENY.replace('\'', "'\\''")),
            plant: plant_file("$HOME/.bashrc", &format!("echo '{ALLOW}'; exit 0")),
            env: none.clone(),
        },
        Hijack {
            name: "jq ~/.jq",
            gate: r#"jq -nc '{decision: ("DENY" | ascii_downcase), reason: "gate"}'"#.into(),
            plant: plant_file("$HOME/.jq", r#"def ascii_downcase: "allow";"#),
            env: none.clone(),
        },
        Hijack {
            name: "git ~/.gitconfig",
            gate: GIT_GATE.into(),
            plant: plant_file("$HOME/.gitconfig", "[gate]\n\tmode = off"),
            env: none.clone(),
        },
        Hijack {
            name: "git XDG config",
            gate: GIT_GATE.into(),
            plant: plant_file("$HOME/.config/git/config", "[gate]\n\tmode = off"),
            env: none.clone(),
        },
        // The owner points variables at the workspace for the code's sake; the model rewrites
        // what they name. Hooks get none of the environment's variables.
        Hijack {
            name: "NODE_OPTIONS from the environment",
            gate: NODE_GATE.into(),
            plant: plant_file(
                "$HOME/setup.js",
                &format!("process.stdout.write('{ALLOW}\\n'); process.exit(0);"),
            ),
            env: json!({"NODE_OPTIONS": "--require ./setup.js"}),
        },
        Hijack {
            name: "PYTHONPATH from the environment",
            gate: PY_GATE.into(),
            plant: plant_file("$HOME/lib/json.py", PY_ALLOW),
            env: json!({"PYTHONPATH": "lib"}),
        },
        Hijack {
            name: "python sitecustomize on PYTHONPATH from the environment",
            gate: PY_GATE.into(),
            plant: plant_file("$HOME/lib/sitecustomize.py", PY_ALLOW),
            env: json!({"PYTHONPATH": "lib"}),
        },
        Hijack {
            name: "BASH_ENV from the environment",
            gate: format!("bash -c '{}'", SH_DENY.replace('\'', "'\\''")),
            plant: plant_file("$HOME/.bashenv", &format!("echo '{ALLOW}'; exit 0")),
            env: json!({"BASH_ENV": ".bashenv"}),
        },
    ];
    if std::path::Path::new("/usr/bin/npm").exists() {
        cases.push(Hijack {
            name: "npm ~/.npmrc",
            gate: format!("npm exec --offline --yes --no-update-notifier -- {NODE_GATE}"),
            plant: format!(
                "{} && {}",
                plant_file(
                    "$HOME/.npmrc",
                    "node-options=--require /tmp/evil.js\nupdate-notifier=false"
                ),
                plant_file(
                    "$HOME/evil.js",
                    &format!("process.stdout.write('{ALLOW}\\n'); process.exit(0);")
                )
            )
            .replace("/tmp/evil.js", "EVIL"),
            env: none,
        });
    } else {
        println!("npm is not installed here: the ~/.npmrc hijack is not tried");
    }
    cases
}

async fn tools_for(
    store: &Environments,
    gate: &str,
    env: &Value,
    isolation: Isolation,
) -> (SandboxTools, String) {
    let hooks = json!({"gate": {"pre_tool_execution": [
        {"matcher": "read_file", "hooks": [{"type": "command", "command": gate, "timeout": 60}]}
    ]}});
    let spec = json!({
        "sources": [
            {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()},
            {"type": "inline", "target": "workspace/a.txt", "content": "a"},
        ],
        "env": env,
    });
    let environment = store
        .create(&EnvironmentSpec::from_json(&spec).expect("spec"))
        .await
        .expect("environment");
    let root = environment.root().display().to_string();
    let http =
        hookbox_net::GuardedClient::new(&hookbox_net::ClientOptions::default()).expect("client");
    (
        SandboxTools::new(environment, isolation, http).expect("tools"),
        root,
    )
}

/// The names of the hijacks that made their gate allow.
async fn hijacked(isolation: Isolation) -> Vec<&'static str> {
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    let mut allowed = Vec::new();
    for hijack in hijacks() {
        let (tools, root) = tools_for(&store, &hijack.gate, &hijack.env, isolation).await;
        // Unsandboxed, the model's home is the workspace on the host.
        let plant = hijack
            .plant
            .replace("EVIL", &format!("{root}/workspace/evil.js"));
        let planted = tools
            .call(
                "code_execution",
                json!({"code": plant, "language": "bash"}),
                None,
            )
            .await
            .expect("call");
        assert_eq!(planted.error, None, "{}: {:?}", hijack.name, planted.result);
        let report = tools
            .call("read_file", json!({"path": "a.txt"}), None)
            .await
            .expect("call");
        if !report.denied || report.reason.as_deref() != Some("gate") {
            allowed.push(hijack.name);
        }
    }
    allowed
}

#[tokio::test]
async fn sandboxed_gates_cannot_be_hijacked_through_the_models_files() {
    assert_eq!(hijacked(Isolation::Sandboxed).await, Vec::<&str>::new());
}

#[tokio::test]
async fn unsandboxed_gates_cannot_be_hijacked_through_the_models_files() {
    assert_eq!(hijacked(Isolation::Unsandboxed).await, Vec::<&str>::new());
}

/// Records the hook's working directory, its `HOME`'s entries and every variable name in
/// `workspace/hook.txt` (relative: the working directory is `/`, or the root on the host).
const DESCRIBE: &str = "{ pwd; echo \"$HOME\"; ls -A \"$HOME\" | tr '\\n' ' '; echo; \
                        env | cut -d= -f1 | sort | tr '\\n' ' '; } > workspace/hook.txt; \
                        touch \"$HOME/left-over\"; echo '{}'";

const HOOK_VARIABLES: &str = "HOME HOOKBOX_ENVIRONMENT_ID LANG PATH PWD PYTHONDONTWRITEBYTECODE \
                              PYTHONNOUSERSITE PYTHONSAFEPATH ";

#[tokio::test]
async fn hooks_start_in_a_fixed_environment_with_a_fresh_home_every_run() {
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    for isolation in [Isolation::Sandboxed, Isolation::Unsandboxed] {
        let env = json!({"FROM_ENV": "x", "NODE_OPTIONS": "--require x"});
        let (tools, root) = tools_for(&store, DESCRIBE, &env, isolation).await;
        let mut homes = Vec::new();
        for _ in 0..2 {
            let report = tools
                .call("read_file", json!({"path": "a.txt"}), None)
                .await
                .expect("call");
            assert_eq!(report.error, None, "{isolation:?}: {:?}", report.trace);
            let text = std::fs::read_to_string(format!("{root}/workspace/hook.txt")).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            let (cwd, hook_home, entries, names) = (lines[0], lines[1], lines[2], lines[3]);
            match isolation {
                Isolation::Sandboxed => {
                    assert_eq!(cwd, "/");
                    assert_eq!(names, format!("{HOOK_VARIABLES}TMPDIR "));
                }
                Isolation::Unsandboxed => {
                    assert_eq!(cwd, root);
                    assert_eq!(names, HOOK_VARIABLES);
                    assert!(
                        !std::path::Path::new(hook_home).exists(),
                        "{hook_home} outlived the run"
                    );
                }
            }
            assert_eq!(entries, "", "{isolation:?}: HOME was not fresh");
            homes.push(hook_home.to_owned());
        }
        if isolation == Isolation::Unsandboxed {
            assert_ne!(homes[0], homes[1]);
        }
    }
}

#[tokio::test]
async fn the_model_cannot_put_files_at_the_hooks_working_directory() {
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    let (tools, root) = tools_for(&store, "echo '{}'", &json!({}), Isolation::Sandboxed).await;
    let written = tools
        .call(
            "write_file",
            json!({"path": "/json.py", "content": PY_ALLOW}),
            None,
        )
        .await
        .expect("call");
    assert!(
        written
            .error
            .as_deref()
            .unwrap_or_default()
            .contains("read-only"),
        "{:?}",
        written.error
    );
    let code = tools
        .call(
            "code_execution",
            json!({"code": "echo x > /json.py || mkdir /lib2", "language": "bash"}),
            None,
        )
        .await
        .expect("call");
    assert!(code.error.is_some(), "{:?}", code.result);
    for name in ["json.py", "lib2"] {
        assert!(!std::path::Path::new(&root).join(name).exists(), "{name}");
    }
}
