//! `hookbox demo`: the seeds' security and privacy gates, run by the real engine on this host.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use hookbox_hooks::{Dispatcher, EventInput, HookOutcome, HookSet, Runners};
use serde_json::{Value, json};

use crate::render;

const GATE_PY: &str = include_str!("../../../../fixtures/seeds/gate.py");
const CHECK_PRIVACY_PY: &str = include_str!("../../../../fixtures/seeds/check_privacy.py");
const SECURITY_GATE: &str = include_str!("../../../../fixtures/seeds/security-gate.hooks.json");
const PRIVACY_GATE: &str = include_str!("../../../../fixtures/seeds/privacy-gate.hooks.json");

pub(crate) fn run() -> anyhow::Result<ExitCode> {
    let scratch = tempfile::Builder::new()
        .prefix("hookbox-demo-")
        .tempdir()
        .context("cannot create a scratch directory")?;
    let scripts = scratch.path().join("hooks-scripts");
    std::fs::create_dir(&scripts)?;
    std::fs::write(scripts.join("gate.py"), GATE_PY)?;
    std::fs::write(scripts.join("check_privacy.py"), CHECK_PRIVACY_PY)?;
    // The seeds' configs call scripts at their sandbox path; point them at the scratch copy.
    let sandbox_dir = "/.agents/hooks-scripts/";
    let local_dir = format!("{}/", scripts.display());

    let mut builder = HookSet::builder();
    builder.load_str(
        "security-gate.hooks.json",
        &SECURITY_GATE.replace(sandbox_dir, &local_dir),
        None,
    )?;
    builder.load_str(
        "privacy-gate.hooks.json",
        &PRIVACY_GATE.replace(sandbox_dir, &local_dir),
        None,
    )?;
    let dispatcher = Dispatcher::new(
        Arc::new(builder.build()),
        Runners::host(Some(scratch.path().to_path_buf()))
            .context("cannot build the HTTP client")?,
    );

    let calls = [
        (
            "Security gate",
            "code_execution",
            json!({"code": "rm -rf /tmp/forbidden", "language": "bash"}),
        ),
        (
            "Security gate",
            "code_execution",
            json!({"code": "ls", "language": "bash"}),
        ),
        (
            "Privacy gate",
            "read_file",
            json!({"path": "/workspace/private/employees.json"}),
        ),
        (
            "Privacy gate",
            "read_file",
            json!({"path": "/workspace/public/summary.json"}),
        ),
    ];
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let mut text = String::from(
        "hookbox demo: the seeds' hooks.json and hook scripts, verbatim, run by hookbox's hook engine\n\
         (engine only: the hooks run on this host in a scratch folder; the tool calls are \
         proposed by this script, not a model, and are not executed)\n",
    );
    for (title, tool, args) in calls {
        let input = EventInput::pre_tool_execution(tool, args.clone(), "env_demo", None);
        let outcome = runtime.block_on(dispatcher.dispatch(&input));
        text.push_str(&format!("\n{title}: pre_tool_execution {tool} {args}\n"));
        text.push_str(&describe(&outcome));
    }
    text.push_str(
        "\nTry your own: hookbox hooks run --config FILE --event pre_tool_execution --tool NAME --args JSON\n",
    );
    render::print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// Two or three indented lines: the decision with its reason, and each hook that ran.
fn describe(outcome: &HookOutcome) -> String {
    let decision = match serde_json::to_value(outcome.decision) {
        Ok(Value::String(decision)) => decision.to_uppercase(),
        _ => String::from("?"),
    };
    let mut text = match &outcome.reason {
        Some(reason) => format!("  → {decision}: {reason}\n"),
        None => format!("  → {decision}: the tool call may run\n"),
    };
    for entry in &outcome.trace {
        text.push_str(&format!(
            "    hook `{}` answered in {:.1} ms{}\n",
            entry.label,
            entry.duration.as_secs_f64() * 1000.0,
            entry
                .failure
                .as_ref()
                .map(|failure| format!(" (failed open: {failure})"))
                .unwrap_or_default()
        ));
    }
    text
}
