//! `CONNECT` tunnels: bytes relayed both ways until either side closes, the tunnel has been
//! idle too long, or the proxy stops serving.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::Connection;

/// Waits for the client's side of the upgrade (after the 200 is sent), then relays. `connection`
/// is held for the tunnel's lifetime, so the tunnel counts against the connection limit.
pub(super) async fn relay(on_upgrade: OnUpgrade, upstream: TcpStream, connection: Arc<Connection>) {
    let Ok(upgraded) = on_upgrade.await else {
        return;
    };
    let activity = Arc::new(Mutex::new(Instant::now()));
    let mut client = Tracked::new(TokioIo::new(upgraded), &activity);
    let mut upstream = Tracked::new(upstream, &activity);
    let copy = tokio::io::copy_bidirectional(&mut client, &mut upstream);
    until_idle(copy, &activity, &connection).await;
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
