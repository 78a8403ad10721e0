use std::time::{Duration, Instant};

use hookbox_net::{NetError, PostRequest};
use hookbox_test_support::{Reply, TestHttpServer};

use super::{client, post};

#[tokio::test]
async fn a_reply_slower_than_the_timeout_is_a_timeout_error() {
    let server = TestHttpServer::start(|_| Reply::text(200, "late").after(Duration::from_secs(30)))
        .await
        .unwrap();
    let url = server.url("/slow");
    let timeout = Duration::from_millis(500);
    let started = Instant::now();

    let result = client()
        .post_json(PostRequest {
            timeout,
            ..post(&url, &[])
        })
        .await;

    let elapsed = started.elapsed();
    assert!(
        matches!(&result, Err(NetError::Timeout { url: u, after }) if *u == url && *after == timeout),
        "{result:?}"
    );
    assert!(
        elapsed < timeout + Duration::from_secs(1),
        "took {elapsed:?}"
    );
    assert_eq!(server.requests().len(), 1, "the request was sent");
}

#[tokio::test]
async fn the_body_is_capped_at_the_limit_and_the_rest_counted() {
    let total = 5_000_000;
    let payload: Vec<u8> = (0..total).map(|i| (i % 251) as u8).collect();
    let served = payload.clone();
    let server = TestHttpServer::start(move |_| Reply {
        body: served.clone(),
        ..Reply::text(200, "")
    })
    .await
    .unwrap();
    let url = server.url("/big");
    let limit = 1 << 20;

    let reply = client()
        .post_json(PostRequest {
            body_limit: limit,
            ..post(&url, &[])
        })
        .await
        .unwrap();

    assert_eq!(reply.status, 200);
    assert_eq!(reply.body.len(), limit);
    assert!(
        reply.body == payload[..limit],
        "the kept bytes are not the first ones"
    );
    assert_eq!(reply.body_dropped, (total - limit) as u64);
}

#[tokio::test]
async fn a_zero_limit_keeps_nothing_and_the_connection_stays_usable() {
    let server = TestHttpServer::start(|_| Reply::text(200, "0123456789"))
        .await
        .unwrap();
    let url = server.url("/");
    let client = client();

    for _ in 0..2 {
        let reply = client
            .post_json(PostRequest {
                body_limit: 0,
                ..post(&url, &[])
            })
            .await
            .unwrap();
        assert!(reply.body.is_empty());
        assert_eq!(reply.body_dropped, 10);
    }

    let connections: Vec<_> = server.requests().iter().map(|r| r.connection).collect();
    assert_eq!(
        connections,
        [0, 0],
        "a drained body leaves the connection reusable"
    );
}
