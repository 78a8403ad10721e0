use std::time::{Duration, Instant};

use hookbox_hooks::{Decision, Failure};
use hookbox_test_support::{Reply, TestHttpServer};
use serde_json::{Value, json};

use super::support::{bash_call, dispatcher, pre, pre_rule, strict_dispatcher};

fn http(url: &str, timeout: u64) -> Value {
    json!({"type": "http", "url": url, "timeout": timeout, "headers": {"X-Event-Source": "agent-sandbox"}})
}

#[tokio::test]
async fn a_2xx_deny_blocks_and_the_event_arrives_intact() {
    let server = TestHttpServer::start(|_| {
        Reply::json(
            200,
            &json!({"decision": "deny", "reason": "remote says no"}),
        )
    })
    .await
    .expect("server");
    let hooks = dispatcher(
        &[pre_rule(
            "code_execution",
            json!([http(&server.url("/gate"), 5)]),
        )],
        None,
    );
    let outcome = pre(
        &hooks,
        "code_execution",
        json!({"code": "ls", "language": "bash"}),
    )
    .await;
    assert_eq!(outcome.decision, Decision::Deny);
    assert_eq!(outcome.reason.as_deref(), Some("remote says no"));
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/gate");
    assert_eq!(requests[0].header("content-type"), Some("application/json"));
    assert_eq!(requests[0].header("x-event-source"), Some("agent-sandbox"));
    assert_eq!(
        requests[0].json(),
        json!({
            "tool_call": {"name": "code_execution", "args": {"code": "ls", "language": "bash"}},
            "environment_id": "env_test",
            "hook_event_name": "pre_tool_execution"
        })
    );
}

#[tokio::test]
async fn non_2xx_allows_whatever_the_body() {
    for status in [400, 403, 500, 503] {
        let server =
            TestHttpServer::start(move |_| Reply::json(status, &json!({"decision": "deny"})))
                .await
                .expect("server");
        let hooks = dispatcher(&[pre_rule(".*", json!([http(&server.url("/"), 5)]))], None);
        let outcome = pre(&hooks, "read_file", json!({"path": "a"})).await;
        assert_eq!(outcome.decision, Decision::Allow, "status {status}");
        assert_eq!(
            outcome.trace[0].failure,
            Some(Failure::HttpStatus { status })
        );
    }
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let server = TestHttpServer::start(|request| {
        if request.path == "/start" {
            Reply::redirect(302, "/deny")
        } else {
            Reply::json(200, &json!({"decision": "deny"}))
        }
    })
    .await
    .expect("server");
    let hooks = dispatcher(
        &[pre_rule(".*", json!([http(&server.url("/start"), 5)]))],
        None,
    );
    let outcome = pre(&hooks, "read_file", json!({"path": "a"})).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(
        outcome.trace[0].failure,
        Some(Failure::HttpStatus { status: 302 })
    );
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_network_error_allows() {
    let hooks = dispatcher(
        &[pre_rule(
            ".*",
            json!([http("http://127.0.0.1:9/refused", 5)]),
        )],
        None,
    );
    let outcome = pre(&hooks, "read_file", json!({"path": "a"})).await;
    assert_eq!(outcome.decision, Decision::Allow);
    let Some(Failure::Network { message }) = &outcome.trace[0].failure else {
        panic!(
            "expected a network failure, got {:?}",
            outcome.trace[0].failure
        );
    };
    assert!(message.contains("127.0.0.1:9"), "{message}");
}

#[tokio::test]
async fn a_slow_endpoint_times_out_and_allows() {
    let server = TestHttpServer::start(|_| {
        Reply::json(200, &json!({"decision": "deny"})).after(Duration::from_secs(30))
    })
    .await
    .expect("server");
    let hooks = dispatcher(&[pre_rule(".*", json!([http(&server.url("/"), 1)]))], None);
    let started = Instant::now();
    let outcome = pre(&hooks, "read_file", json!({"path": "a"})).await;
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(
        outcome.trace[0].failure,
        Some(Failure::Timeout { after_ms: 1000 })
    );
}

#[tokio::test]
async fn plain_text_and_empty_bodies_allow() {
    for (body, failure) in [
        (
            "deny",
            Failure::NotJson {
                excerpt: "deny".into(),
            },
        ),
        ("", Failure::EmptyOutput),
    ] {
        let server = TestHttpServer::start(move |_| Reply::text(200, body))
            .await
            .expect("server");
        let hooks = dispatcher(&[pre_rule(".*", json!([http(&server.url("/"), 5)]))], None);
        let outcome = pre(&hooks, "read_file", json!({"path": "a"})).await;
        assert_eq!(outcome.decision, Decision::Allow);
        assert_eq!(outcome.trace[0].failure, Some(failure));
    }
}

#[tokio::test]
async fn sdk_http_hooks_parse_the_body_like_stdout() {
    let server = TestHttpServer::start(|_| {
        Reply::json(200, &json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "confirm"}}))
    })
    .await
    .expect("server");
    let config = json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": server.url("/hook")}]}]}});
    let hooks = dispatcher(&[config], None);
    let input = bash_call();
    let outcome = hooks.dispatch(&input).await;
    assert_eq!(outcome.decision, Decision::Ask);
    assert_eq!(outcome.reason.as_deref(), Some("confirm"));
    assert_eq!(server.requests()[0].json()["tool_name"], "Bash");
}

#[tokio::test]
async fn the_default_client_refuses_loopback_and_plain_http_as_a_fail_open_with_the_cause() {
    let server = TestHttpServer::start(|_| Reply::json(200, &json!({"decision": "deny"})))
        .await
        .expect("server");
    let port = server.addr().port();
    for (url, cause) in [
        (server.url("/"), "only sends over HTTPS"),
        (
            format!("https://127.0.0.1:{port}/"),
            "127.0.0.1 is loopback",
        ),
        (
            format!("https://localhost:{port}/"),
            "127.0.0.1 is loopback",
        ),
    ] {
        let hooks = strict_dispatcher(&[pre_rule(".*", json!([http(&url, 5)]))]);
        let outcome = pre(&hooks, "read_file", json!({"path": "a"})).await;
        assert_eq!(outcome.decision, Decision::Allow, "{url}");
        let Some(Failure::Network { message }) = &outcome.trace[0].failure else {
            panic!(
                "{url}: expected a network failure, got {:?}",
                outcome.trace[0].failure
            );
        };
        assert!(message.contains(cause), "{url}: {message}");
    }
    assert!(server.requests().is_empty());
}
