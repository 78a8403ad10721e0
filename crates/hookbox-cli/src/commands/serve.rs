//! `hookbox serve`: the REST API over HTTP until SIGINT or SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use hookbox_env::Environments;
use hookbox_runtime::{AuditDeliverer, Config, HomeLock, Runtime};
use hookbox_server::{ApiKeys, Auth, Limits, ServeOptions};

use crate::cli::ServeArgs;
use crate::config;
use crate::render;

/// Where `hookbox serve` listens unless told otherwise.
const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// The longest `[server] shutdown_timeout_secs` accepted: one day.
const MAX_SHUTDOWN_TIMEOUT_SECS: u64 = 24 * 60 * 60;

pub(crate) fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    init_logging();
    let home = Environments::default_home()?;
    let file = Config::read(args.config.as_deref(), &home)?;
    config::warn_if_loopback_hooks(&file);
    // Held until this process ends, before anything in the home is recovered or reset.
    let _home_lock = HomeLock::acquire(&file.home)?;
    let runtime = Arc::new(Runtime::from_config(&file)?.for_serving()?);
    let listen = args
        .listen
        .clone()
        .or(file.server.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let auth = if args.no_auth {
        Auth::Disabled
    } else {
        Auth::ApiKeys
    };
    let options = serve_options(&file)?;
    if !args.no_auth {
        require_api_key(&home, "hookbox serve")?;
    }
    super::env::warn_without_disk_budget();
    let app = hookbox_server::router(Arc::clone(&runtime), auth)
        .with_context(|| format!("cannot set up the server in {}", home.display()))?;
    let async_runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    async_runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|error| match (&args.listen, &file.server.listen) {
                (None, Some(_)) => anyhow::anyhow!(
                    "{}: [server] listen: cannot listen on {listen} ({error}); write a free \
                     address and port such as \"127.0.0.1:8080\"",
                    file.name()
                ),
                _ => anyhow::Error::new(error).context(format!("cannot listen on {listen}")),
            })?;
        let address = listener
            .local_addr()
            .context("cannot read the bound address")?;
        if args.no_auth {
            refuse_open_address(address)?;
            render::print_error(
                "WARNING: --no-auth: this server accepts requests without an API key; any \
                 local process can create environments, read their files and run agents\n",
            );
        }
        let signals = stop_signals()?;
        // Events a previous process left pending are picked up first.
        tokio::spawn(AuditDeliverer::new(Arc::clone(&runtime)).run());
        for (name, agent) in runtime.agents().iter() {
            tracing::info!(agent = name, model = agent.label, "serving agent");
        }
        render::print_error(&format!(
            "hookbox serving on http://{address} (home {})\n",
            home.display()
        ));
        let served = hookbox_server::serve_until_signals(listener, app, options, signals)
            .await
            .context("the server stopped with an error");
        if let Some(warm) = runtime.environments().warm_sandboxes() {
            warm.stop_all();
        }
        served
    })?;
    render::print_error("hookbox serve: stopped\n");
    Ok(ExitCode::SUCCESS)
}

/// Fails unless the key store in `home` holds at least one API key: without one, no client
/// could use the server `command` starts.
pub(crate) fn require_api_key(home: &std::path::Path, command: &str) -> anyhow::Result<()> {
    let keys = ApiKeys::open(home)
        .with_context(|| format!("cannot open the key store in {}", home.display()))?;
    if !keys.any()? {
        anyhow::bail!(
            "no API key exists, so no client could use this server: create one with `hookbox \
             api-keys create NAME` (and pass it as google-genai's `api_key=`, or an MCP client's \
             `Authorization: Bearer KEY` header), or run `{command} --no-auth` on a loopback \
             address for local experiments"
        );
    }
    Ok(())
}

/// Fails unless `address` is a loopback one: the only kind `--no-auth` may listen on.
pub(crate) fn refuse_open_address(address: std::net::SocketAddr) -> anyhow::Result<()> {
    if !address.ip().is_loopback() {
        anyhow::bail!(
            "--no-auth is allowed only on a loopback address (127.0.0.1, ::1), not {address}: \
             anyone who can reach it could drive the server; create a key with `hookbox \
             api-keys create NAME` instead"
        );
    }
    Ok(())
}

/// The connection limits and allowed hosts of `[server]` of `file`, defaults where unset.
pub(crate) fn serve_options(file: &Config) -> anyhow::Result<ServeOptions> {
    let server = &file.server;
    let at_least_one = |key: &str, unit: &str| {
        anyhow::anyhow!(
            "{}: [server] {key}: 0 is not allowed; write a whole number of {unit}, at least 1",
            file.name()
        )
    };
    let mut limits = Limits::default();
    for (value, field, slot) in [
        (
            server.max_connections,
            "max_connections",
            &mut limits.max_connections,
        ),
        (
            server.max_unauthenticated_per_peer,
            "max_unauthenticated_per_peer",
            &mut limits.max_unauthenticated_per_peer,
        ),
    ] {
        if let Some(cap) = value {
            if cap == 0 {
                return Err(at_least_one(field, "connections"));
            }
            *slot = cap;
        }
    }
    for (value, field, slot) in [
        (
            server.header_read_timeout_secs,
            "header_read_timeout_secs",
            &mut limits.header_read_timeout,
        ),
        (
            server.idle_timeout_secs,
            "idle_timeout_secs",
            &mut limits.idle_timeout,
        ),
    ] {
        if let Some(secs) = value {
            if secs == 0 {
                return Err(at_least_one(field, "seconds"));
            }
            *slot = std::time::Duration::from_secs(secs);
        }
    }
    let mut options = ServeOptions {
        limits,
        allowed_hosts: server.allowed_hosts.clone(),
        ..ServeOptions::default()
    };
    if let Some(secs) = server.shutdown_timeout_secs {
        if secs > MAX_SHUTDOWN_TIMEOUT_SECS {
            anyhow::bail!(
                "{}: [server] shutdown_timeout_secs: {secs} is out of range; write a whole \
                 number of seconds from 0 (cut short at once) to {MAX_SHUTDOWN_TIMEOUT_SECS} \
                 (one day)",
                file.name()
            );
        }
        options.shutdown_timeout = std::time::Duration::from_secs(secs);
    }
    Ok(options)
}

/// Logs (`tracing`) to stderr, `info` and up unless `RUST_LOG` says otherwise.
pub(crate) fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

/// Installs the SIGINT and SIGTERM handlers now (so a signal sent as soon as the address is
/// printed is not lost) and returns the stream of them: the first starts the server's drain,
/// the next cuts it short.
pub(crate) fn stop_signals() -> anyhow::Result<impl futures_util::Stream<Item = ()> + Send + 'static>
{
    use tokio::signal::unix::{SignalKind, signal};
    let interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    Ok(futures_util::stream::unfold(
        (interrupt, terminate, true),
        |(mut interrupt, mut terminate, first)| async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            render::print_error(if first {
                "hookbox: shutting down\n"
            } else {
                "hookbox: stopping now\n"
            });
            Some(((), (interrupt, terminate, false)))
        },
    ))
}
