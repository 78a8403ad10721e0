//! A web page turned against a server on this machine: cross-site "simple" requests (a
//! `text/plain` or form POST needs no preflight) and DNS rebinding (a foreign `Host`).

use super::http;
use super::{api_key, serve};

#[test]
fn cross_site_simple_posts_get_415() {
    let home = tempfile::tempdir().unwrap();
    // --no-auth: what a browser reaches when no key protects the server.
    let served = serve(home.path(), &["--no-auth"]);
    let url = &served.base_url;
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let headers: Vec<(&str, &str)> = content_type
            .map(|value| vec![("content-type", value)])
            .unwrap_or_default();
        for path in [
            "/v1/environments",
            "/v1/interactions",
            "/v1/interactions/x/cancel",
        ] {
            let reply = http::send(url, "POST", path, &headers, r#"{"sources": []}"#);
            assert_eq!(reply.status, 415, "{content_type:?} {path}: {reply:?}");
            assert_eq!(reply.error_code(), "unsupported_media_type");
        }
    }
    let listed = http::send(url, "GET", "/v1/environments", &[], "");
    assert_eq!(
        listed.json()["environments"],
        serde_json::json!([]),
        "{listed:?}"
    );
    let json = http::send(
        url,
        "POST",
        "/v1/environments",
        &[("content-type", "application/json; charset=utf-8")],
        "{}",
    );
    assert_eq!(json.status, 200, "{json:?}");
    let _ = served.terminate();
}

#[test]
fn foreign_host_headers_get_421() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[server]\nallowed_hosts = [\"hookbox.internal\"]\n",
    )
    .unwrap();
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let url = &served.base_url;
    let port = http::authority(url).rsplit(':').next().unwrap().to_owned();
    let get = |host: &str| {
        http::send(
            url,
            "GET",
            "/v1/environments",
            &[("host", host), ("x-goog-api-key", &key)],
            "",
        )
    };
    for host in [
        format!("evil.example:{port}"),
        "evil.example".to_owned(),
        format!("localhost.evil.example:{port}"),
        format!("127.0.0.1.nip.io:{port}"),
        String::new(),
    ] {
        let reply = get(&host);
        assert_eq!(reply.status, 421, "{host}: {reply:?}");
        assert_eq!(reply.error_code(), "misdirected_request");
    }
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("[::1]:{port}"),
        "hookbox.internal".to_owned(),
        format!("hookbox.internal:{port}"),
    ] {
        let reply = get(&host);
        assert_eq!(reply.status, 200, "{host}: {reply:?}");
    }
    // Without any Host header at all (HTTP/1.1 requires one).
    let reply = http::send(url, "GET", "/v1/environments", &[("host", "")], "");
    assert_eq!(reply.status, 421, "{reply:?}");
    let _ = served.terminate();
}
