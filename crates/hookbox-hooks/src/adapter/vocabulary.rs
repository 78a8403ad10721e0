//! One vocabulary per policy dialect: a Claude-shaped tool call (the form every adapter
//! translates its agent's call into) as the sandbox dialect sees it, with the seeds' tool names
//! and argument shapes. The table is documented in `docs/agent-adapters.md`.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::text;
use crate::event::HookEvent;
use crate::input::EventInput;

/// Claude Code tool → sandbox tool, for the tools that have a sandbox counterpart. Every other
/// tool (`Edit`, `Glob`, `WebFetch`, `mcp__github__create_issue`…) keeps its name and input.
const SANDBOX_NAMES: [(&str, &str); 4] = [
    ("Bash", "code_execution"),
    ("Read", "read_file"),
    ("Write", "write_file"),
    ("LS", "list_files"),
];

/// The sandbox-dialect form of a Claude-shaped tool event (`PreToolUse`, `PostToolUse`,
/// `PostToolUseFailure`), or `None` for other events. `environment_id` is `AGENT:SESSION`.
pub(super) fn sandbox_event(
    agent: &str,
    event: HookEvent,
    payload: &Map<String, Value>,
) -> Option<EventInput> {
    let tool = text(payload, "tool_name")?;
    let input = payload.get("tool_input")?.as_object()?;
    let cwd = Path::new(text(payload, "cwd").unwrap_or("/"));
    let environment_id = format!(
        "{agent}:{}",
        text(payload, "session_id").unwrap_or_default()
    );
    let (name, args) = sandbox_call(tool, input, cwd);
    let call = match event {
        HookEvent::PreToolUse => EventInput::pre_tool_execution(name, args, &environment_id, None),
        HookEvent::PostToolUse => EventInput::post_tool_execution(
            name,
            args,
            &environment_id,
            None,
            payload.get("tool_response").cloned(),
            None,
        ),
        HookEvent::PostToolUseFailure => EventInput::post_tool_execution(
            name,
            args,
            &environment_id,
            None,
            None,
            Some(text(payload, "error").unwrap_or("the tool failed")),
        ),
        _ => return None,
    };
    // Paths are resolved for the sandbox dialect; the model's own values stay visible.
    let resolved_paths = matches!(name, "read_file" | "write_file" | "list_files");
    Some(if resolved_paths {
        call.with_raw_args(Value::Object(input.clone()))
    } else {
        call
    })
}

/// The sandbox name and arguments of Claude tool `tool` called with `input`; a tool without a
/// counterpart, or whose input lacks what the counterpart needs, keeps its name and input.
fn sandbox_call<'a>(tool: &'a str, input: &Map<String, Value>, cwd: &Path) -> (&'a str, Value) {
    let unchanged = (tool, Value::Object(input.clone()));
    let Some(&(_, name)) = SANDBOX_NAMES.iter().find(|(claude, _)| *claude == tool) else {
        return unchanged;
    };
    let path = |key: &str| text(input, key).map(|raw| resolve(cwd, raw));
    let args = match name {
        "code_execution" => {
            text(input, "command").map(|code| json!({"code": code, "language": "bash"}))
        }
        "read_file" => path("file_path").map(|path| json!({"path": path})),
        "write_file" => path("file_path")
            .zip(input.get("content"))
            .map(|(path, content)| json!({"path": path, "content": content})),
        "list_files" => path("path").map(|path| json!({"path": path})),
        _ => None,
    };
    match args {
        Some(args) => (name, args),
        None => unchanged,
    }
}

/// `raw` as the absolute path the tool will act on: made absolute against `cwd`, `..` and `.`
/// removed, and symbolic links followed as far as the path exists (so `/public/../private/x`
/// or a link into `/private/` is seen as the `/private/` path it is).
fn resolve(cwd: &Path, raw: &str) -> String {
    // The agents' file tools read `~` as the home directory.
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let raw = match (raw.strip_prefix('~'), &home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            home.join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(raw),
    };
    let mut lexical = PathBuf::from("/");
    for component in cwd.join(raw).components() {
        match component {
            Component::ParentDir => {
                // As the kernel does: `..` after the links so far are followed.
                if let Ok(real) = std::fs::canonicalize(&lexical) {
                    lexical = real;
                }
                lexical.pop();
            }
            Component::Normal(part) => lexical.push(part),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    // Follow links through the longest existing prefix, then re-append the rest.
    let mut existing = lexical.clone();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut path = real;
            path.extend(rest.iter().rev());
            return path.display().to_string();
        }
        match (existing.file_name().map(ToOwned::to_owned), existing.pop()) {
            (Some(name), true) => rest.push(name),
            _ => return lexical.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `..` after a link goes up from where the link points, as the kernel resolves it, and
    /// `~` is the home directory, as the agents' file tools read it.
    #[test]
    fn paths_resolve_as_the_agent_will_open_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(dir.path()).expect("canonical");
        std::fs::create_dir_all(root.join("private/sub")).expect("mkdir");
        std::fs::create_dir_all(root.join("proj")).expect("mkdir");
        std::os::unix::fs::symlink(root.join("private/sub"), root.join("proj/lnk")).expect("link");
        let proj = root.join("proj");
        assert_eq!(
            resolve(&proj, "lnk/../records.csv"),
            root.join("private/records.csv").display().to_string()
        );
        assert_eq!(
            resolve(&proj, "lnk/x/../../y"),
            root.join("private/y").display().to_string()
        );
        let home =
            std::fs::canonicalize(std::env::var_os("HOME").expect("HOME")).expect("home exists");
        assert_eq!(
            resolve(&proj, "~/.ssh/id_rsa"),
            home.join(".ssh/id_rsa").display().to_string()
        );
        assert_eq!(resolve(&proj, "~"), home.display().to_string());
        assert_eq!(
            resolve(&proj, "~user/x"),
            proj.join("~user/x").display().to_string()
        );
    }

    fn call(tool: &str, input: Value) -> (String, Value) {
        let Value::Object(input) = input else {
            unreachable!("test inputs are objects")
        };
        let (name, args) = sandbox_call(tool, &input, Path::new("/nonexistent-cwd"));
        (name.to_owned(), args)
    }

    #[test]
    fn claude_tools_take_the_seeds_names_and_shapes() {
        assert_eq!(
            call(
                "Bash",
                json!({"command": "rm -rf victim", "description": "x"})
            ),
            (
                "code_execution".into(),
                json!({"code": "rm -rf victim", "language": "bash"})
            )
        );
        assert_eq!(
            call(
                "Read",
                json!({"file_path": "/nonexistent-root/private/a.csv", "limit": 3})
            ),
            (
                "read_file".into(),
                json!({"path": "/nonexistent-root/private/a.csv"})
            )
        );
        assert_eq!(
            call("Write", json!({"file_path": "notes.txt", "content": "hi"})),
            (
                "write_file".into(),
                json!({"path": "/nonexistent-cwd/notes.txt", "content": "hi"})
            )
        );
        assert_eq!(
            call("LS", json!({"path": "/nonexistent-root"})),
            ("list_files".into(), json!({"path": "/nonexistent-root"}))
        );
    }

    #[test]
    fn tools_without_a_counterpart_keep_name_and_input() {
        let input = json!({"owner": "o", "title": "t"});
        assert_eq!(
            call("mcp__github__create_issue", input.clone()),
            ("mcp__github__create_issue".into(), input)
        );
        let edit = json!({"file_path": "/a", "old_string": "x", "new_string": "y"});
        assert_eq!(call("Edit", edit.clone()), ("Edit".into(), edit));
        // A Bash call without a command string is not invented into a code_execution.
        assert_eq!(
            call("Bash", json!({"command": 5})),
            ("Bash".into(), json!({"command": 5}))
        );
    }

    #[test]
    fn paths_are_resolved_before_a_gate_sees_them() {
        assert_eq!(
            resolve(Path::new("/nonexistent-a/public"), "../private/x.csv"),
            "/nonexistent-a/private/x.csv"
        );
        let dir = tempfile::tempdir().expect("temp dir");
        let private = dir.path().join("private");
        std::fs::create_dir(&private).expect("mkdir");
        let link = dir.path().join("innocent");
        std::os::unix::fs::symlink(&private, &link).expect("symlink");
        let real = std::fs::canonicalize(&private).expect("canonical");
        assert_eq!(
            resolve(dir.path(), "innocent/records.csv"),
            real.join("records.csv").display().to_string()
        );
    }
}

#[cfg(test)]
mod docs {
    use super::SANDBOX_NAMES;

    #[test]
    fn the_mapping_table_in_the_docs_is_this_one() {
        let doc = include_str!("../../../../docs/agent-adapters.md");
        for (claude, sandbox) in SANDBOX_NAMES {
            assert!(
                doc.lines()
                    .any(|line| line.starts_with(&format!("| `{claude}` |"))
                        && line.contains(&format!("| `{sandbox}` |"))),
                "docs/agent-adapters.md has no row mapping `{claude}` to `{sandbox}`"
            );
        }
    }
}
