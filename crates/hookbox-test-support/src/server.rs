//! The server's lifecycle: bind, run on the caller's runtime or on an own thread, shut down on drop.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::thread;

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::connection::{Shared, serve};
use crate::{RecordedRequest, Reply, tls};

/// A real local HTTP/1.1 server (keep-alive on, optionally behind TLS) bound to `127.0.0.1` on a
/// free port. Every request is recorded, then answered with whatever the responder returns. Shuts
/// down when dropped.
pub struct TestHttpServer {
    addr: SocketAddr,
    scheme: &'static str,
    shared: Arc<Shared>,
    driver: Driver,
}

/// Who runs the accept loop, and therefore how to stop it.
enum Driver {
    /// A task on the runtime that called [`TestHttpServer::start`].
    Task(JoinHandle<()>),
    /// A thread with its own runtime, started by [`TestHttpServer::start_blocking`].
    Thread {
        stop: Option<oneshot::Sender<()>>,
        thread: Option<thread::JoinHandle<()>>,
    },
}

impl TestHttpServer {
    /// Binds `127.0.0.1:0` and serves on the current tokio runtime.
    ///
    /// # Panics
    ///
    /// If called outside a tokio runtime.
    pub async fn start<F>(responder: F) -> io::Result<Self>
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        Self::start_on_runtime(responder, None).await
    }

    /// Like [`start`](Self::start), but over HTTPS: the server presents a certificate for
    /// `localhost` and `127.0.0.1` signed by [`TEST_CA_PEM`](crate::TEST_CA_PEM), and
    /// [`url`](Self::url) returns `https://` URLs.
    ///
    /// # Panics
    ///
    /// If called outside a tokio runtime.
    pub async fn start_https<F>(responder: F) -> io::Result<Self>
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        Self::start_on_runtime(responder, Some(tls::acceptor()?)).await
    }

    /// Serves HTTPS with `certificates` on `listener` (already bound, e.g. inside a network
    /// namespace; see [`TestNetns::bind_inside`](crate::TestNetns::bind_inside)) on the current
    /// tokio runtime. [`url`](Self::url) names the listener's address.
    ///
    /// # Panics
    ///
    /// If called outside a tokio runtime.
    pub fn start_https_on<F>(
        listener: std::net::TcpListener,
        certificates: &crate::TestCertificates,
        responder: F,
    ) -> io::Result<Self>
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(responder));
        let task = tokio::spawn(serve(
            listener,
            Some(certificates.acceptor()),
            Arc::clone(&shared),
        ));
        Ok(Self {
            addr,
            scheme: "https",
            shared,
            driver: Driver::Task(task),
        })
    }

    /// Serves plain HTTP on `listener` (already bound, e.g. inside a network namespace; see
    /// [`TestNetns::bind_inside`](crate::TestNetns::bind_inside)) on the current tokio runtime.
    /// [`url`](Self::url) names the listener's address.
    ///
    /// # Panics
    ///
    /// If called outside a tokio runtime.
    pub fn start_on<F>(listener: std::net::TcpListener, responder: F) -> io::Result<Self>
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        listener.set_nonblocking(true)?;
        let listener = TcpListener::from_std(listener)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::new(responder));
        let task = tokio::spawn(serve(listener, None, Arc::clone(&shared)));
        Ok(Self {
            addr,
            scheme: "http",
            shared,
            driver: Driver::Task(task),
        })
    }

    async fn start_on_runtime<F>(responder: F, tls: Option<TlsAcceptor>) -> io::Result<Self>
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let scheme = if tls.is_some() { "https" } else { "http" };
        let shared = Arc::new(Shared::new(responder));
        let task = tokio::spawn(serve(listener, tls, Arc::clone(&shared)));
        Ok(Self {
            addr,
            scheme,
            shared,
            driver: Driver::Task(task),
        })
    }

    /// Binds `127.0.0.1:0` and serves from a new thread with its own tokio runtime, so synchronous
    /// code (for example a test that spawns the `hookbox` binary) can run a server. The port is
    /// bound when this returns. Also works when called inside a runtime; dropping the server then
    /// briefly blocks while the thread stops.
    pub fn start_blocking<F>(responder: F) -> io::Result<Self>
    where
        F: Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let std_listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let listener = {
            let _runtime = runtime.enter();
            TcpListener::from_std(std_listener)?
        };
        let shared = Arc::new(Shared::new(responder));
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = Arc::clone(&shared);
        let thread = thread::Builder::new()
            .name(format!("test-http-server-{}", addr.port()))
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        () = serve(listener, None, serving) => {}
                        _ = stopped => {}
                    }
                });
            })?;
        Ok(Self {
            addr,
            scheme: "http",
            shared,
            driver: Driver::Thread {
                stop: Some(stop),
                thread: Some(thread),
            },
        })
    }

    /// The address the server listens on (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/` (`https://` for [`start_https`](Self::start_https)) followed by
    /// `path` (a leading `/` in `path` is optional).
    pub fn url(&self, path: &str) -> String {
        let path = path.trim_start_matches('/');
        format!("{}://{}/{path}", self.scheme, self.addr)
    }

    /// Every request received so far, in arrival order (a request is recorded once its body has
    /// been read, before any [`Reply::delay`]).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.requests()
    }
}

impl Drop for TestHttpServer {
    fn drop(&mut self) {
        match &mut self.driver {
            Driver::Task(task) => task.abort(),
            Driver::Thread { stop, thread } => {
                if let Some(stop) = stop.take() {
                    // The thread may already be gone; then there is nothing to stop.
                    let _ = stop.send(());
                }
                if let Some(thread) = thread.take() {
                    // A panic on the server thread was already reported by the panic hook.
                    let _ = thread.join();
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
