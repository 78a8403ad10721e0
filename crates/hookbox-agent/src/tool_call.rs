//! One built-in tool call through the environment's hooks: pre hooks, the tool unless denied,
//! post hooks.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookbox_env::{
    BuiltinTools, EgressError, Environment, FileTools, Isolation, NetworkDecision, SandboxEgress,
    ToolError, ToolOutcome, Vocabulary, WarmSandboxes, builtin_tool,
};
use hookbox_hooks::{
    Decision, Diagnostic, Dispatcher, EventInput, HookClients, HookOutcome, OutboxSink,
    PolicyHttpRunner, Runners, TraceEntry,
};
use serde_json::Value;

use crate::discovery::HookDiscovery;
use crate::runner::EnvironmentCommandRunner;

/// Largest tool result, serialized, sent to post hooks as `result`; larger ones are cut.
const POST_RESULT_LIMIT: usize = 64 * 1024;

/// What happened to one tool call (its JSON is each interface's: `hookbox exec --json` writes
/// it in `hookbox-cli`).
#[derive(Debug, Clone)]
pub struct ToolCallReport {
    /// The tool called.
    pub tool: String,
    /// Whether a pre hook denied the call (the tool did not run).
    pub denied: bool,
    /// The deny reason, for the model.
    pub reason: Option<String>,
    /// The tool's result, when it ran and produced one.
    pub result: Option<Value>,
    /// Why the tool failed, when it ran and failed.
    pub error: Option<String>,
    /// Every hook run, pre then post.
    pub trace: Vec<TraceEntry>,
    /// What the egress proxy decided on the requests made by the call's sandboxed programs:
    /// the pre hooks', the tool's, then the post hooks' (never header values).
    pub network: Vec<NetworkDecision>,
    /// Problems with the environment's hook files.
    pub diagnostics: Vec<Diagnostic>,
    /// Whether the tool failed because its sandbox died under it (see
    /// [`ToolOutcome::sandbox_lost`]).
    pub sandbox_lost: bool,
}

impl ToolCallReport {
    /// Logs what whoever made the call does not see (the Interactions agent and `hookbox mcp`
    /// alike): every hook that failed and let the call go on, and every problem with the
    /// environment's hook files (a group a later file may not replace, a model-written file
    /// over its bounds or unparsable). `context` names the call, e.g. `interaction int_…`.
    pub fn log_hook_problems(&self, context: &str) {
        for entry in self.trace.iter().filter(|entry| !entry.failed_closed) {
            if let Some(failure) = &entry.failure {
                tracing::warn!(
                    context,
                    tool = self.tool,
                    handler = entry.label,
                    cause = %failure,
                    "hook failed open: the call went on without its decision"
                );
            }
        }
        for diagnostic in &self.diagnostics {
            tracing::warn!(
                context,
                tool = self.tool,
                file = diagnostic.source,
                json_path = diagnostic.json_path,
                "hook configuration: {}",
                diagnostic.message
            );
        }
    }
}

/// Why tool calls cannot be made in an environment at all.
#[derive(Debug, thiserror::Error)]
pub enum ToolCallError {
    /// The tool is not one of the five built-in tools.
    #[error(
        "unknown tool `{0}`; the built-in tools are code_execution, read_file, write_file, \
         list_files and delete_file"
    )]
    UnknownTool(String),
    /// The environment's root cannot be opened.
    #[error(transparent)]
    Environment(#[from] ToolError),
    /// The environment's `network` policy is not valid.
    #[error("the environment's network policy is not valid: {0}")]
    Network(#[from] hookbox_net::PolicyError),
    /// The environment's egress through the proxy cannot be set up.
    #[error(transparent)]
    Egress(#[from] EgressError),
    /// The HTTP client for hooks in model-writable files cannot be built.
    #[error("cannot build the HTTP client for model-writable hooks: {0}")]
    HookClient(#[from] hookbox_net::NetError),
}

/// The built-in tools of one environment, each call wrapped in its hooks.
pub struct SandboxTools {
    environment: Arc<Environment>,
    isolation: Isolation,
    tools: BuiltinTools,
    files: FileTools,
    discovery: HookDiscovery,
    runners: Runners,
    egress: Option<Arc<SandboxEgress>>,
    warm: Option<WarmSandboxes>,
}

impl SandboxTools {
    /// The tools of `environment`; command hooks and code run with `isolation`, the owner's
    /// HTTP hooks go through `client` under the environment's `network` policy (allowlist and
    /// `transform`), hooks in model-writable files through a strict client (see
    /// [`with_hook_clients`](Self::with_hook_clients)).
    pub fn new(
        environment: Environment,
        isolation: Isolation,
        client: hookbox_net::GuardedClient,
    ) -> Result<Self, ToolCallError> {
        let clients = HookClients::with_strict_fallback(client)?;
        Self::with_hook_clients(environment, isolation, clients)
    }

    /// The tools of `environment` as [`new`](Self::new) makes them, with HTTP hooks going
    /// through `clients` by the trust of the file that declares them.
    pub fn with_hook_clients(
        environment: Environment,
        isolation: Isolation,
        clients: HookClients,
    ) -> Result<Self, ToolCallError> {
        let policy = hookbox_net::EgressPolicy::from_network(environment.network())?;
        let discovery = HookDiscovery::for_environment(&environment);
        let environment = Arc::new(environment);
        let runners = Runners {
            command: Arc::new(EnvironmentCommandRunner::new(
                Arc::clone(&environment),
                isolation,
            )),
            http: Arc::new(PolicyHttpRunner { clients, policy }),
            outbox: None,
        };
        Ok(Self {
            isolation,
            tools: BuiltinTools::new((*environment).clone(), isolation)?,
            files: FileTools::for_environment(&environment)?,
            environment,
            discovery,
            runners,
            egress: None,
            warm: None,
        })
    }

    /// These tools with sandboxed code and command hooks reaching the network through `proxy`,
    /// listening on `127.0.0.1:3128` inside each sandbox (see [`SandboxEgress`]), under the
    /// environment's `network` policy with its `credential`s resolved through `credentials`.
    /// The environment's CA is generated here and kept in memory for as long as these tools
    /// live; with warm sandboxes (call [`with_warm_sandboxes`](Self::with_warm_sandboxes)
    /// first), the environment's egress and CA are those its other tools use while its policy
    /// is the same ([`SandboxEgress::for_warm`]), so that they share its warm sandbox. Nothing
    /// changes for `network: "disabled"` or unsandboxed tools (the sandbox keeps no network at
    /// all; unsandboxed code has the host's).
    pub fn with_egress(
        mut self,
        proxy: hookbox_net::EgressProxy,
        credentials: Option<&dyn hookbox_net::CredentialSource>,
    ) -> Result<Self, ToolCallError> {
        if self.isolation != Isolation::Sandboxed {
            return Ok(self);
        }
        let egress = match &self.warm {
            Some(warm) => SandboxEgress::for_warm(&self.environment, proxy, credentials, warm)?,
            None => SandboxEgress::new(&self.environment, proxy, credentials)?.map(Arc::new),
        };
        let Some(egress) = egress else {
            return Ok(self);
        };
        self.tools = self.tools.with_egress(Some(Arc::clone(&egress)));
        self.egress = Some(egress);
        Ok(self)
    }

    /// These tools with sandboxed code and command hooks running in the environment's sandbox
    /// in `warm` (see [`WarmSandboxes`]; with egress, one built with the egress's proxy
    /// listener, for as long as these tools live); without it, every run builds its own
    /// sandbox.
    pub fn with_warm_sandboxes(mut self, warm: Option<WarmSandboxes>) -> Self {
        if self.isolation != Isolation::Sandboxed {
            return self;
        }
        self.tools = self.tools.with_warm_sandboxes(warm.clone());
        self.runners.command = Arc::new(
            EnvironmentCommandRunner::new(Arc::clone(&self.environment), self.isolation)
                .with_warm_sandboxes(warm.clone()),
        );
        self.warm = warm;
        self
    }

    /// These tools with the events of `"delivery": "at_least_once"` HTTP hooks stored in
    /// `outbox` (before the call returns) instead of being posted.
    pub fn with_outbox(mut self, outbox: Arc<dyn OutboxSink>) -> Self {
        self.runners.outbox = Some(outbox);
        self
    }

    /// These tools with `code_execution` running for at most `limit` (default
    /// [`DEFAULT_CODE_TIMEOUT`](hookbox_env::DEFAULT_CODE_TIMEOUT)); the model's `timeout`
    /// argument may lower it for one call, never raise it.
    pub fn with_code_timeout(mut self, limit: Duration) -> Self {
        self.tools = self.tools.with_code_timeout(limit);
        self
    }

    /// Calls built-in tool `tool` with `args`, through the hooks discovered in the environment
    /// now. `interaction_id` is passed to hooks when the call belongs to an interaction.
    pub async fn call(
        &self,
        tool: &str,
        args: Value,
        interaction_id: Option<&str>,
    ) -> Result<ToolCallReport, ToolCallError> {
        let Some(definition) = builtin_tool(Vocabulary::Sandbox, tool) else {
            return Err(ToolCallError::UnknownTool(tool.to_owned()));
        };
        let discovered = self.discovery.load(&self.files);
        if let Some(reason) = discovered.unusable {
            return Ok(ToolCallReport {
                tool: tool.to_owned(),
                denied: true,
                reason: Some(reason),
                result: None,
                error: None,
                trace: Vec::new(),
                network: Vec::new(),
                diagnostics: discovered.problems,
                sandbox_lost: false,
            });
        }
        let (hooks, diagnostics) = (discovered.hooks, discovered.problems);
        // Command hooks with network get this call's own record of the proxy's decisions.
        let hook_network: Arc<Mutex<Vec<NetworkDecision>>> = Arc::default();
        let mut runners = self.runners.clone();
        if let Some(egress) = &self.egress {
            runners.command = Arc::new(
                EnvironmentCommandRunner::new(Arc::clone(&self.environment), self.isolation)
                    .with_egress(Some(Arc::clone(egress)))
                    .with_warm_sandboxes(self.warm.clone())
                    .recording_network(Arc::clone(&hook_network)),
            );
        }
        let drain =
            || std::mem::take(&mut *hook_network.lock().unwrap_or_else(PoisonError::into_inner));
        let dispatcher = Dispatcher::new(hooks, runners);
        let environment_id = self.environment.id();
        // Hooks see what the tool will act on (file paths resolved) and the model's arguments
        // in `raw_args`; a call that cannot be resolved fails without acting on anything.
        let resolved = self.tools.resolve(tool, &args);
        let shown = resolved
            .as_ref()
            .map_or(&args, hookbox_env::Resolved::args)
            .clone();
        let event = |input: EventInput| {
            if definition.resolves_paths() {
                input.with_raw_args(args.clone())
            } else {
                input
            }
        };
        let pre = event(EventInput::pre_tool_execution(
            tool,
            shown.clone(),
            environment_id,
            interaction_id,
        ));
        let HookOutcome {
            decision,
            reason,
            mut trace,
            ..
        } = dispatcher.dispatch(&pre).await;
        let mut diagnostics = diagnostics;
        diagnostics.extend(dispatcher.hooks().diagnostics().iter().cloned());
        if decision == Decision::Deny {
            return Ok(ToolCallReport {
                tool: tool.to_owned(),
                denied: true,
                reason,
                result: None,
                error: None,
                trace,
                diagnostics,
                network: drain(),
                sandbox_lost: false,
            });
        }
        // The pre hooks' requests, then the tool's, then the post hooks'.
        let mut network = drain();
        let outcome = match &resolved {
            Ok(resolved) => self.tools.call_resolved(tool, resolved).await,
            Err(error) => ToolOutcome::failed(error.to_string()),
        };
        network.extend(outcome.network);
        let post = event(EventInput::post_tool_execution(
            tool,
            shown,
            environment_id,
            interaction_id,
            outcome.result.as_ref().map(capped),
            outcome.error.as_deref(),
        ));
        trace.extend(dispatcher.dispatch(&post).await.trace);
        network.extend(drain());
        Ok(ToolCallReport {
            tool: tool.to_owned(),
            denied: false,
            reason: None,
            result: outcome.result,
            error: outcome.error,
            trace,
            diagnostics,
            network,
            sandbox_lost: outcome.sandbox_lost,
        })
    }
}

/// `result` as post hooks receive it: whole, or cut to [`POST_RESULT_LIMIT`] bytes of JSON.
fn capped(result: &Value) -> Value {
    let text = result.to_string();
    if text.len() <= POST_RESULT_LIMIT {
        return result.clone();
    }
    let mut cut = POST_RESULT_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    Value::String(format!(
        "{}… [hookbox: result cut at {POST_RESULT_LIMIT} of {} bytes]",
        &text[..cut],
        text.len()
    ))
}
