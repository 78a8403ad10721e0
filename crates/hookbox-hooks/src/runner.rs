//! The runner traits dispatch calls to execute handlers, and their host implementations.
//!
//! The engine never spawns a process or opens a socket itself: command handlers go through a
//! [`CommandRunner`] (on the host via `hookbox-exec`, or inside a sandbox), HTTP handlers through
//! an [`HttpRunner`] (the guarded client of `hookbox-net`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::binding::Trust;
use crate::outbox::OutboxSink;
use futures_util::future::BoxFuture;
use hookbox_exec::{CpuShare, ExecError, ProcessOutput, ProcessSpec};
use hookbox_net::{ClientOptions, EgressPolicy, GuardedClient, HttpReply, NetError, PostRequest};

/// Bytes kept from a handler's stdout, stderr or HTTP reply body.
pub const HANDLER_OUTPUT_LIMIT: usize = 1024 * 1024;

/// One command-hook execution: a shell command line, its stdin and its time limit.
#[derive(Debug, Clone)]
pub struct CommandRequest {
    /// The command line, run with `/bin/sh -c`.
    pub command: String,
    /// The event JSON.
    pub stdin: Vec<u8>,
    /// Limit for the whole process group.
    pub timeout: Duration,
    /// Who can change the file that declared the hook: a runner that runs owners' hooks on the
    /// host must not run a model-writable file's there.
    pub trust: Trust,
}

/// Runs command hooks somewhere (on the host, in a sandbox).
pub trait CommandRunner: Send + Sync {
    /// Runs one command to completion or timeout.
    fn run(&self, request: CommandRequest) -> BoxFuture<'_, Result<ProcessOutput, ExecError>>;
}

/// One HTTP-hook delivery.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// Where to POST.
    pub url: String,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// The event JSON.
    pub body: Vec<u8>,
    /// Limit for the whole exchange.
    pub timeout: Duration,
    /// Who can change the file that declared the hook: a model-writable one never gets the
    /// operator's widened network rights.
    pub trust: Trust,
}

/// Delivers HTTP hooks.
pub trait HttpRunner: Send + Sync {
    /// POSTs one event and returns the reply (status and capped body).
    fn post(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpReply, NetError>>;
}

/// Runs command hooks directly on the host, through `hookbox-exec`: only the owner's. A hook of
/// a file the model can write is refused (nothing runs on the host because of something the
/// model wrote); such hooks need a sandboxed runner.
#[derive(Debug, Clone, Default)]
pub struct HostCommandRunner {
    /// Working directory of the hooks; the caller's when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables added to the inherited environment (the whole environment with
    /// `env_clear`).
    pub env: Vec<(OsString, OsString)>,
    /// Start the hooks from an empty environment instead of inheriting this process's: for a
    /// process that runs hooks on behalf of another one (`hookbox daemon`), whose environment
    /// `env` then is.
    pub env_clear: bool,
}

impl CommandRunner for HostCommandRunner {
    fn run(&self, request: CommandRequest) -> BoxFuture<'_, Result<ProcessOutput, ExecError>> {
        if request.trust == Trust::ModelWritable {
            return Box::pin(std::future::ready(Err(ExecError::Spawn {
                program: "/bin/sh".to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "a hook file the model can write may not run commands on this host",
                ),
            })));
        }
        let mut spec = ProcessSpec::shell(&request.command, request.timeout);
        spec.cwd.clone_from(&self.cwd);
        spec.env.clone_from(&self.env);
        spec.env_clear = self.env_clear;
        spec.stdin = request.stdin;
        spec.output_limit = HANDLER_OUTPUT_LIMIT;
        Box::pin(async move { hookbox_exec::run(&spec).await })
    }
}

/// Runs the owner's command hooks on the host ([`HostCommandRunner`]) and those of a file the
/// model can write (a project's own policy) in a sandbox whose only host directory is the
/// project's [`ProjectView`], bound read-only at the project's path: such a hook decides from
/// its event and what it is shown, but changes nothing on this host and reaches no network.
#[derive(Debug, Clone)]
pub struct ProjectCommandRunner {
    /// The runner of the owner's hooks.
    pub host: HostCommandRunner,
    /// What the sandboxed hooks see; `None` (no trusted project) refuses them.
    pub project: Option<ProjectView>,
}

/// What a project's sandboxed hooks see of this host: one directory, read-only, at the
/// project's root, which is also their working directory, `HOME` and project variables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectView {
    /// The project's canonical root: where the directory appears.
    pub root: PathBuf,
    /// The host directory shown there: for `hookbox hook`, the snapshot of the project's
    /// trusted files, so that nothing the agent wrote since is there to run, import or read.
    pub shown: PathBuf,
}

/// `PATH` of a sandboxed project hook (its environment is cleared).
const SANDBOX_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

impl CommandRunner for ProjectCommandRunner {
    fn run(&self, request: CommandRequest) -> BoxFuture<'_, Result<ProcessOutput, ExecError>> {
        if request.trust == Trust::Owner {
            return self.host.run(request);
        }
        let Some(view) = &self.project else {
            return Box::pin(std::future::ready(Err(ExecError::Spawn {
                program: "/bin/sh".to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "a project's hook runs only from the snapshot of its trusted files, and \
                     there is none",
                ),
            })));
        };
        let mut sandbox = match hookbox_exec::Sandbox::over_directory(&view.shown) {
            Ok(sandbox) => sandbox,
            Err(source) => {
                return Box::pin(std::future::ready(Err(ExecError::Isolation {
                    program: "/bin/sh".to_owned(),
                    source,
                })));
            }
        };
        for bind in &mut sandbox.binds {
            bind.target.clone_from(&view.root);
            bind.writable = false;
        }
        let home = sandbox.home();
        let mut spec = ProcessSpec::shell(&request.command, request.timeout);
        spec.sandbox = Some(sandbox);
        // A gate answers in time however busy the model keeps the CPU.
        spec.cpu = CpuShare::Hook;
        spec.env_clear = true;
        spec.env = vec![
            ("PATH".into(), SANDBOX_PATH.into()),
            ("HOME".into(), home.clone().into()),
        ];
        for variable in crate::adapter::PROJECT_VARIABLES {
            spec.env.push((variable.into(), home.clone().into()));
        }
        spec.cwd = Some(home);
        spec.stdin = request.stdin;
        spec.output_limit = HANDLER_OUTPUT_LIMIT;
        Box::pin(async move { hookbox_exec::run(&spec).await })
    }
}

/// A hook's HTTP request through the guarded client under `policy`.
fn deliver<'a>(
    client: &'a GuardedClient,
    policy: &'a EgressPolicy,
    request: HttpRequest,
) -> BoxFuture<'a, Result<HttpReply, NetError>> {
    Box::pin(async move {
        client
            .post_json(PostRequest {
                url: &request.url,
                policy,
                headers: &request.headers,
                body: request.body,
                timeout: request.timeout,
                body_limit: HANDLER_OUTPUT_LIMIT,
            })
            .await
    })
}

/// Hooks on the host, outside any environment: public egress under the client's own rules.
impl HttpRunner for GuardedClient {
    fn post(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpReply, NetError>> {
        deliver(self, &EgressPolicy::PUBLIC, request)
    }
}

/// Delivers HTTP hooks under an environment's `network` policy: only allowlisted hosts, with
/// the allowlist's `transform` headers injected (secrets never appear in `hooks.json`).
/// Hooks declared in a model-writable file go through `clients.model_writable`.
#[derive(Debug, Clone)]
pub struct PolicyHttpRunner {
    /// The guarded clients (their address rules and trust roots apply too).
    pub clients: HookClients,
    /// The environment's egress policy.
    pub policy: EgressPolicy,
}

impl HttpRunner for PolicyHttpRunner {
    fn post(&self, request: HttpRequest) -> BoxFuture<'_, Result<HttpReply, NetError>> {
        deliver(self.clients.for_trust(request.trust), &self.policy, request)
    }
}

/// The two clients HTTP hooks of an environment use: the operator's (possibly widened:
/// loopback, private ranges, credentials) for the owner's hooks, and a narrow one for hooks
/// the model could have written.
#[derive(Debug, Clone)]
pub struct HookClients {
    /// For [`Trust::Owner`] hooks.
    pub owner: GuardedClient,
    /// For [`Trust::ModelWritable`] hooks: never loopback, private ranges or credentials.
    pub model_writable: GuardedClient,
}

impl HookClients {
    /// The owner's client built from `options`, and the model-writable one from
    /// [`narrowed`]`(options)`.
    pub fn new(options: &ClientOptions) -> Result<Self, NetError> {
        Ok(Self {
            owner: GuardedClient::new(options)?,
            model_writable: GuardedClient::new(&narrowed(options))?,
        })
    }

    /// `owner` for the owner's hooks and a strict client (the default options) for the others.
    pub fn with_strict_fallback(owner: GuardedClient) -> Result<Self, NetError> {
        Ok(Self {
            owner,
            model_writable: GuardedClient::new(&ClientOptions::default())?,
        })
    }

    /// The client for hooks declared in a file of `trust`.
    pub fn for_trust(&self, trust: Trust) -> &GuardedClient {
        match trust {
            Trust::Owner => &self.owner,
            Trust::ModelWritable => &self.model_writable,
        }
    }
}

/// `options` without what widens a client beyond public HTTPS: no loopback, no private ranges,
/// no credentials, HTTPS only (trust roots and static name overrides are kept).
pub fn narrowed(options: &ClientOptions) -> ClientOptions {
    ClientOptions {
        permit_loopback: false,
        allow_private_cidrs: Vec::new(),
        credentials: None,
        https_only: true,
        ..options.clone()
    }
}

/// The runners a dispatcher uses.
#[derive(Clone)]
pub struct Runners {
    /// For command handlers.
    pub command: Arc<dyn CommandRunner>,
    /// For HTTP handlers.
    pub http: Arc<dyn HttpRunner>,
    /// Where `"delivery": "at_least_once"` events are stored; without one (`hookbox hooks
    /// run`, SDK sessions) they are posted once, like fire-and-forget ones.
    pub outbox: Option<Arc<dyn OutboxSink>>,
}

impl Runners {
    /// Host command runner in `cwd` plus a guarded HTTP client with the strict default options
    /// (HTTPS only, loopback and private addresses refused).
    pub fn host(cwd: Option<PathBuf>) -> Result<Self, NetError> {
        Self::host_with_http_options(cwd, &ClientOptions::default())
    }

    /// Host command runner in `cwd` plus a guarded HTTP client built from `http`. This is the
    /// explicit way to relax the hook client, e.g. to post to a self-hosted receiver on loopback
    /// over plain HTTP (`permit_loopback`, `https_only: false`); callers that do so should say so
    /// to the operator.
    pub fn host_with_http_options(
        cwd: Option<PathBuf>,
        http: &ClientOptions,
    ) -> Result<Self, NetError> {
        Ok(Self {
            command: Arc::new(HostCommandRunner {
                cwd,
                env: Vec::new(),
                env_clear: false,
            }),
            http: Arc::new(GuardedClient::new(http)?),
            outbox: None,
        })
    }
}
