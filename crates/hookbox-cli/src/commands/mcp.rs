//! `hookbox mcp`: one environment's tools as an MCP server, over stdio or (with `--listen`)
//! streamable HTTP; the MCP wire is `hookbox_server::mcp`'s.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hookbox_env::{Environment, Environments, Isolation};
use hookbox_runtime::{AuditDeliverer, Config, Runtime};
use hookbox_server::mcp::{self, McpTools};
use hookbox_server::{ApiKeys, Auth, ServeOptions};
use hookbox_store::Resource;

use super::serve;
use crate::cli::McpArgs;
use crate::{config, render};

/// How long the server goes on delivering durable audit events once its client has gone:
/// events still unsent then wait in the outbox for the next process that delivers.
const AUDIT_DRAIN: Duration = Duration::from_secs(3);

pub(crate) fn run(args: &McpArgs) -> anyhow::Result<ExitCode> {
    serve::init_logging();
    if args.listen.is_none() && args.spec.as_deref() == Some(std::path::Path::new("-")) {
        anyhow::bail!(
            "--spec -: standard input is the MCP connection when serving on stdio; write the \
             spec to a file and pass its path (or serve with --listen ADDR)"
        );
    }
    hookbox_exec::check_isolation().context(
        "the sandbox cannot be created on this machine; `hookbox mcp` runs every tool call in \
         it and refuses to run code unisolated",
    )?;
    let home = Environments::default_home()?;
    let file = Config::read(args.config.as_deref(), &home)?;
    config::warn_if_loopback_hooks(&file);
    let options = serve::serve_options(&file)?;
    if args.listen.is_some() && !args.no_auth {
        serve::require_api_key(&home, "hookbox mcp --listen ADDR")?;
    }
    let runtime = Arc::new(Runtime::from_config(&file)?.for_serving()?);
    super::env::warn_without_disk_budget();
    let environment = environment(&runtime, &file, args)?;
    if args.listen.is_some() && !args.no_auth {
        give_to_owner(&runtime, environment.id(), args.owner.as_deref())?;
    }
    let async_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let served = async_runtime.block_on(async {
        let tools = McpTools::new(
            runtime.sandbox_tools(&environment, Isolation::Sandboxed)?,
            environment.id(),
        );
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let delivering = tokio::spawn(AuditDeliverer::new(Arc::clone(&runtime)).run_until(
            async {
                let _ = stopped.await;
            },
            AUDIT_DRAIN,
        ));
        let served = match &args.listen {
            None => tools
                .serve_stdio()
                .await
                .context("the MCP connection on stdio failed"),
            Some(listen) => serve_http(&runtime, tools, listen, args.no_auth, options).await,
        };
        let _ = stop.send(());
        let _ = delivering.await;
        if let Some(warm) = runtime.environments().warm_sandboxes() {
            warm.stop_all();
        }
        served
    });
    // The stdin reader may still be blocked in a read; do not wait for it.
    async_runtime.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// The environment `--env` names, or a new one from `--spec`, made as `hookbox env create`
/// makes it (with `file`'s `[network]`).
fn environment(runtime: &Runtime, file: &Config, args: &McpArgs) -> anyhow::Result<Environment> {
    let Some(spec) = &args.spec else {
        let id = args.env.as_deref().unwrap_or_default();
        return Ok(runtime.environments().get(id)?);
    };
    let spec = super::env::read_spec(spec)?;
    let created = super::env::create(&super::env::store_for(file)?, &spec)?;
    render::print_error(&format!(
        "hookbox mcp: created environment {} (serve it again with --env {0})\n",
        created.id()
    ));
    Ok(runtime.environments().get(created.id())?)
}

/// Makes sure environment `id` belongs to an API key, giving it to key `owner` (a name) if it
/// belongs to none; fails when it would then belong to no key or to another key than `owner`:
/// the server would refuse every request of `owner`'s.
fn give_to_owner(runtime: &Runtime, id: &str, owner: Option<&str>) -> anyhow::Result<()> {
    let store = runtime.store();
    let Some(name) = owner else {
        if store.owner(Resource::Environment, id)?.is_none() {
            anyhow::bail!(
                "environment {id} belongs to no API key, so no client could use it (the REST \
                 API hides it from every key too): pass --owner KEY_NAME to give it to the key \
                 its client uses (`hookbox api-keys list` shows the keys)"
            );
        }
        return Ok(());
    };
    let keys = ApiKeys::new(Arc::clone(store)).list()?;
    let Some(key) = keys.iter().find(|key| key.name == name) else {
        anyhow::bail!(
            "--owner {name}: no API key has that name; `hookbox api-keys list` shows the keys, \
             `hookbox api-keys create {name}` makes one"
        );
    };
    store.claim(Resource::Environment, id, &key.id)?;
    if store.owner(Resource::Environment, id)?.as_deref() != Some(key.id.as_str()) {
        anyhow::bail!(
            "--owner {name}: environment {id} belongs to another API key, the only one that may \
             use it (here as through the REST API); serve it without --owner, or serve an \
             environment of {name}'s"
        );
    }
    Ok(())
}

/// Serves `tools` over streamable HTTP on `listen` until SIGINT or SIGTERM.
async fn serve_http(
    runtime: &Runtime,
    tools: McpTools,
    listen: &str,
    no_auth: bool,
    options: ServeOptions,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("cannot listen on {listen}"))?;
    let address = listener
        .local_addr()
        .context("cannot read the bound address")?;
    let auth = if no_auth {
        serve::refuse_open_address(address)?;
        render::print_error(
            "WARNING: --no-auth: this MCP server accepts requests without an API key; any \
             local process can run code in the environment and read its files\n",
        );
        Auth::Disabled
    } else {
        Auth::ApiKeys
    };
    let signals = serve::stop_signals()?;
    let app = mcp::router(runtime, tools, auth);
    render::print_error(&format!(
        "hookbox mcp serving on http://{address}{}\n",
        mcp::MCP_PATH
    ));
    hookbox_server::serve_until_signals(listener, app, options, signals)
        .await
        .context("the MCP server stopped with an error")
}
