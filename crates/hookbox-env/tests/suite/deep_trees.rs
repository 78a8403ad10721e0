//! Every walk over a tree the model controls, on every shape of tree a model can make: each
//! walk runs on a thread with a Tokio worker's 2 MiB stack and must answer (a bounded result
//! or a clear error), never overflow the stack and abort the process for every tenant.
//!
//! A new walk is one line in `WALKS`; a new shape is one line in `SHAPES`.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use hookbox_env::{CodingTools, EnvironmentFiles, EnvironmentSpec, FileTools, Isolation};
use rustix::fs::{AtFlags, Mode, OFlags};
use serde_json::{Value, json};

use super::support::Home;

/// A Tokio worker thread's stack (the default of `tokio::runtime::Builder`).
const WORKER_STACK: usize = 2 * 1024 * 1024;

/// Levels of the deep chain: far past any limit, and past what a recursive walk survives.
const DEEP: usize = 9_000;

/// A tree a model can build in its workspace.
struct Shape {
    name: &'static str,
    /// Builds the tree in the directory given (the workspace's `t`).
    build: fn(&Path),
    /// Whether the tree goes deeper than any walk descends (its walks must say so).
    too_deep: bool,
}

/// The shapes, one a line.
const SHAPES: &[Shape] = &[
    Shape {
        name: "a 9,000-deep chain",
        build: |dir| chain(dir, "d", DEEP),
        too_deep: true,
    },
    Shape {
        name: "10,000 entries in one directory",
        build: wide,
        too_deep: false,
    },
    Shape {
        name: "a chain of 255-byte names longer than PATH_MAX",
        build: |dir| chain(dir, &"n".repeat(255), 40),
        too_deep: true,
    },
    Shape {
        name: "links that loop",
        build: loops,
        too_deep: false,
    },
];

/// Creates a chain of `depth` directories named `name` below `dir`, a file `leaf.txt` in each
/// (through descriptors: the chain's paths are longer than any path a syscall takes).
fn chain(dir: &Path, name: &str, depth: usize) {
    let mut at = open(dir);
    for _ in 0..depth {
        rustix::fs::mkdirat(&at, name, Mode::from_raw_mode(0o755)).unwrap();
        let file = rustix::fs::openat(
            &at,
            "leaf.txt",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&file, b"needle\n").unwrap();
        at = rustix::fs::openat(&at, name, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
            .unwrap();
    }
}

/// 10,000 directories, each with a file, in `dir`.
fn wide(dir: &Path) {
    for i in 0..10_000 {
        let sub = dir.join(format!("w{i:05}"));
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("f.txt"), "needle\n").unwrap();
    }
}

/// Links to `.`, `..`, themselves, each other and the root, and a real directory with a link
/// back up: a walk that followed any of them would never end.
fn loops(dir: &Path) {
    use std::os::unix::fs::symlink;
    std::fs::create_dir_all(dir.join("a/b/c")).unwrap();
    std::fs::write(dir.join("a/b/c/f.txt"), "needle\n").unwrap();
    symlink("../../..", dir.join("a/b/c/up")).unwrap();
    symlink(".", dir.join("dot")).unwrap();
    symlink("..", dir.join("dotdot")).unwrap();
    symlink("self", dir.join("self")).unwrap();
    symlink("ping", dir.join("pong")).unwrap();
    symlink("pong", dir.join("ping")).unwrap();
    symlink("/", dir.join("root")).unwrap();
    symlink("/workspace/t", dir.join("abs")).unwrap();
}

/// `dir` opened as a directory.
fn open(dir: &Path) -> OwnedFd {
    rustix::fs::open(dir, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()).unwrap()
}

/// What a walk answered: its result, or its error's text.
type Answer = Result<Value, String>;

/// One walk over the tree `t` of an environment's workspace.
struct Walk {
    name: &'static str,
    run: fn(&Fixture) -> Answer,
}

/// The walks, one a line: every tool and owner operation that descends a directory.
const WALKS: &[Walk] = &[
    Walk {
        name: "list_files",
        run: |f| f.file_tool("list_files", json!({"path": "/workspace/t"})),
    },
    Walk {
        name: "list_files recursive",
        run: |f| {
            f.file_tool(
                "list_files",
                json!({"path": "/workspace/t", "recursive": true}),
            )
        },
    },
    Walk {
        name: "files API listing, recursive",
        run: |f| {
            let files = EnvironmentFiles::open(&f.environment()).map_err(|e| e.to_string())?;
            let listed = files.list("workspace/t", true).map_err(|e| e.to_string())?;
            Ok(json!({"entries": listed.len()}))
        },
    },
    Walk {
        name: "Glob",
        run: |f| f.coding("Glob", json!({"pattern": "**/*.txt"})),
    },
    Walk {
        name: "Grep",
        run: |f| f.coding("Grep", json!({"pattern": "needle", "output_mode": "count"})),
    },
    Walk {
        name: "an environment built from it",
        run: |f| {
            let spec = json!({"from_environment": f.id});
            let built = f.block_on(
                f.home
                    .envs
                    .create(&EnvironmentSpec::from_json(&spec).unwrap()),
            );
            built
                .map(|env| json!({"id": env.id()}))
                .map_err(|e| e.to_string())
        },
    },
    Walk {
        name: "a local source copying it",
        run: |f| {
            let source = f.root.join("workspace/t");
            let spec = json!({"sources": [{"type": "local", "source": source, "target": "workspace/copy"}]});
            let built = f.block_on(
                f.home
                    .envs
                    .create(&EnvironmentSpec::from_json(&spec).unwrap()),
            );
            built
                .map(|env| json!({"id": env.id()}))
                .map_err(|e| e.to_string())
        },
    },
];

/// An environment whose workspace holds the tree `t`, and what walks it.
struct Fixture {
    home: Home,
    id: String,
    root: PathBuf,
}

impl Fixture {
    fn environment(&self) -> hookbox_env::Environment {
        self.home.envs.get(&self.id).unwrap()
    }

    fn file_tool(&self, tool: &str, args: Value) -> Answer {
        let tools = FileTools::for_environment(&self.environment()).map_err(|e| e.to_string())?;
        tools.call(tool, &args).map_err(|e| e.to_string())
    }

    fn coding(&self, tool: &str, input: Value) -> Answer {
        let tools = CodingTools::new(&self.root.join("workspace/t"), Isolation::Unsandboxed)
            .map_err(|e| e.to_string())?;
        let outcome = self.block_on(tools.call(tool, &input));
        match outcome.error {
            None => Ok(json!({"response": outcome.response, "text": outcome.text})),
            Some(_) => Err(outcome.text),
        }
    }

    fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(future)
    }
}

/// Runs `work` on a thread with a Tokio worker's stack; an overflow aborts the test binary.
fn on_worker_stack<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(WORKER_STACK)
        .spawn(work)
        .unwrap()
        .join()
        .expect("the walk panicked")
}

/// A home with host sources allowed and an environment whose workspace has `shape` at `t`.
async fn fixture(shape: &Shape) -> Arc<Fixture> {
    let home = Home::with_host_sources();
    let env = home.create(json!({"sources": []})).await;
    let tree = env.root().join("workspace/t");
    std::fs::create_dir(&tree).unwrap();
    (shape.build)(&tree);
    Arc::new(Fixture {
        id: env.id().to_owned(),
        root: env.root().to_path_buf(),
        home,
    })
}

/// Whether `answer` says plainly that the walk stopped at its depth limit.
fn names_the_limit(answer: &Answer) -> bool {
    let text = match answer {
        Ok(value) => value.to_string(),
        Err(text) => text.clone(),
    };
    text.contains("levels deep") || text.contains("too long")
}

#[tokio::test]
async fn every_walk_answers_on_every_shape_without_overflowing_the_stack() {
    for shape in SHAPES {
        let fixture = fixture(shape).await;
        for walk in WALKS {
            let (f, run) = (Arc::clone(&fixture), walk.run);
            let answer = on_worker_stack(move || run(&f));
            let what = format!("{} on {}", walk.name, shape.name);
            println!("{what}: {}", brief(&answer));
            if shape.too_deep && walk.name != "list_files" {
                assert!(
                    names_the_limit(&answer),
                    "{what} did not name the depth limit: {}",
                    brief(&answer)
                );
            } else {
                assert!(answer.is_ok(), "{what} failed: {}", brief(&answer));
            }
        }
        let f = Arc::clone(&fixture);
        let deleted = on_worker_stack(move || f.home.envs.delete(&f.id).map_err(|e| e.to_string()));
        assert_eq!(
            deleted,
            Ok(()),
            "deleting the environment holding {}",
            shape.name
        );
        assert!(!fixture.root.exists(), "{} left behind", shape.name);
    }
}

#[tokio::test]
async fn every_walk_answers_while_the_tree_changes_under_it() {
    let fixture = fixture(&Shape {
        name: "empty",
        build: |_| {},
        too_deep: false,
    })
    .await;
    let tree = fixture.root.join("workspace/t");
    let stop = Arc::new(AtomicBool::new(false));
    let churn = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                churn_once(&tree);
            }
        })
    };
    for round in 0..5 {
        for walk in WALKS {
            let (f, run) = (Arc::clone(&fixture), walk.run);
            let answer = on_worker_stack(move || run(&f));
            // Anything but a crash: entries vanish and reappear under the walk.
            println!("round {round}, {}: {}", walk.name, brief(&answer));
        }
    }
    stop.store(true, Ordering::Relaxed);
    churn.join().unwrap();
}

/// Builds a 300-deep chain with files in `tree`, renames its top, then removes it bottom-up.
fn churn_once(tree: &Path) {
    let mut fds = vec![open(tree)];
    for _ in 0..300 {
        let at = fds.last().unwrap();
        if rustix::fs::mkdirat(at, "c", Mode::from_raw_mode(0o755)).is_err() {
            break;
        }
        let _ = rustix::fs::openat(
            at,
            "x.txt",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        );
        match rustix::fs::openat(at, "c", OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty()) {
            Ok(fd) => fds.push(fd),
            Err(_) => break,
        }
    }
    let _ = std::fs::rename(tree.join("c"), tree.join("moved"));
    let _ = std::fs::rename(tree.join("moved"), tree.join("c"));
    while let Some(dir) = fds.pop() {
        let _ = rustix::fs::unlinkat(&dir, "x.txt", AtFlags::empty());
        let _ = rustix::fs::unlinkat(&dir, "c", AtFlags::REMOVEDIR);
    }
}

/// The first 300 characters of an answer, for messages.
fn brief(answer: &Answer) -> String {
    let text = match answer {
        Ok(value) => format!("ok {value}"),
        Err(text) => format!("error {text}"),
    };
    text.chars().take(300).collect()
}

#[tokio::test]
async fn a_path_longer_than_linux_takes_is_refused_naming_the_limit() {
    let fixture = fixture(&SHAPES[0]).await;
    let deep = format!("/workspace/t/{}leaf.txt", "d/".repeat(DEEP - 1));
    let calls = [
        ("read_file", json!({"path": deep})),
        ("write_file", json!({"path": deep, "content": "x"})),
        ("delete_file", json!({"path": deep})),
        ("list_files", json!({"path": deep})),
    ];
    for (tool, args) in calls {
        let f = Arc::clone(&fixture);
        let answer = on_worker_stack(move || f.file_tool(tool, args));
        let error = answer.expect_err(tool);
        assert!(
            error.contains("longer than the 4096 Linux takes"),
            "{tool}: {error}"
        );
    }
}

#[tokio::test]
async fn a_search_through_long_paths_stops_at_its_byte_budget_and_says_so() {
    // 10,000 files below 15 levels of 255-byte names: about 38 MB of paths.
    let shape = Shape {
        name: "10,000 files under long paths",
        build: |dir| {
            chain(dir, &"n".repeat(255), 15);
            let mut at = open(dir);
            for _ in 0..15 {
                at = rustix::fs::openat(
                    &at,
                    "n".repeat(255),
                    OFlags::DIRECTORY | OFlags::RDONLY,
                    Mode::empty(),
                )
                .unwrap();
            }
            for i in 0..10_000 {
                let name = format!("f{i:05}.txt");
                rustix::fs::openat(
                    &at,
                    name,
                    OFlags::CREATE | OFlags::WRONLY,
                    Mode::from_raw_mode(0o644),
                )
                .unwrap();
            }
        },
        too_deep: false,
    };
    let fixture = fixture(&shape).await;
    for tool in ["Glob", "Grep"] {
        let f = Arc::clone(&fixture);
        let input = json!({"pattern": if tool == "Glob" { "**/*.txt" } else { "needle" }});
        let answer = on_worker_stack(move || f.coding(tool, input)).unwrap();
        let text = answer["text"].as_str().unwrap();
        assert!(
            text.contains("the search stopped after 32 MiB of paths"),
            "{tool}: {}",
            brief(&Ok(answer.clone()))
        );
    }
}
