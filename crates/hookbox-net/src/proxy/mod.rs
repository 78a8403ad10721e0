//! The egress proxy: an HTTP/1.1 forward proxy serving one environment per listener (each
//! sandbox's is a TCP listener opened in the sandbox's network namespace; a Unix socket works too), applying that environment's
//! [`EgressPolicy`] and the address rules to every request.
//!
//! Each request is handled in this order, and the first refusal answers it:
//!
//! 1. **Framing** (400): hyper's parser refuses CR/LF/NUL in the target, obs-fold, differing
//!    `Content-Length`s and a `Transfer-Encoding` not ending in `chunked`, and oversized heads
//!    (431); a request with both `Content-Length` and `Transfer-Encoding` is re-framed as
//!    chunked (the length is dropped) and its connection closed after the response. The proxy
//!    also refuses duplicate `Host` headers.
//! 2. **Target** (400): `CONNECT host:port` (authority form), or an absolute `http://` URL whose
//!    `Host` header, if any, names the same host and port. Origin-form requests, `https://`
//!    URLs (use `CONNECT`) and user info in the target are refused. The host is canonicalized.
//! 3. **Policy** (403), decided on the canonical host **before any DNS lookup**. Hosts whose
//!    allowlist entry has a `transform` or a resolved `credential` (see
//!    [`EgressPolicy::from_network_with_credentials`]) get their headers only on TLS the proxy
//!    terminates: plain HTTP to them is refused, and so is `CONNECT` unless the environment is
//!    served with a [`ProxyCa`] ([`EgressProxy::serve_intercepting`]), so a request never goes
//!    out without them. An entry whose `credential` is not resolved refuses its hosts. `CONNECT`
//!    is limited to [`ProxyOptions::connect_ports`].
//! 4. **Addresses** (403): an IP literal is checked directly, a name goes through the guarded
//!    resolver; addresses of the proxy itself ([`ProxyOptions::own_addresses`] and the TCP
//!    listener's own address) are never dialed, and neither is any address of this host (one a
//!    socket can be bound to), whatever `allow_private_cidrs` admits, so the sandbox never
//!    reaches hookbox's REST API or anything else listening here (loopback stays dialable only
//!    under the tests' [`ProxyOptions::permit_loopback`]). The dial goes to a checked address.
//! 5. **Forwarding**: `CONNECT` answers 200, then reads the client's TLS ClientHello (whole,
//!    however it is split, within 32 KiB and [`ProxyOptions::header_read_timeout`] or the idle
//!    timeout if shorter) and closes
//!    the tunnel unless its SNI names the `CONNECT` host (case-insensitive, trailing dot
//!    ignored): a ClientHello without SNI, or bytes that are not TLS, are refused as "SNI
//!    absent", so a blind tunnel carries only TLS for the host the policy admitted (no domain
//!    fronting). Its decision is reported after this check, with the SNI. The tunnel then
//!    relays bytes until either side closes or is idle for [`ProxyOptions::idle_timeout`].
//!    Plain HTTP is sent on a fresh upstream connection in origin form, with hop-by-hop headers
//!    (and `Proxy-Authorization`) removed both ways. Responses, redirects included, are passed back as they are: the proxy follows
//!    nothing.
//! 6. **Interception** (`CONNECT` to a `transform`/`credential` host, with a [`ProxyCa`]):
//!    before answering 200 the proxy opens TLS to the checked address, verified against the platform's roots plus
//!    [`ProxyOptions::extra_root_certs_pem`] (a failure is a 502). It then terminates the
//!    client's TLS with a leaf for the `CONNECT` host issued by the environment's CA; a
//!    ClientHello whose SNI is not that host (or has none) gets the connection closed. On the
//!    decrypted stream it serves HTTP/1.1: each request's `Host` (and absolute-form authority)
//!    must name the `CONNECT` host and port (else 421), hop-by-hop headers and
//!    `Proxy-Authorization` are removed, the `transform` and `credential` headers replace
//!    same-named ones, and the request goes upstream in origin form over the verified TLS
//!    connection (re-dialed to the same checked address when the upstream closed it). Responses
//!    are relayed, nothing is followed.
//! 7. **Redaction** (N12, on intercepted connections): every injected value of at least 8 bytes,
//!    as it is and in its common encodings (base64 standard and URL-safe at any alignment, hex,
//!    percent and JSON `\u` escapes), is replaced with `[REDACTED]` wherever the upstream
//!    reflects it: response header values,
//!    trailers, the reason phrase and the body (rewritten as it streams, so a value split
//!    across chunks is still found; `Content-Length` is dropped and the body goes out chunked).
//!    Shorter values (such as `X-Flag: 1`) are not scanned, as they would corrupt bodies. Bodies
//!    must be scannable: requests carrying scanned values go upstream with
//!    `Accept-Encoding: identity` (overwriting the client's), and a response that still comes
//!    with another `Content-Encoding` is withheld (502). Parts of values and other encodings
//!    are not matched; see `redact.rs` for the residual limit.
//!
//! Every request's outcome is reported once to the [`DecisionLog`] as a [`ProxyDecision`], which
//! never carries header values; intercepted `CONNECT`s and each request inside them are marked
//! [`ProxyDecision::intercepted`], and [`ProxyDecision::redactions`] counts the replacements in
//! a response (such a request is reported once its response body has been relayed, or dropped).
//! Connections beyond [`ProxyOptions::max_connections`] get a 503; a client that has not sent a
//! whole request head within [`ProxyOptions::header_read_timeout`] is disconnected. Dropping the
//! serve future (a restart) closes every connection and tunnel it opened: the proxy fails closed.
//!
//! Sandboxes reach it on 127.0.0.1 inside through `hookbox_env::SandboxEgress` (a listener
//! opened in the sandbox's network namespace).

mod ca;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod handler;
mod hello;
mod intercept;
mod own;
mod redact;
mod target;
mod tunnel;

use std::convert::Infallible;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine as _;
use base64::prelude::BASE64_STANDARD;
use hyper::HeaderMap;
use hyper::header::PROXY_AUTHORIZATION;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use ipnet::IpNet;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;

use rustls::ClientConfig;

use crate::address::AddressRules;
use crate::resolve::GuardedResolver;
use crate::{EgressPolicy, NetError, tls};

pub use ca::ProxyCa;

/// Settings of an [`EgressProxy`]. The defaults are the strict ones: no loopback, no private
/// ranges, `CONNECT` to port 443 only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyOptions {
    /// Allow dialing loopback addresses (default `false`); for tests and local upstreams.
    pub permit_loopback: bool,
    /// Non-public ranges that may be dialed anyway (default none). Unspecified, multicast,
    /// broadcast and cloud metadata addresses stay refused even inside a listed range.
    pub allow_private_cidrs: Vec<IpNet>,
    /// Static name overrides, like curl's `--resolve`, answered without a DNS lookup; the
    /// addresses are still checked like resolved ones.
    pub resolve: Vec<(String, IpAddr)>,
    /// The ports `CONNECT` may reach (default `[443]`). Plain HTTP may use any port.
    pub connect_ports: Vec<u16>,
    /// Addresses that belong to hookbox itself (the relay, the hook receiver) and are never
    /// dialed. A TCP listener's own address is added automatically.
    pub own_addresses: Vec<SocketAddr>,
    /// The most connections served at once per listener (default 256); more get a 503.
    pub max_connections: usize,
    /// How long a client may take to send a request head (default 10 s).
    pub header_read_timeout: Duration,
    /// The largest request head accepted, in bytes (default 16 KiB; at least 8 KiB is
    /// enforced). Larger heads get a 431.
    pub max_header_bytes: usize,
    /// The longest a TCP connect upstream may take (default 10 s).
    pub connect_timeout: Duration,
    /// How long a tunnel may carry no bytes in either direction, and how long an upstream may
    /// take to answer a plain HTTP request, before the connection is closed (default 5 min).
    pub idle_timeout: Duration,
    /// Extra trusted root certificates for the upstreams of intercepted connections, each a PEM
    /// document holding one or more `CERTIFICATE` blocks, trusted in addition to the platform's
    /// roots (default none).
    pub extra_root_certs_pem: Vec<Vec<u8>>,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self {
            permit_loopback: false,
            allow_private_cidrs: Vec::new(),
            resolve: Vec::new(),
            connect_ports: vec![443],
            own_addresses: Vec::new(),
            max_connections: 256,
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(300),
            extra_root_certs_pem: Vec::new(),
        }
    }
}

/// One request's outcome, for the hook trace and the audit store. It never holds header values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyDecision {
    /// The canonical host of the request target (as written when it has no canonical form;
    /// empty when the request had no usable target or was refused before being read).
    pub host: String,
    /// The target port (0 when unknown).
    pub port: u16,
    /// The request method (`CONNECT`, `GET`, …; empty when refused before being read).
    pub method: String,
    /// Whether the request was sent upstream (for `CONNECT`, whether the tunnel was opened).
    pub allowed: bool,
    /// Why: the rule that admitted or refused it, or the upstream failure.
    pub reason: String,
    /// Whether the proxy terminated the client's TLS: an intercepted `CONNECT`, or a request
    /// sent inside one.
    pub intercepted: bool,
    /// How many occurrences of injected `transform`/`credential` values were replaced with
    /// `[REDACTED]` in the response's head and body (only ever non-zero for a request inside an
    /// intercepted connection; the values themselves are never recorded).
    pub redactions: usize,
    /// The server name (SNI) of the client's TLS ClientHello, canonicalized, for a blind
    /// `CONNECT` whose first bytes were a ClientHello naming one (`None` otherwise). A blind
    /// tunnel's decision is reported once the ClientHello has been checked.
    pub sni: Option<String>,
    /// Who asked: the user name of the first `Proxy-Authorization: Basic` credentials the
    /// connection sent (a client given the proxy URL `http://NAME:x@host:port` sends them), so
    /// that several callers sharing one listener can tell their requests apart. It names a
    /// caller; it proves nothing (the proxy admits requests without it).
    pub caller: Option<String>,
}

/// Receives every [`ProxyDecision`]; called on the connection's task, so it should be quick
/// (push to a channel or a buffer).
pub type DecisionLog = Arc<dyn Fn(ProxyDecision) + Send + Sync>;

/// Where an environment's clients connect to its proxy.
#[derive(Debug)]
pub enum ProxyListener {
    /// A Unix socket (for a local client; the sandboxes' proxies listen on TCP).
    Unix(UnixListener),
    /// A TCP listener (its own address is never dialed).
    Tcp(TcpListener),
}

impl From<UnixListener> for ProxyListener {
    fn from(listener: UnixListener) -> Self {
        Self::Unix(listener)
    }
}

impl From<TcpListener> for ProxyListener {
    fn from(listener: TcpListener) -> Self {
        Self::Tcp(listener)
    }
}

/// One accepted connection.
enum Accepted {
    Unix(tokio::net::UnixStream),
    Tcp(tokio::net::TcpStream),
}

impl ProxyListener {
    async fn accept(&self) -> io::Result<Accepted> {
        match self {
            Self::Unix(listener) => Ok(Accepted::Unix(listener.accept().await?.0)),
            Self::Tcp(listener) => Ok(Accepted::Tcp(listener.accept().await?.0)),
        }
    }
}

/// The egress proxy: the address rules and resolver shared by every environment it serves.
/// Cloning is cheap.
#[derive(Clone)]
pub struct EgressProxy {
    shared: Arc<Shared>,
}

/// What every connection of every listener shares.
struct Shared {
    options: ProxyOptions,
    rules: Arc<AddressRules>,
    resolver: GuardedResolver,
    /// TLS to the upstreams of intercepted connections (HTTP/1.1 only).
    upstream_tls: Arc<ClientConfig>,
}

/// What one served connection needs; tunnels keep it (and so its permit) alive.
struct Connection {
    shared: Arc<Shared>,
    policy: Arc<EgressPolicy>,
    log: DecisionLog,
    /// The environment's CA when its `transform` hosts are intercepted.
    ca: Option<Arc<ProxyCa>>,
    own_addresses: Arc<[SocketAddr]>,
    /// Closed when `serve` stops, which ends every tunnel.
    shutdown: watch::Receiver<()>,
    /// The caller named by the connection's first `Proxy-Authorization` (see
    /// [`ProxyDecision::caller`]).
    caller: OnceLock<String>,
    _permit: OwnedSemaphorePermit,
}

impl Connection {
    /// Notes the caller named by `headers`' `Proxy-Authorization: Basic` credentials, unless
    /// the connection named one before.
    fn note_caller(&self, headers: &HeaderMap) {
        if self.caller.get().is_some() {
            return;
        }
        let name = headers
            .get(PROXY_AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Basic "))
            .and_then(|encoded| BASE64_STANDARD.decode(encoded.trim()).ok())
            .and_then(|decoded| String::from_utf8(decoded).ok())
            .and_then(|pair| pair.split(':').next().map(str::to_owned))
            .filter(|name| !name.is_empty());
        if let Some(name) = name {
            let _first = self.caller.set(name);
        }
    }

    /// The caller the connection named, if any.
    fn caller(&self) -> Option<String> {
        self.caller.get().cloned()
    }

    /// Reports `decision` to the log, with the connection's caller.
    fn record(&self, decision: ProxyDecision) {
        (self.log)(ProxyDecision {
            caller: self.caller(),
            ..decision
        });
    }
}

impl fmt::Debug for EgressProxy {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("EgressProxy")
            .field("options", &self.shared.options)
            .finish_non_exhaustive()
    }
}

impl EgressProxy {
    /// Builds a proxy from `options`; fails on an invalid `resolve` override name, a
    /// `max_connections` of 0, or root certificates that cannot be loaded.
    pub fn new(options: ProxyOptions) -> Result<Self, NetError> {
        if options.max_connections == 0 {
            return Err(NetError::Build(
                "the proxy's max_connections must be at least 1".to_owned(),
            ));
        }
        let rules = Arc::new(AddressRules {
            permit_loopback: options.permit_loopback,
            allowed: options.allow_private_cidrs.clone(),
        });
        let resolver = GuardedResolver::new(Arc::clone(&rules), &options.resolve)?;
        let mut upstream_tls = tls::client_config(&options.extra_root_certs_pem)?;
        upstream_tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            shared: Arc::new(Shared {
                options,
                rules,
                resolver,
                upstream_tls: Arc::new(upstream_tls),
            }),
        })
    }

    /// Serves one environment on `listener` with its `policy`, reporting every request to `log`,
    /// until the returned future is dropped or the listener is shut down (`shutdown(2)`, as a
    /// sandbox's is when the sandbox stops). Ending closes every connection and tunnel it
    /// opened (the proxy fails closed). Other accept errors (such as running out of file
    /// descriptors) are retried after a short pause.
    ///
    /// Hosts whose allowlist entry has a `transform` are refused; use
    /// [`serve_intercepting`](Self::serve_intercepting) to reach them.
    pub async fn serve(
        &self,
        listener: impl Into<ProxyListener>,
        policy: Arc<EgressPolicy>,
        log: DecisionLog,
    ) {
        self.serve_with(listener.into(), policy, None, log).await;
    }

    /// Serves `policy` (as [`serve`](Self::serve)) on a new listener at a free port of
    /// `127.0.0.1`, for a program on this host to use as its HTTP proxy (`git` cloning a
    /// repository source). Returns the listener's address and the task serving it; aborting
    /// the task stops the proxy and closes what it opened.
    pub async fn spawn_on_loopback(
        self,
        policy: Arc<EgressPolicy>,
        log: DecisionLog,
    ) -> io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let address = listener.local_addr()?;
        let serving = tokio::spawn(async move { self.serve(listener, policy, log).await });
        Ok((address, serving))
    }

    /// Like [`serve`](Self::serve), but `CONNECT`s to hosts whose allowlist entry has a
    /// `transform` are intercepted: TLS is terminated with leaves issued by `ca` (the
    /// environment's own CA, whose certificate the sandbox trusts) and the `transform` headers
    /// are injected into every request (see the module documentation, step 6).
    pub async fn serve_intercepting(
        &self,
        listener: impl Into<ProxyListener>,
        policy: Arc<EgressPolicy>,
        ca: Arc<ProxyCa>,
        log: DecisionLog,
    ) {
        self.serve_with(listener.into(), policy, Some(ca), log)
            .await;
    }

    async fn serve_with(
        &self,
        listener: ProxyListener,
        policy: Arc<EgressPolicy>,
        ca: Option<Arc<ProxyCa>>,
        log: DecisionLog,
    ) {
        let mut own = self.shared.options.own_addresses.clone();
        if let ProxyListener::Tcp(tcp) = &listener
            && let Ok(address) = tcp.local_addr()
        {
            own.push(address);
        }
        let own_addresses: Arc<[SocketAddr]> = own.into();
        let limit = Arc::new(Semaphore::new(self.shared.options.max_connections));
        let (_shutdown, shutdown) = watch::channel(());
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let accepted = match accepted {
                        Ok(accepted) => accepted,
                        // The listener was shut down (its sandbox stopped): nothing more comes.
                        Err(error) if error.kind() == io::ErrorKind::InvalidInput => return,
                        Err(_) => {
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    };
                    let Ok(permit) = Arc::clone(&limit).try_acquire_owned() else {
                        let limit = self.shared.options.max_connections;
                        log(ProxyDecision {
                            host: String::new(),
                            port: 0,
                            method: String::new(),
                            allowed: false,
                            reason: format!("too many connections (the limit is {limit})"),
                            intercepted: false,
                            redactions: 0,
                            sni: None,
                            caller: None,
                        });
                        match accepted {
                            Accepted::Unix(stream) => connections.spawn(refuse_busy(stream)),
                            Accepted::Tcp(stream) => connections.spawn(refuse_busy(stream)),
                        };
                        continue;
                    };
                    let connection = Arc::new(Connection {
                        shared: Arc::clone(&self.shared),
                        policy: Arc::clone(&policy),
                        log: Arc::clone(&log),
                        ca: ca.clone(),
                        own_addresses: Arc::clone(&own_addresses),
                        shutdown: shutdown.clone(),
                        caller: OnceLock::new(),
                        _permit: permit,
                    });
                    match accepted {
                        Accepted::Unix(stream) => connections.spawn(serve_stream(stream, connection)),
                        Accepted::Tcp(stream) => connections.spawn(serve_stream(stream, connection)),
                    };
                }
                Some(_finished) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    }
}

/// Serves HTTP/1.1 on one accepted connection, with upgrades for `CONNECT`.
async fn serve_stream<S>(stream: S, connection: Arc<Connection>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let options = &connection.shared.options;
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(options.header_read_timeout)
        .max_buf_size(options.max_header_bytes.max(8192))
        .keep_alive(true);
    let service_connection = Arc::clone(&connection);
    let service = service_fn(move |request| {
        let connection = Arc::clone(&service_connection);
        async move { Ok::<_, Infallible>(handler::handle(connection, request).await) }
    });
    // Client hang-ups, timeouts and parse errors (already answered by hyper) end the connection.
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

/// Answers a connection over the limit with a 503 and closes it.
async fn refuse_busy<S>(mut stream: S)
where
    S: AsyncWrite + Unpin,
{
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\
        content-type: text/plain\r\ncontent-length: 37\r\n\r\n\
        the egress proxy has too many clients";
    let write = async {
        stream.write_all(BUSY).await?;
        stream.shutdown().await
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), write).await;
}
