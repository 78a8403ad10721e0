//! The accept loop and per-connection HTTP/1.1 handling: record the request, ask the responder,
//! wait the reply's delay, answer.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::{RecordedRequest, Reply};

type Responder = dyn Fn(&RecordedRequest) -> Reply + Send + Sync;

/// State shared by the server handle and every connection task.
pub(crate) struct Shared {
    responder: Box<Responder>,
    requests: Mutex<Vec<RecordedRequest>>,
}

impl Shared {
    pub(crate) fn new<F>(responder: F) -> Self
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        Self {
            responder: Box::new(responder),
            requests: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<RecordedRequest>> {
        // A panicking responder cannot leave the list half-written, so a poisoned lock is fine.
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Accepts connections until the future is dropped; dropping it also drops (aborts) every
/// connection task, so no keep-alive connection outlives the server.
/// With `tls`, each connection first completes a TLS handshake (a failed one just ends it).
pub(crate) async fn serve(listener: TcpListener, tls: Option<TlsAcceptor>, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    let mut next_connection = 0_u64;
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let (tls, shared) = (tls.clone(), Arc::clone(&shared));
                    let connection = next_connection;
                    connections.spawn(async move {
                        match tls {
                            None => serve_connection(stream, connection, shared).await,
                            Some(tls) => {
                                if let Ok(stream) = tls.accept(stream).await {
                                    serve_connection(stream, connection, shared).await;
                                }
                            }
                        }
                    });
                    next_connection += 1;
                }
                // Out of file descriptors or similar: back off instead of spinning.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            Some(_finished) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn serve_connection<S>(stream: S, connection: u64, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| answer(request, connection, Arc::clone(&shared)));
    // A client that hangs up mid-request is not the server's problem.
    let _ = http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn answer(
    request: Request<Incoming>,
    connection: u64,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let recorded = RecordedRequest {
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.to_string(), ToString::to_string),
        headers: parts
            .headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect(),
        body: body.to_vec(),
        connection,
    };
    let reply = (shared.responder)(&recorded);
    shared.lock().push(recorded);
    if !reply.delay.is_zero() {
        tokio::time::sleep(reply.delay).await;
    }
    Ok(into_response(reply))
}

fn into_response(reply: Reply) -> Response<Full<Bytes>> {
    let mut builder = Response::builder().status(reply.status);
    for (name, value) in &reply.headers {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(reply.body)))
        .unwrap_or_else(|error| {
            let message = format!("the test responder returned an invalid Reply: {error}");
            let mut response = Response::new(Full::new(Bytes::from(message)));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            response
        })
}
