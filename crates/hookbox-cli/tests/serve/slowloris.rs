//! Slowloris: many half-sent requests must neither hold the server forever nor starve real
//! clients. Bounded and on loopback only: a cap of 16 connections, one-second timeouts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::http;
use super::{api_key, serve};

/// Opens a connection and sends the start of a request, never its end.
fn half_open(authority: &str) -> TcpStream {
    let mut stream = TcpStream::connect(authority).unwrap();
    stream
        .write_all(b"GET /v1/environments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    stream
}

/// Waits (up to a generous bound, so a server that never closes fails instead of hanging) for
/// the server to end `stream`; returns what it sent before closing.
fn closed_by_server(mut stream: TcpStream) -> String {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut seen = Vec::new();
    match stream.read_to_end(&mut seen) {
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(err) => panic!("the server kept a stalled connection open: {err}"),
    }
    String::from_utf8_lossy(&seen).into_owned()
}

#[test]
fn half_open_connections_time_out_and_the_cap_answers_503() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[server]\nmax_connections = 16\nheader_read_timeout_secs = 1\nidle_timeout_secs = 1\n",
    )
    .unwrap();
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let url = served.base_url.clone();
    let authority = http::authority(&url).to_owned();
    let ok = || {
        http::send(
            &url,
            "GET",
            "/v1/environments",
            &[("x-goog-api-key", &key)],
            "",
        )
    };

    // Retried while the server is still counting connections it has just closed.
    let ok_eventually = || {
        for _ in 0..200 {
            let reply = ok();
            if reply.status != 503 {
                return reply.status;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        503
    };

    // At the cap: one more connection is answered 503 in the API's shape, then closed.
    let stalled: Vec<TcpStream> = (0..16).map(|_| half_open(&authority)).collect();
    let mut over = TcpStream::connect(&authority).unwrap();
    over.write_all(b"GET /v1/environments HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let reply = http::read_reply(&mut over);
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(reply.error_code(), "unavailable");
    // The header-read timeout closes every stalled connection...
    for stream in stalled {
        let sent = closed_by_server(stream);
        assert!(
            sent.is_empty() || sent.starts_with("HTTP/1.1 408"),
            "{sent}"
        );
    }
    // ...after which real requests get through again, also while 15 others stall.
    assert_eq!(ok_eventually(), 200);
    let stalled: Vec<TcpStream> = (0..15).map(|_| half_open(&authority)).collect();
    assert_eq!(ok_eventually(), 200);
    drop(stalled);

    // A body that stops arriving is cut by the idle timeout, not held forever.
    let mut slow_body = TcpStream::connect(&authority).unwrap();
    slow_body
        .write_all(
            format!(
                "POST /v1/environments HTTP/1.1\r\nHost: {authority}\r\nx-goog-api-key: {key}\r\n\
                 content-type: application/json\r\ncontent-length: 100\r\n\r\n{{\"sources\""
            )
            .as_bytes(),
        )
        .unwrap();
    let sent = closed_by_server(slow_body);
    assert!(!sent.starts_with("HTTP/1.1 200"), "{sent}");
    // A kept-alive connection that goes quiet is closed too.
    let mut idle = TcpStream::connect(&authority).unwrap();
    idle.write_all(
        format!(
            "GET /v1/environments HTTP/1.1\r\nHost: {authority}\r\nx-goog-api-key: {key}\r\n\r\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let sent = closed_by_server(idle);
    assert!(sent.starts_with("HTTP/1.1 200"), "{sent}");
    assert_eq!(ok_eventually(), 200);
    let _ = served.terminate();
}
