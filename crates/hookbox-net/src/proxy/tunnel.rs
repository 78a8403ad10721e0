//! Blind `CONNECT` tunnels: the client's first bytes must be a TLS ClientHello whose SNI names
//! the `CONNECT` host (else the tunnel is closed before anything goes upstream: no domain
//! fronting, and no other protocol); then bytes are relayed both ways until either side closes,
//! the tunnel has been idle too long, or the proxy stops serving.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::{Connection, ProxyDecision, hello};

/// Waits for the client's side of the upgrade (after the 200 is sent), reads its ClientHello and
/// checks the SNI against the `CONNECT` host, then relays. `decision` (the policy's admission)
/// is reported once the SNI has been checked, refused when it does not name the host.
/// `connection` is held for the tunnel's lifetime, so the tunnel counts against the connection
/// limit.
pub(super) async fn relay(
    on_upgrade: OnUpgrade,
    mut upstream: TcpStream,
    connection: Arc<Connection>,
    mut decision: ProxyDecision,
) {
    let Ok(upgraded) = on_upgrade.await else {
        decision.allowed = false;
        decision.reason = "the client went away before the tunnel opened".to_owned();
        connection.record(decision);
        return;
    };
    let mut client = TokioIo::new(upgraded);
    let options = &connection.shared.options;
    let wait = options.header_read_timeout.min(options.idle_timeout);
    let mut shutdown = connection.shutdown.clone();
    let hello = tokio::select! {
        hello = hello::read(&mut client, wait) => hello,
        _ = shutdown.changed() => Err("the proxy stopped".to_owned()),
    };
    let checked = match hello {
        Ok(hello) => {
            decision.sni.clone_from(&hello.sni);
            names_host(hello.sni.as_deref(), &decision.host).map(|()| hello.bytes)
        }
        Err(problem) => Err(format!(
            "SNI absent: {problem}; a blind tunnel only carries TLS whose SNI names the CONNECT \
             host"
        )),
    };
    let first = match checked {
        Ok(first) => first,
        Err(reason) => {
            decision.allowed = false;
            decision.reason = reason;
            connection.record(decision);
            return;
        }
    };
    let sni = decision.sni.clone().unwrap_or_default();
    decision.reason = format!("{}; the TLS ClientHello's SNI is `{sni}`", decision.reason);
    connection.record(decision);
    if upstream.write_all(&first).await.is_err() {
        return;
    }
    let activity = Arc::new(Mutex::new(Instant::now()));
    let mut client = Tracked::new(client, &activity);
    let mut upstream = Tracked::new(upstream, &activity);
    let copy = tokio::io::copy_bidirectional(&mut client, &mut upstream);
    until_idle(copy, &activity, &connection).await;
}

/// Whether the ClientHello's (canonical) `sni` names the canonical `CONNECT` host `host`; the
/// refusal's reason when not.
fn names_host(sni: Option<&str>, host: &str) -> Result<(), String> {
    match sni {
        Some(sni) if sni == host => Ok(()),
        Some(sni) => Err(format!(
            "the TLS ClientHello's SNI (`{sni}`) does not name the CONNECT host `{host}`: a blind \
             tunnel only carries TLS for the host it was opened to (domain fronting is refused)"
        )),
        None => Err(format!(
            "SNI absent: the TLS ClientHello names no server, so it cannot be checked against the \
             CONNECT host `{host}`"
        )),
    }
}

/// Runs `work` until it ends, the proxy stops serving, or no bytes have moved through the
/// [`Tracked`] streams sharing `activity` for the idle timeout.
pub(super) async fn until_idle<F: Future>(
    work: F,
    activity: &Mutex<Instant>,
    connection: &Connection,
) {
    let idle = connection.shared.options.idle_timeout;
    let mut shutdown = connection.shutdown.clone();
    tokio::pin!(work);
    loop {
        let deadline = last(activity) + idle;
        tokio::select! {
            _ = &mut work => return,
            _ = shutdown.changed() => return,
            () = tokio::time::sleep_until(deadline) => {
                if last(activity) + idle <= Instant::now() {
                    return;
                }
            }
        }
    }
}

fn last(activity: &Mutex<Instant>) -> Instant {
    *activity.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A stream that records when bytes last moved through it.
pub(super) struct Tracked<S> {
    inner: S,
    activity: Arc<Mutex<Instant>>,
}

impl<S> Tracked<S> {
    pub(super) fn new(inner: S, activity: &Arc<Mutex<Instant>>) -> Self {
        Self {
            inner,
            activity: Arc::clone(activity),
        }
    }

    fn touch(&self) {
        *self.activity.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Tracked<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buffer.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(context, buffer);
        if matches!(polled, Poll::Ready(Ok(()))) && buffer.filled().len() > before {
            self.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Tracked<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        context: &mut Context<'_>,
        buffer: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(context, buffer);
        if matches!(polled, Poll::Ready(Ok(written)) if written > 0) {
            self.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(context)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(context)
    }
}
