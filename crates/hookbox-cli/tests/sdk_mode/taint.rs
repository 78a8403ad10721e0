//! The taint check of SDK mode: nothing the model writes is opened, executed or mapped by a
//! process on the host. A session through the real claude-agent-sdk, with settings hooks in
//! Python, Node and bash (in `.claude` and elsewhere in the project) and inline code of each
//! interpreter (`python3 -c`, `python3 -m`, `node -e`, `bash -c`, `perl -e`), a project stdio MCP
//! server and a git repository whose configuration names hooks, an include, an fsmonitor and
//! a filter driver in the work tree. The model's `Bash` first writes a marker at every path of
//! a generated list ([`targets`]), then the session goes on (hooks fire); then the test runs
//! `git add`, `git status` and `git commit` as the user would. Everything runs under
//! `strace -f`: hookbox through the SDK's `cli_path` (a wrapper), git directly; the processes
//! in the sandbox's namespaces are told apart by the `clone`/`unshare`/`setns` that put them
//! there ([`trace`]), and no other process may open, execute or map a file holding the marker.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::python::python;
use super::{AGENT, KEY, KEY_ENV, World, call};
use hookbox_test_support::FakeTurn;

/// The system calls traced: every one that names a file, starts a process or maps a file, and
/// those that enter namespaces.
const TRACED: &str = "trace=%file,%process,mmap,unshare,setns";

/// strace's options besides [`TRACED`]: follow children, name each file descriptor's file,
/// one log per thread (`NAME.TID`), and child ids as the tracer sees them (a process in the
/// sandbox's PID namespace gets its own numbers).
const STRACE: &[&str] = &["-f", "-y", "-qq", "--pidns-translation", "-ff"];

/// What the model writes into every file it can (after a `#`, which most of the files take
/// as a comment, so that what reads them goes on to the next).
const MARK: &str = "MODEL_WROTE_THIS_TAINT_MARK";

/// What each interpreter (and git) reads at start-up from the directories around what it
/// runs, or from a home directory: one line per interpreter. A marker is written at each of
/// these names in every directory of [`targets`].
const START_UP_FILES: &[(&str, &[&str])] = &[
    (
        "python",
        &[
            "json.py",
            "sys.py",
            "helper.py",
            "sitecustomize.py",
            "usercustomize.py",
            "pyvenv.cfg",
        ],
    ),
    (
        "node",
        &[
            "package.json",
            "node_modules/left-pad/index.js",
            "node_modules/left-pad/package.json",
            ".npmrc",
        ],
    ),
    (
        "bash",
        &["lib.sh", ".bashrc", ".profile", ".bash_profile", ".inputrc"],
    ),
    ("perl", &["strict.pm", ".perldb"]),
    ("ruby", &["Gemfile", ".ruby-version", ".gemrc"]),
    ("jq", &[".jq"]),
    (
        "git",
        &[
            ".gitconfig",
            "pre-commit",
            "commit-msg",
            "fsmon.sh",
            "clean.py",
        ],
    ),
];

/// Files a tool would read from a home or XDG directory, were the project taken for one.
const HOME_FILES: &[&str] = &[
    ".config/git/config",
    ".config/git/attributes",
    ".gitconfig",
    ".git-credentials",
    ".bashrc",
    ".profile",
    ".npmrc",
    ".jq",
];

/// The project's files before the session: hook scripts, their legitimate neighbours, the MCP
/// server and the files git's configuration names.
fn project_files(log: &Path) -> Vec<(&'static str, String)> {
    let log = log.display();
    vec![
        (
            ".claude/hooks/gate.py",
            format!(
                "import json, sys\njson.load(sys.stdin)\nopen('{log}', 'a').write('py-claude\\n')\nprint('{{}}')\n"
            ),
        ),
        (
            "scripts/py/gate.py",
            format!(
                "import json, sys, helper\njson.load(sys.stdin)\nopen('{log}', 'a').write('py-' + helper.NAME + '\\n')\nprint('{{}}')\n"
            ),
        ),
        ("scripts/py/helper.py", "NAME = 'scripts'\n".to_owned()),
        (
            "tools/hooks/gate.js",
            format!(
                "const fs = require('fs');\ntry {{ require('left-pad'); }} catch (e) {{}}\nfs.readFileSync(0);\nfs.appendFileSync('{log}', 'node\\n');\nprocess.stdout.write('{{}}');\n"
            ),
        ),
        ("tools/package.json", "{\"private\": true}\n".to_owned()),
        (
            "scripts/sh/gate.sh",
            format!(
                "cat >/dev/null\n. \"$(dirname \"$0\")/lib.sh\"\necho bash >> {log}\necho '{{}}'\n"
            ),
        ),
        ("scripts/sh/lib.sh", ":\n".to_owned()),
        ("lib/sh/common.sh", ":\n".to_owned()),
        ("mcp/srv/server.py", SERVER.to_owned()),
        (
            ".husky/pre-commit",
            format!("#!/bin/sh\n. \"$(dirname \"$0\")/lib.sh\"\necho pre-commit >> {log}\n"),
        ),
        (".husky/lib.sh", ":\n".to_owned()),
        (
            "tools/git/fsmon.sh",
            format!("#!/bin/sh\necho fsmonitor >> {log}\nexit 1\n"),
        ),
        (
            "tools/git/clean.py",
            format!(
                "import json, sys\nopen('{log}', 'a').write('clean\\n')\nsys.stdout.write(sys.stdin.read())\n"
            ),
        ),
        (".gitattributes", "*.dat filter=f\n".to_owned()),
        ("README.md", "a project\n".to_owned()),
    ]
}

/// The settings hooks: (event, command), each matching every tool; every hook script of
/// [`project_files`], and code run inline by each interpreter.
const HOOKS: &[(&str, &str)] = &[
    (
        "PreToolUse",
        "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/gate.py",
    ),
    ("PreToolUse", "python3 scripts/py/gate.py"),
    (
        "PostToolUse",
        "node \"$CLAUDE_PROJECT_DIR\"/tools/hooks/gate.js",
    ),
    ("PostToolUse", "bash scripts/sh/gate.sh"),
    // Inline code, started in the project: what it loads is looked up there.
    (
        "PreToolUse",
        "python3 -c 'import json, os, sys; json.load(sys.stdin); \
         open(os.environ[\"HOOKBOX_TAINT_LOG\"], \"a\").write(\"py-inline\\n\"); print(\"{}\")'",
    ),
    ("PreToolUse", "python3 -m json.tool > /dev/null"),
    (
        "PostToolUse",
        "node -e \"const fs = require('fs'); try { require('left-pad'); } catch (e) {} \
         fs.readFileSync(0); fs.appendFileSync(process.env.HOOKBOX_TAINT_LOG, 'node-inline\\n'); \
         process.stdout.write('{}')\"",
    ),
    (
        "PostToolUse",
        "bash -c '. lib/sh/common.sh && cat > /dev/null && echo bash-inline >> \"$HOOKBOX_TAINT_LOG\"'",
    ),
    (
        "PostToolUse",
        "perl -Mstrict -e 'local $/; my $event = <STDIN>; print \"{}\"'",
    ),
];

/// What the host ran, as each script logs it: every settings hook and every git hook, driver
/// and fsmonitor of [`GIT_CONFIG`].
const RAN: &[&str] = &[
    "py-claude",
    "py-scripts",
    "py-inline",
    "node",
    "node-inline",
    "bash",
    "bash-inline",
    "pre-commit",
    "fsmonitor",
    "clean",
];

/// The repository's configuration: `git config` arguments.
const GIT_CONFIG: &[(&str, &str)] = &[
    ("core.hooksPath", ".husky"),
    ("include.path", "../.gitconfig"),
    ("core.fsmonitor", "tools/git/fsmon.sh"),
    ("filter.f.clean", "python3 tools/git/clean.py"),
    ("filter.f.required", "true"),
    ("user.name", "t"),
    ("user.email", "t@example.com"),
];

/// The MCP server's command line (relative to the project, where it starts).
const MCP_ARGS: &[&str] = &["mcp/srv/server.py"];

/// Every path the model tries to write, relative to the project: each start-up file of
/// [`START_UP_FILES`] in every directory that holds, or is above, a hook script, the MCP
/// server, a path git's configuration names or the working directory; the files git's
/// configuration names; the home files; the existing files beside the scripts.
fn targets() -> Vec<String> {
    let mut named: Vec<String> = HOOKS
        .iter()
        .flat_map(|(_, command)| command.split_whitespace())
        .chain(MCP_ARGS.iter().copied())
        .filter(|word| word.contains('/'))
        .map(|word| word.replace("\"$CLAUDE_PROJECT_DIR\"/", ""))
        .filter(|word| !word.contains('$') && !word.starts_with('/'))
        .collect();
    for (key, value) in GIT_CONFIG {
        match *key {
            "core.hooksPath" => named.extend(
                ["pre-commit", "commit-msg", "lib.sh"].map(|hook| format!("{value}/{hook}")),
            ),
            "include.path" => named.push(value.trim_start_matches("../").to_owned()),
            _ => named.extend(
                value
                    .split_whitespace()
                    .filter(|word| word.contains('/'))
                    .map(str::to_owned),
            ),
        }
    }
    let mut dirs = BTreeSet::from([String::new()]);
    for path in &named {
        let mut dir = Path::new(path).parent();
        while let Some(here) = dir {
            dirs.insert(here.display().to_string());
            dir = here.parent();
        }
    }
    let mut targets: BTreeSet<String> = named.into_iter().collect();
    for dir in &dirs {
        for (_, files) in START_UP_FILES {
            for file in *files {
                targets.insert(Path::new(dir).join(file).display().to_string());
            }
        }
    }
    targets.extend(HOME_FILES.iter().map(|file| (*file).to_owned()));
    targets.into_iter().collect()
}

#[test]
fn no_host_process_opens_what_the_model_wrote() {
    let test = "no_host_process_opens_what_the_model_wrote";
    let Some(python) = python(test) else {
        return;
    };
    let Some(strace) = which("strace") else {
        hookbox_test_support::skip(test, "strace is not installed");
        return;
    };
    let targets = targets();
    // One `mkdir` for every directory, then shell built-ins only: under strace every process
    // the sandbox starts is slow.
    let dirs: BTreeSet<String> = targets
        .iter()
        .filter_map(|path| Path::new(path).parent())
        .map(|dir| format!("'{}'", dir.display()))
        .filter(|dir| dir != "''")
        .collect();
    let mut attack = format!(
        "mkdir -p {} 2>/dev/null; ",
        dirs.into_iter().collect::<Vec<_>>().join(" ")
    );
    for path in &targets {
        attack.push_str(&format!(
            "printf '\\n# {MARK}\\n' 2>/dev/null >> '{path}' && echo 'wrote {path}'; "
        ));
    }
    let world = World::new(vec![
        call(
            "toolu_1",
            "Bash",
            json!({"command": format!("{attack}echo attacked")}),
        ),
        call("toolu_2", "mcp__srv__whoami", json!({})),
        call("toolu_3", "Bash", json!({"command": "ls -a; echo more"})),
        FakeTurn::text("done"),
    ]);
    let scratch = tempfile::tempdir().unwrap();
    let log = scratch.path().join("ran.log");
    let traces = scratch.path().join("traces");
    std::fs::create_dir(&traces).unwrap();
    let project = world.work().canonicalize().unwrap();
    for (path, text) in project_files(&log) {
        let path = project.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    for script in [".husky/pre-commit", "tools/git/fsmon.sh"] {
        std::fs::set_permissions(
            project.join(script),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
    }
    let hooks: serde_json::Map<String, Value> = ["PreToolUse", "PostToolUse"]
        .iter()
        .map(|event| {
            let hooks: Vec<Value> = HOOKS
                .iter()
                .filter(|(on, _)| on == event)
                .map(|(_, command)| json!({"type": "command", "command": command}))
                .collect();
            (
                (*event).to_owned(),
                json!([{"matcher": "*", "hooks": hooks}]),
            )
        })
        .collect();
    std::fs::write(
        project.join(".claude/settings.json"),
        json!({"hooks": hooks}).to_string(),
    )
    .unwrap();
    // git as the user runs it; traced into `traces/NAME` unless `trace` is empty.
    let git = |args: &[&str], trace: &str| {
        let mut command = Vec::new();
        if !trace.is_empty() {
            let output = traces.join(trace).display().to_string();
            command.push(strace.display().to_string());
            command.extend(STRACE.iter().map(|option| (*option).to_owned()));
            command.extend(["-e", TRACED, "-o"].map(str::to_owned));
            command.push(output);
        }
        command.push("git".to_owned());
        command.extend(args.iter().map(|arg| (*arg).to_owned()));
        let output = run(&command, &project, &world);
        (
            output.status.success(),
            format!("{command:?}: {}", stderr(&output)),
        )
    };
    let mut setup = vec![git(&["init", "-q"], "")];
    for (key, value) in GIT_CONFIG {
        setup.push(git(&["config", key, value], ""));
    }
    setup.push(git(&["add", "README.md", ".gitattributes"], ""));
    setup.push(git(&["commit", "-q", "--no-verify", "-m", "start"], ""));
    for (ok, why) in setup {
        assert!(ok, "{why}");
    }
    let wrapper = scratch.path().join("hookbox-traced");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec {} {} -e {TRACED} -o {} {} \"$@\"\n",
            strace.display(),
            STRACE.join(" "),
            traces.join("hookbox").display(),
            super::bin().display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let spec = json!({
        "setting_sources": ["project"],
        "permission_mode": "bypassPermissions",
        "mcp_servers": {"srv": {"command": "python3", "args": MCP_ARGS}},
    });
    let (output, messages) = sdk_query(&python, &world, &wrapper, &spec, &log);
    let result = messages
        .iter()
        .find(|message| message["message_class"] == "ResultMessage")
        .unwrap_or_else(|| panic!("no result: {messages:?}\n{}", stderr(&output)));
    assert_eq!(result["is_error"], false, "{result}\n{}", stderr(&output));
    let seen: String = world
        .tool_results()
        .into_iter()
        .map(|(text, _)| text)
        .collect();
    assert!(
        seen.contains("attacked") && seen.contains("more"),
        "the session did not go on: {seen}\n{messages:?}"
    );
    assert!(
        seen.contains("greeting="),
        "the MCP server did not answer: {seen}"
    );
    // The user's git, after the session.
    std::fs::write(project.join("data.dat"), "data\n").unwrap();
    // Checked after the taint check, which says more when git fails on what the model wrote.
    let after = [
        git(&["add", "data.dat"], "git-add"),
        git(&["status", "--short"], "git-status"),
        git(&["commit", "-q", "-m", "after the session"], "git-commit"),
    ];

    let ran = std::fs::read_to_string(&log).unwrap_or_default();
    let tainted = tainted(&project);
    let wrote: Vec<&str> = seen
        .lines()
        .filter(|line| line.starts_with("wrote "))
        .collect();
    assert!(
        !tainted.is_empty() && !wrote.is_empty(),
        "the model wrote no marker, so the check proves nothing"
    );
    let accesses = trace::host_accesses(&traces);
    let sandboxed = trace::sandboxed_accesses(&traces);
    assert!(
        sandboxed.iter().any(|(_, path)| tainted.contains(path)),
        "the trace did not see the sandbox write the markers: the check would see nothing"
    );
    let offences: Vec<String> = accesses
        .iter()
        .filter(|(_, path)| tainted.contains(path))
        .map(|(line, path)| format!("{}: {line}", path.display()))
        .collect();
    assert!(
        offences.is_empty(),
        "host processes used files the model wrote:\n{}",
        offences.join("\n")
    );
    for (ok, why) in after {
        assert!(ok, "{why}");
    }
    for expected in RAN {
        assert!(
            ran.lines().any(|line| line == *expected),
            "{expected} did not run on the host: {ran}"
        );
    }
}

/// The standard-library MCP server.
const SERVER: &str = include_str!("stdio_mcp_server.py");

/// The regular files beneath `dir` holding [`MARK`].
fn tainted(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file()
                && std::fs::read(&path)
                    .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(MARK))
            {
                found.insert(path);
            }
        }
    }
    found
}

/// `name` found on `PATH`.
fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|path| path.is_file())
}

/// Runs `command` in `dir` with the world's home and no system git configuration.
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs git as the user would"
)]
fn run(command: &[String], dir: &Path, world: &World) -> Output {
    std::process::Command::new(&command[0])
        .args(&command[1..])
        .current_dir(dir)
        .env("HOME", world.home.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Runs claude-agent-sdk's `query()` (sessions.py) with `cli` as its `cli_path` and options
/// `spec`, and `HOOKBOX_TAINT_LOG` = `log` for the inline hooks; returns the output and the
/// messages it printed.
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the SDK's client program"
)]
fn sdk_query(
    python: &std::ffi::OsStr,
    world: &World,
    cli: &Path,
    spec: &Value,
    log: &Path,
) -> (Output, Vec<Value>) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk_mode/sessions.py");
    let child = std::process::Command::new(python)
        .arg(script)
        .args(["query", "go", &spec.to_string()])
        .current_dir(world.work())
        .env("HOOKBOX_SDK_CLI", cli)
        .env("HOOKBOX_SDK_CWD", world.work())
        .env("HOOKBOX_SDK_MODEL", AGENT)
        .env("HOOKBOX_TAINT_LOG", log)
        .env("HOOKBOX_HOME", world.home.path())
        .env("HOME", world.home.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env(KEY_ENV, KEY)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = rustix::process::Pid::from_child(&child);
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(child.wait_with_output());
    });
    let output = match receiver.recv_timeout(Duration::from_secs(300)) {
        Ok(output) => output.unwrap(),
        Err(_) => {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            panic!("the SDK session did not finish within 300 s");
        }
    };
    let messages = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (output, messages)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Reading `strace -f -y -ff` logs: which process did what, and which processes were in the
/// sandbox.
mod trace {
    use super::*;

    /// Namespace flags that put a process in the sandbox (a new one, or joining one).
    const NAMESPACES: &[&str] = &[
        "CLONE_NEWNS",
        "CLONE_NEWUSER",
        "CLONE_NEWPID",
        "CLONE_NEWNET",
        "CLONE_NEWIPC",
        "CLONE_NEWUTS",
        "CLONE_NEWCGROUP",
    ];

    /// One traced thread: its lines, its parent and whether it entered a namespace.
    struct Thread {
        lines: Vec<String>,
        parent: Option<u32>,
        entered: bool,
    }

    /// Every thread of every trace in `dir` (files `NAME.TID`).
    fn threads(dir: &Path) -> HashMap<u32, Thread> {
        let mut threads: HashMap<u32, Thread> = HashMap::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(tid) = name.rsplit('.').next().and_then(|tid| tid.parse().ok()) else {
                continue;
            };
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_owned).collect();
            let entered = lines.iter().any(|line| {
                (line.starts_with("unshare(") || line.starts_with("setns("))
                    && line.ends_with("= 0")
                    && NAMESPACES.iter().any(|flag| line.contains(flag))
            });
            let thread = threads.entry(tid).or_insert(Thread {
                lines: Vec::new(),
                parent: None,
                entered: false,
            });
            thread.lines = lines;
            thread.entered |= entered;
            let children: Vec<(u32, bool)> = thread
                .lines
                .iter()
                .filter(|line| {
                    ["clone(", "clone3(", "fork(", "vfork("]
                        .iter()
                        .any(|call| line.starts_with(call))
                })
                .filter_map(|line| {
                    let child = child_id(line)?;
                    Some((child, NAMESPACES.iter().any(|flag| line.contains(flag))))
                })
                .collect();
            for (child, namespaced) in children {
                let child = threads.entry(child).or_insert(Thread {
                    lines: Vec::new(),
                    parent: None,
                    entered: false,
                });
                child.parent = Some(tid);
                child.entered |= namespaced;
            }
        }
        threads
    }

    /// The child a `clone`/`fork` of `line` started, as the tracer numbers it: `= 3 /* 1234
    /// in strace's PID NS */` when the caller is in another PID namespace, else `= 1234`.
    fn child_id(line: &str) -> Option<u32> {
        let result = line.rsplit_once(") = ")?.1;
        let id = match result.split_once("/* ") {
            Some((_, translated)) => translated.split_whitespace().next()?,
            None => result.split_whitespace().next()?,
        };
        id.parse().ok()
    }

    /// Whether `tid` or one of its ancestors entered a namespace; a thread whose parent is
    /// not known counts as outside (the check fails closed).
    fn in_sandbox(threads: &HashMap<u32, Thread>, mut tid: u32) -> bool {
        for _ in 0..10_000 {
            let Some(thread) = threads.get(&tid) else {
                return false;
            };
            if thread.entered {
                return true;
            }
            match thread.parent {
                Some(parent) => tid = parent,
                None => return false,
            }
        }
        false
    }

    /// The files the processes outside the sandbox opened, executed or mapped: (the line of
    /// the trace, the path).
    pub(super) fn host_accesses(dir: &Path) -> Vec<(String, PathBuf)> {
        accesses(dir, false)
    }

    /// The files the processes in the sandbox opened, executed or mapped.
    pub(super) fn sandboxed_accesses(dir: &Path) -> Vec<(String, PathBuf)> {
        accesses(dir, true)
    }

    fn accesses(dir: &Path, sandboxed: bool) -> Vec<(String, PathBuf)> {
        let threads = threads(dir);
        let mut found = Vec::new();
        for (tid, thread) in &threads {
            if in_sandbox(&threads, *tid) != sandboxed {
                continue;
            }
            let mut cwd: Option<PathBuf> = None;
            for line in &thread.lines {
                if let Some(dir) = decorated(line, "AT_FDCWD<") {
                    cwd = Some(dir);
                }
                if let Some(path) = accessed(line, cwd.as_deref()) {
                    found.push((line.clone(), path));
                }
            }
        }
        found
    }

    /// The path in `<...>` after `prefix` in `line`.
    fn decorated(line: &str, prefix: &str) -> Option<PathBuf> {
        let start = line.find(prefix)? + prefix.len();
        let end = line[start..].find('>')? + start;
        Some(PathBuf::from(&line[start..end]))
    }

    /// The file a successful open, execve or mmap of `line` used.
    fn accessed(line: &str, cwd: Option<&Path>) -> Option<PathBuf> {
        let result = line.rsplit_once(") = ")?.1;
        if result.starts_with('-') {
            return None;
        }
        if ["open(", "openat(", "openat2(", "creat("]
            .iter()
            .any(|call| line.starts_with(call))
        {
            return decorated(result, "<");
        }
        if line.starts_with("mmap(") {
            let args = &line[..line.rfind(") = ")?];
            return args.rsplit(", ").nth(1).and_then(|fd| decorated(fd, "<"));
        }
        if line.starts_with("execve(") || line.starts_with("execveat(") {
            let start = line.find('"')? + 1;
            let end = line[start..].find('"')? + start;
            let path = Path::new(&line[start..end]);
            return Some(match cwd {
                Some(cwd) if path.is_relative() => cwd.join(path),
                _ => path.to_path_buf(),
            });
        }
        None
    }
}
