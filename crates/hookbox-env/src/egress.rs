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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use hookbox_exec::{Bind, ExecError, ListenInside, ProcessOutput, ProcessSpec};
use hookbox_net::{
    CredentialSource, DecisionLog, EgressPolicy, EgressProxy, ProxyCa, ProxyDecision,
};
use serde::Serialize;

use crate::environment::Environment;

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
    interception: Option<Interception>,
}

/// The CA that terminates TLS to inject headers, and the bundle trusting it.
struct Interception {
    ca: Arc<ProxyCa>,
    /// The bundle on the host (a private temporary file in this process's directory under the
    /// hookbox home, removed on drop).
    bundle: tempfile::TempPath,
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
        let parsed = EgressPolicy::from_network(environment.network())?;
        if parsed == EgressPolicy::DISABLED {
            return Ok(None);
        }
        let policy = match credentials {
            Some(source) => parsed.clone().resolve_credentials(source).unwrap_or(parsed),
            None => parsed,
        };
        let ca = ProxyCa::generate(environment.id())?;
        let bundle = write_bundle(environment.run_dir(), ca.certificate_pem().as_bytes())?;
        Ok(Some(Self {
            proxy,
            policy: Arc::new(policy),
            interception: Some(Interception {
                ca: Arc::new(ca),
                bundle,
            }),
        }))
    }

    /// Egress through `proxy` under `policy`, which injects nothing (an SDK session's domain
    /// lists): HTTPS goes through blind `CONNECT` tunnels (their SNI checked) with the
    /// sandbox's own trust store, so there is no CA and no bundle. `None` when `policy` is
    /// [`EgressPolicy::DISABLED`]: the sandbox keeps no network at all.
    pub fn without_interception(proxy: EgressProxy, policy: EgressPolicy) -> Option<Self> {
        (policy != EgressPolicy::DISABLED).then(|| Self {
            proxy,
            policy: Arc::new(policy),
            interception: None,
        })
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
        let Some(sandbox) = spec.sandbox.as_mut() else {
            return (hookbox_exec::run(&spec).await, Vec::new());
        };
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let sender = Mutex::new(Some(sender));
        sandbox.listen_inside = Some(ListenInside::new(PROXY_PORT, move |listener| {
            if let Some(sender) = sender.lock().unwrap_or_else(PoisonError::into_inner).take() {
                let _unused = sender.send(listener);
            }
        }));
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
        spec.env
            .splice(0..0, proxy_variables(self.interception.is_some()));

        let decisions = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&decisions);
        let log: DecisionLog = Arc::new(move |decision: ProxyDecision| {
            let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
            if kept.len() < MAX_DECISIONS {
                kept.push(NetworkDecision::from(decision));
            }
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

/// `serve` never returns; this only satisfies the type of the `select!` arm.
fn unreachable_serve() -> Result<ProcessOutput, ExecError> {
    Err(ExecError::Spawn {
        program: "the egress proxy".to_owned(),
        source: std::io::Error::other("the egress proxy stopped serving"),
    })
}

/// The variables pointing a program at the proxy and, `with_bundle`, the CA bundle.
fn proxy_variables(with_bundle: bool) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let proxy = format!("http://127.0.0.1:{PROXY_PORT}");
    let mut variables = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        variables.push((name.to_owned(), proxy.clone()));
        variables.push((name.to_lowercase(), proxy.clone()));
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
