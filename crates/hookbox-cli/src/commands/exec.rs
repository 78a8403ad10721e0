//! `hookbox exec ENV_ID TOOL --args JSON`: one built-in tool call through the hooks.

use std::process::ExitCode;

use anyhow::{Context, bail};
use hookbox_agent::SandboxTools;
use hookbox_env::Isolation;
use serde_json::Value;

use crate::cli::ExecArgs;
use crate::commands::env::store;
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
    let file = config::read(args.config.as_deref(), &home)?;
    let hook_http = file.hook_client_options(Some(&home))?;
    let environment = store()?.get(&args.environment)?;
    let http = hookbox_hooks::HookClients::new(&hook_http)
        .context("cannot build the HTTP hooks' clients")?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let _entered = runtime.enter();
    // The sandbox's one way out (none for `network: "disabled"`).
    let proxy = hookbox_net::EgressProxy::new(file.network.egress_proxy_options()?)
        .context("cannot build the sandbox's egress proxy")?;
    let credentials = hook_http
        .credentials
        .as_ref()
        .map(hookbox_net::SharedCredentials::source);
    let tools = SandboxTools::with_hook_clients(environment, isolation, http)?
        .with_egress(proxy, credentials)?;
    let report = runtime.block_on(tools.call(&args.tool, tool_args, None))?;
    for diagnostic in &report.diagnostics {
        render::print_error(&format!("{diagnostic}\n"));
    }
    if args.json {
        render::print_json(&serde_json::to_value(&report)?)?;
    } else {
        render::print_text(&text(&report))?;
    }
    Ok(ExitCode::from(match (report.denied, &report.error) {
        (true, _) => 2,
        (false, Some(_)) => 3,
        (false, None) => 0,
    }))
}

/// The report for people: verdict, result or error, then one line per hook run.
fn text(report: &hookbox_agent::ToolCallReport) -> String {
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
