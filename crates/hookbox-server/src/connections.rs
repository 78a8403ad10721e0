//! Connections: a cap on how many are open (503 and close above it, once every connection has
//! presented a key), a share of them for clients that have not presented a key yet, per peer
//! address and in all, past which the oldest of them are pushed out ([`Admission`]), a
//! header-read timeout and an idle timeout, so half-sent requests (slowloris) cannot hold the
//! server or keep clients with a key out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, Request, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use futures_util::{Stream, StreamExt};
use hyper::server::conn::http1;
use hyper::service::Service as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot, watch};
use tokio::task::JoinSet;
use tower_http::add_extension::AddExtension;

use crate::admission::{Admission, Refusal, Ticket};
use crate::drain::{self, Drain};
use crate::error::ApiError;

/// How many connections and how much patience the server has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once (default 256). Those that have not presented a valid API key
    /// yet may take all but a quarter of them; when they have, a new connection pushes out the
    /// oldest of the address holding the most; when every connection has presented a key, one
    /// more is answered 503 and closed.
    pub max_connections: usize,
    /// Connections from one address (an IPv6 /64) that have not presented a valid API key yet
    /// (default 16); one more from it pushes out its oldest.
    pub max_unauthenticated_per_peer: usize,
    /// How long the server waits for a request's headers, from the moment it starts waiting
    /// (so also how long a kept-alive connection may sit between requests); then it closes the
    /// connection (default 10 s).
    pub header_read_timeout: Duration,
    /// How long a request body may go without a byte arriving; then the request gets 408 and
    /// the connection closes (default 30 s).
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_connections: 256,
            max_unauthenticated_per_peer: 16,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// Over-cap connections being answered 503 at once; beyond this they are just closed.
const MAX_REJECTING: usize = 64;

/// How long an over-cap connection gets to take its 503.
const REJECT_TIME: Duration = Duration::from_secs(2);

/// Accepts connections on `listener` and serves `app` on them under `limits` until the first
/// of `signals`; then closes the listener and stops as [`drain::wind_down`] says, for at most
/// `shutdown_timeout` unless a second signal comes.
pub(crate) async fn run(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    shutdown_timeout: Duration,
    signals: impl Stream<Item = ()> + Send + 'static,
) -> std::io::Result<()> {
    let runs = Drain::default();
    let app = app
        .layer(axum::middleware::from_fn_with_state(
            limits.idle_timeout,
            idle_body,
        ))
        .layer(Extension(runs.clone()));
    let admission = Admission::new(&limits);
    let rejecting = Arc::new(Semaphore::new(MAX_REJECTING));
    let (stop, stopped) = watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut signals = std::pin::pin!(signals);
    loop {
        tokio::select! {
            Some(()) = signals.next() => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(err) => {
                        // Out of file descriptors, most likely: back off instead of spinning.
                        tracing::warn!("cannot accept a connection: {err}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                match admission.admit(peer.ip()) {
                    Ok((ticket, evicted)) => {
                        let connection = serve(stream, app.clone(), ticket, limits, stopped.clone(), evicted);
                        tasks.spawn(connection);
                    }
                    Err(refusal) => {
                        if let Ok(slot) = Arc::clone(&rejecting).try_acquire_owned() {
                            tasks.spawn(reject(stream, refusal, slot));
                        }
                    }
                }
            }
        }
    }
    // Refused from now on: connections not accepted yet are reset, none is left unanswered.
    drop(listener);
    let _ = stop.send(true);
    drain::wind_down(tasks, &runs, signals, shutdown_timeout).await;
    Ok(())
}

/// Serves one connection, whose [`Ticket`] every request carries (authentication promotes it),
/// until it ends or `evicted` fires (a newer connection pushed it out before it authenticated).
/// From the moment a request's headers are in until it is answered, the connection is not
/// pushed out ([`Ticket::checking`]).
async fn serve(
    stream: TcpStream,
    app: Router,
    ticket: Arc<Ticket>,
    limits: Limits,
    mut stopped: watch::Receiver<bool>,
    mut evicted: oneshot::Receiver<()>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let app = TowerToHyperService::new(AddExtension::new(app, Arc::clone(&ticket)));
    let service = hyper::service::service_fn(move |request| {
        let checking = ticket.checking();
        let response = app.call(request);
        async move {
            let response = response.await;
            drop(checking);
            response
        }
    });
    let connection = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        // Once promoted the signal's sender is gone: `Err`, and this branch is disabled.
        Ok(()) = &mut evicted => return,
        _ = stopped.wait_for(|stop| *stop) => connection.as_mut().graceful_shutdown(),
    }
    let _ = connection.await;
}

/// Answers a refused connection 503 (in the API's shape, with `Retry-After`) and closes it.
async fn reject(mut stream: TcpStream, refusal: Refusal, _slot: OwnedSemaphorePermit) {
    let body = ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        refusal.message(),
    )
    .body()
    .to_string();
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REJECT_TIME, async {
        stream.write_all(reply.as_bytes()).await?;
        stream.shutdown().await?;
        // Read what the client sent until it closes, so closing does not reset the connection
        // before the client has read the reply.
        let mut sink = [0u8; 4096];
        while stream.read(&mut sink).await? > 0 {}
        std::io::Result::Ok(())
    })
    .await;
}

/// Gives the request a body that fails when no byte arrives for `idle`; such a request gets 408
/// and its connection is closed.
async fn idle_body(State(idle): State<Duration>, request: Request<Body>, next: Next) -> Response {
    let stalled = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stalled);
    let (parts, body) = request.into_parts();
    let frames = futures_util::stream::unfold(Some(body.into_data_stream()), move |state| {
        let flag = Arc::clone(&flag);
        async move {
            let mut frames = state?;
            match tokio::time::timeout(idle, frames.next()).await {
                Ok(Some(Ok(bytes))) => Some((Ok::<Bytes, std::io::Error>(bytes), Some(frames))),
                Ok(Some(Err(err))) => Some((Err(std::io::Error::other(err)), None)),
                Ok(None) => None,
                Err(_) => {
                    flag.store(true, Ordering::SeqCst);
                    let err = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the request body stopped arriving",
                    );
                    Some((Err(err), None))
                }
            }
        }
    });
    let response = next
        .run(Request::from_parts(parts, Body::from_stream(frames)))
        .await;
    if !stalled.load(Ordering::SeqCst) {
        return response;
    }
    let mut response = ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "request_timeout",
        format!(
            "the request body stopped arriving for {} s; send it without pauses",
            idle.as_secs()
        ),
    )
    .into_response();
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}
