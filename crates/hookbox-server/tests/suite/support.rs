//! Starts the router on 127.0.0.1:0 and talks to it with a raw hyper HTTP/1.1 client.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookbox_runtime::{Config, Runtime};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{HeaderMap, Request};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::{TcpListener, TcpStream};

/// A running server with its own hookbox home.
pub(crate) struct Api {
    pub(crate) addr: SocketAddr,
    /// An API key created for the tests (`hookbox api-keys create`'s library call).
    pub(crate) key: String,
    home: tempfile::TempDir,
    config: Config,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

/// A reply: status, headers and body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Reply {
    /// The body as JSON.
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|err| panic!("body is not JSON ({err}): {:?}", self.body))
    }

    /// A header as text.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|value| value.to_str().ok())
    }

    /// The error body's `code`, checking the whole error shape.
    pub(crate) fn error_code(&self) -> String {
        let body = self.json();
        assert!(
            body["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty()),
            "{body}"
        );
        assert_eq!(self.header("content-type"), Some("application/json"));
        body["error"]["code"]
            .as_str()
            .expect("string code")
            .to_owned()
    }

    /// The error message.
    pub(crate) fn message(&self) -> String {
        self.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }
}

impl Api {
    /// A server with default limits.
    pub(crate) async fn start() -> Self {
        Self::start_with(|_| {}).await
    }

    /// A server whose hookbox.toml `tweak` adjusts.
    pub(crate) async fn start_with(tweak: impl FnOnce(&mut Config)) -> Self {
        Self::start_in(&std::env::temp_dir(), tweak).await
    }

    /// A server whose home is a new directory in `parent` and whose hookbox.toml `tweak`
    /// adjusts.
    pub(crate) async fn start_in(parent: &Path, tweak: impl FnOnce(&mut Config)) -> Self {
        let home = tempfile::tempdir_in(parent).unwrap();
        let mut config = Config::new(home.path());
        tweak(&mut config);
        let (_, key) = hookbox_server::ApiKeys::open(home.path())
            .unwrap()
            .create("tests")
            .unwrap();
        let (addr, shutdown) = Self::listen(&config).await;
        Self {
            addr,
            key,
            home,
            config,
            shutdown: Some(shutdown),
        }
    }

    /// Starts a router for the runtime of `config` on a free port.
    async fn listen(config: &Config) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let runtime = Arc::new(Runtime::from_config(config).unwrap());
        let app = hookbox_server::router(runtime, hookbox_server::Auth::ApiKeys).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(hookbox_server::serve(
            listener,
            app,
            hookbox_server::ServeOptions::default(),
            async {
                let _ = stop.await;
            },
        ));
        (addr, shutdown)
    }

    /// Stops this server and starts a new one (a new router, store and all) on the same home.
    pub(crate) async fn restart(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        let (addr, shutdown) = Self::listen(&self.config).await;
        self.addr = addr;
        self.shutdown = Some(shutdown);
    }

    /// The hookbox.toml this server was built from.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// The hookbox home.
    pub(crate) fn home(&self) -> &Path {
        self.home.path()
    }

    /// The host directory of environment `id`'s root (on its own file system when it has a
    /// disk budget, so asked of the store).
    pub(crate) fn root(&self, id: &str) -> PathBuf {
        hookbox_env::Environments::open(self.home())
            .unwrap()
            .get(id)
            .unwrap()
            .root()
            .to_path_buf()
    }

    /// Sends one request and reads the whole reply.
    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Reply {
        send_to(self.addr, &self.key, method, path, headers, body).await
    }

    /// `GET path`.
    pub(crate) async fn get(&self, path: &str) -> Reply {
        self.send("GET", path, &[], Bytes::new()).await
    }

    /// `POST path` with a JSON body.
    pub(crate) async fn post_json(&self, path: &str, body: &Value) -> Reply {
        self.send(
            "POST",
            path,
            &[("content-type", "application/json")],
            body.to_string(),
        )
        .await
    }

    /// Creates an environment from `body` and returns its id.
    pub(crate) async fn create(&self, body: &Value) -> String {
        let reply = self.post_json("/v1/environments", body).await;
        assert_eq!(reply.status, 200, "{:?}", reply.body);
        reply.json()["id"].as_str().unwrap().to_owned()
    }
}

impl Drop for Api {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Sends one request to `addr` with API key `key` and reads the whole reply.
pub(crate) async fn send_to(
    addr: SocketAddr,
    key: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> Reply {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    let mut request = Request::builder()
        .method(method)
        .uri(path)
        .header("host", addr.to_string())
        .header("x-goog-api-key", key);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    // As the google-genai SDK does on every request.
    if !headers
        .iter()
        .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
    {
        request = request.header("content-type", "application/json");
    }
    let response = sender
        .send_request(request.body(Full::new(body.into())).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body,
    }
}
