//! SDK mode (the Python agent SDKs' `cli_path`): the command line and `hookbox.toml` handed to
//! `hookbox-stream-json`, which speaks the protocol on stdin and stdout.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use hookbox_llm::Model;
use hookbox_stream_json::{AgentCatalog, Setup};

use crate::render;
use hookbox_runtime::Config;

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
    let home = hookbox_env::Environments::default_home().ok();
    let config = match &home {
        Some(home) => Config::read(args.config.as_deref(), home),
        None => match &args.config {
            Some(path) => Config::read(Some(path), Path::new("/nonexistent")),
            None => Ok(Config::default()),
        },
    };
    let agents = config.map(|config| Arc::new(ConfiguredAgents(config)) as Arc<dyn AgentCatalog>);
    let setup = Setup::new(args, home, agents);
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
    runtime.block_on(hookbox_stream_json::run(
        setup,
        tokio::io::stdin(),
        tokio::io::stdout(),
    ));
    // The stdin reader may still be blocked in a read; do not wait for it.
    runtime.shutdown_background();
    ExitCode::SUCCESS
}

/// `hookbox.toml`'s `[agents]` and `[sdk] default_agent`: the agents an SDK may select, each
/// checked and built by `hookbox-runtime` as every other interface does.
struct ConfiguredAgents(Config);

impl AgentCatalog for ConfiguredAgents {
    fn default_agent(&self) -> Option<String> {
        self.0.sdk.default_agent.clone()
    }

    fn agent_names(&self) -> Vec<String> {
        self.0.agents.keys().cloned().collect()
    }

    fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        self.0.model(name)
    }
}
