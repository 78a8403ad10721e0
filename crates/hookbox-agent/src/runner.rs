//! Command hooks of an environment run where its code runs: inside its sandbox.

use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use hookbox_env::{Environment, Isolation, NetworkDecision, SandboxEgress, environment_for};
use hookbox_exec::{ExecError, ProcessOutput, ProcessSpec};
use hookbox_hooks::{CommandRequest, CommandRunner, HANDLER_OUTPUT_LIMIT};

/// Runs command hooks in an environment's sandbox (cwd `/workspace`, the environment's
/// variables), or in its workspace on the host when explicitly unsandboxed.
#[derive(Debug, Clone)]
pub struct EnvironmentCommandRunner {
    environment: Arc<Environment>,
    isolation: Isolation,
    egress: Option<Arc<SandboxEgress>>,
    decisions: Option<Arc<Mutex<Vec<NetworkDecision>>>>,
}

impl EnvironmentCommandRunner {
    /// A runner for hooks of `environment`.
    pub fn new(environment: Arc<Environment>, isolation: Isolation) -> Self {
        Self {
            environment,
            isolation,
            egress: None,
            decisions: None,
        }
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
        let mut spec = ProcessSpec::shell(&request.command, request.timeout);
        spec.stdin = request.stdin;
        spec.output_limit = HANDLER_OUTPUT_LIMIT;
        // The sandbox's pid namespace (or the hook's timeout, unsandboxed) bounds the hook;
        // the parent-death signal would double its spawn cost.
        spec.die_with_parent = false;
        spec.env_clear = true;
        spec.env = self
            .environment
            .literal_env_vars()
            .into_iter()
            .map(|(name, value)| (name.into(), value.into()))
            .collect();
        environment_for(&mut spec, &self.environment, self.isolation);
        let egress = self.egress.clone();
        let sink = self.decisions.clone();
        Box::pin(async move {
            match egress {
                // The hook's own requests are decided like the code's, and kept when asked.
                Some(egress) => {
                    let (result, decisions) = egress.run(spec).await;
                    if let Some(sink) = sink {
                        sink.lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .extend(decisions);
                    }
                    result
                }
                None => hookbox_exec::run(&spec).await,
            }
        })
    }
}
