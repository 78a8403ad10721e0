//! SDK mode (the Python agent SDKs' `cli_path`): the command line and the runtime of
//! `hookbox.toml` handed to `hookbox-stream-json`, which speaks the protocol on stdin and
//! stdout.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use hookbox_env::WarmSandboxes;
use hookbox_hooks::{HttpRunner, OutboxSink};
use hookbox_llm::Model;
use hookbox_net::GuardedClient;
use hookbox_runtime::{AuditDeliverer, Config, Runtime};
use hookbox_stream_json::{RunEnd, SessionHost, SessionNetwork, Setup};

use crate::render;

/// How long a session's process goes on delivering its durable audit events after the SDK
/// closed its input: events still unsent then wait in the outbox for the next process that
/// delivers (`hookbox serve`, another session).
const AUDIT_DRAIN: Duration = Duration::from_secs(3);

/// Answers the cortex SDK's version probe (`-v`): `x.y.z` on stdout, stdin never read.
pub(crate) fn print_version() -> ExitCode {
    match render::print_text(&format!("{}\n", env!("CARGO_PKG_VERSION"))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}

/// Runs one SDK session with the command line `args` (without the program name).
pub(crate) fn run(args: &[String]) -> ExitCode {
    // Logs (`tracing`) go to stderr, `warn` and up unless `RUST_LOG` says otherwise.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let args = hookbox_stream_json::parse_args(args);
    let home = hookbox_env::Environments::default_home();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            render::print_error(&format!("hookbox: cannot start the async runtime: {err}\n"));
            return ExitCode::from(1);
        }
    };
    let built = home
        .as_deref()
        .map_err(|err| anyhow::anyhow!("{err}"))
        .and_then(|home| Config::read(args.config.as_deref(), home))
        .and_then(|config| {
            crate::config::warn_if_loopback_hooks(&config);
            let warm =
                WarmSandboxes::new(hookbox_exec::supervisor_program(), config.idle_timeout()?);
            Ok((Arc::new(Runtime::from_config(&config)?), warm))
        });
    let deliverer = built.as_ref().ok().map(|(runtime, _)| Arc::clone(runtime));
    let host =
        built.map(|(runtime, warm)| Arc::new(RuntimeHost(runtime, warm)) as Arc<dyn SessionHost>);
    let setup = Setup::new(args, hookbox_stream_json::config_dir(), host);
    let end = runtime.block_on(async {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let delivering = deliverer.map(|runtime| {
            tokio::spawn(AuditDeliverer::new(runtime).run_until(
                async {
                    let _ = stopped.await;
                },
                AUDIT_DRAIN,
            ))
        });
        let end = hookbox_stream_json::run(setup, tokio::io::stdin(), tokio::io::stdout()).await;
        let _ = stop.send(());
        if let Some(delivering) = delivering {
            let _ = delivering.await;
        }
        end
    });
    // The stdin reader may still be blocked in a read; do not wait for it.
    runtime.shutdown_background();
    match end {
        RunEnd::Clean => ExitCode::SUCCESS,
        RunEnd::AfterErrorResult => ExitCode::from(1),
    }
}

/// What the runtime of `hookbox.toml` gives SDK sessions: its `[agents]` (each checked and
/// built as every other interface does) and `[sdk] default_agent`, its HTTP hook clients,
/// its audit outbox, its HTTP hook client (the owner's) for `http` MCP servers, `[sdk]
/// allowed_domains` / `denied_domains` with its egress proxy, and
/// warm sandboxes for `Bash` (this binary as their supervisor, idle after `[sandbox]
/// idle_timeout_secs`).
struct RuntimeHost(Arc<Runtime>, WarmSandboxes);

impl SessionHost for RuntimeHost {
    fn default_agent(&self) -> Option<String> {
        self.0.config().sdk.default_agent.clone()
    }

    fn agent_names(&self) -> Vec<String> {
        self.0
            .agents()
            .iter()
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        self.0.agents().model(name)
    }

    fn http_hooks(&self) -> Option<Arc<dyn HttpRunner>> {
        Some(self.0.session_http_hooks())
    }

    fn outbox(&self) -> Option<Arc<dyn OutboxSink>> {
        Some(self.0.outbox())
    }

    fn warm_sandboxes(&self) -> Option<WarmSandboxes> {
        Some(self.1.clone())
    }

    fn mcp_http(&self) -> Option<GuardedClient> {
        Some(self.0.hook_clients().owner.clone())
    }

    fn network(&self) -> Option<SessionNetwork> {
        let domains = self.0.sdk_domains().clone();
        Some(SessionNetwork {
            proxy: self.0.egress_proxy().clone(),
            allowed: domains.allowed,
            denied: domains.denied,
        })
    }
}
