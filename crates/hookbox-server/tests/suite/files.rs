use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::Api;

/// An environment with a small tree: `workspace/{a.txt, src/main.py, src/lib/x.rs}` and
/// `.agents/hooks.json`.
async fn tree(api: &Api) -> String {
    api.create(&json!({"sources": [
        {"type": "inline", "target": "workspace/a.txt", "content": "alpha"},
        {"type": "inline", "target": "workspace/src/main.py", "content": "print(1)\n"},
        {"type": "inline", "target": "workspace/src/lib/x.rs", "content": "fn x() {}"},
        {"type": "inline", "target": ".agents/hooks.json", "content": "{}"},
    ]}))
    .await
}

/// The `path`s of a listing.
fn paths(listing: &Value) -> Vec<String> {
    listing["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|file| file["path"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn directories_list_with_metadata_flat_or_recursive() {
    let api = Api::start().await;
    let id = tree(&api).await;
    let flat = api
        .get(&format!("/v1/environments/{id}/files/workspace"))
        .await;
    assert_eq!(flat.status, 200);
    let flat = flat.json();
    assert_eq!(paths(&flat), ["workspace/a.txt", "workspace/src"]);
    let file = &flat["files"][0];
    assert_eq!(file["name"], "a.txt");
    assert_eq!(file["type"], "file");
    assert_eq!(file["size_bytes"], 5);
    assert_eq!(file["mime_type"], "text/plain");
    for time in ["created", "modified"] {
        let text = file[time].as_str().unwrap();
        assert!(text.len() == 20 && text.ends_with('Z'), "{time}: {text}");
    }
    assert_eq!(flat["files"][1]["type"], "directory");
    assert_eq!(flat["files"][1]["mime_type"], "");

    let deep = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace?recursive=true"
        ))
        .await
        .json();
    assert_eq!(
        paths(&deep),
        [
            "workspace/a.txt",
            "workspace/src",
            "workspace/src/lib",
            "workspace/src/lib/x.rs",
            "workspace/src/main.py",
        ]
    );
    for root in ["files", "files/", "files/%2F"] {
        let listing = api.get(&format!("/v1/environments/{id}/{root}")).await;
        assert_eq!(listing.status, 200, "{root}");
        assert_eq!(paths(&listing.json()), [".agents", "workspace"], "{root}");
    }
    let one = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace/src/main.py"
        ))
        .await
        .json();
    assert_eq!(paths(&one), ["workspace/src/main.py"]);
    assert_eq!(one["files"][0]["mime_type"], "text/x-python");
}

#[tokio::test]
async fn listings_page() {
    let api = Api::start().await;
    let id = tree(&api).await;
    let base = format!("/v1/environments/{id}/files/workspace?recursive=true&page_size=2");
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let page = api.get(&format!("{base}&page_token={token}")).await.json();
        seen.extend(paths(&page));
        match page["next_page_token"].as_str() {
            Some(next) => token = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(seen.len(), 5);
}

#[tokio::test]
async fn files_download_as_raw_bytes() {
    let api = Api::start().await;
    let id = tree(&api).await;
    let reply = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace/src/main.py?alt=media"
        ))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(&reply.body[..], b"print(1)\n");
    assert_eq!(reply.header("content-type"), Some("text/x-python"));
    let binary: Vec<u8> = (0..=255).collect();
    std::fs::write(api.root(&id).join("workspace/b.bin"), &binary).unwrap();
    let reply = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace/b.bin?alt=media"
        ))
        .await;
    assert_eq!(reply.body.to_vec(), binary);
}

#[tokio::test]
async fn bad_file_requests_are_400_or_404() {
    let api = Api::start().await;
    let id = tree(&api).await;
    let cases = [
        ("files/workspace/missing.txt", 404),
        ("files/workspace/missing.txt?alt=media", 404),
        ("files/workspace/src?alt=media", 400),
        ("files/workspace/../../etc/passwd", 400),
        ("files/workspace?recursive=maybe", 400),
        ("files/workspace?alt=proto", 400),
    ];
    for (path, status) in cases {
        let reply = api.get(&format!("/v1/environments/{id}/{path}")).await;
        assert_eq!(reply.status, status, "{path}: {:?}", reply.body);
        reply.error_code();
    }
}

#[tokio::test]
async fn symlinks_resolve_inside_the_environment_never_on_the_host() {
    let api = Api::start().await;
    let id = tree(&api).await;
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "host secret").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret"),
        api.root(&id).join("workspace/link"),
    )
    .unwrap();
    let reply = api
        .get(&format!(
            "/v1/environments/{id}/files/workspace/link?alt=media"
        ))
        .await;
    assert_eq!(reply.status, 404, "{:?}", reply.body);
    assert!(!String::from_utf8_lossy(&reply.body).contains("host secret"));
}
