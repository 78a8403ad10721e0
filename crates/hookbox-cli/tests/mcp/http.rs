//! `hookbox mcp --listen`: the tools over streamable HTTP, through rmcp's client, and the
//! attacks a stranger, another local process or a web page would try.

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::json;

use super::{
    bad_calls_are_refused_clearly, exercise_every_tool, gated_environment, rm_rf_is_denied,
    sandbox_available,
};
use crate::serve::{api_key, http, start};
use crate::{code, hookbox_in};

/// An `initialize` request, as a client's first POST.
fn initialize() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"}}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_serves_the_tools_to_a_client_with_a_key() {
    if !sandbox_available("http_serves_the_tools_to_a_client_with_a_key") {
        return;
    }
    let home = tempfile::tempdir().expect("home");
    let id = gated_environment(home.path());
    let key = api_key(home.path(), "mcp-client");
    let secret = key.clone();
    let served = start(
        home.path(),
        &[
            "mcp",
            "--env",
            &id,
            "--listen",
            "127.0.0.1:0",
            "--owner",
            "mcp-client",
        ],
    );
    assert!(served.base_url.ends_with("/mcp"), "{}", served.base_url);
    // rmcp's client is reqwest's, built with the workspace's `rustls-no-provider`.
    let _ = tokio_rustls::rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(served.base_url.as_str()).auth_header(key),
    );
    let client = ().serve(transport).await.expect("the MCP handshake");
    exercise_every_tool(&client, home.path()).await;
    rm_rf_is_denied(&client).await;
    bad_calls_are_refused_clearly(&client).await;
    client.cancel().await.expect("close the client");
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
    assert!(!log.contains(&secret), "the API key reached the log: {log}");
}

#[test]
fn http_refuses_missing_and_wrong_keys_browsers_and_foreign_hosts() {
    let home = tempfile::tempdir().expect("home");
    let id = gated_environment(home.path());
    let key = api_key(home.path(), "mcp-client");
    let served = start(
        home.path(),
        &[
            "mcp",
            "--env",
            &id,
            "--listen",
            "127.0.0.1:0",
            "--owner",
            "mcp-client",
        ],
    );
    let root = served.base_url.trim_end_matches("/mcp").to_owned();
    let post = |headers: &[(&str, &str)]| {
        let mut all = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        http::send(&root, "POST", "/mcp", &all, &initialize())
    };
    let bearer = format!("Bearer {key}");
    let answered = post(&[("authorization", &bearer)]);
    assert_eq!(answered.status, 200, "{answered:?}");
    assert!(answered.body.contains("\"serverInfo\""), "{answered:?}");

    let missing = post(&[]);
    assert_eq!(missing.status, 401, "{missing:?}");
    assert_eq!(missing.error_code(), "unauthenticated");
    assert!(
        missing.body.contains("hookbox api-keys create"),
        "{missing:?}"
    );
    for wrong in [
        "Bearer hbk_nope_nope".to_owned(),
        format!("Bearer {key}x"),
        "Basic YTpi".to_owned(),
    ] {
        let refused = post(&[("authorization", &wrong)]);
        assert_eq!(refused.status, 401, "{wrong}: {refused:?}");
    }
    // A web page, even on this machine: its `Origin` is refused, with a valid key too.
    for origin in ["http://evil.example", "http://localhost:3000", "null"] {
        let browser = post(&[("authorization", &bearer), ("origin", origin)]);
        assert_eq!(browser.status, 403, "{origin}: {browser:?}");
    }
    // DNS rebinding: a foreign `Host` never reaches the tools.
    let rebound = post(&[("authorization", &bearer), ("host", "evil.example")]);
    assert_eq!(rebound.status, 421, "{rebound:?}");
    let (status, log) = served.terminate();
    assert!(status.success(), "{status:?}: {log}");
}

#[test]
fn http_needs_a_key_to_exist_and_no_auth_only_on_loopback() {
    let home = tempfile::tempdir().expect("home");
    let id = gated_environment(home.path());
    let output = hookbox_in(
        home.path(),
        &["mcp", "--env", &id, "--listen", "127.0.0.1:0"],
        b"",
    );
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("hookbox api-keys create"), "{stderr}");

    // An environment of no key's would be refused to every key: `--owner` gives it to one.
    api_key(home.path(), "mcp-client");
    for (owner, expected) in [
        (None, "--owner KEY_NAME"),
        (Some("nobody"), "no API key has that name"),
    ] {
        let mut args = vec!["mcp", "--env", &id, "--listen", "127.0.0.1:0"];
        args.extend(owner.map(|name| ["--owner", name]).into_iter().flatten());
        let output = hookbox_in(home.path(), &args, b"");
        assert_eq!(code(&output), 1, "{owner:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{owner:?}: {stderr}");
    }

    let output = hookbox_in(
        home.path(),
        &["mcp", "--env", &id, "--listen", "0.0.0.0:0", "--no-auth"],
        b"",
    );
    assert_eq!(code(&output), 1);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loopback"), "{stderr}");
}
