//! The SDK coding tools (`Bash`, `Read`, `Write`, `Edit`, `Glob`, `Grep`) in a temporary
//! working directory: normal use, bad input, and attempts to leave the directory.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use hookbox_env::{CODING_TOOLS, CodingOutcome, CodingTools, Isolation};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A working directory, a sibling directory holding a secret, and the tools over the first.
struct Session {
    dir: TempDir,
    outside: TempDir,
    tools: CodingTools,
}

impl Session {
    fn new(isolation: Isolation) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "s3cret\n").unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(
            dir.path().join("src/main.rs"),
            "fn main() {\n    println!(\"hi\");\n}\n",
        )
        .unwrap();
        let tools = CodingTools::new(dir.path(), isolation).unwrap();
        Self {
            dir,
            outside,
            tools,
        }
    }

    fn cwd(&self) -> PathBuf {
        self.tools.cwd().to_path_buf()
    }

    fn at(&self, rel: &str) -> String {
        self.cwd().join(rel).display().to_string()
    }

    fn secret(&self) -> PathBuf {
        self.outside.path().canonicalize().unwrap().join("secret")
    }

    async fn call(&self, tool: &str, input: Value) -> CodingOutcome {
        self.tools.call(tool, &input).await
    }

    async fn ok(&self, tool: &str, input: Value) -> CodingOutcome {
        let out = self.call(tool, input.clone()).await;
        assert_eq!(out.error, None, "{tool} {input}: {}", out.text);
        out
    }

    async fn fails(&self, tool: &str, input: Value) -> String {
        let out = self.call(tool, input.clone()).await;
        let error = out
            .error
            .unwrap_or_else(|| panic!("{tool} {input} succeeded: {}", out.text));
        assert!(!error.contains("s3cret"), "{error}");
        error
    }
}

fn sandbox_unavailable() -> Option<String> {
    hookbox_exec::check_isolation()
        .err()
        .map(|error| error.to_string())
}

#[tokio::test]
async fn names_and_unknown_tools() {
    let s = Session::new(Isolation::Unsandboxed);
    assert_eq!(
        CODING_TOOLS,
        ["Bash", "Read", "Write", "Edit", "Glob", "Grep"]
    );
    let error = s.fails("Nope", json!({})).await;
    assert!(error.contains("unknown tool"), "{error}");
    assert!(CodingTools::new(Path::new("/nonexistent/dir"), Isolation::Sandboxed).is_err());
}

#[tokio::test]
async fn read_numbers_lines_and_pages() {
    let s = Session::new(Isolation::Unsandboxed);
    let out = s.ok("Read", json!({"file_path": s.at("a.txt")})).await;
    assert_eq!(out.text, "     1\tone\n     2\ttwo\n     3\tthree\n");
    assert_eq!(
        out.response,
        json!({"type": "text", "file": {"filePath": s.at("a.txt"), "content": "one\ntwo\nthree",
            "numLines": 3, "startLine": 1, "totalLines": 3}})
    );
    let out = s
        .ok(
            "Read",
            json!({"file_path": "a.txt", "offset": 2, "limit": 1}),
        )
        .await;
    assert_eq!(out.text, "     2\ttwo\n");
    let error = s
        .fails("Read", json!({"file_path": s.at("missing.txt")}))
        .await;
    assert_eq!(
        error,
        format!("File does not exist: {}", s.at("missing.txt"))
    );
    let error = s
        .fails("Read", json!({"file_path": s.at("a.txt"), "offset": "2"}))
        .await;
    assert!(error.contains("`offset`"), "{error}");
    let error = s.fails("Read", json!({"file_path": 3})).await;
    assert!(error.contains("`file_path`"), "{error}");
    let error = s.fails("Read", json!({"file_path": s.at("src")})).await;
    assert!(error.contains("directory"), "{error}");
}

#[tokio::test]
async fn write_creates_and_updates() {
    let s = Session::new(Isolation::Unsandboxed);
    let path = s.at("new/deep/b.txt");
    let out = s
        .ok("Write", json!({"file_path": path, "content": "bee"}))
        .await;
    assert_eq!(out.text, format!("File created successfully at: {path}"));
    assert_eq!(
        out.response,
        json!({"type": "create", "filePath": path, "content": "bee"})
    );
    let out = s
        .ok(
            "Write",
            json!({"file_path": "new/deep/b.txt", "content": "bee2"}),
        )
        .await;
    assert_eq!(out.text, format!("The file {path} has been updated."));
    assert_eq!(out.response["type"], "update");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "bee2");
    let error = s.fails("Write", json!({"file_path": path})).await;
    assert!(error.contains("`content`"), "{error}");
}

#[tokio::test]
async fn edit_replaces_exactly() {
    let s = Session::new(Isolation::Unsandboxed);
    let path = s.at("a.txt");
    let out = s
        .ok(
            "Edit",
            json!({"file_path": path, "old_string": "two", "new_string": "2"}),
        )
        .await;
    assert_eq!(
        out.response,
        json!({"filePath": path, "oldString": "two", "newString": "2", "replaceAll": false})
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\n2\nthree\n");
    std::fs::write(&path, "x x x").unwrap();
    let error = s
        .fails(
            "Edit",
            json!({"file_path": path, "old_string": "x", "new_string": "y"}),
        )
        .await;
    assert!(error.starts_with("Found 3 matches"), "{error}");
    s.ok(
        "Edit",
        json!({"file_path": path, "old_string": "x", "new_string": "y", "replace_all": true}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "y y y");
    let error = s
        .fails(
            "Edit",
            json!({"file_path": path, "old_string": "q", "new_string": "r"}),
        )
        .await;
    assert!(error.contains("not found"), "{error}");
    let error = s
        .fails(
            "Edit",
            json!({"file_path": path, "old_string": "y", "new_string": "y"}),
        )
        .await;
    assert!(error.contains("No changes"), "{error}");
    let error = s
        .fails(
            "Edit",
            json!({"file_path": s.at("none"), "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(error.starts_with("File does not exist"), "{error}");
    let error = s
        .fails(
            "Edit",
            json!({"file_path": path, "old_string": "y", "new_string": "z", "replace_all": "yes"}),
        )
        .await;
    assert!(error.contains("`replace_all`"), "{error}");
}

#[tokio::test]
async fn glob_lists_newest_first() {
    let s = Session::new(Isolation::Unsandboxed);
    std::fs::create_dir_all(s.dir.path().join("src/deep")).unwrap();
    std::fs::write(s.dir.path().join("src/deep/lib.rs"), "// lib\n").unwrap();
    std::fs::create_dir_all(s.dir.path().join(".git")).unwrap();
    std::fs::write(s.dir.path().join(".git/x.rs"), "").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(s.dir.path().join("src/main.rs"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let out = s.ok("Glob", json!({"pattern": "**/*.rs"})).await;
    assert_eq!(
        out.response["filenames"],
        json!([s.at("src/deep/lib.rs"), s.at("src/main.rs")])
    );
    assert_eq!(out.response["numFiles"], 2);
    assert_eq!(out.response["truncated"], false);
    let out = s
        .ok("Glob", json!({"pattern": "*.rs", "path": s.at("src")}))
        .await;
    assert_eq!(out.text, s.at("src/main.rs"));
    let out = s.ok("Glob", json!({"pattern": "*.zig"})).await;
    assert_eq!(out.text, "No files found");
    for i in 0..120 {
        std::fs::write(s.dir.path().join(format!("f{i}.txt")), "").unwrap();
    }
    let out = s.ok("Glob", json!({"pattern": "*.txt"})).await;
    assert_eq!(out.response["numFiles"], 100);
    assert_eq!(out.response["truncated"], true);
    let error = s.fails("Glob", json!({"pattern": "[oops"})).await;
    assert!(error.contains("glob"), "{error}");
    let error = s
        .fails("Glob", json!({"pattern": "*", "path": s.at("a.txt")}))
        .await;
    assert!(error.contains("not a directory"), "{error}");
}

#[tokio::test]
async fn grep_modes() {
    let s = Session::new(Isolation::Unsandboxed);
    std::fs::write(s.dir.path().join("bin.dat"), b"two\0two").unwrap();
    let out = s.ok("Grep", json!({"pattern": "t(wo|hree)"})).await;
    assert_eq!(out.response["filenames"], json!([s.at("a.txt")]));
    assert_eq!(out.text, format!("Found 1 files\n{}", s.at("a.txt")));
    let out = s
        .ok(
            "Grep",
            json!({"pattern": "T(WO|HREE)", "-i": true, "output_mode": "content"}),
        )
        .await;
    assert_eq!(out.text, format!("{0}:2:two\n{0}:3:three", s.at("a.txt")));
    assert_eq!(out.response["numLines"], 2);
    let out = s
        .ok(
            "Grep",
            json!({"pattern": "o", "output_mode": "count", "glob": "*.txt"}),
        )
        .await;
    assert!(
        out.text.starts_with(&format!("{}:2", s.at("a.txt"))),
        "{}",
        out.text
    );
    let out = s
        .ok("Grep", json!({"pattern": "e", "output_mode": "content", "-n": false, "head_limit": 1, "path": "a.txt"}))
        .await;
    assert_eq!(out.text, format!("{}:one", s.at("a.txt")));
    let out = s
        .ok("Grep", json!({"pattern": "println", "glob": "*.txt"}))
        .await;
    assert_eq!(out.text, "No files found");
    let error = s.fails("Grep", json!({"pattern": "("})).await;
    assert!(error.contains("`pattern`"), "{error}");
    let error = s
        .fails("Grep", json!({"pattern": "x", "output_mode": "lines"}))
        .await;
    assert!(error.contains("`output_mode`"), "{error}");
}

#[tokio::test]
async fn paths_outside_the_directory_are_refused() {
    let s = Session::new(Isolation::Unsandboxed);
    let secret = s.secret().display().to_string();
    let outside = s
        .outside
        .path()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    let error = s.fails("Read", json!({"file_path": secret})).await;
    assert!(
        error.contains("outside the session's working directory"),
        "{error}"
    );
    let error = s
        .fails("Read", json!({"file_path": "../x/../../etc/passwd"}))
        .await;
    assert!(error.contains("outside"), "{error}");
    let error = s
        .fails(
            "Write",
            json!({"file_path": format!("{outside}/w"), "content": "x"}),
        )
        .await;
    assert!(error.contains("outside"), "{error}");
    assert!(!Path::new(&outside).join("w").exists());
    s.fails("Glob", json!({"pattern": "*", "path": outside}))
        .await;
    s.fails("Grep", json!({"pattern": "s3cret", "path": "/etc"}))
        .await;
}

#[tokio::test]
async fn symlinks_do_not_lead_out() {
    let s = Session::new(Isolation::Unsandboxed);
    let secret = s.secret();
    let outside = secret.parent().unwrap().to_path_buf();
    symlink(&secret, s.dir.path().join("link")).unwrap();
    symlink(&outside, s.dir.path().join("out")).unwrap();
    symlink("../../../../../../..", s.dir.path().join("up")).unwrap();
    let error = s.fails("Read", json!({"file_path": s.at("link")})).await;
    assert!(error.contains("symbolic link"), "{error}");
    s.fails("Read", json!({"file_path": s.at("out/secret")}))
        .await;
    s.fails("Read", json!({"file_path": "up/etc/passwd"})).await;
    s.fails(
        "Edit",
        json!({"file_path": s.at("link"), "old_string": "s3cret", "new_string": "x"}),
    )
    .await;
    s.fails(
        "Write",
        json!({"file_path": s.at("out/new"), "content": "x"}),
    )
    .await;
    assert!(!outside.join("new").exists());
    s.fails("Glob", json!({"pattern": "*", "path": s.at("out")}))
        .await;
    s.fails("Grep", json!({"pattern": "s3cret", "path": s.at("out")}))
        .await;
    // Walks do not follow links either.
    let out = s.ok("Glob", json!({"pattern": "**/secret"})).await;
    assert_eq!(out.text, "No files found");
    let out = s.ok("Grep", json!({"pattern": "s3cret"})).await;
    assert_eq!(out.text, "No files found");
    // Writing over a link replaces the link, never the file it points to.
    s.ok(
        "Write",
        json!({"file_path": s.at("link"), "content": "mine"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "s3cret\n");
    assert!(
        !std::fs::symlink_metadata(s.dir.path().join("link"))
            .unwrap()
            .is_symlink()
    );
}

#[tokio::test]
async fn bash_runs_on_the_host_when_unsandboxed() {
    let s = Session::new(Isolation::Unsandboxed);
    let out = s
        .ok(
            "Bash",
            json!({"command": "pwd; echo err >&2; echo \"$HOME\"", "description": "x"}),
        )
        .await;
    assert_eq!(
        out.response["stdout"],
        format!("{0}\n{0}\n", s.cwd().display())
    );
    assert_eq!(out.response["stderr"], "err\n");
    assert_eq!(out.response["exit_code"], 0);
    assert_eq!(out.response["interrupted"], false);
    let out = s.call("Bash", json!({"command": "echo no; exit 3"})).await;
    assert_eq!(out.text, "no\nExit code 3");
    assert_eq!(out.error.as_deref(), Some("no\nExit code 3"));
    assert_eq!(out.response["exit_code"], 3);
    let error = s
        .fails("Bash", json!({"command": "true", "timeout": "1s"}))
        .await;
    assert!(error.contains("`timeout`"), "{error}");
    let error = s.fails("Bash", json!({})).await;
    assert!(error.contains("`command`"), "{error}");
}

#[tokio::test]
async fn bash_timeout_kills_the_command() {
    let s = Session::new(Isolation::Unsandboxed);
    let started = std::time::Instant::now();
    let out = s
        .call(
            "Bash",
            json!({"command": "sleep 30; echo late", "timeout": 300}),
        )
        .await;
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(out.response["interrupted"], true);
    assert!(out.error.unwrap().contains("timed out"));
    assert!(!out.text.contains("late"));
}

#[tokio::test]
async fn bash_output_that_is_not_utf8_is_converted() {
    let s = Session::new(Isolation::Unsandboxed);
    let out = s.ok("Bash", json!({"command": "printf 'a\\377b'"})).await;
    assert_eq!(out.response["stdout"], "a\u{fffd}b");
}

#[tokio::test]
async fn bash_in_the_sandbox_sees_only_the_directory() {
    if let Some(reason) = sandbox_unavailable() {
        hookbox_test_support::skip("bash_in_the_sandbox_sees_only_the_directory", reason);
        return;
    }
    let s = Session::new(Isolation::Sandboxed);
    let secret = s.secret();
    let out = s
        .call(
            "Bash",
            json!({"command": format!(
                "pwd; echo made > made.txt; cat {}; printf 'x\\377'; exit 0",
                secret.display()
            )}),
        )
        .await;
    let stdout = out.response["stdout"].as_str().unwrap().to_owned();
    assert!(
        stdout.starts_with(&format!("{}\n", s.cwd().display())),
        "{}",
        out.text
    );
    assert!(stdout.ends_with("x\u{fffd}"), "{stdout}");
    assert!(!out.text.contains("s3cret"), "{}", out.text);
    assert!(
        out.response["stderr"]
            .as_str()
            .unwrap()
            .contains("No such file")
    );
    assert_eq!(
        std::fs::read_to_string(s.cwd().join("made.txt")).unwrap(),
        "made\n"
    );
    let out = s
        .call("Bash", json!({"command": "sleep 30", "timeout": 300}))
        .await;
    assert_eq!(out.response["interrupted"], true);
}
