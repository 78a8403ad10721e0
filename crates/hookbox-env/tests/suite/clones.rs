//! Issue 11, SSRF through `repository` sources: `git clone` follows the network rules. Remote
//! repositories are served by `git http-backend` (smart HTTP) behind a real test server: on
//! loopback (refused), and over HTTPS in a network namespace of its own (cloned once
//! `allow_private_cidrs` admits it). Local paths and `file://` need `allow_host_sources`;
//! other transports are refused before git runs.

use std::io::Write;
use std::path::PathBuf;
use std::process::Stdio;

use hookbox_env::{EnvironmentSpec, Environments, StoreError};
use hookbox_net::ClientOptions;
use hookbox_test_support::{RecordedRequest, Reply, TestCertificates, TestHttpServer, TestNetns};
use serde_json::json;
use tempfile::TempDir;

use super::support::{Home, git, snapshot};

/// A bare repository `tools.git` (one commit with `README.md`) under a new directory, ready to
/// be served.
async fn bare_repository() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("README.md"), "served over http\n").unwrap();
    git(&work, "init --quiet").await;
    git(&work, "add -A").await;
    git(&work, "commit --quiet -m one").await;
    git(dir.path(), "clone --quiet --bare work tools.git").await;
    dir
}

/// A responder running `git http-backend` (CGI) for the repositories under `root`.
fn http_backend(root: PathBuf) -> impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static {
    move |request| {
        let (path, query) = request
            .path
            .split_once('?')
            .unwrap_or((request.path.as_str(), ""));
        #[expect(clippy::disallowed_methods, reason = "the test server runs git's CGI")]
        let mut command = std::process::Command::new("git");
        command
            .arg("http-backend")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_PROJECT_ROOT", &root)
            .env("GIT_HTTP_EXPORT_ALL", "1")
            .env("PATH_INFO", path)
            .env("QUERY_STRING", query)
            .env("REQUEST_METHOD", &request.method)
            .env("REMOTE_ADDR", "192.0.2.1")
            .env(
                "CONTENT_TYPE",
                request.header("content-type").unwrap_or_default(),
            )
            .env("CONTENT_LENGTH", request.body.len().to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(encoding) = request.header("content-encoding") {
            command.env("HTTP_CONTENT_ENCODING", encoding);
        }
        if let Some(protocol) = request.header("git-protocol") {
            command.env("GIT_PROTOCOL", protocol);
        }
        let mut child = command.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(&request.body)
            .unwrap();
        let output = child.wait_with_output().unwrap();
        let (head, body) = split_cgi(&output.stdout);
        let mut reply = Reply::text(200, "");
        reply.headers.clear();
        for line in head.lines() {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            if name.eq_ignore_ascii_case("status") {
                reply.status = value.trim()[..3].parse().unwrap();
            } else {
                reply
                    .headers
                    .push((name.trim().to_owned(), value.trim().to_owned()));
            }
        }
        reply.body = body.to_vec();
        reply
    }
}

/// A CGI response's header text and body.
fn split_cgi(output: &[u8]) -> (String, &[u8]) {
    for separator in [&b"\r\n\r\n"[..], b"\n\n"] {
        if let Some(at) = output
            .windows(separator.len())
            .position(|window| window == separator)
        {
            return (
                String::from_utf8_lossy(&output[..at]).into_owned(),
                &output[at + separator.len()..],
            );
        }
    }
    (String::new(), output)
}

/// The problem of a refused source 0.
async fn refusal(envs: &Environments, url: &str) -> String {
    let spec =
        EnvironmentSpec::from_json(&json!({"sources": [{"type": "repository", "source": url}]}))
            .unwrap();
    match envs.create(&spec).await {
        Ok(env) => panic!("cloned {url} into {}", env.id()),
        Err(StoreError::Source { index: 0, problem }) => problem,
        Err(other) => panic!("{url}: unexpected error: {other}"),
    }
}

/// A repository on loopback is not cloned (the host's own services are out of reach), and the
/// refusal reads exactly like the one for a closed port, so it cannot be used to map ports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_repository_is_refused_like_a_closed_port() {
    let repos = bare_repository().await;
    let server = TestHttpServer::start(http_backend(repos.path().to_path_buf()))
        .await
        .unwrap();
    let home = Home::new();
    let before = snapshot(home.dir.path());
    let open = server.url("/tools.git");
    let refused = refusal(&home.envs, &open).await;
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let closed = format!("http://127.0.0.1:{closed_port}/tools.git");
    let closed_refusal = refusal(&home.envs, &closed).await;
    assert_eq!(
        refused.replace(&open, "URL"),
        closed_refusal.replace(&closed, "URL")
    );
    assert!(
        refused.contains("refused by the network rules"),
        "{refused}"
    );
    assert_eq!(snapshot(home.dir.path()), before);
}

/// `file://` URLs and local paths copy this machine's repositories: refused unless the
/// operator allows host sources.
#[tokio::test]
async fn local_repositories_need_allow_host_sources() {
    let repos = bare_repository().await;
    let path = repos.path().join("tools.git");
    let home = Home::new();
    for url in [
        path.display().to_string(),
        format!("file://{}", path.display()),
    ] {
        let problem = refusal(&home.envs, &url).await;
        assert!(problem.contains("allow_host_sources"), "{problem}");
    }
    let allowed = Home::with_host_sources();
    let env = allowed
        .create(json!({"sources": [{"type": "repository",
                                    "source": format!("file://{}", path.display())}]}))
        .await;
    assert!(env.root().join("workspace/tools/README.md").is_file());
}

/// `ext::` (which runs a command), `fd::`, ssh and `git://` are refused at the spec's JSON path
/// before git runs: nothing is executed.
#[tokio::test]
async fn other_transports_are_refused_and_nothing_runs() {
    let marker = tempfile::tempdir().unwrap();
    let witness = marker.path().join("ran");
    let ext = format!("ext::sh -c touch% {}", witness.display());
    for url in [
        ext.as_str(),
        "fd::7",
        "git@example.com:org/tools.git",
        "ssh://example.com/org/tools.git",
        "git://example.com/org/tools.git",
    ] {
        let error = EnvironmentSpec::from_json(
            &json!({"sources": [{"type": "repository", "source": url}]}),
        )
        .unwrap_err();
        assert_eq!(error.path, "$.sources[0].source", "{url}");
        assert!(error.problem.contains("does not clone"), "{error}");
    }
    assert!(!witness.exists());
}

/// A real clone over HTTPS from a host in a private range: refused until `allow_private_cidrs`
/// lists it, then cloned through the rules (the name resolved by `resolve`, the certificate
/// checked against the configured extra root).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_repository_is_cloned_once_its_range_is_admitted() {
    const TEST: &str = "clones::an_https_repository_is_cloned_once_its_range_is_admitted";
    let netns = match TestNetns::create() {
        Ok(netns) => netns,
        Err(reason) => {
            hookbox_test_support::skip(
                TEST,
                format_args!("cannot create a test network namespace: {reason}"),
            );
            return;
        }
    };
    let repos = bare_repository().await;
    let certificates = TestCertificates::for_names(&["git.test"]).unwrap();
    let server = TestHttpServer::start_https_on(
        netns.bind_inside(443).unwrap(),
        &certificates,
        http_backend(repos.path().to_path_buf()),
    )
    .unwrap();
    let inside = std::net::IpAddr::V4(netns.inside_address());
    let options = |cidrs: Vec<hookbox_net::IpNet>| ClientOptions {
        allow_private_cidrs: cidrs,
        resolve: vec![("git.test".to_owned(), inside)],
        extra_root_certs_pem: vec![certificates.ca_pem().as_bytes().to_vec()],
        ..ClientOptions::default()
    };
    let home = tempfile::tempdir().unwrap();
    let url = "https://git.test/tools.git";

    let strict = Environments::open_with_network(home.path(), &options(Vec::new())).unwrap();
    let problem = refusal(&strict, url).await;
    assert!(
        problem.contains("refused by the network rules"),
        "{problem}"
    );
    assert!(server.requests().is_empty());

    let admitted =
        Environments::open_with_network(home.path(), &options(vec![netns.cidr().parse().unwrap()]))
            .unwrap();
    let spec =
        EnvironmentSpec::from_json(&json!({"sources": [{"type": "repository", "source": url}]}))
            .unwrap();
    let env = admitted.create(&spec).await.unwrap();
    assert_eq!(
        std::fs::read_to_string(env.root().join("workspace/tools/README.md")).unwrap(),
        "served over http\n"
    );
    assert!(!server.requests().is_empty());
}

#[tokio::test]
async fn a_clone_reports_its_progress_to_the_callers_callback() {
    let repos = bare_repository().await;
    let url = format!("file://{}", repos.path().join("tools.git").display());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    let home = Home::with_host_sources();
    let envs = home.envs.clone().with_progress(std::sync::Arc::new(
        move |progress: &hookbox_env::Progress| {
            sink.lock().unwrap().push(progress.clone());
        },
    ));
    let spec = hookbox_env::EnvironmentSpec::from_json(&json!({"sources": [
        {"type": "inline", "target": "workspace/a.txt", "content": "a"},
        {"type": "repository", "source": url},
    ]}))
    .unwrap();
    envs.create(&spec).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        [
            hookbox_env::Progress::CloneStarted { index: 1, url },
            hookbox_env::Progress::CloneFinished { index: 1 },
        ]
    );
}
