//! The five built-in sandbox tools behind one entry point.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::egress::{NetworkDecision, SandboxEgress};
use crate::environment::Environment;
use crate::tools::code;
use crate::tools::files::{FileTools, Resolved};
use crate::warm::WarmSandboxes;

/// Whether code runs isolated. Unsandboxed runs exist only for machines where the sandbox
/// cannot be created, behind an explicit, loudly named option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Inside the environment's sandbox (the default).
    Sandboxed,
    /// On the host, in the environment's workspace, as the current user.
    Unsandboxed,
}

/// What one tool call produced: its result, and the error text when it failed (the post hook's
/// `error` field). A failed `code_execution` still has a result (its output).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolOutcome {
    /// The tool's structured result, when it produced one.
    pub result: Option<Value>,
    /// Why the call failed, if it did.
    pub error: Option<String>,
    /// What the egress proxy decided on the requests the call's program made (never header
    /// values).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<NetworkDecision>,
    /// Whether the call failed because its sandbox died under it (a warm sandbox's supervisor
    /// killed from outside): a fault of the runtime, not of the call's code.
    #[serde(skip)]
    pub sandbox_lost: bool,
}

impl ToolOutcome {
    /// A call that failed with `error` and produced nothing.
    pub fn failed(error: String) -> Self {
        Self {
            result: None,
            error: Some(error),
            network: Vec::new(),
            sandbox_lost: false,
        }
    }
}

/// The built-in tools of one environment: `code_execution`, `read_file`, `write_file`,
/// `list_files` and `delete_file`.
#[derive(Debug)]
pub struct BuiltinTools {
    environment: Environment,
    files: FileTools,
    isolation: Isolation,
    egress: Option<Arc<SandboxEgress>>,
    warm: Option<WarmSandboxes>,
    code_timeout: Duration,
}

impl BuiltinTools {
    /// The tools of `environment`, running code with `isolation`.
    pub fn new(environment: Environment, isolation: Isolation) -> Result<Self, crate::ToolError> {
        let files = FileTools::for_environment(&environment)?;
        Ok(Self {
            environment,
            files,
            isolation,
            egress: None,
            warm: None,
            code_timeout: code::DEFAULT_CODE_TIMEOUT,
        })
    }

    /// These tools with `code_execution` running for at most `limit` (default
    /// [`DEFAULT_CODE_TIMEOUT`](crate::DEFAULT_CODE_TIMEOUT)); the model's `timeout` argument
    /// may lower it for one call, never raise it.
    pub fn with_code_timeout(mut self, limit: Duration) -> Self {
        self.code_timeout = limit;
        self
    }

    /// These tools with sandboxed code reaching the network through `egress` (the proxy on
    /// `127.0.0.1` inside); without it (the default) the sandbox has no network at all.
    pub fn with_egress(mut self, egress: Option<Arc<SandboxEgress>>) -> Self {
        self.egress = egress;
        self
    }

    /// These tools with sandboxed code running in the environment's sandbox in `warm` (see
    /// [`WarmSandboxes`]; with egress, a sandbox built with the egress's listener, see
    /// [`SandboxEgress::run_warm`]); without it (the default), each run builds a sandbox of
    /// its own.
    pub fn with_warm_sandboxes(mut self, warm: Option<WarmSandboxes>) -> Self {
        self.warm = warm;
        self
    }

    /// The environment the tools act on.
    pub fn environment(&self) -> &Environment {
        &self.environment
    }

    /// How code runs.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// `args` of tool `name` as the tool will act on them: a file tool's `path` resolved to
    /// the canonical absolute sandbox path ([`FileTools::resolve`]); `code_execution`'s
    /// arguments as they are.
    pub fn resolve(&self, name: &str, args: &Value) -> Result<Resolved, crate::ToolError> {
        match crate::builtin_tool(crate::Vocabulary::Sandbox, name) {
            Some(definition) if !definition.resolves_paths() => {
                Ok(Resolved::unjudged(args.clone()))
            }
            _ => self.files.resolve(name, args),
        }
    }

    /// Runs tool `name` with `args` returned by [`BuiltinTools::resolve`]; a file tool acts on
    /// exactly that path, following no link ([`FileTools::call_resolved`]).
    pub async fn call_resolved(&self, name: &str, resolved: &Resolved) -> ToolOutcome {
        if name == code::CODE_EXECUTION {
            return code::run(
                &self.environment,
                resolved.args(),
                self.isolation,
                self.code_timeout,
                self.egress.as_deref(),
                self.warm.as_ref(),
            )
            .await;
        }
        match self.files.call_resolved(name, resolved) {
            Ok(result) => ToolOutcome {
                result: Some(result),
                error: None,
                network: Vec::new(),
                sandbox_lost: false,
            },
            Err(err) => ToolOutcome::failed(err.to_string()),
        }
    }
}
