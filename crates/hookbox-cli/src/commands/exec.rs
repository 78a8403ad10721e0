//! `hookbox exec ENV_ID TOOL --args JSON`: one built-in tool call through the hooks.

use std::process::ExitCode;

use anyhow::{Context, bail};
use hookbox_agent::ToolCallReport;
use hookbox_env::Isolation;
use hookbox_runtime::{Config, Runtime};
use serde_json::{Value, json};

use crate::cli::ExecArgs;
use crate::{config, render};

pub(crate) fn run(args: &ExecArgs) -> anyhow::Result<ExitCode> {
    let tool_args: Value = serde_json::from_str(&args.args).context("--args is not valid JSON")?;
    if !tool_args.is_object() {
        bail!("--args must be a JSON object, got `{tool_args}`");
    }
    let isolation = if args.unsandboxed {
        render::print_error(
            "WARNING: --unsandboxed: code and command hooks run on this host, as this user, with \
             no isolation at all. Never use this with untrusted code or hooks.\n",
        );
        Isolation::Unsandboxed
    } else {
        hookbox_exec::check_isolation().context(
            "the sandbox cannot be created on this machine; hookbox refuses to run code \
             unisolated (--unsandboxed overrides this, at your own risk)",
        )?;
        Isolation::Sandboxed
    };
    let home = hookbox_env::Environments::default_home()?;
    let config = Config::read(args.config.as_deref(), &home)?;
    config::warn_if_loopback_hooks(&config);
    let runtime = Runtime::from_config(&config)?;
    super::env::warn_without_disk_budget();
    let environment = runtime.environments().get(&args.environment)?;
    let async_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let _entered = async_runtime.enter();
    let tools = runtime.sandbox_tools(&environment, isolation)?;
    let report = async_runtime.block_on(tools.call(&args.tool, tool_args, None))?;
    for diagnostic in &report.diagnostics {
        render::print_error(&format!("{diagnostic}\n"));
    }
    if args.json {
        render::print_json(&report_json(&report)?)?;
    } else {
        render::print_text(&text(&report))?;
    }
    Ok(ExitCode::from(match (report.denied, &report.error) {
        (true, _) => 2,
        (false, Some(_)) => 3,
        (false, None) => 0,
    }))
}

/// The report for machines (`--json`): the verdict, the tool's result or error, every hook run
/// (`trace`), the egress proxy's decisions (`network`, left out when there were none) and the
/// problems with the environment's hook files (`diagnostics`).
fn report_json(report: &ToolCallReport) -> serde_json::Result<Value> {
    let mut json = json!({
        "tool": report.tool,
        "denied": report.denied,
        "reason": report.reason,
        "result": report.result,
        "error": report.error,
        "trace": serde_json::to_value(&report.trace)?,
    });
    if !report.network.is_empty() {
        json["network"] = serde_json::to_value(&report.network)?;
    }
    json["diagnostics"] = serde_json::to_value(&report.diagnostics)?;
    Ok(json)
}

/// The report for people: verdict, result or error, then one line per hook run.
fn text(report: &ToolCallReport) -> String {
    let mut text = if report.denied {
        format!(
            "denied: {}\n",
            report
                .reason
                .as_deref()
                .unwrap_or("a pre_tool_execution hook denied the call")
        )
    } else {
        String::new()
    };
    if let Some(result) = &report.result {
        text.push_str(&format!("result: {result}\n"));
    }
    if let Some(error) = &report.error {
        text.push_str(&format!("error: {error}\n"));
    }
    for entry in &report.trace {
        text.push_str(&format!("hook {}\n", render::trace_line(entry)));
    }
    for decision in &report.network {
        text.push_str(&format!(
            "network {} {}:{} {}{}: {}\n",
            decision.method,
            decision.host,
            decision.port,
            if decision.allowed {
                "allowed"
            } else {
                "refused"
            },
            if decision.intercepted {
                " (intercepted)"
            } else {
                ""
            },
            decision.reason
        ));
    }
    text
}
