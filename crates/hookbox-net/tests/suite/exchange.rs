use hookbox_net::{ClientOptions, GuardedClient, HttpReply};
use hookbox_test_support::{Reply, TestHttpServer};
use serde_json::json;

use super::{client, headers, local_options, post};

#[tokio::test]
async fn body_and_headers_arrive_and_the_reply_comes_back() {
    let server = TestHttpServer::start(|_| Reply::json(200, &json!({"decision": "deny"})))
        .await
        .unwrap();
    let url = server.url("/hook?x=1");
    let configured = headers(&[("X-Api-Key", "secret"), ("Authorization", "Bearer t")]);

    let reply = client().post_json(post(&url, &configured)).await.unwrap();

    assert_eq!(
        reply,
        HttpReply {
            status: 200,
            body: br#"{"decision":"deny"}"#.to_vec(),
            body_dropped: 0,
            retry_after: None,
        }
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/hook?x=1");
    assert_eq!(request.json(), json!({"tool_call": {"name": "read_file"}}));
    assert_eq!(request.header("content-type"), Some("application/json"));
    assert_eq!(request.header("content-length"), Some("34"));
    assert_eq!(request.header("x-api-key"), Some("secret"));
    assert_eq!(request.header("authorization"), Some("Bearer t"));
    assert_eq!(
        request.header("user-agent"),
        Some(concat!("hookbox/", env!("CARGO_PKG_VERSION")))
    );
}

#[tokio::test]
async fn success_client_error_and_server_error_statuses_are_returned() {
    let server = TestHttpServer::start(|request| {
        let status = request.path.trim_start_matches('/').parse().unwrap();
        Reply::text(status, "status body")
    })
    .await
    .unwrap();
    let client = client();

    for status in [200, 201, 204, 400, 403, 404, 500, 503] {
        let url = server.url(&status.to_string());
        let reply = client.post_json(post(&url, &[])).await.unwrap();
        assert_eq!(reply.status, status);
    }
}

#[tokio::test]
async fn a_retry_after_in_seconds_or_as_a_date_is_returned() {
    let server = TestHttpServer::start(|request| {
        let mut reply = Reply::text(503, "busy");
        let value = match request.path.as_str() {
            "/seconds" => " 7 ".to_owned(),
            "/past" => "Wed, 21 Oct 2015 07:28:00 GMT".to_owned(),
            "/future" => httpdate::fmt_http_date(
                std::time::SystemTime::now() + std::time::Duration::from_secs(3600),
            ),
            _ => "soon".to_owned(),
        };
        reply.headers.push(("retry-after".to_owned(), value));
        reply
    })
    .await
    .unwrap();
    let none = headers(&[]);
    let wait = |path: &'static str| {
        let url = server.url(path);
        let none = none.clone();
        async move {
            client()
                .post_json(post(&url, &none))
                .await
                .unwrap()
                .retry_after
        }
    };
    assert_eq!(
        wait("/seconds").await,
        Some(std::time::Duration::from_secs(7))
    );
    assert_eq!(wait("/past").await, Some(std::time::Duration::ZERO));
    let future = wait("/future").await.unwrap();
    assert!(
        future > std::time::Duration::from_secs(3500)
            && future <= std::time::Duration::from_secs(3600),
        "{future:?}"
    );
    assert_eq!(wait("/bad").await, None);
}

#[tokio::test]
async fn redirects_are_returned_not_followed() {
    for status in [301, 302, 303, 307, 308] {
        let server = TestHttpServer::start(move |request| {
            if request.path == "/start" {
                Reply::redirect(status, "/elsewhere")
            } else {
                Reply::text(200, "followed")
            }
        })
        .await
        .unwrap();
        let url = server.url("/start");

        let reply = client().post_json(post(&url, &[])).await.unwrap();

        assert_eq!(reply.status, status);
        let paths: Vec<_> = server.requests().into_iter().map(|r| r.path).collect();
        assert_eq!(paths, ["/start"], "a {status} was followed");
    }
}

#[tokio::test]
async fn sequential_posts_reuse_one_keep_alive_connection_across_clones() {
    let server = TestHttpServer::start(|_| Reply::text(200, "ok"))
        .await
        .unwrap();
    let url = server.url("/hook");
    let client = client();

    client.post_json(post(&url, &[])).await.unwrap();
    client.post_json(post(&url, &[])).await.unwrap();
    client.clone().post_json(post(&url, &[])).await.unwrap();

    let connections: Vec<_> = server.requests().iter().map(|r| r.connection).collect();
    assert_eq!(connections, [0, 0, 0]);
}

#[tokio::test]
async fn the_user_agent_comes_from_the_options() {
    let server = TestHttpServer::start(|_| Reply::text(200, ""))
        .await
        .unwrap();
    let url = server.url("/");
    let client = GuardedClient::new(&ClientOptions {
        user_agent: "custom/1.0".to_owned(),
        ..local_options()
    })
    .unwrap();

    client.post_json(post(&url, &[])).await.unwrap();

    assert_eq!(
        server.requests()[0].header("user-agent"),
        Some("custom/1.0")
    );
}
