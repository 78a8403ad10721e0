//! `Sandbox::listen_inside`: a listener opened on 127.0.0.1 inside the sandbox's network
//! namespace, accepted on by the parent outside. Nothing else is reachable.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookbox_exec::{ExitKind, ListenInside, ProcessOutput, ProcessSpec, Sandbox, run};

use super::support::shared;

/// The listeners delivered so far.
type Delivered = Arc<Mutex<Vec<TcpListener>>>;

/// A sandbox over a fresh root listening on `port` inside; every listener delivered is
/// answered by a thread that replies `pong <line>` to each connection, and kept (a clone) in
/// the returned list.
fn answering_sandbox(root: &Path, port: u16) -> (Sandbox, Delivered) {
    let delivered: Delivered = Arc::default();
    let keep = Arc::clone(&delivered);
    let sandbox = Sandbox {
        listen_inside: Some(ListenInside::new(port, move |listener: TcpListener| {
            keep.lock().unwrap().push(listener.try_clone().unwrap());
            std::thread::spawn(move || {
                while let Ok((stream, _)) = listener.accept() {
                    let mut line = String::new();
                    let mut reader = BufReader::new(&stream);
                    if reader.read_line(&mut line).is_ok() {
                        let _ = (&stream).write_all(format!("pong {line}").as_bytes());
                    }
                }
            });
        })),
        ..Sandbox::new(root)
    };
    (sandbox, delivered)
}

fn root() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("workspace")).unwrap();
    dir
}

async fn bash(sandbox: Sandbox, script: &str) -> ProcessOutput {
    run(&ProcessSpec {
        program: "/bin/bash".into(),
        args: vec!["-c".into(), script.into()],
        sandbox: Some(sandbox),
        ..ProcessSpec::shell("", Duration::from_secs(20))
    })
    .await
    .unwrap()
}

/// The socket inode a listener refers to.
fn inode(listener: &TcpListener) -> String {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", listener.as_raw_fd()))
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

const TALK: &str = r#"exec 3<>/dev/tcp/127.0.0.1/PORT && echo "ping $1" >&3 && head -n1 <&3"#;

#[tokio::test]
async fn a_program_inside_reaches_the_parent_on_loopback() {
    let _guard = shared().await;
    let root = root();
    let (sandbox, delivered) = answering_sandbox(root.path(), ListenInside::DEFAULT_PORT);
    let script = format!(
        "set -e; f() {{ {}; }}; f one; f two",
        TALK.replace("PORT", "3128")
    );
    let out = bash(sandbox.clone(), &script).await;
    assert_eq!(out.exit, ExitKind::Exited(0), "{}", out.stderr.to_text());
    assert_eq!(out.stdout.to_text(), "pong ping one\npong ping two\n");
    let first = {
        let listeners = delivered.lock().unwrap();
        assert_eq!(listeners.len(), 1);
        assert_eq!(
            listeners[0].local_addr().unwrap(),
            "127.0.0.1:3128".parse().unwrap()
        );
        inode(&listeners[0])
    };

    // A second run gets a listener of its own, and the first no longer accepts.
    let out = bash(
        sandbox,
        &TALK.replace("PORT", "3128").replace("$1", "again"),
    )
    .await;
    assert_eq!(out.stdout.to_text(), "pong ping again\n");
    let listeners = delivered.lock().unwrap();
    assert_eq!(listeners.len(), 2);
    assert_ne!(inode(&listeners[1]), first);
    for listener in listeners.iter() {
        listener.set_nonblocking(true).unwrap();
        let error = listener.accept().unwrap_err();
        assert_ne!(error.kind(), std::io::ErrorKind::WouldBlock, "{error}");
    }
}

#[tokio::test]
async fn the_program_gets_no_copy_of_the_listener_and_no_other_network() {
    let _guard = shared().await;
    let root = root();
    let (sandbox, _delivered) = answering_sandbox(root.path(), 8099);
    let script = r#"
        for fd in /proc/$$/fd/*; do readlink "$fd"; done | grep -c socket || true
        tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '
        grep -v ' 0A ' /proc/net/tcp | tail -n +2 | wc -l
        grep -c ' 0A ' /proc/net/tcp
        exec 3<>/dev/tcp/127.0.0.1/3128 && echo "3128 open"
        exec 3<>/dev/tcp/10.77.0.1/80 && echo "10.77.0.1 open"
        exec 3<>/dev/tcp/1.1.1.1/443 && echo "1.1.1.1 open"
        exec 3<>/dev/tcp/127.0.0.1/8099 && echo "8099 open"
    "#;
    let out = bash(sandbox, script).await;
    let stderr = out.stderr.to_text();
    assert_eq!(
        out.stdout.to_text(),
        // No socket descriptor; only `lo`; no connection; one listener (ours); then only the
        // listener answers.
        "0\nlo\n0\n1\n8099 open\n",
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(stderr.contains("Network is unreachable"), "{stderr}");
}

#[tokio::test]
async fn without_the_option_nothing_listens_inside() {
    let _guard = shared().await;
    let root = root();
    let out = bash(
        Sandbox::new(root.path()),
        "grep -c ' 0A ' /proc/net/tcp; exec 3<>/dev/tcp/127.0.0.1/3128 && echo open",
    )
    .await;
    assert_eq!(out.stdout.to_text(), "0\n");
    assert!(out.stderr.to_text().contains("Connection refused"));
}

#[tokio::test]
async fn a_warm_sandbox_gets_one_listener_for_all_its_calls() {
    let _guard = shared().await;
    let root = root();
    let (sandbox, delivered) = answering_sandbox(root.path(), 3130);
    let warm = hookbox_exec::WarmSandbox::start(sandbox, super::support::SUPERVISOR)
        .await
        .unwrap();
    assert_eq!(delivered.lock().unwrap().len(), 1);
    let script = format!("f() {{ {}; }}; f one; f two", TALK.replace("PORT", "3130"));
    for _ in 0..2 {
        let out = warm
            .run(&ProcessSpec {
                program: "/bin/bash".into(),
                args: vec!["-c".into(), script.clone().into()],
                ..ProcessSpec::shell("", Duration::from_secs(20))
            })
            .await
            .unwrap();
        assert_eq!(out.exit, ExitKind::Exited(0), "{}", out.stderr.to_text());
        assert_eq!(out.stdout.to_text(), "pong ping one\npong ping two\n");
    }
    assert_eq!(delivered.lock().unwrap().len(), 1);
    // Stopping the sandbox shuts the listener down: accepting fails from then on.
    drop(warm);
    let listener = delivered.lock().unwrap().pop().unwrap();
    listener.set_nonblocking(true).unwrap();
    let error = listener.accept().unwrap_err();
    assert_ne!(error.kind(), std::io::ErrorKind::WouldBlock, "{error}");
}
