//! Stopping a server: the runs it started, and the order to cut them short. [`serve`](crate::serve)
//! gives every request a [`Drain`]; each run a create starts is [tracked](Drain::track) on it
//! until it ends, and ends `failed` when the server [stops](Drain::stop) it (its drain's time
//! is up, or a second signal came).

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How long, once the runs are stopped, their requests get to be answered before the
/// connections still open are closed.
const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// How often a drain says what it still waits for.
const REPORT_EVERY: Duration = Duration::from_secs(5);

/// Lets `connections` (told to close once their request in flight is answered) and the runs of
/// `runs` finish, for at most `timeout` or until the next of `signals`; then stops the runs
/// left (each ends `failed`, saying why), gives their requests [`ANSWER_GRACE`] to be answered,
/// and closes what is still open. Logs what it waits for, and what it stops.
pub(crate) async fn wind_down(
    mut connections: JoinSet<()>,
    runs: &Drain,
    mut signals: Pin<&mut impl Stream<Item = ()>>,
    timeout: Duration,
) {
    tracing::info!(
        "stopping: no longer accepting connections; waiting for {} for at most {} s \
         ([server] shutdown_timeout_secs; a second SIGINT or SIGTERM stops them now)",
        in_flight(&connections, runs),
        timeout.as_secs()
    );
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    let mut report =
        tokio::time::interval_at(tokio::time::Instant::now() + REPORT_EVERY, REPORT_EVERY);
    let reason = loop {
        tokio::select! {
            () = &mut deadline => break format!(
                "its [server] shutdown_timeout_secs ({} s) passed",
                timeout.as_secs()
            ),
            Some(()) = signals.next() => {
                break "a second signal asked it to stop at once".to_owned()
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            () = runs.idle(), if connections.is_empty() => return,
            _ = report.tick() => tracing::info!(
                "stopping: still waiting for {}",
                in_flight(&connections, runs)
            ),
        }
    };
    tracing::warn!(
        "stopping now: {reason}; cutting short {}",
        in_flight(&connections, runs)
    );
    runs.stop(format!(
        "the server stopped before the run finished: {reason}"
    ));
    let answered = async {
        runs.idle().await;
        while connections.join_next().await.is_some() {}
    };
    if tokio::time::timeout(ANSWER_GRACE, answered).await.is_err() {
        tracing::warn!("stopping: closing the connections still open");
    }
}

/// What is in flight, for people: `2 connections and the runs of int_a, int_b`.
fn in_flight(connections: &JoinSet<()>, runs: &Drain) -> String {
    let running = runs.running();
    let connections = match connections.len() {
        1 => "1 connection".to_owned(),
        count => format!("{count} connections"),
    };
    match running.len() {
        0 => connections,
        1 => format!("{connections} and the run of {}", running[0]),
        _ => format!("{connections} and the runs of {}", running.join(", ")),
    }
}

/// The runs in flight on one server and, once given, why they must stop now.
#[derive(Clone, Default)]
pub(crate) struct Drain {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// The interaction ids of the runs in flight.
    runs: watch::Sender<BTreeSet<String>>,
    /// Why what is still running must stop now; `None` until then.
    stop: watch::Sender<Option<String>>,
}

impl Drain {
    /// Counts the run of interaction `id` as in flight until the returned value is dropped.
    pub(crate) fn track(&self, id: &str) -> Tracked {
        self.shared.runs.send_modify(|runs| {
            runs.insert(id.to_owned());
        });
        Tracked {
            shared: Arc::clone(&self.shared),
            id: id.to_owned(),
        }
    }

    /// The interaction ids of the runs in flight.
    pub(crate) fn running(&self) -> Vec<String> {
        self.shared.runs.borrow().iter().cloned().collect()
    }

    /// Resolves once no run is in flight.
    pub(crate) async fn idle(&self) {
        let mut runs = self.shared.runs.subscribe();
        // The sender lives in `self`: waiting cannot fail.
        let _ = runs.wait_for(BTreeSet::is_empty).await;
    }

    /// Orders every run in flight, and any started from now on, to stop now for `reason`.
    pub(crate) fn stop(&self, reason: String) {
        self.shared.stop.send_replace(Some(reason));
    }

    /// Resolves with the reason once the runs must stop.
    pub(crate) async fn stopped(&self) -> String {
        let mut stop = self.shared.stop.subscribe();
        // The sender lives in `self`: waiting cannot fail.
        let reason = stop
            .wait_for(Option::is_some)
            .await
            .map(|reason| reason.clone());
        reason.ok().flatten().unwrap_or_default()
    }
}

/// A run counted in flight; dropped when it ends, however it ends.
pub(crate) struct Tracked {
    shared: Arc<Shared>,
    id: String,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.shared.runs.send_modify(|runs| {
            runs.remove(&self.id);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_is_in_flight_until_dropped_and_a_stop_reaches_later_runs_too() {
        let drain = Drain::default();
        let first = drain.track("int_a");
        let second = drain.track("int_b");
        assert_eq!(drain.running(), ["int_a", "int_b"]);
        drop(first);
        assert_eq!(drain.running(), ["int_b"]);
        drain.stop("time is up".to_owned());
        assert_eq!(drain.stopped().await, "time is up");
        drop(second);
        drain.idle().await;
        assert!(drain.running().is_empty());
    }
}
