//! `code_execution {code, language?, timeout?}`: bash or python run inside the environment's
//! sandbox, for at most the sandbox tools' time limit ([`DEFAULT_CODE_TIMEOUT`] unless configured
//! otherwise); the model may ask for less with `timeout`, never for more.

use std::time::Duration;

use crate::Vocabulary;
use hookbox_exec::{ExecError, ExitKind, ProcessSpec};
use serde_json::{Value, json};

use crate::egress::SandboxEgress;
use crate::environment::Environment;
use crate::tools::args::Args;
use crate::tools::builtin::{Isolation, ToolOutcome};
use crate::tools::definition::{Effect, Run, ToolDefinition};
use crate::tools::error::ToolError;
use crate::warm::WarmSandboxes;

/// The tool's name: the Interactions API shows its calls as `code_execution_call` steps.
pub const CODE_EXECUTION: &str = "code_execution";

/// The tool's name, as the other tool files call theirs.
use CODE_EXECUTION as TOOL;

/// Its arguments.
const ARGS: &[&str] = &["code", "language", "timeout"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sandbox,
    effect: Effect::Runs,
    description: "Run a bash or python program in the sandbox (cwd /workspace) and return its stdout, stderr and exit code.",
    parameters,
    arguments: ARGS,
    run: Run::Code,
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "code": {"type": "string", "description": "The program."},
        "language": {"type": "string", "enum": ["bash", "python"], "description": "Defaults to bash."},
        "timeout": {"type": "number", "description": "Time limit in seconds; at most the sandbox's limit, which is also the default."}
    }, "required": ["code"]})
}

/// The time limit of one call unless the sandbox tools are configured with another
/// ([`BuiltinTools::with_code_timeout`](crate::BuiltinTools::with_code_timeout)).
pub const DEFAULT_CODE_TIMEOUT: Duration = Duration::from_secs(300);
/// Bytes kept from each of stdout and stderr.
const OUTPUT_LIMIT: usize = 1024 * 1024;
/// `PATH` for an unsandboxed run (the sandbox sets its own).
pub const HOST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The process that runs `code_execution {code, language, timeout}` in `environment`, for at
/// most `limit`, and the note for the result when the model asked for more than `limit`.
pub(crate) fn process(
    environment: &Environment,
    args: &Value,
    isolation: Isolation,
    limit: Duration,
) -> Result<(ProcessSpec, Option<String>), ToolError> {
    let args = Args::new(TOOL, args, ARGS)?;
    let code = args.required_string("code", "the program to run")?;
    let (program, flag) = match args.string("language", "\"bash\" or \"python\"")? {
        None | Some("bash") => ("/bin/bash", "-c"),
        Some("python") => ("python3", "-c"),
        Some(other) => {
            return Err(ToolError::InvalidArguments {
                tool: TOOL,
                problem: format!("language `{other}` is not supported; use \"bash\" or \"python\""),
            });
        }
    };
    let requested = args.number("timeout", "the time limit in seconds")?;
    let (timeout, note) =
        time_limit(requested, limit).map_err(|problem| ToolError::InvalidArguments {
            tool: TOOL,
            problem,
        })?;
    let mut spec = ProcessSpec::shell("", timeout);
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
    Ok((spec, note))
}

/// How long a call may run: the model's `requested` seconds when below `limit`, else `limit`,
/// with a note for the result when the model asked for more. A non-positive request is an
/// argument error.
fn time_limit(
    requested: Option<f64>,
    limit: Duration,
) -> Result<(Duration, Option<String>), String> {
    match requested {
        None => Ok((limit, None)),
        Some(seconds) if seconds <= 0.0 => Err(format!(
            "argument `timeout` must be a positive number of seconds, got {seconds}"
        )),
        Some(seconds) if seconds > limit.as_secs_f64() => Ok((
            limit,
            Some(format!(
                "timeout {seconds} s is above the sandbox's limit; the limit of {} s applied",
                whole_or_fraction(limit)
            )),
        )),
        Some(seconds) => Ok((Duration::from_secs_f64(seconds), None)),
    }
}

/// `duration` in seconds: `300`, or `0.5` when it is not whole.
fn whole_or_fraction(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 {
        duration.as_secs().to_string()
    } else {
        duration.as_secs_f64().to_string()
    }
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

/// Runs `code_execution` for at most `limit` and reports `{stdout, stderr, exit_code}`, plus a
/// `note` when the model's `timeout` was lowered to `limit`; the call failed (the post hook's
/// `error`) when it wrote to stderr, exited non-zero or timed out. A sandboxed run reaches the
/// network through `egress` when given, and runs in the environment's sandbox in `warm` when
/// given.
pub(crate) async fn run(
    environment: &Environment,
    args: &Value,
    isolation: Isolation,
    limit: Duration,
    egress: Option<&SandboxEgress>,
    warm: Option<&WarmSandboxes>,
) -> ToolOutcome {
    let (spec, note) = match process(environment, args, isolation, limit) {
        Ok(process) => process,
        Err(error) => return ToolOutcome::failed(error.to_string()),
    };
    let timeout = spec.timeout;
    let (output, network) = match (egress, warm) {
        (Some(egress), Some(warm)) => egress.run_warm(spec, warm, environment.id()).await,
        (Some(egress), None) => egress.run(spec).await,
        (None, Some(warm)) => (warm.run(environment.id(), &spec).await, Vec::new()),
        (None, None) => (hookbox_exec::run(&spec).await, Vec::new()),
    };
    let output = match output {
        Ok(output) => output,
        Err(err) => {
            return ToolOutcome {
                sandbox_lost: matches!(err, ExecError::SandboxLost { .. }),
                ..ToolOutcome::failed(format!("code_execution: {err}"))
            };
        }
    };
    let stdout = output.stdout.to_text();
    let stderr = output.stderr.to_text();
    let (exit_code, failure) = match output.exit {
        ExitKind::Exited(0) => (Some(0), None),
        ExitKind::Exited(code) => (Some(code), Some(format!("exited with status {code}"))),
        ExitKind::Signaled(signal) => (None, Some(format!("killed by signal {signal}"))),
        ExitKind::TimedOut => (
            None,
            Some(format!("timed out after {} s", whole_or_fraction(timeout))),
        ),
    };
    let error = match (failure, stderr.trim().is_empty()) {
        (None, true) => None,
        (None, false) => Some(stderr.clone()),
        (Some(failure), true) => Some(failure),
        (Some(failure), false) => Some(format!("{failure}: {stderr}")),
    };
    let mut result = json!({"stdout": stdout, "stderr": stderr, "exit_code": exit_code});
    if let Some(note) = note {
        result["note"] = note.into();
    }
    ToolOutcome {
        result: Some(result),
        error,
        network,
        sandbox_lost: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(300);

    #[test]
    fn without_a_timeout_the_limit_applies() {
        assert_eq!(time_limit(None, LIMIT), Ok((LIMIT, None)));
    }

    #[test]
    fn a_timeout_may_lower_the_limit() {
        assert_eq!(
            time_limit(Some(2.5), LIMIT),
            Ok((Duration::from_millis(2500), None))
        );
        assert_eq!(time_limit(Some(300.0), LIMIT), Ok((LIMIT, None)));
    }

    #[test]
    fn a_larger_timeout_is_clamped_and_says_so() {
        let (timeout, note) = time_limit(Some(900.0), LIMIT).expect("clamped");
        assert_eq!(timeout, LIMIT);
        assert_eq!(
            note.as_deref(),
            Some("timeout 900 s is above the sandbox's limit; the limit of 300 s applied")
        );
        let (timeout, _) = time_limit(Some(f64::MAX), LIMIT).expect("clamped");
        assert_eq!(timeout, LIMIT);
    }

    #[test]
    fn a_non_positive_timeout_is_an_argument_error() {
        for seconds in [0.0, -1.0] {
            let problem = time_limit(Some(seconds), LIMIT).expect_err("refused");
            assert!(problem.contains("positive number of seconds"), "{problem}");
        }
    }

    #[test]
    fn seconds_are_shown_whole_when_they_are() {
        assert_eq!(whole_or_fraction(LIMIT), "300");
        assert_eq!(whole_or_fraction(Duration::from_millis(1500)), "1.5");
    }
}
