//! Slowloris: many half-sent requests must neither hold the server forever nor starve real
//! clients. Bounded and on loopback only (the attackers from 127.0.0.2 to 127.0.0.9): caps of
//! at most 256 connections, timeouts of the defaults' length or shorter.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

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
        "[server]\nmax_connections = 32\nmax_unauthenticated_per_peer = 16\n\
         header_read_timeout_secs = 1\nidle_timeout_secs = 1\n",
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

    // At one address's cap of connections without a key: one more from it is answered 503 in
    // the API's shape, then closed.
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

/// The loopback addresses the keyless clients connect from.
fn attacker_addresses() -> Vec<Ipv4Addr> {
    (2..=9).map(|last| Ipv4Addr::new(127, 0, 0, last)).collect()
}

/// A client without a key from `from`: it sends the start of a request, never its end, and
/// when the server closes the connection opens another (with `refresh`), until `stop`. Counts its connections.
async fn keyless_client(
    from: Ipv4Addr,
    server: SocketAddr,
    refresh: bool,
    connected: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
        socket
            .bind(SocketAddr::new(from.into(), 0))
            .expect("bind a loopback address");
        let Ok(mut stream) = socket.connect(server).await else {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        connected.fetch_add(1, Ordering::SeqCst);
        let _ = stream
            .write_all(b"GET /v1/environments HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await;
        // Held until the server closes it (or the test ends).
        let mut sink = [0u8; 1024];
        loop {
            tokio::select! {
                read = stream.read(&mut sink) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                },
                () = tokio::time::sleep(Duration::from_millis(200)) => {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                }
            }
        }
        if !refresh {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts `count` keyless clients spread over [`attacker_addresses`] and waits until each has
/// connected once.
async fn keyless_clients(
    count: usize,
    server: SocketAddr,
    refresh: bool,
    stop: &Arc<AtomicBool>,
) -> tokio::task::JoinSet<()> {
    let addresses = attacker_addresses();
    let connected = Arc::new(AtomicUsize::new(0));
    let mut clients = tokio::task::JoinSet::new();
    for index in 0..count {
        clients.spawn(keyless_client(
            addresses[index % addresses.len()],
            server,
            refresh,
            Arc::clone(&connected),
            Arc::clone(stop),
        ));
    }
    while connected.load(Ordering::SeqCst) < count {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    clients
}

/// Sends `rounds` requests with `key`, each on a new connection: how long each took to its
/// answer, failing on any answer but 200.
async fn key_holder(url: &str, key: &str, rounds: usize) -> Vec<Duration> {
    let (url, key) = (url.to_owned(), key.to_owned());
    tokio::task::spawn_blocking(move || {
        (0..rounds)
            .map(|round| {
                let started = Instant::now();
                let reply = http::send(
                    &url,
                    "GET",
                    "/v1/environments",
                    &[("x-goog-api-key", &key)],
                    "",
                );
                assert_eq!(reply.status, 200, "request {round}: {reply:?}");
                started.elapsed()
            })
            .collect()
    })
    .await
    .expect("the key holder's requests")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_clients_from_many_addresses_cannot_keep_a_key_holder_out() {
    let home = tempfile::tempdir().unwrap();
    let key = api_key(home.path(), "alice");
    // The default limits: 256 connections, 10 s for a request's headers.
    let served = serve(home.path(), &[]);
    let server: SocketAddr = http::authority(&served.base_url).parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let clients = keyless_clients(500, server, true, &stop).await;

    let waited = key_holder(&served.base_url, &key, 30).await;
    stop.store(true, Ordering::SeqCst);
    clients.join_all().await;
    let slowest = waited.iter().max().copied().unwrap_or_default();
    eprintln!(
        "30 of 30 answered beside 500 keyless clients; each took {waited:?}, at most {slowest:?}"
    );
    // No request waited for a keyless client's slot to time out (10 s).
    assert!(slowest < Duration::from_secs(10), "{waited:?}");
    let _ = served.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_with_a_key_pushes_out_the_oldest_keyless_connection() {
    let home = tempfile::tempdir().unwrap();
    // 8 connections, 6 of them for clients without a key, all taken from 8 addresses and held
    // for a minute.
    std::fs::write(
        home.path().join("hookbox.toml"),
        "[server]\nmax_connections = 8\nheader_read_timeout_secs = 60\n",
    )
    .unwrap();
    let key = api_key(home.path(), "alice");
    let served = serve(home.path(), &[]);
    let server: SocketAddr = http::authority(&served.base_url).parse().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let clients = keyless_clients(8, server, false, &stop).await;

    // Each is taken only by pushing out a keyless connection: without that it would get 503.
    let waited = key_holder(&served.base_url, &key, 30).await;
    eprintln!("30 of 30 answered beside 8 held keyless connections; each took {waited:?}");
    stop.store(true, Ordering::SeqCst);
    clients.join_all().await;
    let _ = served.terminate();
}
