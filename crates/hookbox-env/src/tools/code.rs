//! `code_execution`: bash or python run inside the environment's sandbox.

use std::time::Duration;

use hookbox_exec::{ExitKind, ProcessSpec};
use serde_json::{Value, json};

use crate::egress::SandboxEgress;
use crate::environment::Environment;
use crate::tools::args::Args;
use crate::tools::builtin::{Isolation, ToolOutcome};
use crate::tools::error::ToolError;

/// Limit for one `code_execution` call.
const TIMEOUT: Duration = Duration::from_secs(300);
/// Bytes kept from each of stdout and stderr.
const OUTPUT_LIMIT: usize = 1024 * 1024;
/// `PATH` for an unsandboxed run (the sandbox sets its own).
pub const HOST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The process that runs `code_execution {code, language}` in `environment`.
pub(crate) fn process(
    environment: &Environment,
    args: &Value,
    isolation: Isolation,
) -> Result<ProcessSpec, ToolError> {
    let args = Args::new("code_execution", args, &["code", "language"])?;
    let code = args.required_string("code", "the program to run")?;
    let (program, flag) = match args.string("language", "\"bash\" or \"python\"")? {
        None | Some("bash") => ("/bin/bash", "-c"),
        Some("python") => ("python3", "-c"),
        Some(other) => {
            return Err(ToolError::InvalidArguments {
                tool: "code_execution",
                problem: format!("language `{other}` is not supported; use \"bash\" or \"python\""),
            });
        }
    };
    let mut spec = ProcessSpec::shell("", TIMEOUT);
    spec.program = program.into();
    spec.args = vec![flag.into(), code.into()];
    spec.output_limit = OUTPUT_LIMIT;
    spec.env_clear = true;
    spec.env = environment
        .literal_env_vars()
        .into_iter()
        .map(|(name, value)| (name.into(), value.into()))
        .collect();
    environment_for(&mut spec, environment, isolation);
    Ok(spec)
}

/// Places a process in `environment`: inside its sandbox, or (explicitly unsandboxed) in its
/// workspace on the host.
pub(crate) fn environment_for(
    spec: &mut ProcessSpec,
    environment: &Environment,
    isolation: Isolation,
) {
    match isolation {
        Isolation::Sandboxed => {
            spec.sandbox = Some(environment.sandbox());
            spec.cwd = None;
        }
        Isolation::Unsandboxed => {
            spec.sandbox = None;
            spec.cwd = Some(environment.root().join("workspace"));
            spec.env.push(("PATH".into(), HOST_PATH.into()));
            spec.env
                .push(("HOME".into(), environment.root().join("workspace").into()));
        }
    }
}

/// Runs `code_execution` and reports `{stdout, stderr, exit_code}`; the call failed (the post
/// hook's `error`) when it wrote to stderr, exited non-zero or timed out. A sandboxed run
/// reaches the network through `egress` when given.
pub(crate) async fn run(
    environment: &Environment,
    args: &Value,
    isolation: Isolation,
    egress: Option<&SandboxEgress>,
) -> ToolOutcome {
    let spec = match process(environment, args, isolation) {
        Ok(spec) => spec,
        Err(error) => return ToolOutcome::failed(error.to_string()),
    };
    let timeout = spec.timeout;
    let (output, network) = match egress {
        Some(egress) => egress.run(spec).await,
        None => (hookbox_exec::run(&spec).await, Vec::new()),
    };
    let output = match output {
        Ok(output) => output,
        Err(err) => return ToolOutcome::failed(format!("code_execution: {err}")),
    };
    let stdout = output.stdout.to_text();
    let stderr = output.stderr.to_text();
    let (exit_code, failure) = match output.exit {
        ExitKind::Exited(0) => (Some(0), None),
        ExitKind::Exited(code) => (Some(code), Some(format!("exited with status {code}"))),
        ExitKind::Signaled(signal) => (None, Some(format!("killed by signal {signal}"))),
        ExitKind::TimedOut => (
            None,
            Some(format!("timed out after {} s", timeout.as_secs())),
        ),
    };
    let error = match (failure, stderr.trim().is_empty()) {
        (None, true) => None,
        (None, false) => Some(stderr.clone()),
        (Some(failure), true) => Some(failure),
        (Some(failure), false) => Some(format!("{failure}: {stderr}")),
    };
    ToolOutcome {
        result: Some(json!({"stdout": stdout, "stderr": stderr, "exit_code": exit_code})),
        error,
        network,
    }
}
