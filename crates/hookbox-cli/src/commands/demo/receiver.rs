//! The demo's stand-in for the seeds' telemetry service: an HTTPS server on 127.0.0.1 that
//! answers every request with `{}` and keeps what it received, so the demo can show what the
//! audit hook delivered (and the header hookbox injected).

use std::convert::Infallible;
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

/// Largest request body kept.
const MAX_BODY: usize = 1024 * 1024;

/// One request the receiver got.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The request path.
    pub(crate) path: String,
    /// The `Authorization` header, if any.
    pub(crate) authorization: Option<String>,
    /// The JSON body (`null` when it was not JSON).
    pub(crate) body: Value,
}

/// A running receiver; dropping it stops it.
pub(crate) struct Receiver {
    port: u16,
    deliveries: Arc<Mutex<Vec<Delivery>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    /// Listens on an ephemeral port of 127.0.0.1, serving TLS with `tls`.
    pub(crate) async fn start(tls: Arc<ServerConfig>) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("cannot listen on 127.0.0.1 for the demo's telemetry receiver")?;
        let port = listener.local_addr()?.port();
        let deliveries = Arc::new(Mutex::new(Vec::new()));
        let acceptor = TlsAcceptor::from(tls);
        let kept = Arc::clone(&deliveries);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let acceptor = acceptor.clone();
                let kept = Arc::clone(&kept);
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = service_fn(move |request| {
                        let kept = Arc::clone(&kept);
                        async move { Ok::<_, Infallible>(record(request, &kept).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Ok(Self {
            port,
            deliveries,
            task,
        })
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// What it received so far, in order.
    pub(crate) fn deliveries(&self) -> Vec<Delivery> {
        self.deliveries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Keeps one request and answers `{}`.
async fn record(request: Request<Incoming>, kept: &Mutex<Vec<Delivery>>) -> Response<Full<Bytes>> {
    let path = request.uri().path().to_owned();
    let authorization = request
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(collected) => serde_json::from_slice(&collected.to_bytes()).unwrap_or(Value::Null),
        Err(_) => Value::Null,
    };
    kept.lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Delivery {
            path,
            authorization,
            body,
        });
    Response::new(Full::new(Bytes::from_static(b"{}")))
}
