//! A sandbox over a host directory ([`Sandbox::over_directory`]): the directory is visible,
//! writable and at its own path; nothing else of the host's is.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hookbox_exec::{
    Bind, ExecError, ExitKind, IsolationError, ProcessOutput, ProcessSpec, Sandbox,
    check_isolation, run,
};

use super::support::shared;

/// A project directory and, beside it, a sibling holding a secret; removed on drop.
struct Project {
    dir: tempfile::TempDir,
    sibling: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let sibling = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("hello.txt"), "hello\n").unwrap();
        std::fs::write(sibling.path().join("secret"), "s3cret\n").unwrap();
        Self { dir, sibling }
    }

    /// The project's canonical path.
    fn path(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn secret(&self) -> PathBuf {
        self.sibling.path().canonicalize().unwrap().join("secret")
    }
}

/// Runs `command` with `sh -c` in a sandbox over `project`.
async fn sh(project: &Project, command: &str) -> ProcessOutput {
    let sandbox = Sandbox::over_directory(project.dir.path()).unwrap();
    run(&ProcessSpec {
        sandbox: Some(sandbox),
        ..ProcessSpec::shell(command, Duration::from_secs(30))
    })
    .await
    .unwrap()
}

/// Like [`sh`], asserting exit 0 and returning stdout.
async fn ok(project: &Project, command: &str) -> String {
    let out = sh(project, command).await;
    assert_eq!(
        out.exit,
        ExitKind::Exited(0),
        "`{command}` failed: {}{}",
        out.stdout.to_text(),
        out.stderr.to_text()
    );
    out.stdout.to_text()
}

/// `None` when sandboxes can be made here, else why not (the test is then skipped).
fn unavailable() -> Option<String> {
    check_isolation().err().map(|error| error.to_string())
}

macro_rules! require_isolation {
    () => {
        if let Some(reason) = unavailable() {
            hookbox_test_support::skip(
                module_path!(),
                format_args!("isolation is unavailable: {reason}"),
            );
            return;
        }
    };
}

#[tokio::test]
async fn the_directory_is_at_its_own_path_and_writable() {
    let _guard = shared().await;
    require_isolation!();
    let project = Project::new();
    let out = ok(
        &project,
        "pwd; echo \"$HOME\"; cat hello.txt; echo made > made.txt; mkdir -p sub/deep; \
         echo deep > sub/deep/f; echo tmp > /tmp/t",
    )
    .await;
    let path = project.path();
    assert_eq!(
        out,
        format!("{0}\n{0}\nhello\n", path.display()),
        "working directory and HOME are the host path"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("made.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(path.join("sub/deep/f")).unwrap(),
        "deep\n"
    );
}

#[tokio::test]
async fn nothing_else_of_the_host_is_visible() {
    let _guard = shared().await;
    require_isolation!();
    let project = Project::new();
    let secret = project.secret();
    let host_home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let out = sh(
        &project,
        &format!(
            "cat {secret}; ls {home}; ls {sibling}; ls /home /root /var /run /sys 2>&1 | head -3; \
             ls -a /tmp; exit 0",
            secret = secret.display(),
            home = host_home,
            sibling = project.sibling.path().display(),
        ),
    )
    .await;
    let text = format!("{}{}", out.stdout.to_text(), out.stderr.to_text());
    assert!(!text.contains("s3cret"), "{text}");
    assert!(text.contains("No such file"), "{text}");
    // The host's /tmp is not there: only the chain down to the project.
    let stdout = out.stdout.to_text();
    let listed: Vec<&str> = stdout
        .lines()
        .filter(|line| !line.starts_with('.') && !line.starts_with("ls"))
        .collect();
    assert!(listed.len() <= 1, "{stdout}");
}

#[tokio::test]
async fn dot_dot_and_links_do_not_escape() {
    let _guard = shared().await;
    require_isolation!();
    let project = Project::new();
    let secret = project.secret();
    std::os::unix::fs::symlink(&secret, project.path().join("link")).unwrap();
    std::os::unix::fs::symlink("..", project.path().join("up")).unwrap();
    let sibling_name = secret
        .parent()
        .and_then(Path::file_name)
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let out = sh(
        &project,
        &format!(
            "cat link; cat ../{sibling_name}/secret; cat up/{sibling_name}/secret; \
             cd ../../../../..; pwd; cat .{secret}; ls; \
             touch /x /usr/x /etc/x; echo out > ../outside; exit 0",
            secret = secret.display()
        ),
    )
    .await;
    let text = format!("{}{}", out.stdout.to_text(), out.stderr.to_text());
    assert!(!text.contains("s3cret"), "{text}");
    assert!(out.stdout.to_text().starts_with("/\n"), "{text}");
    // Nothing was written beside the project on the host.
    let parent = project.path().parent().unwrap().to_path_buf();
    assert!(!parent.join("outside").exists());
    assert!(!Path::new("/x").exists());
}

#[tokio::test]
async fn bad_binds_are_refused_before_anything_runs() {
    let _guard = shared().await;
    let project = Project::new();
    let host = project.path();
    for target in [
        "/",
        "relative/dir",
        "/usr/local/project",
        "/proc/x",
        "/etc",
        "/tmp",
        "/tmp/../etc/x",
    ] {
        let sandbox = Sandbox {
            root: None,
            read_only: Vec::new(),
            binds: vec![Bind {
                host: host.clone(),
                target: PathBuf::from(target),
                writable: true,
            }],
            ..Sandbox::new("/nonexistent")
        };
        let error = run(&ProcessSpec {
            sandbox: Some(sandbox),
            ..ProcessSpec::shell(
                &format!("touch {}/ran", host.display()),
                Duration::from_secs(5),
            )
        })
        .await
        .unwrap_err();
        assert!(
            matches!(
                error,
                ExecError::Isolation {
                    source: IsolationError::Bind { .. },
                    ..
                }
            ),
            "{target}: {error}"
        );
    }
    // Nested binds.
    let nested = Sandbox {
        root: None,
        binds: vec![
            Bind {
                host: host.clone(),
                target: PathBuf::from("/srv/a"),
                writable: true,
            },
            Bind {
                host: host.clone(),
                target: PathBuf::from("/srv/a/b"),
                writable: false,
            },
        ],
        ..Sandbox::new("/nonexistent")
    };
    let error = run(&ProcessSpec {
        sandbox: Some(nested),
        ..ProcessSpec::shell("true", Duration::from_secs(5))
    })
    .await
    .unwrap_err();
    assert!(error.to_string().contains("nest"), "{error}");
    // Not a directory.
    assert!(matches!(
        Sandbox::over_directory(&host.join("hello.txt")),
        Err(IsolationError::Bind { .. })
    ));
    assert!(!host.join("ran").exists());
}

#[tokio::test]
async fn read_only_binds_and_elsewhere_targets() {
    let _guard = shared().await;
    require_isolation!();
    let project = Project::new();
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("d.txt"), "data\n").unwrap();
    let mut sandbox = Sandbox::over_directory(project.dir.path()).unwrap();
    sandbox.binds.push(Bind {
        host: data.path().to_path_buf(),
        target: PathBuf::from("/srv/data"),
        writable: false,
    });
    let out = run(&ProcessSpec {
        sandbox: Some(sandbox),
        ..ProcessSpec::shell(
            "cat /srv/data/d.txt; echo x > /srv/data/new && echo WROTE; echo y > ok.txt",
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap();
    assert_eq!(out.stdout.to_text(), "data\n", "{}", out.stderr.to_text());
    assert!(!data.path().join("new").exists());
    assert!(project.path().join("ok.txt").exists());
}

#[tokio::test]
async fn parts_of_the_directory_can_be_bound_again_read_only_or_pinned() {
    let _guard = shared().await;
    require_isolation!();
    let project = Project::new();
    let host = project.path();
    std::fs::create_dir_all(host.join(".git/hooks")).unwrap();
    std::fs::write(host.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(host.join("scripts/deep")).unwrap();
    std::fs::write(host.join("scripts/deep/hook.sh"), "echo safe\n").unwrap();
    let mut sandbox = Sandbox::over_directory(&host).unwrap();
    for (path, writable) in [
        (host.join(".git"), false),
        (host.join("scripts"), true),
        (host.join("scripts/deep"), true),
        (host.join("scripts/deep/hook.sh"), false),
    ] {
        sandbox.binds.push(Bind {
            host: path.clone(),
            target: path,
            writable,
        });
    }
    let attempts = [
        "echo evil >> .git/config",
        "echo evil > .git/hooks/pre-commit",
        "mv .git moved",
        "rm -rf .git",
        "echo evil > scripts/deep/hook.sh",
        "rm -f scripts/deep/hook.sh",
        "mv scripts/deep/hook.sh scripts/deep/old.sh",
        "mv scripts elsewhere",
        "mv scripts/deep scripts/other",
    ];
    let script = attempts
        .iter()
        .map(|attempt| format!("if {attempt} 2>/dev/null; then echo 'DONE {attempt}'; fi"))
        .collect::<Vec<_>>()
        .join("\n");
    let out = run(&ProcessSpec {
        sandbox: Some(sandbox),
        ..ProcessSpec::shell(
            &format!(
                "{script}\necho fine > scripts/deep/new.txt && echo fine > top.txt && echo OK"
            ),
            Duration::from_secs(30),
        )
    })
    .await
    .unwrap();
    assert_eq!(out.stdout.to_text(), "OK\n", "{}", out.stderr.to_text());
    assert_eq!(
        std::fs::read_to_string(host.join(".git/config")).unwrap(),
        "[core]\n"
    );
    assert!(!host.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        std::fs::read_to_string(host.join("scripts/deep/hook.sh")).unwrap(),
        "echo safe\n"
    );
    assert!(host.join("scripts/deep/new.txt").exists());
    assert!(host.join("top.txt").exists());
}

#[tokio::test]
async fn a_nested_bind_must_be_the_same_place_as_its_parent() {
    let _guard = shared().await;
    let project = Project::new();
    let host = project.path();
    std::fs::create_dir(host.join("sub")).unwrap();
    let mut sandbox = Sandbox::over_directory(&host).unwrap();
    sandbox.binds.push(Bind {
        host: project.sibling.path().to_path_buf(),
        target: host.join("sub"),
        writable: false,
    });
    let error = run(&ProcessSpec {
        sandbox: Some(sandbox),
        ..ProcessSpec::shell("true", Duration::from_secs(5))
    })
    .await
    .unwrap_err();
    assert!(error.to_string().contains("nest"), "{error}");
}
