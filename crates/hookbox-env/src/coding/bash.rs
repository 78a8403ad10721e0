//! `Bash {command, timeout?, description?}`: `bash -c` in the session's sandbox.

use std::time::Duration;

use crate::Vocabulary;
use hookbox_exec::{ExitKind, Interactive, ProcessSpec, Sandbox};
use serde_json::{Value, json};

use crate::coding::{CodingOutcome, CodingTools, Failure, invalid};
use crate::egress::NetworkDecision;
use crate::tools::Isolation;
use crate::tools::args::Args;
use crate::tools::definition::{Effect, Run, ToolDefinition};

/// The tool's name.
const TOOL: &str = "Bash";

/// Its arguments.
const ARGS: &[&str] = &["command", "timeout", "description"];

/// The tool as models and hooks see it.
pub(crate) const DEFINITION: ToolDefinition = ToolDefinition {
    name: TOOL,
    vocabulary: Vocabulary::Sdk,
    effect: Effect::Runs,
    description: "Run a bash command in the working directory (inside the sandbox) and return its output.",
    parameters,
    arguments: ARGS,
    run: Run::Bash,
};

/// The JSON schema of its arguments.
fn parameters() -> Value {
    json!({"type": "object", "properties": {
        "command": {"type": "string", "description": "The command to run."},
        "timeout": {"type": "number", "description": "Time limit in milliseconds (default 120000, at most 600000)."},
        "description": {"type": "string", "description": "What the command does, in a few words."}
    }, "required": ["command"]})
}
/// Timeout when none is given, in milliseconds.
pub(crate) const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// Longest timeout honoured, in milliseconds (longer ones are clamped).
pub(crate) const MAX_TIMEOUT_MS: u64 = 600_000;
/// `PATH` for an unsandboxed run (the sandbox sets its own).
const HOST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// The locale given to commands.
const LANG: &str = "C.UTF-8";

/// Runs the command and reports Claude Code's `{stdout, stderr, interrupted, exit_code}`;
/// the call failed when the command exited non-zero, was killed or timed out.
pub(crate) async fn run(tools: &CodingTools, input: &Value) -> CodingOutcome {
    let spec = match process(tools, input) {
        Ok(spec) => spec,
        Err(error) => return CodingOutcome::failed(error),
    };
    let timeout_ms = spec.timeout.as_millis();
    let (output, network) = match (tools.egress(), tools.warm()) {
        (Some(egress), Some((warm, key))) => egress.run_warm(spec, warm, key).await,
        (Some(egress), None) => egress.run(spec).await,
        (None, Some((warm, key))) => (warm.run(key, &spec).await, Vec::new()),
        (None, None) => (hookbox_exec::run(&spec).await, Vec::new()),
    };
    let output = match output {
        Ok(output) => output,
        Err(error) => return CodingOutcome::failed(format!("Bash: {error}")),
    };
    let stdout = output.stdout.to_text();
    let stderr = output.stderr.to_text();
    let (exit_code, interrupted, note) = match output.exit {
        ExitKind::Exited(0) => (0, false, None),
        ExitKind::Exited(code) => (code, false, Some(format!("Exit code {code}"))),
        ExitKind::Signaled(signal) => (
            128 + signal,
            false,
            Some(format!(
                "Exit code {} (killed by signal {signal})",
                128 + signal
            )),
        ),
        ExitKind::TimedOut => (
            124,
            true,
            Some(format!(
                "Command timed out after {timeout_ms} ms; it and everything it started were killed"
            )),
        ),
    };
    let mut text = combine(&stdout, &stderr, note.as_deref());
    for refused in network.iter().filter(|decision| !decision.allowed) {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&refusal_line(refused));
    }
    CodingOutcome {
        response: json!({
            "stdout": stdout,
            "stderr": stderr,
            "interrupted": interrupted,
            "exit_code": exit_code,
        }),
        error: note.is_some().then(|| text.clone()),
        text,
    }
}

/// The process for `input`: `bash -c COMMAND` in the working directory, sandboxed unless the
/// session opted out, with a small fixed environment (nothing of hookbox's own).
pub(crate) fn process(tools: &CodingTools, input: &Value) -> Result<ProcessSpec, Failure> {
    let args = Args::new(TOOL, input, ARGS).map_err(|e| invalid(&e))?;
    let command = args
        .required_string("command", "the shell command to run")
        .map_err(|e| invalid(&e))?;
    let timeout = args
        .integer("timeout", "a timeout in milliseconds, at most 600000")
        .map_err(|e| invalid(&e))?
        .unwrap_or(DEFAULT_TIMEOUT_MS)
        .clamp(1, MAX_TIMEOUT_MS);
    args.string("description", "what the command does")
        .map_err(|e| invalid(&e))?;
    let cwd = tools.cwd().to_path_buf();
    let mut spec = ProcessSpec::shell(command, Duration::from_millis(timeout));
    spec.program = "/bin/bash".into();
    spec.env_clear = true;
    spec.env = vec![
        ("HOME".into(), cwd.into()),
        ("LANG".into(), LANG.into()),
        ("TERM".into(), "dumb".into()),
    ];
    spec.output_limit = ProcessSpec::DEFAULT_OUTPUT_LIMIT;
    tools.confine(&mut spec)?;
    Ok(spec)
}

impl CodingTools {
    /// Makes `spec` run where the session's `Bash` commands run: in the working directory,
    /// inside a sandbox over it (the added directories bound too, the protected entries
    /// read-only, no network: [`spawn_confined`](Self::spawn_confined) and `Bash` add the
    /// egress proxy), or on the host with a fixed `PATH` and `HOME` when the session is
    /// unsandboxed. Fails when the sandbox cannot be described (never falls back to the host).
    pub fn confine(&self, spec: &mut ProcessSpec) -> Result<(), String> {
        let cwd = self.cwd().to_path_buf();
        match self.isolation() {
            Isolation::Sandboxed => {
                let mut sandbox = Sandbox::over_directory(&cwd)
                    .map_err(|error| format!("Bash: cannot sandbox {}: {error}", cwd.display()))?;
                sandbox.binds.extend(self.protection_binds()?);
                sandbox.binds.extend(self.added_binds()?);
                spec.sandbox = Some(sandbox);
            }
            Isolation::Unsandboxed => {
                spec.sandbox = None;
                spec.env.push(("PATH".into(), HOST_PATH.into()));
                spec.env.push(("TMPDIR".into(), "/tmp".into()));
                spec.env.push(("HOME".into(), cwd.clone().into()));
            }
        }
        spec.cwd = Some(cwd);
        Ok(())
    }

    /// Starts `spec` as a long-lived process where the session's `Bash` commands run
    /// ([`confine`](Self::confine)), with the same network (the egress proxy inside, when the
    /// tools have one), until the returned handle is dropped
    /// ([`hookbox_exec::spawn_interactive`]).
    pub async fn spawn_confined(&self, mut spec: ProcessSpec) -> Result<Interactive, String> {
        self.confine(&mut spec)?;
        match self.egress() {
            Some(egress) => egress.spawn_interactive(spec).await,
            None => hookbox_exec::spawn_interactive(&spec).await,
        }
        .map_err(|error| error.to_string())
    }
}

/// How the model is told of a request the egress proxy refused (an HTTPS client shows only
/// the status of a refused `CONNECT`, not the proxy's reason).
fn refusal_line(decision: &NetworkDecision) -> String {
    format!(
        "Network: the sandbox's proxy refused {} {}:{}: {}",
        decision.method, decision.host, decision.port, decision.reason
    )
}

/// What the model sees: stdout, stderr, then the note (exit code or timeout), each on its own
/// lines.
pub(crate) fn combine(stdout: &str, stderr: &str, note: Option<&str>) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in [stdout, stderr] {
        let trimmed = part.trim_end_matches('\n');
        if !trimmed.is_empty() {
            parts.push(trimmed);
        }
    }
    if let Some(note) = note {
        parts.push(note);
    }
    parts.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combines_output_and_notes() {
        assert_eq!(combine("out\n", "", None), "out");
        assert_eq!(
            combine("out\n", "err\n", Some("Exit code 2")),
            "out\nerr\nExit code 2"
        );
        assert_eq!(combine("", "", None), "");
    }
}
