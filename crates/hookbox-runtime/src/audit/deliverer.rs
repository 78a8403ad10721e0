//! The audit deliverer: sends the outbox's events, oldest first and one at a time per
//! environment, through the same guarded client and egress policy as every other HTTP hook,
//! retrying with exponential backoff and jitter (at least what `Retry-After` asks) until the
//! receiver takes them, refuses one `[audit] dead_letter_after_attempts` times (a 4xx other
//! than 408 and 429), or `[audit] max_age` has passed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use hookbox_hooks::{HttpRequest, HttpRunner, PolicyHttpRunner, Trust};
use hookbox_net::EgressPolicy;
use hookbox_store::{NewOutboxEvent, OutboxEvent, OutboxQueue, Settlement, Timestamp};
use tokio::task::JoinSet;

use super::settings::AuditSettings;
use super::signature::WebhookSigner;
use crate::Runtime;

/// The first retry waits about this long; each further one twice as long, up to
/// `[audit] max_backoff`.
const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// How long the deliverer sleeps when nothing is due and nothing wakes it: events other
/// processes store (`hookbox exec`) wake no one.
const IDLE_WAIT: Duration = Duration::from_secs(1);
/// After an event is stored, the deliverer waits until no other was stored for this long (a
/// burst of tool calls is over), so that sending it does not compete with the calls that are
/// still running for the store and the cores...
const QUIET: Duration = Duration::from_millis(20);
/// ...but never longer than this after the first one.
const BURST_MAX: Duration = Duration::from_millis(250);
/// How long it waits after the store failed before trying again.
const STORE_RETRY: Duration = Duration::from_secs(1);
/// How often it sheds a too-full outbox and prunes settled events.
const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(5);
/// How long an environment's egress policy is reused before it is read again (reading it
/// opens the environment, which costs milliseconds; an update applies within this time).
const POLICY_TTL: Duration = Duration::from_secs(5);

/// Sends the outbox's events; see the module documentation. Run it with [`run`](Self::run)
/// on the server's async runtime; pending events left by an earlier process are picked up at
/// start.
pub struct AuditDeliverer {
    runtime: Arc<Runtime>,
    /// Consecutive failed attempts per destination URL (absent: not failing).
    failing: HashMap<String, u32>,
    /// Each environment's egress policy (or why it has none), and when it was read.
    policies: HashMap<String, (tokio::time::Instant, Result<EgressPolicy, Failure>)>,
}

/// What signs `event`: its handler's `signing_credential` (a credential of the store, whose
/// value is a `whsec_` secret and whose domains admit the event's URL), else `[audit]
/// signing_secret`. A credential that cannot be used is a failure to retry: the owner may
/// add or fix it before the event expires.
fn signer(runtime: &Runtime, event: &NewOutboxEvent) -> Result<Option<WebhookSigner>, Failure> {
    let Some(name) = &event.signing_credential else {
        return Ok(runtime.audit.signer.clone());
    };
    let fix = format!("add it with `hookbox credentials add {name} --domain HOST`");
    let credential = runtime
        .hook_options()
        .credentials
        .as_ref()
        .ok_or_else(|| Failure::retry(format!("no credential store for `{name}`")))?
        .source()
        .credential(name)
        .map_err(|reason| Failure::retry(format!("signing credential `{name}`: {reason}")))?
        .ok_or_else(|| {
            Failure::retry(format!("signing credential `{name}` does not exist; {fix}"))
        })?;
    if !credential.may_go_to_url(&event.url) {
        return Err(Failure::retry(format!(
            "signing credential `{name}` may not be used for {}: its domains are {}",
            event.url,
            credential.domains().join(", ")
        )));
    }
    WebhookSigner::new(credential.value())
        .map(Some)
        .ok_or_else(|| {
            Failure::retry(format!(
                "signing credential `{name}` is not a Standard Webhooks secret (`whsec_` and the \
             base64 of at least 16 bytes)"
            ))
        })
}

/// Waits until no event was stored for [`QUIET`], or [`BURST_MAX`] has passed.
async fn quiet(stored: &tokio::sync::Notify) {
    let deadline = tokio::time::Instant::now() + BURST_MAX;
    loop {
        let until = deadline.min(tokio::time::Instant::now() + QUIET);
        if tokio::time::timeout_at(until, stored.notified())
            .await
            .is_err()
            || tokio::time::Instant::now() >= deadline
        {
            return;
        }
    }
}

/// Sleeps until `deadline` (forever without one).
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// What one attempt came to.
struct Attempt {
    /// The event's destination.
    url: String,
    /// The event's `webhook-id`.
    id: String,
    /// What was recorded.
    settlement: Settlement,
}

impl AuditDeliverer {
    /// The deliverer of `runtime`'s outbox under its `[audit]` settings.
    pub fn new(runtime: Arc<Runtime>) -> Self {
        Self {
            runtime,
            failing: HashMap::new(),
            policies: HashMap::new(),
        }
    }

    /// Delivers until the task is dropped. Only one process delivers a home's outbox at a
    /// time (so each queue keeps its order): this one waits until it holds the home's
    /// `audit.lock`, which the system releases when the holder exits, however it exits.
    pub async fn run(self) {
        self.run_until(std::future::pending(), Duration::ZERO).await;
    }

    /// Like [`run`](Self::run) until `stop` completes; then goes on for at most `drain`,
    /// until every event due by then has had its attempt (events waiting out a backoff stay
    /// pending for the next process that delivers). Returns at once when `stop` completes
    /// while another process is the home's deliverer: that one sends the events.
    pub async fn run_until(mut self, stop: impl Future<Output = ()>, drain: Duration) {
        let mut stop = std::pin::pin!(stop);
        let _lock = tokio::select! {
            lock = self.exclusive() => lock,
            () = &mut stop => return,
        };
        let mut attempts: JoinSet<Result<Attempt, String>> = JoinSet::new();
        // The queue of each attempt in flight: its next event waits.
        let mut in_flight: HashMap<tokio::task::Id, OutboxQueue> = HashMap::new();
        let mut housekept: Option<tokio::time::Instant> = None;
        // When draining must end, once `stop` has completed.
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            if housekept.is_none_or(|at| at.elapsed() >= HOUSEKEEPING_EVERY) {
                housekept = Some(tokio::time::Instant::now());
                self.housekeep().await;
            }
            let wait = match self.start_due(&mut attempts, &mut in_flight).await {
                Ok(wait) => wait,
                Err(error) => {
                    tracing::error!(error, "audit outbox: cannot read the pending events");
                    STORE_RETRY
                }
            };
            if deadline.is_some() && attempts.is_empty() {
                return;
            }
            let stored = Arc::clone(&self.runtime.outbox.stored);
            tokio::select! {
                Some(joined) = attempts.join_next_with_id() => {
                    let id = match &joined {
                        Ok((id, _)) => *id,
                        Err(error) => error.id(),
                    };
                    in_flight.remove(&id);
                    match joined {
                        Ok((_, Ok(attempt))) => self.report(&attempt),
                        Ok((_, Err(error))) => {
                            tracing::error!(error, "audit outbox: cannot record an attempt");
                            tokio::time::sleep(STORE_RETRY).await;
                        }
                        Err(error) => {
                            tracing::error!(%error, "audit outbox: a delivery task failed");
                        }
                    }
                },
                () = stored.notified() => quiet(&stored).await,
                () = tokio::time::sleep(wait) => {}
                () = &mut stop, if deadline.is_none() => {
                    deadline = Some(tokio::time::Instant::now() + drain);
                }
                () = sleep_until(deadline), if deadline.is_some() => return,
            }
        }
    }

    /// Waits until this process holds `<home>/audit.lock`.
    async fn exclusive(&self) -> std::fs::File {
        let path = self.runtime.home().join("audit.lock");
        let mut waiting = false;
        loop {
            let locked = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .and_then(|file| match file.try_lock() {
                    Ok(()) => Ok(Some(file)),
                    Err(std::fs::TryLockError::WouldBlock) => Ok(None),
                    Err(std::fs::TryLockError::Error(error)) => Err(error),
                });
            match locked {
                Ok(Some(file)) => {
                    if waiting {
                        tracing::info!("audit outbox: this process delivers it now");
                    }
                    return file;
                }
                Ok(None) if !waiting => {
                    waiting = true;
                    tracing::debug!(
                        lock = %path.display(),
                        "audit outbox: another process delivers it; waiting until it stops"
                    );
                }
                Ok(None) => {}
                Err(error) => tracing::error!(
                    lock = %path.display(),
                    %error,
                    "audit outbox: cannot lock it for delivery"
                ),
            }
            tokio::time::sleep(IDLE_WAIT).await;
        }
    }

    /// Starts an attempt on every due head whose environment has none in flight; returns how
    /// long until the next head not yet due is.
    async fn start_due(
        &mut self,
        attempts: &mut JoinSet<Result<Attempt, String>>,
        in_flight: &mut HashMap<tokio::task::Id, OutboxQueue>,
    ) -> Result<Duration, String> {
        let store = Arc::clone(self.runtime.store());
        let heads = tokio::task::spawn_blocking(move || store.outbox_heads())
            .await
            .map_err(|error| error.to_string())?
            .map_err(|error| error.to_string())?;
        let busy: HashSet<OutboxQueue> = in_flight.values().cloned().collect();
        let now = Timestamp::now().unix_millis();
        let mut wait = IDLE_WAIT;
        for head in heads {
            if busy.contains(&head.event.queue) {
                continue;
            }
            let due_in = head.next_attempt.unix_millis().saturating_sub(now);
            if due_in > 0 {
                wait = wait.min(Duration::from_millis(due_in.unsigned_abs()));
                continue;
            }
            let queue = head.event.queue.clone();
            let policy = match &queue {
                OutboxQueue::Environment(id) => self.policy(id).await,
                OutboxQueue::Session(_) => Ok(EgressPolicy::PUBLIC),
            };
            let task = attempts.spawn(attempt(Arc::clone(&self.runtime), head, policy));
            in_flight.insert(task.id(), queue);
        }
        Ok(wait)
    }

    /// The egress policy of `environment`, read at most every [`POLICY_TTL`]; a deleted
    /// environment's events cannot be sent (permanently).
    async fn policy(&mut self, environment: &str) -> Result<EgressPolicy, Failure> {
        if let Some((read, policy)) = self.policies.get(environment)
            && read.elapsed() < POLICY_TTL
        {
            return policy.clone();
        }
        let runtime = Arc::clone(&self.runtime);
        let id = environment.to_owned();
        let opened =
            tokio::task::spawn_blocking(move || runtime.environments().describe(&id)).await;
        let policy = match opened {
            Err(error) => Err(Failure::retry(format!(
                "the environment lookup failed: {error}"
            ))),
            Ok(Err(hookbox_env::StoreError::NotFound { id })) => Err(Failure {
                error: format!(
                    "environment `{id}` no longer exists, so its network policy cannot be applied"
                ),
                retry_after: None,
                permanent: true,
                refused: false,
            }),
            Ok(Err(error)) => Err(Failure::retry(format!("cannot open environment: {error}"))),
            Ok(Ok(environment)) => {
                EgressPolicy::from_network(environment.network()).map_err(|error| {
                    Failure::retry(format!(
                        "the environment's network policy is not valid: {error}"
                    ))
                })
            }
        };
        self.policies.insert(
            environment.to_owned(),
            (tokio::time::Instant::now(), policy.clone()),
        );
        policy
    }

    /// Sheds the oldest pending events past `[audit] max_pending` and prunes settled ones.
    async fn housekeep(&self) {
        let store = Arc::clone(self.runtime.store());
        let max_pending = self.runtime.audit.max_pending;
        let done = tokio::task::spawn_blocking(move || {
            let shed = store.shed_outbox(max_pending)?;
            store.prune_outbox(max_pending)?;
            Ok::<_, hookbox_store::Error>(shed)
        })
        .await;
        match done {
            Ok(Ok(0)) => {}
            Ok(Ok(shed)) => tracing::warn!(
                shed,
                max_pending,
                "audit outbox full: the oldest pending events were dropped unsent and kept as \
                 dead (`hookbox audit status`, `hookbox audit retry`)"
            ),
            Ok(Err(error)) => tracing::error!(%error, "audit outbox: housekeeping failed"),
            Err(error) => tracing::error!(%error, "audit outbox: housekeeping task failed"),
        }
    }

    /// Logs when a destination starts and stops failing, and each event given up on.
    fn report(&mut self, attempt: &Attempt) {
        let url = &attempt.url;
        match &attempt.settlement {
            Settlement::Delivered => {
                if let Some(failed) = self.failing.remove(url) {
                    tracing::info!(
                        destination = %url,
                        failed_attempts = failed,
                        "audit destination delivers again"
                    );
                }
            }
            Settlement::Retry { error, .. } | Settlement::Dead { error, .. } => {
                let failed = self.failing.entry(url.clone()).or_insert(0);
                if *failed == 0 {
                    tracing::warn!(
                        destination = %url,
                        error = %error,
                        "audit destination started failing; its events wait in the outbox"
                    );
                }
                *failed += 1;
                if matches!(attempt.settlement, Settlement::Dead { .. }) {
                    tracing::warn!(
                        destination = %url,
                        webhook_id = %attempt.id,
                        error = %error,
                        "audit event given up and kept as dead (`hookbox audit retry` sends it again)"
                    );
                }
            }
        }
    }
}

/// Makes one attempt on `head` under its environment's `policy` and records what came of it.
async fn attempt(
    runtime: Arc<Runtime>,
    head: OutboxEvent,
    policy: Result<EgressPolicy, Failure>,
) -> Result<Attempt, String> {
    let sent = match policy {
        Ok(policy) => send(&runtime, &head.event, policy).await,
        Err(failure) => Err(failure),
    };
    let settlement = match sent {
        Ok(()) => Settlement::Delivered,
        Err(failure) => settle_failure(&runtime.audit, &head, failure),
    };
    let store = Arc::clone(runtime.store());
    let id = head.event.id.clone();
    let recorded = settlement.clone();
    tokio::task::spawn_blocking(move || store.settle_outbox(&id, &recorded))
        .await
        .map_err(|error| error.to_string())?
        .map_err(|error| error.to_string())?;
    Ok(Attempt {
        url: head.event.url,
        id: head.event.id,
        settlement,
    })
}

/// Why an attempt failed.
#[derive(Debug, Clone)]
struct Failure {
    /// What went wrong, for `last_error`.
    error: String,
    /// The receiver's `Retry-After`.
    retry_after: Option<Duration>,
    /// Whether trying again cannot help (the environment is gone).
    permanent: bool,
    /// Whether the receiver refused the event (see [`refuses`]).
    refused: bool,
}

impl Failure {
    /// A failure that trying again may cure.
    fn retry(error: String) -> Self {
        Self {
            error,
            retry_after: None,
            permanent: false,
            refused: false,
        }
    }
}

/// Whether an HTTP `status` refuses the event itself, so that sending it again is unlikely to
/// help: a 4xx (413 for a body too large, 400, 401, 403, 404, 410, 422…) other than 408
/// (request timeout) and 429 (too many requests), which say "later". Every other failure (5xx,
/// 408, 429, any other status, no answer) is retried until `[audit] max_age`.
fn refuses(status: u16) -> bool {
    (400..500).contains(&status) && !matches!(status, 408 | 429)
}

/// What a failed attempt on `head` leads to: a retry after the backoff (at least what the
/// receiver asked), or death once the receiver refused it `[audit] dead_letter_after_attempts`
/// times or `[audit] max_age` would pass.
fn settle_failure(settings: &AuditSettings, head: &OutboxEvent, failure: Failure) -> Settlement {
    let attempts = head.attempts.saturating_add(1);
    let refused = failure.refused;
    if failure.permanent {
        return Settlement::Dead {
            error: failure.error,
            refused,
        };
    }
    let refusals = head.refusals.saturating_add(u32::from(refused));
    if refused && refusals >= settings.dead_letter_after_attempts {
        return Settlement::Dead {
            error: format!(
                "{} (refused {refusals} times; [audit] dead_letter_after_attempts is {}: the \
                 receiver does not take this event, so its queue moves on without it)",
                failure.error, settings.dead_letter_after_attempts
            ),
            refused,
        };
    }
    let wait = backoff(attempts, settings.max_backoff).max(failure.retry_after.unwrap_or_default());
    let now = Timestamp::now().unix_millis();
    let at = now.saturating_add(millis(wait));
    let deadline = head
        .since
        .unix_millis()
        .saturating_add(millis(settings.max_age));
    if at > deadline {
        let age =
            Duration::from_millis(now.saturating_sub(head.since.unix_millis()).unsigned_abs());
        return Settlement::Dead {
            error: format!(
                "{} (gave up after {attempts} attempts over {} s: [audit] max_age is {} s)",
                failure.error,
                age.as_secs(),
                settings.max_age.as_secs()
            ),
            refused,
        };
    }
    Settlement::Retry {
        error: failure.error,
        at: Timestamp::from_unix_millis(at),
        refused,
    }
}

/// `duration` in whole milliseconds, saturating.
fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// The wait before attempt `attempts + 1`: [`FIRST_BACKOFF`] doubled per failed attempt, capped
/// at `max`, of which a random half is taken off (jitter, so receivers coming back are not hit
/// by every sender at once).
fn backoff(attempts: u32, max: Duration) -> Duration {
    let doubled = FIRST_BACKOFF.saturating_mul(1 << attempts.saturating_sub(1).min(20));
    let cap = doubled.min(max);
    let mut random = [0u8; 8];
    // Without randomness the wait is the whole cap: later, never sooner.
    let fraction = match getrandom::fill(&mut random) {
        Ok(()) => {
            f64::from(u32::from_le_bytes([
                random[0], random[1], random[2], random[3],
            ])) / f64::from(u32::MAX)
        }
        Err(_) => 1.0,
    };
    cap.mul_f64(0.5 + fraction / 2.0)
}

/// POSTs `event` under `policy` through the hook client of its trust, with the `webhook-*`
/// headers.
/// The policy `event` goes out under. An owner's event is the owner's traffic, not the
/// model's: it goes through the owner's client and `[network]` rules whatever the sandbox may
/// reach, with the environment's `transform` headers (and credential) only where its policy has
/// an entry for the host; an event of a file the model can write stays under the environment's
/// policy.
fn owners_or_models(policy: EgressPolicy, event: &NewOutboxEvent) -> EgressPolicy {
    if event.model_writable || policy.matches_url(&event.url) {
        policy
    } else {
        EgressPolicy::PUBLIC
    }
}

async fn send(
    runtime: &Runtime,
    event: &NewOutboxEvent,
    policy: EgressPolicy,
) -> Result<(), Failure> {
    let runner = PolicyHttpRunner {
        clients: runtime.hook_clients().clone(),
        policy: owners_or_models(policy, event),
    };
    let timestamp = Timestamp::now().unix_millis().div_euclid(1000);
    let mut headers = event.headers.clone();
    headers.push(("webhook-id".to_owned(), event.id.clone()));
    headers.push(("webhook-timestamp".to_owned(), timestamp.to_string()));
    if let Some(signer) = signer(runtime, event)? {
        headers.push((
            "webhook-signature".to_owned(),
            signer.sign(&event.id, timestamp, &event.body),
        ));
    }
    let request = HttpRequest {
        url: event.url.clone(),
        headers,
        body: event.body.clone(),
        timeout: Duration::from_millis(event.timeout_ms),
        trust: if event.model_writable {
            Trust::ModelWritable
        } else {
            Trust::Owner
        },
    };
    match runner.post(request).await {
        Ok(reply) if (200..300).contains(&reply.status) => Ok(()),
        Ok(reply) => Err(Failure {
            error: format!("HTTP status {}", reply.status),
            retry_after: reply.retry_after,
            permanent: false,
            refused: refuses(reply.status),
        }),
        Err(error) => Err(Failure::retry(error.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookbox_store::{
        NewOutboxEvent, OutboxEvent, OutboxQueue, OutboxState, Settlement, Timestamp,
    };

    use super::{Failure, backoff, refuses, settle_failure, signer};
    use crate::audit::{AuditSettings, WebhookSigner};
    use crate::{Config, Runtime};

    /// A pending event stored `age` ago after `attempts` attempts, none refused.
    fn head(age: Duration, attempts: u32) -> OutboxEvent {
        let since = Timestamp::from_unix_millis(
            Timestamp::now().unix_millis() - i64::try_from(age.as_millis()).unwrap(),
        );
        OutboxEvent {
            event: NewOutboxEvent {
                id: "msg_1".to_owned(),
                queue: OutboxQueue::Environment("env_1".to_owned()),
                url: "https://t.example/e".to_owned(),
                handler: "h".to_owned(),
                headers: Vec::new(),
                body: b"{}".to_vec(),
                timeout_ms: 1000,
                model_writable: false,
                signing_credential: None,
            },
            created: since,
            since,
            attempts,
            refusals: 0,
            next_attempt: since,
            last_error: None,
            state: OutboxState::Pending,
        }
    }

    fn settings() -> AuditSettings {
        AuditSettings {
            max_age: Duration::from_secs(3600),
            max_backoff: Duration::from_secs(300),
            max_pending: 10,
            dead_letter_after_attempts: 3,
            signer: None,
        }
    }

    #[test]
    fn a_failure_is_retried_no_sooner_than_retry_after_until_max_age() {
        let failure = |retry_after| Failure {
            error: "HTTP status 503".to_owned(),
            retry_after,
            permanent: false,
            refused: false,
        };
        let now = Timestamp::now().unix_millis();
        let Settlement::Retry { error, at, .. } = settle_failure(
            &settings(),
            &head(Duration::ZERO, 0),
            failure(Some(Duration::from_secs(30))),
        ) else {
            panic!("not retried");
        };
        assert_eq!(error, "HTTP status 503");
        assert!(at.unix_millis() >= now + 30_000, "{at:?}");
        // A retry past the hour since the event was stored is not made: the event is dead.
        let settled = settle_failure(
            &settings(),
            &head(Duration::from_secs(3599), 12),
            failure(None),
        );
        let Settlement::Dead { error, .. } = settled else {
            panic!("{settled:?}");
        };
        assert!(
            error.starts_with("HTTP status 503 (gave up after 13 attempts"),
            "{error}"
        );
        assert!(error.contains("max_age is 3600 s"), "{error}");
        let gone = Failure {
            error: "environment `env_1` no longer exists".to_owned(),
            retry_after: None,
            permanent: true,
            refused: false,
        };
        assert!(matches!(
            settle_failure(&settings(), &head(Duration::ZERO, 0), gone),
            Settlement::Dead { .. }
        ));
    }

    #[test]
    fn a_4xx_other_than_408_and_429_refuses_the_event_and_every_other_status_is_retried() {
        let refusing = [
            400, 401, 403, 404, 405, 409, 410, 411, 413, 414, 415, 422, 451, 499,
        ];
        let retried = [
            100, 204, 301, 302, 304, 399, 408, 429, 500, 502, 503, 504, 599, 600, 0,
        ];
        for status in refusing {
            assert!(refuses(status), "{status}");
        }
        for status in retried {
            assert!(!refuses(status), "{status}");
        }
    }

    #[test]
    fn a_refused_event_is_dead_at_the_bound_and_other_failures_do_not_count() {
        let refused = Failure {
            error: "HTTP status 413".to_owned(),
            retry_after: Some(Duration::from_secs(2)),
            permanent: false,
            refused: true,
        };
        let transient = Failure {
            refused: false,
            ..refused.clone()
        };
        let after = |refusals, failure: &Failure| {
            let mut head = head(Duration::ZERO, 7);
            head.refusals = refusals;
            settle_failure(&settings(), &head, failure.clone())
        };
        // The first two refusals (of 3) are retried like any failure, and counted.
        let now = Timestamp::now().unix_millis();
        for refusals in [0, 1] {
            let settled = after(refusals, &refused);
            let Settlement::Retry {
                at, refused: true, ..
            } = settled
            else {
                panic!("{refusals}: {settled:?}");
            };
            assert!(at.unix_millis() >= now + 2_000, "{at:?}");
        }
        let Settlement::Dead {
            error,
            refused: true,
        } = after(2, &refused)
        else {
            panic!("not dead after the third refusal");
        };
        assert!(
            error.starts_with(
                "HTTP status 413 (refused 3 times; [audit] dead_letter_after_attempts is 3"
            ),
            "{error}"
        );
        // A failure that is not a refusal is retried whatever the refusals so far.
        assert!(matches!(
            after(2, &transient),
            Settlement::Retry { refused: false, .. }
        ));
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        let max = Duration::from_secs(300);
        for (attempts, full) in [(1, 1), (2, 2), (3, 4), (10, 300), (u32::MAX, 300)] {
            let full = Duration::from_secs(full);
            for _ in 0..20 {
                let wait = backoff(attempts, max);
                assert!(wait >= full / 2 && wait <= full, "{attempts}: {wait:?}");
            }
        }
    }

    #[test]
    fn a_handlers_signing_credential_signs_only_where_its_domains_allow() {
        /// The Standard Webhooks specification's example secret.
        const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let home = tempfile::tempdir().unwrap();
        let credentials = hookbox_env::CredentialStore::open(home.path()).unwrap();
        credentials
            .add("audit-key", None, SECRET, &["t.example"])
            .unwrap();
        credentials
            .add("elsewhere", None, SECRET, &["other.example"])
            .unwrap();
        credentials
            .add("not-a-secret", None, "hunter2", &["t.example"])
            .unwrap();
        let runtime = Runtime::from_config(&Config::new(home.path())).unwrap();
        let event = |name: Option<&str>| {
            let mut event = head(Duration::ZERO, 0).event;
            event.signing_credential = name.map(str::to_owned);
            event
        };
        let signed = signer(&runtime, &event(Some("audit-key")))
            .unwrap_or_else(|failure| panic!("{}", failure.error))
            .expect("a signer");
        assert_eq!(
            signed.sign("msg_1", 1, b"{}"),
            WebhookSigner::new(SECRET).unwrap().sign("msg_1", 1, b"{}")
        );
        assert!(signer(&runtime, &event(None)).is_ok_and(|signer| signer.is_none()));
        for (name, problem) in [
            ("missing", "does not exist"),
            ("elsewhere", "may not be used for https://t.example/e"),
            ("not-a-secret", "not a Standard Webhooks secret"),
        ] {
            let Err(failure) = signer(&runtime, &event(Some(name))) else {
                panic!("{name} signed");
            };
            assert!(failure.error.contains(problem), "{name}: {}", failure.error);
            assert!(!failure.permanent, "{name}");
            assert!(
                !failure.error.contains("MfKQ9r8"),
                "the secret leaked: {}",
                failure.error
            );
        }
    }
}
