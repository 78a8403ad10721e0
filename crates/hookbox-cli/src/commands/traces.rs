//! `hookbox traces INTERACTION_ID`: an interaction's hook traces from the store, fail-opens
//! marked, so a gate that did not fire is never silent.

use std::process::ExitCode;

use anyhow::Context;
use hookbox_env::Environments;
use hookbox_hooks::Failure;
use serde_json::Value;

use crate::cli::TracesArgs;
use crate::render;

pub(crate) fn run(args: &TracesArgs) -> anyhow::Result<ExitCode> {
    let home = Environments::default_home()?;
    let traces = hookbox_server::read_hook_traces(&home, &args.interaction).with_context(|| {
        format!(
            "cannot read the hook traces of `{}` in {}",
            args.interaction,
            home.display()
        )
    })?;
    if args.json {
        render::print_json(&Value::Array(traces))?;
        return Ok(ExitCode::SUCCESS);
    }
    if traces.is_empty() {
        render::print_text("no hook ran in this interaction\n")?;
        return Ok(ExitCode::SUCCESS);
    }
    let lines: String = traces.iter().map(line).collect();
    render::print_text(&lines)?;
    Ok(ExitCode::SUCCESS)
}

/// One trace as a line: where, which handler, what it decided, how long, and why it failed.
fn line(trace: &Value) -> String {
    let text = |key: &str| trace[key].as_str().unwrap_or("-").to_owned();
    let step = trace["step_index"]
        .as_u64()
        .map_or("-".to_owned(), |index| index.to_string());
    if let Some(network) = trace.get("network") {
        return format!("step {step} {}: network {network}\n", text("tool"));
    }
    if let Some(diagnostic) = trace.get("diagnostic") {
        let field = |key: &str| diagnostic[key].as_str().unwrap_or("-").to_owned();
        return format!(
            "step {step}: hook configuration {}: {}: {}: {}\n",
            field("severity"),
            field("source"),
            field("json_path"),
            field("message")
        );
    }
    let result = match &trace["result"] {
        Value::String(result) => result.replace('_', " "),
        Value::Object(decided) => decided
            .get("decided")
            .and_then(Value::as_str)
            .unwrap_or("decided")
            .to_owned(),
        other => other.to_string(),
    };
    let mut line = format!(
        "step {step} {}: {} {} `{}` → {result} in {:.1} ms",
        text("tool"),
        text("event"),
        text("handler"),
        text("label"),
        trace["duration_ms"].as_f64().unwrap_or_default()
    );
    if let Some(failure) = trace.get("failure").filter(|failure| !failure.is_null()) {
        let cause = serde_json::from_value::<Failure>(failure.clone())
            .map_or_else(|_| failure.to_string(), |failure| failure.to_string());
        let marker = if trace["fail_open"] == true {
            "FAIL-OPEN"
        } else {
            "failed closed"
        };
        line.push_str(&format!(" [{marker}: {cause}]"));
    }
    if let Some(reason) = trace["reason"].as_str() {
        line.push_str(&format!("; reason: {reason}"));
    }
    if let Some(id) = trace["webhook_id"].as_str() {
        line.push_str(&format!("; queued for delivery as webhook-id {id}"));
    }
    line.push('\n');
    line
}
