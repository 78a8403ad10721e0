//! Command hooks of an environment run where its code runs: inside its sandbox, but started
//! from nothing the model wrote.
//!
//! A hook starts with `HOME` on a fresh private directory (the run's own empty `/tmp` in the
//! sandbox; a new 0700 directory, removed afterwards, on the host), the working directory `/`
//! (the environment root on the host; the model cannot create entries there) and only the
//! variables of [`HOOK_ENV`], `HOME`, `PATH`, `TMPDIR` (sandbox) and `HOOKBOX_ENVIRONMENT_ID`,
//! plus the egress proxy's variables when the environment has network. The environment's own
//! `env` values do not reach hooks: they are set for the model's code and may point into the
//! model-writable `/workspace` (`PYTHONPATH`, `NODE_OPTIONS`, `BASH_ENV`…), which would put
//! the model's files on the gate's start-up path. So no `.pth` file, `sitecustomize`, module
//! next to the working directory, shell start-up file, `~/.jq`, git or npm configuration the
//! model planted is read by a hook. Nor is anything an interpreter finds around a script or
//! working directory (`package.json`, `node_modules`, `pyvenv.cfg`…): the working directory is
//! `/`, and a command's literal paths into the owner's `/workspace/.agents` lead through its
//! read-only view at `/.hookbox/workspace/.agents` instead ([`Environment::hook_command`]),
//! so no directory the model can write is an ancestor of either. `/workspace` stays writable
//! for hooks.
//! A sandboxed hook gets a hundred times the CPU weight of the model's calls
//! ([`CpuShare::Hook`]), so busy loops in them cannot starve a gate past its timeout.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use hookbox_env::{
    Environment, HOST_PATH, Isolation, NetworkDecision, SandboxEgress, WarmSandboxes,
};
use hookbox_exec::{CpuShare, ExecError, ProcessOutput, ProcessSpec};
use hookbox_hooks::{CommandRequest, CommandRunner, HANDLER_OUTPUT_LIMIT};

/// The fixed variables of every command hook (besides `HOME`, `PATH`, `TMPDIR` and
/// `HOOKBOX_ENVIRONMENT_ID`): a UTF-8 locale, and Python kept from user site-packages, from
/// writing bytecode and from putting the working or script directory on `sys.path`.
const HOOK_ENV: &[(&str, &str)] = &[
    ("LANG", "C.UTF-8"),
    ("PYTHONNOUSERSITE", "1"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
    ("PYTHONSAFEPATH", "1"),
];

/// `HOME` of a sandboxed hook: the run's private `/tmp`, a fresh empty tmpfs no other run sees.
const SANDBOX_HOOK_HOME: &str = "/tmp";

/// Runs command hooks in an environment's sandbox, or on the host when explicitly
/// unsandboxed, in the hook environment described in the module documentation.
#[derive(Debug, Clone)]
pub struct EnvironmentCommandRunner {
    environment: Arc<Environment>,
    isolation: Isolation,
    egress: Option<Arc<SandboxEgress>>,
    decisions: Option<Arc<Mutex<Vec<NetworkDecision>>>>,
    warm: Option<WarmSandboxes>,
}

impl EnvironmentCommandRunner {
    /// A runner for hooks of `environment`.
    pub fn new(environment: Arc<Environment>, isolation: Isolation) -> Self {
        Self {
            environment,
            isolation,
            egress: None,
            decisions: None,
            warm: None,
        }
    }

    /// This runner with sandboxed hooks running in the environment's sandbox in `warm`, like
    /// its code (none by default: a sandbox built for each hook).
    pub fn with_warm_sandboxes(mut self, warm: Option<WarmSandboxes>) -> Self {
        self.warm = warm;
        self
    }

    /// This runner with sandboxed hooks reaching the network through `egress`, like the
    /// environment's code (none by default: no network at all).
    pub fn with_egress(mut self, egress: Option<Arc<SandboxEgress>>) -> Self {
        self.egress = egress;
        self
    }

    /// This runner adding the egress proxy's decisions for the hooks' own requests to `sink`.
    pub fn recording_network(mut self, sink: Arc<Mutex<Vec<NetworkDecision>>>) -> Self {
        self.decisions = Some(sink);
        self
    }
}

impl CommandRunner for EnvironmentCommandRunner {
    fn run(&self, request: CommandRequest) -> BoxFuture<'_, Result<ProcessOutput, ExecError>> {
        let isolation = self.isolation;
        let command = match isolation {
            Isolation::Sandboxed => self.environment.hook_command(&request.command),
            Isolation::Unsandboxed => request.command,
        };
        let mut spec = ProcessSpec::shell(&command, request.timeout);
        spec.stdin = request.stdin;
        spec.output_limit = HANDLER_OUTPUT_LIMIT;
        spec.env_clear = true;
        spec.env = HOOK_ENV
            .iter()
            .map(|&(name, value)| (name.into(), value.into()))
            .collect();
        spec.env.push((
            "HOOKBOX_ENVIRONMENT_ID".into(),
            self.environment.id().into(),
        ));
        match isolation {
            Isolation::Sandboxed => {
                spec.sandbox = Some(self.environment.sandbox());
                // A gate answers in time however busy the model's calls keep the CPU.
                spec.cpu = CpuShare::Hook;
                spec.cwd = Some(PathBuf::from("/"));
                spec.env.push(("HOME".into(), SANDBOX_HOOK_HOME.into()));
            }
            Isolation::Unsandboxed => {
                spec.cwd = Some(self.environment.root().to_path_buf());
                spec.env.push(("PATH".into(), HOST_PATH.into()));
            }
        }
        let egress = self.egress.clone();
        let sink = self.decisions.clone();
        let warm = self.warm.clone();
        let environment = Arc::clone(&self.environment);
        Box::pin(async move {
            // Unsandboxed, a fresh private home for this run only, removed when it ends.
            let _home = match isolation {
                Isolation::Sandboxed => None,
                Isolation::Unsandboxed => {
                    let home = tempfile::Builder::new()
                        .prefix("hookbox-hook-home-")
                        .tempdir()
                        .map_err(|source| ExecError::Spawn {
                            program: "a command hook's private HOME".to_owned(),
                            source,
                        })?;
                    spec.env.push(("HOME".into(), home.path().into()));
                    Some(home)
                }
            };
            match egress {
                // The hook's own requests are decided like the code's, and kept when asked.
                Some(egress) => {
                    let (result, decisions) = match &warm {
                        Some(warm) => egress.run_warm(spec, warm, environment.id()).await,
                        None => egress.run(spec).await,
                    };
                    if let Some(sink) = sink {
                        sink.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .extend(decisions);
                    }
                    result
                }
                None => match warm {
                    Some(warm) => warm.run(environment.id(), &spec).await,
                    None => hookbox_exec::run(&spec).await,
                },
            }
        })
    }
}
