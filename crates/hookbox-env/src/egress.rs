//! The sandbox's one way out: the environment's egress proxy, reachable at `127.0.0.1:3128`
//! inside the sandbox.
//!
//! For each sandboxed run, [`SandboxEgress`] asks the sandbox for a listener on
//! `127.0.0.1:`[`PROXY_PORT`] inside its network namespace ([`hookbox_exec::ListenInside`]) and
//! serves it with the [`EgressProxy`] for as long as the run lasts, under the environment's
//! [`EgressPolicy`] (its `network`, credentials resolved), intercepting the TLS of hosts with
//! `transform`/`credential` headers with the environment's [`ProxyCa`]. The program gets
//! `HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` (and lowercase) pointing there, `NO_PROXY` for
//! loopback, and a CA bundle (the system roots plus the CA's **certificate**) bound read-only at
//! [`CA_BUNDLE_PATH`] and named by `SSL_CERT_FILE`, `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`,
//! `NODE_EXTRA_CA_CERTS`, `GIT_SSL_CAINFO` and `PIP_CERT`, and mounted over the system's trust
//! bundles inside (`/etc/ssl/certs/ca-certificates.crt`, …) for programs that read only those.
//! The CA's key stays in this process's memory. A program ignoring the variables still has no network: the sandbox has only `lo`.
//!
//! `network: "disabled"` gets none of this: no listener, no variables, no bundle.
//!
//! An SDK session's `Bash` ([`SandboxEgress::without_interception`]) gets the listener and the
//! proxy variables under its domain lists, but no CA and no bundle: its policy injects nothing,
//! so HTTPS goes through blind tunnels and programs keep the system's trust store.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hookbox_exec::{Bind, ExecError, Interactive, ListenInside, ProcessOutput, ProcessSpec};
use hookbox_net::{
    CredentialSource, DecisionLog, EgressPolicy, EgressProxy, ProxyCa, ProxyDecision,
};
use serde::Serialize;

use crate::environment::Environment;
use crate::warm::WarmSandboxes;

/// The port of the proxy on `127.0.0.1` inside the sandbox.
pub const PROXY_PORT: u16 = ListenInside::DEFAULT_PORT;

/// Where the CA bundle (system roots plus the environment's CA certificate) is inside the
/// sandbox (read-only).
pub const CA_BUNDLE_PATH: &str = "/tmp/.hookbox/ca-certificates.crt";

/// Decisions kept per run; later ones are counted, not kept.
const MAX_DECISIONS: usize = 1000;

/// One request the egress proxy decided during a run (never with header values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NetworkDecision {
    /// The canonical host asked for.
    pub host: String,
    /// The port asked for (0 when unknown).
    pub port: u16,
    /// The method (`CONNECT`, `GET`, …).
    pub method: String,
    /// Whether it went out.
    pub allowed: bool,
    /// Why.
    pub reason: String,
    /// Whether the proxy terminated the TLS to inject headers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub intercepted: bool,
    /// How many copies of injected secrets the proxy cut out of the response.
    #[serde(skip_serializing_if = "is_zero")]
    pub redactions: usize,
    /// The server name the TLS ClientHello of a blind `CONNECT` tunnel asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sni: Option<String>,
}

fn is_zero(count: &usize) -> bool {
    *count == 0
}

impl From<ProxyDecision> for NetworkDecision {
    fn from(decision: ProxyDecision) -> Self {
        Self {
            host: decision.host,
            port: decision.port,
            method: decision.method,
            allowed: decision.allowed,
            reason: decision.reason,
            intercepted: decision.intercepted,
            redactions: decision.redactions,
            sni: decision.sni,
        }
    }
}

/// Why an environment's egress cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    /// The environment's `network` is not a valid policy.
    #[error("the environment's network policy is not valid: {0}")]
    Policy(#[from] hookbox_net::PolicyError),
    /// The CA could not be made.
    #[error("cannot create the environment's proxy CA: {0}")]
    Ca(#[from] hookbox_net::NetError),
    /// The CA bundle could not be written.
    #[error("cannot write the sandbox's CA bundle: {0}")]
    Bundle(#[from] std::io::Error),
}

/// One sandbox's egress through the proxy: its policy and, for an environment, its CA (kept in
/// memory for as long as this value lives) and the CA bundle file bound into its sandboxes.
pub struct SandboxEgress {
    proxy: EgressProxy,
    policy: Arc<EgressPolicy>,
    /// `None`: nothing is intercepted (the policy injects nothing), so no CA and no bundle.
    interception: Option<Arc<Interception>>,
    /// The listener of warm sandboxes: one per built sandbox, served until the sandbox stops,
    /// the same value for every call so that they share the sandbox.
    warm_listener: ListenInside,
    /// The warm calls running now, to which the warm listeners' decisions go.
    warm_calls: Arc<WarmCalls>,
}

/// The CA that terminates TLS to inject headers, and the bundle trusting it.
struct Interception {
    ca: Arc<ProxyCa>,
    /// The bundle on the host (a private temporary file in this process's directory under the
    /// hookbox home, removed on drop).
    bundle: tempfile::TempPath,
}

/// The calls running in the warm sandboxes of one [`SandboxEgress`], by the name each gives
/// the proxy (its proxy URL's user), with the decisions made for each.
#[derive(Default)]
struct WarmCalls {
    running: Mutex<HashMap<String, Arc<Mutex<Vec<NetworkDecision>>>>>,
}

impl WarmCalls {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Arc<Mutex<Vec<NetworkDecision>>>>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Gives `decision` to the call it names; one that names no running call (its client
    /// dropped the proxy URL's user) goes to every call running now, so that none is left
    /// out of the record.
    fn route(&self, decision: ProxyDecision) {
        let running = self.lock();
        let named = decision
            .caller
            .as_deref()
            .and_then(|name| running.get(name));
        let sinks: Vec<_> = match named {
            Some(sink) => vec![Arc::clone(sink)],
            None => running.values().cloned().collect(),
        };
        drop(running);
        let decision = NetworkDecision::from(decision);
        for sink in sinks {
            keep(&sink, decision.clone());
        }
    }
}

/// A call registered in [`WarmCalls`] while it runs; unregistered when finished or dropped
/// (a cancelled run leaves nothing behind).
struct RunningCall<'a> {
    calls: &'a WarmCalls,
    name: String,
    decisions: Arc<Mutex<Vec<NetworkDecision>>>,
}

impl<'a> RunningCall<'a> {
    fn register(calls: &'a WarmCalls, name: String) -> Self {
        let decisions = Arc::new(Mutex::new(Vec::new()));
        calls.lock().insert(name.clone(), Arc::clone(&decisions));
        Self {
            calls,
            name,
            decisions,
        }
    }

    /// Unregisters the call; returns the decisions made for it.
    fn finish(self) -> Vec<NetworkDecision> {
        self.calls.lock().remove(&self.name);
        std::mem::take(
            &mut *self
                .decisions
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }
}

impl Drop for RunningCall<'_> {
    fn drop(&mut self) {
        self.calls.lock().remove(&self.name);
    }
}

/// Adds `decision` to `sink` unless it holds [`MAX_DECISIONS`] already.
fn keep(sink: &Mutex<Vec<NetworkDecision>>, decision: NetworkDecision) {
    let mut kept = sink.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() < MAX_DECISIONS {
        kept.push(decision);
    }
}

impl std::fmt::Debug for SandboxEgress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("SandboxEgress")
            .field("policy", &self.policy)
            .field("bundle", &self.bundle_path())
            .finish_non_exhaustive()
    }
}

impl SandboxEgress {
    /// The egress of `environment` through `proxy`, or `None` when its `network` is
    /// `"disabled"`. Allowlist `credential`s are resolved through `credentials`; when one
    /// cannot be (or no source is given), the hosts of its entry are refused by the proxy rather
    /// than reached without their secret. Generates the environment's CA.
    pub fn new(
        environment: &Environment,
        proxy: EgressProxy,
        credentials: Option<&dyn CredentialSource>,
    ) -> Result<Option<Self>, EgressError> {
        let Some(policy) = policy_of(environment, credentials)? else {
            return Ok(None);
        };
        Self::intercepting(environment, proxy, policy).map(Some)
    }

    /// The egress of `environment` for its calls in its warm sandbox in `warm`, like
    /// [`new`](Self::new), but one per environment: the egress its calls already use while
    /// its policy (credentials resolved) is the same, so that every interaction's calls share
    /// one warm sandbox (built with the egress's listener and CA bundle); else a new one, which
    /// replaces it (the sandbox is rebuilt with it by the next call).
    pub fn for_warm(
        environment: &Environment,
        proxy: EgressProxy,
        credentials: Option<&dyn CredentialSource>,
        warm: &WarmSandboxes,
    ) -> Result<Option<Arc<Self>>, EgressError> {
        let Some(policy) = policy_of(environment, credentials)? else {
            return Ok(None);
        };
        warm.egress(
            environment.id(),
            |current| *current.policy == policy,
            || Self::intercepting(environment, proxy, policy.clone()).map(Arc::new),
        )
        .map(Some)
    }

    /// The egress of `environment` through `proxy` under `policy`, intercepting with a new CA
    /// of the environment whose bundle is written in this process's directory.
    fn intercepting(
        environment: &Environment,
        proxy: EgressProxy,
        policy: EgressPolicy,
    ) -> Result<Self, EgressError> {
        let ca = Arc::new(ProxyCa::generate(environment.id())?);
        let bundle = write_bundle(environment.run_dir(), ca.certificate_pem().as_bytes())?;
        let interception = Interception { ca, bundle };
        Ok(Self::assemble(proxy, policy, Some(interception)))
    }

    /// The egress through `proxy` under `policy`, intercepting with `interception` when given.
    fn assemble(
        proxy: EgressProxy,
        policy: EgressPolicy,
        interception: Option<Interception>,
    ) -> Self {
        let policy = Arc::new(policy);
        let interception = interception.map(Arc::new);
        let warm_calls = Arc::new(WarmCalls::default());
        let warm_listener = {
            let (proxy, policy) = (proxy.clone(), Arc::clone(&policy));
            let ca = interception.as_ref().map(|found| Arc::clone(&found.ca));
            let calls = Arc::clone(&warm_calls);
            ListenInside::new(PROXY_PORT, move |listener| {
                serve_warm(listener, &proxy, &policy, ca.as_ref(), &calls);
            })
        };
        Self {
            proxy,
            policy,
            interception,
            warm_listener,
            warm_calls,
        }
    }

    /// Egress through `proxy` under `policy`, which injects nothing (an SDK session's domain
    /// lists): HTTPS goes through blind `CONNECT` tunnels (their SNI checked) with the
    /// sandbox's own trust store, so there is no CA and no bundle. `None` when `policy` is
    /// [`EgressPolicy::DISABLED`]: the sandbox keeps no network at all.
    pub fn without_interception(proxy: EgressProxy, policy: EgressPolicy) -> Option<Self> {
        (policy != EgressPolicy::DISABLED).then(|| Self::assemble(proxy, policy, None))
    }

    /// The environment's CA certificate (PEM), which its sandboxes trust (`None` without
    /// interception).
    pub fn ca_certificate_pem(&self) -> Option<&str> {
        self.interception
            .as_ref()
            .map(|interception| interception.ca.certificate_pem())
    }

    /// The CA bundle on the host (bound read-only at [`CA_BUNDLE_PATH`] inside; `None`
    /// without interception).
    pub fn bundle_path(&self) -> Option<&Path> {
        self.interception
            .as_ref()
            .map(|interception| &*interception.bundle)
    }

    /// Runs `spec` (a sandboxed process of this environment) with the proxy reachable inside
    /// and served until the run ends; returns what the run returned and every request the
    /// proxy decided meanwhile. An unsandboxed `spec` runs as it is.
    pub async fn run(
        &self,
        mut spec: ProcessSpec,
    ) -> (Result<ProcessOutput, ExecError>, Vec<NetworkDecision>) {
        if spec.sandbox.is_none() {
            return (hookbox_exec::run(&spec).await, Vec::new());
        }
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let sender = Mutex::new(Some(sender));
        let listener = ListenInside::new(PROXY_PORT, move |listener| {
            if let Some(sender) = sender.lock().unwrap_or_else(PoisonError::into_inner).take() {
                let _unused = sender.send(listener);
            }
        });
        self.reach_proxy(
            &mut spec,
            listener,
            &format!("http://127.0.0.1:{PROXY_PORT}"),
        );

        let decisions = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&decisions);
        let log: DecisionLog = Arc::new(move |decision: ProxyDecision| {
            keep(&kept, NetworkDecision::from(decision));
        });
        let serve = async {
            let Ok(listener) = receiver.await else {
                return std::future::pending().await;
            };
            let listener = listener
                .set_nonblocking(true)
                .and_then(|()| tokio::net::TcpListener::from_std(listener));
            match (listener, &self.interception) {
                (Ok(listener), Some(interception)) => {
                    self.proxy
                        .serve_intercepting(
                            listener,
                            Arc::clone(&self.policy),
                            Arc::clone(&interception.ca),
                            log,
                        )
                        .await;
                }
                (Ok(listener), None) => {
                    self.proxy
                        .serve(listener, Arc::clone(&self.policy), log)
                        .await;
                }
                // Nothing accepts: connections inside hang until the run's timeout.
                (Err(_), _) => std::future::pending().await,
            }
        };
        // The proxy serves until the run ends; dropping it closes every connection it opened.
        let output = tokio::select! {
            output = hookbox_exec::run(&spec) => output,
            () = serve => unreachable_serve(),
        };
        let decisions =
            std::mem::take(&mut *decisions.lock().unwrap_or_else(PoisonError::into_inner));
        (output, decisions)
    }
}

impl SandboxEgress {
    /// Starts `spec` (a sandboxed process) with the proxy reachable inside for as long as it
    /// runs ([`hookbox_exec::spawn_interactive`]); the proxy's decisions are not kept (a
    /// refused plain-HTTP request gets the reason as its 403 body). An unsandboxed `spec`
    /// starts as it is.
    pub async fn spawn_interactive(&self, mut spec: ProcessSpec) -> Result<Interactive, ExecError> {
        if spec.sandbox.is_some() {
            let (proxy, policy) = (self.proxy.clone(), Arc::clone(&self.policy));
            let ca = self
                .interception
                .as_ref()
                .map(|interception| Arc::clone(&interception.ca));
            let listener = ListenInside::new(PROXY_PORT, move |listener| {
                serve_warm(listener, &proxy, &policy, ca.as_ref(), &Arc::default());
            });
            self.reach_proxy(
                &mut spec,
                listener,
                &format!("http://127.0.0.1:{PROXY_PORT}"),
            );
        }
        hookbox_exec::spawn_interactive(&spec).await
    }

    /// Runs `spec` (a sandboxed process of environment `environment_id`) in the
    /// environment's warm sandbox in `warm`, built with this egress's listener, which serves
    /// the proxy for as long as that sandbox lives; returns what the run returned and the
    /// requests the proxy decided for it. The run names itself to the proxy with a fresh
    /// random user in its proxy URL, so that concurrent calls get their own decisions (a
    /// request whose client drops that user is recorded for every call running then). The
    /// sandbox is this egress's: another egress of the environment builds a new one, so its
    /// calls share one through [`for_warm`](Self::for_warm).
    pub async fn run_warm(
        &self,
        mut spec: ProcessSpec,
        warm: &WarmSandboxes,
        environment_id: &str,
    ) -> (Result<ProcessOutput, ExecError>, Vec<NetworkDecision>) {
        if spec.sandbox.is_none() {
            return (hookbox_exec::run(&spec).await, Vec::new());
        }
        let name = match hookbox_store::random_token() {
            Ok(token) => format!("call-{token}"),
            Err(source) => {
                let program = "a warm call's proxy name".to_owned();
                return (Err(ExecError::Spawn { program, source }), Vec::new());
            }
        };
        let url = format!("http://{name}:x@127.0.0.1:{PROXY_PORT}");
        self.reach_proxy(&mut spec, self.warm_listener.clone(), &url);
        let running = RunningCall::register(&self.warm_calls, name);
        let output = warm.run(environment_id, &spec).await;
        (output, running.finish())
    }

    /// Gives `spec`'s sandbox `listener` at [`PROXY_PORT`], the CA bundle (when intercepting),
    /// and the variables naming `proxy_url` and the bundle.
    fn reach_proxy(&self, spec: &mut ProcessSpec, listener: ListenInside, proxy_url: &str) {
        let Some(sandbox) = spec.sandbox.as_mut() else {
            return;
        };
        sandbox.listen_inside = Some(listener);
        if let Some(interception) = &self.interception {
            sandbox.binds.push(Bind {
                host: interception.bundle.to_path_buf(),
                target: PathBuf::from(CA_BUNDLE_PATH),
                writable: false,
            });
            // The system store too, for programs that ignore the CA variables.
            sandbox.trust_bundle = Some(interception.bundle.to_path_buf());
        }
        // First, so that the environment's own `env` may still override them.
        spec.env.splice(
            0..0,
            proxy_variables(proxy_url, self.interception.is_some()),
        );
    }
}

/// The policy of `environment`'s `network`, its `credential`s resolved through `credentials`
/// (hosts whose credential cannot be are refused by the proxy); `None` when it is
/// `"disabled"`.
fn policy_of(
    environment: &Environment,
    credentials: Option<&dyn CredentialSource>,
) -> Result<Option<EgressPolicy>, EgressError> {
    let parsed = EgressPolicy::from_network(environment.network())?;
    if parsed == EgressPolicy::DISABLED {
        return Ok(None);
    }
    Ok(Some(match credentials {
        Some(source) => parsed.clone().resolve_credentials(source).unwrap_or(parsed),
        None => parsed,
    }))
}

/// Serves the proxy on a warm sandbox's (or an interactive child's) `listener` (on this Tokio
/// runtime) until the sandbox stops and shuts the listener down; its decisions go to the
/// `calls` running (an interactive child has none: they are not kept).
fn serve_warm(
    listener: std::net::TcpListener,
    proxy: &EgressProxy,
    policy: &Arc<EgressPolicy>,
    ca: Option<&Arc<ProxyCa>>,
    calls: &Arc<WarmCalls>,
) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("a warm sandbox's proxy listener arrived outside a runtime; not served");
        return;
    };
    let listener = match listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener))
    {
        Ok(listener) => listener,
        Err(error) => {
            tracing::warn!(%error, "cannot serve a warm sandbox's proxy listener");
            return;
        }
    };
    let (proxy, policy, ca) = (proxy.clone(), Arc::clone(policy), ca.cloned());
    let calls = Arc::clone(calls);
    let log: DecisionLog = Arc::new(move |decision| calls.route(decision));
    runtime.spawn(async move {
        match ca {
            Some(ca) => proxy.serve_intercepting(listener, policy, ca, log).await,
            None => proxy.serve(listener, policy, log).await,
        }
    });
}

/// `serve` never returns; this only satisfies the type of the `select!` arm.
fn unreachable_serve() -> Result<ProcessOutput, ExecError> {
    Err(ExecError::Spawn {
        program: "the egress proxy".to_owned(),
        source: std::io::Error::other("the egress proxy stopped serving"),
    })
}

/// The variables pointing a program at the proxy at `proxy_url` and, `with_bundle`, the CA
/// bundle.
fn proxy_variables(
    proxy_url: &str,
    with_bundle: bool,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut variables = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        variables.push((name.to_owned(), proxy_url.to_owned()));
        variables.push((name.to_lowercase(), proxy_url.to_owned()));
    }
    for name in ["NO_PROXY", "no_proxy"] {
        variables.push((name.to_owned(), "localhost,127.0.0.1".to_owned()));
    }
    if with_bundle {
        for name in [
            "SSL_CERT_FILE",
            "REQUESTS_CA_BUNDLE",
            "CURL_CA_BUNDLE",
            "NODE_EXTRA_CA_CERTS",
            "GIT_SSL_CAINFO",
            "PIP_CERT",
        ] {
            variables.push((name.to_owned(), CA_BUNDLE_PATH.to_owned()));
        }
    }
    variables
        .into_iter()
        .map(|(name, value)| (name.into(), value.into()))
        .collect()
}

/// Writes the system roots (when the host has a bundle) and `extra_pem` (more trusted
/// certificates) to a private temporary file in `dir` (this process's directory under the
/// hookbox home, swept after a crash; never `$TMPDIR`).
pub(crate) fn write_bundle(dir: &Path, extra_pem: &[u8]) -> std::io::Result<tempfile::TempPath> {
    let mut file = tempfile::Builder::new()
        .prefix("hookbox-ca-")
        .suffix(".crt")
        .tempfile_in(dir)?;
    if let Some(system) = hookbox_exec::SYSTEM_TRUST_BUNDLES
        .iter()
        .find_map(|path| std::fs::read(path).ok())
    {
        file.write_all(&system)?;
        if !system.ends_with(b"\n") {
            file.write_all(b"\n")?;
        }
    }
    file.write_all(b"# trusted by hookbox in addition to the system roots\n")?;
    file.write_all(extra_pem)?;
    file.flush()?;
    Ok(file.into_temp_path())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(caller: Option<&str>, host: &str) -> ProxyDecision {
        ProxyDecision {
            host: host.to_owned(),
            port: 443,
            method: "CONNECT".to_owned(),
            allowed: true,
            reason: String::new(),
            intercepted: false,
            redactions: 0,
            sni: None,
            caller: caller.map(str::to_owned),
        }
    }

    #[test]
    fn warm_decisions_go_to_the_call_they_name_or_else_to_every_call_running() {
        let calls = WarmCalls::default();
        let (first, second) = (Arc::default(), Arc::default());
        calls.lock().insert("call-a".to_owned(), Arc::clone(&first));
        calls
            .lock()
            .insert("call-b".to_owned(), Arc::clone(&second));
        calls.route(decision(Some("call-a"), "a.example.com"));
        calls.route(decision(Some("call-b"), "b.example.com"));
        // No name, or a name no call has (made up inside): every running call records it.
        calls.route(decision(None, "anonymous.example.com"));
        calls.route(decision(Some("call-z"), "forged.example.com"));
        let hosts = |sink: &Arc<Mutex<Vec<NetworkDecision>>>| -> Vec<String> {
            sink.lock()
                .unwrap()
                .iter()
                .map(|decision| decision.host.clone())
                .collect()
        };
        assert_eq!(
            hosts(&first),
            [
                "a.example.com",
                "anonymous.example.com",
                "forged.example.com"
            ]
        );
        assert_eq!(
            hosts(&second),
            [
                "b.example.com",
                "anonymous.example.com",
                "forged.example.com"
            ]
        );
        // A call's record is bounded.
        for _ in 0..2 * MAX_DECISIONS {
            calls.route(decision(Some("call-a"), "a.example.com"));
        }
        assert_eq!(first.lock().unwrap().len(), MAX_DECISIONS);
    }

    #[test]
    fn a_finished_or_cancelled_call_is_unregistered() {
        let calls = WarmCalls::default();
        let running = RunningCall::register(&calls, "call-a".to_owned());
        calls.route(decision(Some("call-a"), "a.example.com"));
        let decisions = running.finish();
        assert_eq!(decisions.len(), 1);
        assert!(calls.lock().is_empty());
        // A run whose future is dropped mid-call.
        drop(RunningCall::register(&calls, "call-b".to_owned()));
        assert!(calls.lock().is_empty());
    }
}
