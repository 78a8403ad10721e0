//! The taint check of owner hooks inside the sandbox: nothing the model wrote is opened,
//! executed or mapped by a hook process.
//!
//! The owner's gates, one per interpreter of [`INTERPRETERS`], live in `/.agents` and in
//! `/workspace/.agents` (read-only to the model, inside the model-writable `/workspace`),
//! where the sandbox dialect discovers hook files and scripts. The model first plants a
//! marker at every path of a generated list: every start-up file of every interpreter (and of
//! [`COMMON`] tools) in every directory a hook could look in (each ancestor of each hook
//! script and of the hooks' working directory, the model's `$HOME`, where hooks see the owner's
//! directories). Then gated calls go on while `fanotify` records every open on the
//! environment's file system: a hook process (anything but `hookbox serve` itself, whose file
//! tools and hook discovery read files as such) opening a file the model wrote or changed
//! fails the test, as does a gate that no longer denies.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::http;
use super::{api_key, serve};

/// An interpreter an owner writes a gate in: its script, the command running it, and the
/// start-up files it (or its tooling) may look for around the script, the working directory
/// or `$HOME`. A new interpreter or start-up file is one line.
struct Interpreter {
    name: &'static str,
    /// The program that must be installed for its gate to run.
    program: &'static str,
    /// The gate's file name in `/workspace/.agents`.
    script: &'static str,
    /// The command, `{}` standing for the script's path.
    command: &'static str,
    /// The gate: denies with reason `blocked-by-GATE` a call whose path ends in `/GATE.txt`
    /// (`GATE` standing for the hook's label).
    gate: &'static str,
    /// Start-up files, relative to each directory the model can write.
    startup: &'static [&'static str],
}

const INTERPRETERS: &[Interpreter] = &[
    Interpreter {
        name: "python",
        program: "python3",
        script: "gate.py",
        command: "python3 {}",
        gate: "import json, sys\nevent = json.load(sys.stdin)\n\
               deny = event['tool_call']['args']['path'].endswith('/GATE.txt')\n\
               print(json.dumps({'decision': 'deny', 'reason': 'blocked-by-GATE'} if deny else {}))\n",
        startup: &[
            "pyvenv.cfg",
            ".python-version",
            "sitecustomize.py",
            "usercustomize.py",
            "json.py",
            "__pycache__/json.cpython-311.pyc",
            ".pythonrc.py",
            "pip.conf",
            ".config/pip/pip.conf",
            ".local/lib/python3.11/site-packages/taint.pth",
            ".local/lib/python3.12/site-packages/taint.pth",
            ".local/lib/python3.13/site-packages/taint.pth",
        ],
    },
    Interpreter {
        name: "node",
        program: "node",
        script: "gate.js",
        command: "node {}",
        gate: "const event = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n\
               const deny = event.tool_call.args.path.endsWith('/GATE.txt');\n\
               console.log(JSON.stringify(deny ? {decision: 'deny', reason: 'blocked-by-GATE'} : {}));\n",
        startup: &[
            "package.json",
            "node_modules/taint/index.js",
            ".npmrc",
            ".nvmrc",
            ".node-version",
            ".noderc",
            ".node_modules/taint.js",
            ".node_libraries/taint.js",
        ],
    },
    Interpreter {
        name: "perl",
        program: "perl",
        script: "gate.pl",
        command: "perl {}",
        gate: "use strict; use JSON::PP;\nlocal $/;\nmy $event = decode_json(<STDIN>);\n\
               my $deny = $event->{tool_call}{args}{path} =~ m{/GATE\\.txt$};\n\
               print $deny ? encode_json({decision => 'deny', reason => 'blocked-by-GATE'}) : '{}', \"\\n\";\n",
        startup: &[
            ".perldb",
            "perl5db.pl",
            ".perltidyrc",
            ".perlcriticrc",
            "cpanfile",
            "strict.pm",
            "JSON/PP.pm",
            "lib/strict.pm",
            "local/lib/perl5/strict.pm",
        ],
    },
    Interpreter {
        name: "bash",
        program: "bash",
        script: "gate.sh",
        command: "bash {}",
        gate: "event=$(cat)\ncase \"$event\" in\n\
               *'/GATE.txt\"'*) echo '{\"decision\":\"deny\",\"reason\":\"blocked-by-GATE\"}' ;;\n\
               *) echo '{}' ;;\nesac\n",
        startup: &[
            ".bashrc",
            ".bash_profile",
            ".bash_login",
            ".bash_logout",
            ".profile",
            ".inputrc",
            ".bash_env",
        ],
    },
    Interpreter {
        name: "jq",
        program: "jq",
        script: "gate.jq",
        command: "jq -c -f {}",
        gate: "if (.tool_call.args.path | endswith(\"/GATE.txt\"))\n\
               then {decision: \"deny\", reason: \"blocked-by-GATE\"} else {} end\n",
        startup: &[".jq", "jq/taint.jq", "lib/jq/taint.jq"],
    },
    Interpreter {
        name: "ruby",
        program: "ruby",
        script: "gate.rb",
        command: "ruby {}",
        gate: "require 'json'\nevent = JSON.parse($stdin.read)\n\
               deny = event['tool_call']['args']['path'].end_with?('/GATE.txt')\n\
               puts JSON.generate(deny ? {decision: 'deny', reason: 'blocked-by-GATE'} : {})\n",
        startup: &[
            "Gemfile",
            "Gemfile.lock",
            "gems.rb",
            ".ruby-version",
            ".gemrc",
            ".irbrc",
            ".bundle/config",
            "json.rb",
        ],
    },
];

/// Start-up files of tools any gate may use (git, shells' helpers, version managers).
const COMMON: &[&str] = &[
    ".gitconfig",
    ".config/git/config",
    ".git/config",
    ".env",
    ".envrc",
    ".tool-versions",
    ".editorconfig",
    ".config/mise/config.toml",
    ".curlrc",
    ".netrc",
    ".wgetrc",
];

/// What the model writes at a start-up file: Node's module switch (which makes a CommonJS gate
/// crash) at `package.json`, a marker elsewhere.
fn marker(file: &str) -> &'static str {
    match file {
        "package.json" => r#"{"type": "module"}"#,
        _ => "# written by the model",
    }
}

/// The owner's hook directories, by label: each interpreter's gate runs from each.
const PLACES: &[(&str, &str)] = &[("root", "/.agents"), ("workspace", "/workspace/.agents")];

/// One owner hook: an interpreter's gate in one of the [`PLACES`].
struct Hook {
    /// `INTERPRETER-PLACE`: its gate denies reading `/workspace/LABEL.txt`.
    label: String,
    /// The script's sandbox path.
    script: String,
    command: String,
    gate: String,
}

/// Where hookbox shows an owner's `.agents` directory to its hooks (its own read-only tree).
const HOOK_VIEW: &str = "/.hookbox";

/// Directories the model may be able to write that a hook could look in, as shell words:
/// every ancestor of every hook script (as the owner named it, and as hooks see it) and of
/// the hooks' working directory `/`, and the model's `$HOME` and XDG directories.
fn candidate_dirs(scripts: &[String]) -> Vec<String> {
    let mut dirs: Vec<String> = Vec::new();
    for script in scripts {
        for path in [script.clone(), format!("{HOOK_VIEW}{script}")] {
            for ancestor in Path::new(&path).ancestors().skip(1) {
                dirs.push(format!("'{}'", ancestor.display()));
            }
        }
    }
    dirs.extend(
        [
            "\"$HOME\"",
            "\"${XDG_CONFIG_HOME:-$HOME/.config}\"",
            "\"${XDG_DATA_HOME:-$HOME/.local/share}\"",
        ]
        .map(str::to_owned),
    );
    let mut seen = HashSet::new();
    dirs.retain(|dir| seen.insert(dir.clone()));
    dirs
}

/// The model's planting code: a marker at every start-up file in every candidate directory,
/// wherever it can write (elsewhere the write fails and is skipped).
fn plant_code(dirs: &[String]) -> String {
    let files = INTERPRETERS
        .iter()
        .flat_map(|interpreter| interpreter.startup.iter())
        .chain(COMMON);
    let mut code = String::from(
        "plant() { mkdir -p \"$(dirname \"$1\")\" 2>/dev/null && printf '%s\\n' \"$2\" > \"$1\" \
         2>/dev/null && echo \"planted $1\"; true; }\n",
    );
    for file in files {
        for dir in dirs {
            // `'/''/x'` is `//x`, which is `/x`.
            code.push_str(&format!("plant {dir}'/{file}' '{}'\n", marker(file)));
        }
    }
    code
}

/// Every inode below `root` with its change time.
fn inodes(root: &Path) -> HashMap<u64, (i64, i64, PathBuf)> {
    let mut found = HashMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(path) = pending.pop() {
        let meta = std::fs::symlink_metadata(&path).expect("inspect");
        if meta.is_dir() {
            for entry in std::fs::read_dir(&path).expect("list") {
                pending.push(entry.expect("entry").path());
            }
        }
        found.insert(meta.ino(), (meta.ctime(), meta.ctime_nsec(), path));
    }
    found
}

/// The host directory of environment `id`'s root, on its own file system.
fn environment_root(home: &Path, id: &str) -> Option<PathBuf> {
    let image = std::fs::metadata(home.join("environments").join(id).join("disk.img")).ok()?;
    Some(PathBuf::from(format!(
        "/run/hookbox/disks/{:x}-{:x}/root",
        image.dev(),
        image.ino()
    )))
}

#[test]
fn owner_hooks_in_the_sandbox_open_nothing_the_model_wrote() {
    if !hookbox_test_support::require_root(
        "owner_hooks_in_the_sandbox_open_nothing_the_model_wrote",
    ) {
        return;
    }
    let installed = |program: &str| {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|dir| dir.join(program).is_file())
    };
    let hooks: Vec<Hook> = INTERPRETERS
        .iter()
        .filter(|interpreter| {
            let here = installed(interpreter.program);
            if !here {
                println!(
                    "`{}` is not installed: its gates are not tried (its start-up files are \
                     still planted)",
                    interpreter.program
                );
            }
            here
        })
        .flat_map(|interpreter| {
            PLACES.iter().map(|(place, dir)| {
                let label = format!("{}-{place}", interpreter.name);
                let script = format!("{dir}/{}", interpreter.script);
                Hook {
                    command: interpreter.command.replace("{}", &script),
                    gate: interpreter.gate.replace("GATE", &label),
                    label,
                    script,
                }
            })
        })
        .collect();
    let scripts: Vec<String> = hooks.iter().map(|hook| hook.script.clone()).collect();
    let dirs = candidate_dirs(&scripts);

    let home = tempfile::tempdir().unwrap();
    let plant = json!({"turns": [
        {"tool_calls": [{"name": "code_execution",
            "args": {"code": plant_code(&dirs), "language": "bash"}}]},
        {"text": "planted"}]});
    let mut reads: Vec<Value> = hooks
        .iter()
        .map(|hook| {
            json!({"tool_calls": [{"name": "read_file",
                "args": {"path": format!("/workspace/{}.txt", hook.label)}}]})
        })
        .collect();
    reads.push(json!({"text": "done"}));
    for (name, script) in [("plant", plant), ("gated", json!({"turns": reads}))] {
        std::fs::write(home.path().join(format!("{name}.json")), script.to_string()).unwrap();
    }
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[agents.plant]\nprovider = \"scripted\"\nscript = \"plant.json\"\n\n\
         [agents.gated]\nprovider = \"scripted\"\nscript = \"gated.json\"\n",
    )
    .unwrap();
    let key = api_key(home.path(), "owner");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;

    let handlers: Vec<Value> = hooks
        .iter()
        .map(|hook| json!({"type": "command", "command": hook.command, "timeout": 60}))
        .collect();
    let policy = json!({"gates": {"pre_tool_execution": [
        {"matcher": "read_file", "hooks": handlers}]}});
    let mut sources = vec![
        json!({"type": "inline", "target": "workspace/.agents/hooks.json",
        "content": policy.to_string()}),
    ];
    for hook in &hooks {
        sources.push(json!({"type": "inline", "target": hook.script, "content": hook.gate}));
        sources.push(
            json!({"type": "inline", "target": format!("workspace/{}.txt", hook.label),
            "content": "owner's"}),
        );
    }
    let created = http::json(
        url,
        &key,
        "POST",
        "/v1/environments",
        &json!({"network": "disabled", "sources": sources}),
    );
    assert_eq!(created.status, 200, "{created:?}");
    let id = created.json()["id"].as_str().unwrap().to_owned();
    let Some(root) = environment_root(home.path(), &id) else {
        hookbox_test_support::skip(
            "owner_hooks_in_the_sandbox_open_nothing_the_model_wrote",
            "the environment has no file system of its own (no loop device?)",
        );
        return;
    };
    let before = inodes(&root);

    let run = |agent: &str| {
        let reply = http::json(
            url,
            &key,
            "POST",
            "/v1/interactions",
            &json!({"agent": agent, "input": agent, "tools": [{"type": "code_execution"}],
                "environment": id}),
        );
        assert_eq!(reply.status, 200, "{reply:?}");
        reply
    };
    let planted = run("plant");
    // What the model wrote or changed: new inodes, and old ones whose change time moved.
    let after = inodes(&root);
    let written: HashMap<u64, PathBuf> = after
        .into_iter()
        .filter(|(inode, (secs, nanos, _))| {
            before
                .get(inode)
                .is_none_or(|(old_secs, old_nanos, _)| (old_secs, old_nanos) != (secs, nanos))
        })
        .map(|(inode, (_, _, path))| (inode, path))
        .collect();
    // Not vacuous: the model did write start-up files beside the owner's hook directory.
    for file in ["package.json", ".bashrc", ".jq", ".gitconfig", "pyvenv.cfg"] {
        let path = root.join("workspace").join(file);
        assert!(
            path.exists(),
            "the model could not plant {}: {planted:?}",
            path.display()
        );
    }

    let watch = hookbox_test_support::FileOpens::watch(&root).expect("fanotify on the file system");
    let gated = run("gated");
    let opens = watch.take().expect("read the opens");
    let server = served.child.id();
    let hook_opens: Vec<_> = opens.iter().filter(|open| open.pid != server).collect();

    // Not vacuous either: every gate's script was opened by a hook process, which was traced.
    let owner_inodes: HashMap<u64, &str> = hooks
        .iter()
        .map(|hook| {
            let meta = std::fs::metadata(root.join(hook.script.trim_start_matches('/'))).unwrap();
            (meta.ino(), hook.label.as_str())
        })
        .collect();
    let traced: HashSet<&str> = hook_opens
        .iter()
        .filter_map(|open| owner_inodes.get(&open.inode).copied())
        .collect();
    for hook in &hooks {
        assert!(
            traced.contains(hook.label.as_str()),
            "no hook process opened the {} gate: {hook_opens:#?}",
            hook.label
        );
    }

    let tainted: Vec<String> = hook_opens
        .iter()
        .filter_map(|open| {
            written.get(&open.inode).map(|path| {
                format!(
                    "pid {} {} {}",
                    open.pid,
                    if open.exec { "executed" } else { "opened" },
                    path.strip_prefix(&root).unwrap_or(path).display()
                )
            })
        })
        .collect();
    assert_eq!(
        tainted,
        Vec::<String>::new(),
        "hooks read what the model wrote"
    );
    for hook in &hooks {
        assert!(
            gated.body.contains(&format!("blocked-by-{}", hook.label)),
            "the {} gate no longer denies: {gated:?}",
            hook.label
        );
    }
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}
