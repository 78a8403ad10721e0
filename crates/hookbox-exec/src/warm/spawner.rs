//! The thread that forks every warm sandbox.
//!
//! A sandbox's first process takes a parent-death signal, which the kernel sends when the
//! **thread** that forked it ends, not the process. A runtime's threads come and go (tokio
//! ends a blocking thread idle for its keep-alive, 10 s by default, and a worker that blocked
//! in place becomes one), so a sandbox forked from one of them would die with it, in the
//! middle of its calls. Every warm sandbox is forked from this one thread instead, started on
//! first use and never ended: a sandbox lives until it is dropped or this process dies (even
//! by `kill -9`, when the kernel still sends the signal).

use std::sync::mpsc::{self, Sender};
use std::sync::{Mutex, PoisonError};
use std::thread::JoinHandle;

/// One fork, run on the thread.
type Job = Box<dyn FnOnce() + Send>;

/// The thread's queue and the thread; `None` before its first use.
static SPAWNER: Mutex<Option<(Sender<Job>, JoinHandle<()>)>> = Mutex::new(None);

/// Spawns `command` from the spawner thread, registered with the caller's runtime as if
/// spawned here.
pub(super) async fn spawn(
    mut command: tokio::process::Command,
) -> std::io::Result<tokio::process::Child> {
    let runtime = tokio::runtime::Handle::current();
    let (reply, spawned) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        let _runtime = runtime.enter();
        let _sent = reply.send(command.spawn());
    });
    queue()?.send(job).map_err(|_| gone())?;
    spawned.await.map_err(|_| gone())?
}

/// The spawner thread's queue, the thread started when there is none (or it ended, which
/// only a panic would make it do).
fn queue() -> std::io::Result<Sender<Job>> {
    let mut spawner = SPAWNER.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((queue, thread)) = spawner.as_ref()
        && !thread.is_finished()
    {
        return Ok(queue.clone());
    }
    let (queue, jobs) = mpsc::channel::<Job>();
    let thread = std::thread::Builder::new()
        .name("hookbox-warm-spawner".into())
        .spawn(move || {
            // The queue is never closed: this thread lives as long as the process.
            for job in jobs {
                job();
            }
        })?;
    *spawner = Some((queue.clone(), thread));
    Ok(queue)
}

/// The error when the spawner thread did not spawn (it ended while asked).
fn gone() -> std::io::Error {
    std::io::Error::other("the thread that starts warm sandboxes is gone")
}
