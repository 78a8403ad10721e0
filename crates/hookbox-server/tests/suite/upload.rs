use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{Api, Reply};

/// Starts an upload of `size` bytes to `path` (with `query`, e.g. `?overwrite=true`) and
/// returns the reply.
async fn start(api: &Api, id: &str, path: &str, size: usize, query: &str) -> Reply {
    let size = size.to_string();
    api.send(
        "PUT",
        &format!("/upload/v1beta/environments/{id}/files/{path}{query}"),
        &[
            ("x-goog-upload-protocol", "resumable"),
            ("x-goog-upload-command", "start"),
            ("x-goog-upload-header-content-length", &size),
            (
                "x-goog-upload-header-content-type",
                "application/octet-stream",
            ),
        ],
        "",
    )
    .await
}

/// The path and query of the upload URL a start reply gives.
fn session_path(api: &Api, reply: &Reply) -> String {
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let url = reply.header("x-goog-upload-url").expect("upload url");
    let prefix = format!("http://{}", api.addr);
    url.strip_prefix(&prefix)
        .expect("absolute URL on this server")
        .to_owned()
}

/// Sends one chunk.
async fn chunk(api: &Api, url: &str, command: &str, offset: usize, bytes: &[u8]) -> Reply {
    let offset = offset.to_string();
    api.send(
        "POST",
        url,
        &[
            ("x-goog-upload-command", command),
            ("x-goog-upload-offset", &offset),
        ],
        bytes.to_vec(),
    )
    .await
}

/// An empty environment.
async fn empty(api: &Api) -> String {
    api.create(&json!({})).await
}

#[tokio::test]
async fn a_file_uploads_in_several_chunks() {
    let api = Api::start().await;
    let id = empty(&api).await;
    let content: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let url = session_path(
        &api,
        &start(&api, &id, "workspace/dir%20x/data.bin", content.len(), "").await,
    );
    assert!(url.starts_with("/upload/v1beta/environments/"), "{url}");
    let pieces: Vec<&[u8]> = content.chunks(128 * 1024).collect();
    let mut offset = 0;
    for (index, piece) in pieces.iter().enumerate() {
        let last = index + 1 == pieces.len();
        let reply = chunk(
            &api,
            &url,
            if last { "upload, finalize" } else { "upload" },
            offset,
            piece,
        )
        .await;
        offset += piece.len();
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        if last {
            assert_eq!(reply.header("x-goog-upload-status"), Some("final"));
            let file = &reply.json()["files"][0];
            assert_eq!(file["path"], "workspace/dir x/data.bin");
            assert_eq!(file["name"], "data.bin");
            assert_eq!(file["type"], "file");
            assert_eq!(file["size_bytes"], content.len());
        } else {
            assert_eq!(reply.header("x-goog-upload-status"), Some("active"));
            assert_eq!(
                reply.header("x-goog-upload-size-received"),
                Some(offset.to_string().as_str())
            );
        }
    }
    assert_eq!(
        std::fs::read(api.root(&id).join("workspace/dir x/data.bin")).unwrap(),
        content
    );
    let listed = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace?recursive=true"
        ))
        .await
        .json();
    assert_eq!(listed["files"][1]["path"], "workspace/dir x/data.bin");
    let finished = chunk(&api, &url, "upload", offset, b"more").await;
    assert_eq!(finished.status, 404);
    assert_eq!(finished.header("x-goog-upload-status"), Some("final"));
    let leftovers: Vec<_> = std::fs::read_dir(api.home().join("uploads"))
        .unwrap()
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[tokio::test]
async fn a_wrong_offset_is_400_and_the_upload_can_go_on() {
    let api = Api::start().await;
    let id = empty(&api).await;
    let url = session_path(&api, &start(&api, &id, "workspace/f.txt", 6, "").await);
    assert_eq!(chunk(&api, &url, "upload", 0, b"abc").await.status, 200);
    let wrong = chunk(&api, &url, "upload", 1, b"def").await;
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.error_code(), "wrong_offset");
    assert_eq!(wrong.header("x-goog-upload-status"), Some("active"));
    assert_eq!(wrong.header("x-goog-upload-size-received"), Some("3"));
    let query = api
        .send("POST", &url, &[("x-goog-upload-command", "query")], "")
        .await;
    assert_eq!(query.header("x-goog-upload-size-received"), Some("3"));
    let done = chunk(&api, &url, "upload, finalize", 3, b"def").await;
    assert_eq!(done.status, 200, "{:?}", done.body);
    assert_eq!(
        std::fs::read_to_string(api.root(&id).join("workspace/f.txt")).unwrap(),
        "abcdef"
    );
}

#[tokio::test]
async fn uploads_that_do_not_add_up_are_refused_and_write_nothing() {
    let api = Api::start().await;
    let id = empty(&api).await;
    let url = session_path(&api, &start(&api, &id, "workspace/short", 10, "").await);
    let short = chunk(&api, &url, "upload, finalize", 0, b"abc").await;
    assert_eq!(
        (short.status, short.error_code()),
        (400, "invalid_argument".to_owned())
    );
    let url = session_path(&api, &start(&api, &id, "workspace/long", 2, "").await);
    let long = chunk(&api, &url, "upload", 0, b"abc").await;
    assert_eq!(long.status, 400);
    assert!(!api.root(&id).join("workspace/short").exists());
    assert!(!api.root(&id).join("workspace/long").exists());
}

#[tokio::test]
async fn existing_files_are_replaced_only_with_overwrite() {
    let api = Api::start().await;
    let id = api
        .create(
            &json!({"sources": [{"type": "inline", "target": "workspace/f", "content": "old"}]}),
        )
        .await;
    let refused = start(&api, &id, "workspace/f", 3, "").await;
    assert_eq!(
        (refused.status, refused.error_code()),
        (400, "already_exists".to_owned())
    );
    let url = session_path(
        &api,
        &start(&api, &id, "workspace/f", 3, "?overwrite=true").await,
    );
    assert_eq!(
        chunk(&api, &url, "upload, finalize", 0, b"new")
            .await
            .status,
        200
    );
    assert_eq!(
        std::fs::read_to_string(api.root(&id).join("workspace/f")).unwrap(),
        "new"
    );
}

#[tokio::test]
async fn bad_starts_are_refused() {
    let api = Api::start_with(|config| config.server.max_upload_bytes = Some(1000)).await;
    let id = empty(&api).await;
    let too_big = start(&api, &id, "workspace/big", 1001, "").await;
    assert_eq!(
        (too_big.status, too_big.error_code()),
        (413, "payload_too_large".to_owned())
    );
    for path in ["etc/passwd", "workspace", "workspace/../../x", "proc/x"] {
        let reply = start(&api, &id, path, 1, "").await;
        assert_eq!(reply.status, 400, "{path}: {:?}", reply.body);
    }
    let unknown = start(&api, "env_aaaaaaaaaaaaaaaaaaaaaaaaaa", "workspace/x", 1, "").await;
    assert_eq!(unknown.status, 404);
    let extract = start(&api, &id, "workspace/x.zip", 1, "?extract=true").await;
    assert_eq!(extract.status, 400);
    let no_protocol = api
        .send(
            "PUT",
            &format!("/upload/v1/environments/{id}/files/workspace/x"),
            &[],
            "",
        )
        .await;
    assert_eq!(no_protocol.status, 400);
    let no_session = chunk(
        &api,
        &format!("/upload/v1/environments/{id}/files/workspace/x?upload_id=nope"),
        "upload",
        0,
        b"x",
    )
    .await;
    assert_eq!(no_session.status, 404);
    assert_eq!(no_session.header("x-goog-upload-status"), Some("final"));
}

#[tokio::test]
async fn uploads_never_follow_a_link_out_of_the_environment() {
    let api = Api::start().await;
    let id = empty(&api).await;
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), api.root(&id).join("workspace/out")).unwrap();
    let started = start(&api, &id, "workspace/out/x", 1, "").await;
    if started.status == 200 {
        let url = session_path(&api, &started);
        let reply = chunk(&api, &url, "upload, finalize", 0, b"x").await;
        assert_eq!(reply.status, 400, "{:?}", reply.body);
    } else {
        assert_eq!(started.status, 400, "{:?}", started.body);
    }
    assert!(!outside.path().join("x").exists());
}

#[tokio::test]
async fn chunks_larger_than_the_body_limit_get_413() {
    let api = Api::start_with(|config| config.server.max_body_bytes = Some(1024)).await;
    let id = empty(&api).await;
    let url = session_path(&api, &start(&api, &id, "workspace/f", 4096, "").await);
    let reply = chunk(&api, &url, "upload", 0, &[7; 2048]).await;
    assert_eq!(reply.status, 413);
    reply.error_code();
}

/// Uploads `content` to `path` in one chunk and returns the finalizing reply.
async fn upload_whole(api: &Api, id: &str, path: &str, content: &[u8]) -> Reply {
    let url = session_path(api, &start(api, id, path, content.len(), "").await);
    chunk(api, &url, "upload, finalize", 0, content).await
}

#[tokio::test]
async fn a_hook_file_that_would_fail_silently_is_refused_and_nothing_is_written() {
    let api = Api::start().await;
    let id = empty(&api).await;
    let hooks = json!({"gate": {"pre_tool_execution": [{"matcher": "code_execution",
        "hooks": [{"type": "command", "command": "python3 /.agents/gate.py"}]}]}});
    let reply = upload_whole(
        &api,
        &id,
        ".agents/hooks.json",
        hooks.to_string().as_bytes(),
    )
    .await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    let message = reply.message();
    assert!(message.contains("/.agents/hooks.json"), "{message}");
    assert!(
        message.contains("$.gate.pre_tool_execution[0].hooks[0].command"),
        "{message}"
    );
    assert!(message.contains("/.agents/gate.py"), "{message}");
    assert!(!api.root(&id).join(".agents/hooks.json").exists());
    // With the script uploaded first, the same file is accepted.
    assert_eq!(
        upload_whole(&api, &id, ".agents/gate.py", b"print()")
            .await
            .status,
        200
    );
    let reply = upload_whole(
        &api,
        &id,
        ".agents/hooks.json",
        hooks.to_string().as_bytes(),
    )
    .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
}

#[tokio::test]
async fn an_upload_into_workspace_agents_it_was_created_without_is_refused() {
    let api = Api::start().await;
    let id = empty(&api).await;
    let reply = start(&api, &id, "workspace/.agents/hooks.json", 2, "").await;
    assert_eq!(reply.status, 400, "{:?}", reply.body);
    let body = format!("{:?}", reply.body);
    assert!(body.contains("from_environment"), "{body}");
    let environment = api.get(&format!("/v1/environments/{id}")).await.json();
    assert_eq!(environment.get("owner_agents"), None, "{environment}");
}
