use std::os::unix::fs::symlink;

use hookbox_env::{Environment, FileTools, ToolError};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{Home, tools};

async fn environment(home: &Home, agents_writable: bool) -> Environment {
    home.create(json!({
        "agents_writable": agents_writable,
        "sources": [
            {"type": "inline", "target": ".agents/hooks.json", "content": "{}"},
            {"type": "inline", "target": "workspace/a.txt", "content": "alpha"},
            {"type": "inline", "target": "workspace/sub/b.txt", "content": "beta"},
        ]
    }))
    .await
}

fn call(tools: &FileTools, tool: &str, args: Value) -> Result<Value, ToolError> {
    tools.call(tool, &args)
}

fn read(tools: &FileTools, path: &str) -> Result<Value, ToolError> {
    call(tools, "read_file", json!({ "path": path }))
}

#[tokio::test]
async fn read_write_list_delete_round_trip() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let tools = tools(&env);
    assert_eq!(read(&tools, "a.txt").unwrap(), json!({"content": "alpha"}));
    let written = call(
        &tools,
        "write_file",
        json!({"path": "new/deep/c.txt", "content": "gamma"}),
    )
    .unwrap();
    assert_eq!(
        written,
        json!({"path": "/workspace/new/deep/c.txt", "bytes_written": 5})
    );
    assert_eq!(
        read(&tools, "/workspace/new/deep/c.txt").unwrap(),
        json!({"content": "gamma"})
    );
    call(
        &tools,
        "write_file",
        json!({"path": "bin.dat", "content": "/w==", "encoding": "base64"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(env.root().join("workspace/bin.dat")).unwrap(),
        [0xff]
    );
    assert_eq!(
        read(&tools, "bin.dat").unwrap(),
        json!({"content": "/w==", "encoding": "base64"})
    );

    let listing = call(&tools, "list_files", json!({})).unwrap();
    let names: Vec<_> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "/workspace/a.txt",
            "/workspace/bin.dat",
            "/workspace/new",
            "/workspace/sub"
        ]
    );
    assert_eq!(
        listing["entries"][0],
        json!({"path": "/workspace/a.txt", "name": "a.txt", "type": "file", "size_bytes": 5})
    );
    let recursive = call(
        &tools,
        "list_files",
        json!({"path": "/workspace", "recursive": true}),
    )
    .unwrap();
    assert_eq!(recursive["entries"].as_array().unwrap().len(), 7);

    assert_eq!(
        call(&tools, "delete_file", json!({"path": "a.txt"})).unwrap(),
        json!({"path": "/workspace/a.txt", "deleted": true})
    );
    assert!(matches!(
        read(&tools, "a.txt"),
        Err(ToolError::NotFound { .. })
    ));
}

#[tokio::test]
async fn arguments_are_checked() {
    let home = Home::new();
    let tools = tools(&environment(&home, false).await);
    for (tool, args, needle) in [
        ("read_file", json!({}), "missing required argument `path`"),
        (
            "read_file",
            json!({"path": "a", "mode": "x"}),
            "unknown argument `mode`",
        ),
        ("read_file", json!({"path": 3}), "must be a string"),
        ("read_file", json!("a.txt"), "must be an object"),
        (
            "write_file",
            json!({"path": "x"}),
            "missing required argument `content`",
        ),
        (
            "write_file",
            json!({"path": "x", "content": "y", "encoding": "hex"}),
            "unknown encoding",
        ),
        (
            "write_file",
            json!({"path": "x", "content": "!", "encoding": "base64"}),
            "not valid base64",
        ),
        ("list_files", json!({"recursive": "yes"}), "true or false"),
        ("read_file", json!({"path": ""}), "is empty"),
        ("rm_rf", json!({}), "unknown file tool"),
    ] {
        let err = call(&tools, tool, args).unwrap_err().to_string();
        assert!(err.contains(needle), "{tool}: {err}");
    }
}

#[tokio::test]
async fn f1_traversal_absolute_and_nul_paths_never_reach_the_host() {
    let home = Home::new();
    let tools = tools(&environment(&home, false).await);
    for path in [
        "../../etc/passwd",
        "../../x",
        "/workspace/a/../../../x",
        "a\u{0}b",
    ] {
        assert!(
            matches!(read(&tools, path), Err(ToolError::InvalidPath { .. })),
            "{path}"
        );
    }
    for path in [
        "/etc/shadow",
        "/etc/passwd",
        "a/../../x",
        "%2e%2e/%2e%2e/etc/passwd",
    ] {
        let result = read(&tools, path);
        assert!(
            matches!(result, Err(ToolError::NotFound { .. })),
            "{path}: {result:?}"
        );
    }
    let err = call(
        &tools,
        "write_file",
        json!({"path": "../../etc/x", "content": "x"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::InvalidPath { .. }), "{err}");
    let err = call(
        &tools,
        "write_file",
        json!({"path": "/etc/x", "content": "x"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::ReadOnly { .. }), "{err}");
    assert!(err.to_string().contains("read-only location"), "{err}");
    let err = call(
        &tools,
        "write_file",
        json!({"path": "/workspace", "content": "x"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::IsDirectory { .. }), "{err}");
}

#[tokio::test]
async fn f2_symlinks_resolve_inside_the_root_and_writes_replace_the_link() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let ws = env.root().join("workspace");
    let host = tempfile::tempdir().unwrap();
    let host_file = host.path().join("host.txt");
    std::fs::write(&host_file, "HOST CONTENT").unwrap();
    symlink("/etc/passwd", ws.join("passwd")).unwrap();
    symlink("/root", ws.join("rootdir")).unwrap();
    symlink(&host_file, ws.join("hostlink")).unwrap();
    symlink(host.path(), ws.join("hostdir")).unwrap();
    symlink("/.agents", ws.join("agents")).unwrap();
    symlink("sub", ws.join("rel")).unwrap();
    let tools = tools(&env);

    for path in ["passwd", "rootdir/.bashrc", "hostlink", "hostdir/host.txt"] {
        assert!(
            matches!(read(&tools, path), Err(ToolError::NotFound { .. })),
            "{path}"
        );
    }
    assert!(matches!(
        call(&tools, "list_files", json!({"path": "rootdir"})),
        Err(ToolError::NotFound { .. })
    ));
    // In-root resolution: the environment's own /etc/passwd, if it had one.
    std::fs::create_dir_all(env.root().join("etc")).unwrap();
    std::fs::write(env.root().join("etc/passwd"), "in-root").unwrap();
    assert_eq!(
        read(&tools, "passwd").unwrap(),
        json!({"content": "in-root"})
    );
    assert_eq!(
        read(&tools, "rel/b.txt").unwrap(),
        json!({"content": "beta"})
    );

    call(
        &tools,
        "write_file",
        json!({"path": "hostlink", "content": "replaced"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "HOST CONTENT");
    assert!(
        !std::fs::symlink_metadata(ws.join("hostlink"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("hostlink")).unwrap(),
        "replaced"
    );

    for path in ["hostdir/new.txt", "agents/hooks.json", "rootdir/x"] {
        let err = call(&tools, "write_file", json!({"path": path, "content": "x"})).unwrap_err();
        assert!(matches!(err, ToolError::LeavesArea { .. }), "{path}: {err}");
    }
    assert!(!host.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(env.root().join(".agents/hooks.json")).unwrap(),
        "{}"
    );
    call(
        &tools,
        "write_file",
        json!({"path": "rel/c.txt", "content": "c"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(ws.join("sub/c.txt")).unwrap(), "c");

    let listing = call(&tools, "list_files", json!({"recursive": true})).unwrap();
    let kinds: Vec<_> = listing["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "hostdir")
        .map(|e| e["type"].clone())
        .collect();
    assert_eq!(kinds, [json!("symlink")]);
    let text = listing.to_string();
    assert!(
        !text.contains("host.txt"),
        "listing followed a link: {text}"
    );
}

#[tokio::test]
async fn f4_writes_never_go_through_a_hard_link() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let host = tempfile::tempdir_in(home.dir.path().parent().unwrap()).unwrap();
    let host_file = host.path().join("host.txt");
    std::fs::write(&host_file, "HOST CONTENT").unwrap();
    let device = |path: &std::path::Path| {
        std::os::unix::fs::MetadataExt::dev(&std::fs::metadata(path).unwrap())
    };
    if device(host.path()) != device(env.root()) {
        return; // Different filesystems: a hard link cannot exist, so there is nothing to test.
    }
    std::fs::hard_link(&host_file, env.root().join("workspace/hl")).unwrap();
    let tools = tools(&env);
    call(
        &tools,
        "write_file",
        json!({"path": "hl", "content": "new"}),
    )
    .unwrap();
    assert_eq!(std::fs::read_to_string(&host_file).unwrap(), "HOST CONTENT");
    assert_eq!(read(&tools, "hl").unwrap(), json!({"content": "new"}));
}

#[tokio::test]
async fn reads_refuse_a_file_with_other_names() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let ws = env.root().join("workspace");
    std::fs::create_dir_all(ws.join("private")).unwrap();
    std::fs::create_dir_all(ws.join("pub")).unwrap();
    std::fs::write(ws.join("private/employees.json"), "{\"salary\": 1}").unwrap();
    // A second name a gate guarding `private/` would allow (made on the host: inside the
    // sandbox `link` is refused).
    std::fs::hard_link(ws.join("private/employees.json"), ws.join("pub/x.json")).unwrap();
    let tools = tools(&env);
    for path in ["pub/x.json", "private/employees.json"] {
        let error = read(&tools, path).unwrap_err();
        assert!(
            matches!(error, ToolError::HardLinked { .. }),
            "{path}: {error:?}"
        );
        assert_eq!(
            error.to_string(),
            format!(
                "read_file: `/workspace/{path}` is a file with other names too (hard links), \
                 and hooks judged only this one; file tools refuse such files: read it through \
                 a copy, or remove its other names first"
            )
        );
    }
    std::fs::remove_file(ws.join("pub/x.json")).unwrap();
    assert_eq!(
        read(&tools, "private/employees.json").unwrap(),
        json!({"content": "{\"salary\": 1}"})
    );
}

#[tokio::test]
async fn f5_delete_removes_links_not_targets_and_refuses_directories() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let ws = env.root().join("workspace");
    let host = tempfile::tempdir().unwrap();
    std::fs::write(host.path().join("keep.txt"), "keep").unwrap();
    symlink(host.path().join("keep.txt"), ws.join("filelink")).unwrap();
    symlink(host.path(), ws.join("dirlink")).unwrap();
    let tools = tools(&env);
    for link in ["filelink", "dirlink"] {
        call(&tools, "delete_file", json!({ "path": link })).unwrap();
        assert!(std::fs::symlink_metadata(ws.join(link)).is_err(), "{link}");
    }
    assert_eq!(
        std::fs::read_to_string(host.path().join("keep.txt")).unwrap(),
        "keep"
    );
    for dir in ["sub", "/workspace"] {
        let err = call(&tools, "delete_file", json!({ "path": dir })).unwrap_err();
        assert!(matches!(err, ToolError::IsDirectory { .. }), "{dir}: {err}");
    }
    assert!(ws.join("sub/b.txt").is_file());
    let err = call(
        &tools,
        "delete_file",
        json!({"path": "/.agents/hooks.json"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::ReadOnly { .. }), "{err}");
    assert!(matches!(
        call(&tools, "delete_file", json!({"path": "missing"})),
        Err(ToolError::NotFound { .. })
    ));
}

#[tokio::test]
async fn agents_is_writable_only_when_the_environment_says_so() {
    let home = Home::new();
    let locked = environment(&home, false).await;
    let err = call(
        &tools(&locked),
        "write_file",
        json!({"path": "/.agents/hooks.json", "content": "{\"x\":{}}"}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("read-only location"), "{err}");
    assert_eq!(
        std::fs::read_to_string(locked.root().join(".agents/hooks.json")).unwrap(),
        "{}"
    );

    let open = environment(&home, true).await;
    call(
        &tools(&open),
        "write_file",
        json!({"path": "/.agents/hooks.json", "content": "{\"x\":{}}"}),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_to_string(open.root().join(".agents/hooks.json")).unwrap(),
        "{\"x\":{}}"
    );
    let err = call(
        &tools(&open),
        "write_file",
        json!({"path": "/etc/x", "content": "x"}),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::ReadOnly { .. }), "{err}");
}

#[tokio::test]
async fn odd_files_are_refused_without_hanging() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let ws = env.root().join("workspace");
    let big = std::fs::File::create(ws.join("big")).unwrap();
    big.set_len(11 * 1024 * 1024).unwrap();
    let tools = tools(&env);
    assert!(matches!(
        read(&tools, "big"),
        Err(ToolError::TooLarge { .. })
    ));
    assert!(matches!(
        read(&tools, "sub"),
        Err(ToolError::IsDirectory { .. })
    ));
    rustix::fs::mknodat(
        rustix::fs::CWD,
        ws.join("fifo").as_path(),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    assert!(matches!(
        read(&tools, "fifo"),
        Err(ToolError::WrongType { .. })
    ));
    let err = call(&tools, "list_files", json!({"path": "sub/b.txt"})).unwrap_err();
    assert!(matches!(err, ToolError::WrongType { .. }), "{err}");
}

#[tokio::test]
async fn a_relative_workspace_path_without_a_nested_workspace_names_the_path_meant() {
    let home = Home::new();
    let env = environment(&home, false).await;
    let tools = tools(&env);
    // The Files API's `workspace/a.txt` is /workspace/a.txt; as a tool path it would be
    // /workspace/workspace/a.txt.
    for (tool, args) in [
        ("read_file", json!({"path": "workspace/a.txt"})),
        ("read_file", json!({"path": "./workspace/sub/b.txt"})),
        (
            "write_file",
            json!({"path": "workspace/new.txt", "content": "x"}),
        ),
        ("list_files", json!({"path": "workspace/sub"})),
    ] {
        let error = call(&tools, tool, args.clone()).unwrap_err().to_string();
        let meant = args["path"]
            .as_str()
            .unwrap()
            .trim_start_matches("./")
            .trim_start_matches("workspace");
        assert!(
            error.contains(&format!("you probably meant /workspace{meant}")),
            "{tool} {args}: {error}"
        );
    }
    assert!(!env.root().join("workspace/workspace").exists());
    // Absolute paths, and `..` back to /workspace, mean what they say.
    assert_eq!(
        read(&tools, "/workspace/a.txt").unwrap(),
        json!({"content": "alpha"})
    );
    assert_eq!(
        read(&tools, "../workspace/a.txt").unwrap(),
        json!({"content": "alpha"})
    );
    // With a real /workspace/workspace, the relative path is taken as written.
    call(
        &tools,
        "write_file",
        json!({"path": "/workspace/workspace/a.txt", "content": "nested"}),
    )
    .unwrap();
    assert_eq!(
        read(&tools, "workspace/a.txt").unwrap(),
        json!({"content": "nested"})
    );
}
