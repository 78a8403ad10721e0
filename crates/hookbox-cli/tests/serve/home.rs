//! One `hookbox serve` per home: a second one refuses to start and says which process holds
//! the home; the lock dies with its holder, `kill -9` included.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::{api_key, serve};

#[test]
fn a_second_serve_on_a_home_refuses_until_the_first_is_killed() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    api_key(home, "ci");
    let mut first = serve(home, &[]);
    let pid = first.child.id();

    let (code, stderr) = second_serve(home);
    assert_eq!(code, Some(1), "{stderr}");
    for expected in [
        home.display().to_string(),
        format!("pid {pid}"),
        "serve.lock".to_owned(),
    ] {
        assert!(stderr.contains(&expected), "no `{expected}` in: {stderr}");
    }

    first.child.kill().expect("SIGKILL the first server");
    first.child.wait().expect("wait for it");
    let again = serve(home, &[]);
    let (status, log) = again.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

/// Runs `hookbox serve` on `home` while another holds it: its exit code and stderr, or `None`
/// (after killing it) when it is still running after 30 s, i.e. it started serving.
#[expect(clippy::disallowed_methods, reason = "tests run the built binary")]
fn second_serve(home: &std::path::Path) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_hookbox"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("HOOKBOX_HOME", home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the second hookbox serve");
    let deadline = Instant::now() + Duration::from_secs(30);
    let code = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status.code();
        }
        if Instant::now() > deadline {
            child.kill().expect("kill the second server");
            child.wait().expect("wait for it");
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read stderr");
    (code, stderr)
}

#[test]
fn a_second_serve_refuses_even_after_the_lock_file_is_deleted() {
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    api_key(home, "ci");
    let first = serve(home, &[]);
    std::fs::remove_file(home.join("serve.lock")).expect("delete serve.lock");

    let (code, stderr) = second_serve(home);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&home.display().to_string()),
        "no home in: {stderr}"
    );
    let (status, log) = first.terminate();
    assert!(status.success(), "{status:?}: {log}");
}
