//! `hookbox env …`: create, list, show and delete environments.

use std::io::{IsTerminal, Read};
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context;
use hookbox_agent::OwnerHookFiles;
use hookbox_env::{EnvironmentSpec, Environments, Progress, ProgressReport, WarmStatus};
use hookbox_runtime::Config;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

use crate::cli::EnvCommand;
use crate::render;

/// The environment store under `$HOOKBOX_HOME` (or the XDG data directory), fetching `gs://`
/// sources and cloning repositories under hookbox.toml's `[network]` settings (local
/// repositories only with `allow_host_sources`), new environments getting its `[sandbox]` disk
/// budget.
pub(crate) fn store() -> anyhow::Result<Environments> {
    let home = Environments::default_home()?;
    let store = store_for(&Config::read(None, &home)?)?;
    warn_without_disk_budget();
    Ok(store)
}

/// The environment store of `file`'s home, as [`store`] makes it.
pub(crate) fn store_for(file: &Config) -> anyhow::Result<Environments> {
    let home = &file.home;
    let network = file.hook_client_options()?;
    let store = Environments::open_with_network(home, &network)
        .with_context(|| format!("cannot open the environments in {}", home.display()))?
        .with_host_sources(file.network.allow_host_sources)
        .with_disk_budget(file.disk_budget()?)
        .with_disk_reserve(file.disk_reserve())
        .with_hook_file_check(Arc::new(OwnerHookFiles));
    Ok(match terminal_progress() {
        Some(report) => store.with_progress(report),
        None => store,
    })
}

/// Says loudly that environments get no disk budget, when this process cannot mount their
/// file systems.
pub(crate) fn warn_without_disk_budget() {
    if !hookbox_exec::disk::can_mount() {
        render::print_error(
            "WARNING: hookbox cannot mount file systems here (it needs root and \
             /dev/loop-control): new environments get NO disk budget, and code in them can fill \
             the disk that holds the hookbox home.\n",
        );
    }
}

pub(crate) fn run(command: &EnvCommand) -> anyhow::Result<ExitCode> {
    let environments = store()?;
    match command {
        EnvCommand::Create { spec, json } => apply(&environments, read_spec(spec)?, *json)?,
        EnvCommand::Update { id, spec, json } => {
            let mut spec = read_spec(spec)?;
            spec.environment_id = Some(id.clone());
            apply(&environments, spec, *json)?;
        }
        EnvCommand::List { json } => {
            let all = environments.list()?;
            let warm = environments.warm_status();
            let sandbox = |environment: &hookbox_env::Environment| {
                warm.iter()
                    .find(|status| status.environment_id == environment.id())
            };
            if *json {
                let all: Vec<Value> = all
                    .iter()
                    .map(|environment| {
                        let mut value = environment.to_json();
                        value["sandbox"] = sandbox_json(sandbox(environment));
                        value
                    })
                    .collect();
                render::print_json(&Value::Array(all))?;
            } else {
                let lines: String = all
                    .iter()
                    .map(|environment| {
                        format!(
                            "{}  created {}  {} sources  sandbox {}\n",
                            environment.id(),
                            environment.created(),
                            environment.sources().len(),
                            sandbox_text(sandbox(environment))
                        )
                    })
                    .collect();
                render::print_text(&lines)?;
            }
        }
        EnvCommand::Show { id } => render::print_json(&environments.describe(id)?.to_json())?,
        EnvCommand::Rm { id } => {
            environments.delete(id)?;
            render::print_text(&format!("deleted {id}\n"))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `env list --json`'s `sandbox` of an environment: `{"warm": false}`, or `{"warm": true,
/// "age_secs", "memory_bytes" (null when unreadable), "supervisor_pid"}`.
fn sandbox_json(warm: Option<&WarmStatus>) -> Value {
    match warm {
        None => json!({"warm": false}),
        Some(status) => json!({
            "warm": true,
            "age_secs": age(status).as_secs(),
            "memory_bytes": status.memory_bytes,
            "supervisor_pid": status.supervisor_pid,
        }),
    }
}

/// `env list`'s sandbox column: `cold`, or `warm 42s 1.5 MiB` (`? MiB` when unreadable).
fn sandbox_text(warm: Option<&WarmStatus>) -> String {
    match warm {
        None => "cold".to_owned(),
        Some(status) => {
            let memory = status.memory_bytes.map_or_else(
                || "?".to_owned(),
                |bytes| format!("{:.1}", bytes as f64 / (1024.0 * 1024.0)),
            );
            format!("warm {}s {memory} MiB", age(status).as_secs())
        }
    }
}

/// How long ago a warm sandbox was built (zero if the clock went back).
fn age(status: &WarmStatus) -> Duration {
    std::time::SystemTime::now()
        .duration_since(status.started)
        .unwrap_or_default()
}

/// Creates the environment `spec` describes, or updates the one it names, and prints it.
fn apply(environments: &Environments, spec: EnvironmentSpec, json: bool) -> anyhow::Result<()> {
    let environment = create(environments, &spec)?;
    if json {
        render::print_json(&environment.to_json())
    } else {
        Ok(render::print_text(&format!("{}\n", environment.id()))?)
    }
}

/// Creates the environment `spec` describes in `environments` (or updates the one it names).
pub(crate) fn create(
    environments: &Environments,
    spec: &EnvironmentSpec,
) -> anyhow::Result<hookbox_env::Environment> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok(runtime.block_on(environments.apply(spec))?)
}

/// Shows the progress of repository clones (a spinner) and bucket copies (a bar of objects) on
/// standard error, when it is a terminal; `None` otherwise (nothing is drawn).
fn terminal_progress() -> Option<ProgressReport> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let current: Mutex<Option<ProgressBar>> = Mutex::new(None);
    Some(Arc::new(move |progress: &Progress| {
        let mut current = current.lock().unwrap_or_else(PoisonError::into_inner);
        match progress {
            Progress::CloneStarted { .. } => {
                let spinner = ProgressBar::new_spinner().with_message(progress.to_string());
                spinner.enable_steady_tick(Duration::from_millis(120));
                *current = Some(spinner);
            }
            Progress::CopyStarted { objects, .. } => {
                let style = ProgressStyle::with_template("{msg}\n[{bar:40}] {pos}/{len} objects")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
                *current = Some(
                    ProgressBar::new(u64::try_from(*objects).unwrap_or(u64::MAX))
                        .with_style(style)
                        .with_message(progress.to_string()),
                );
            }
            Progress::Copied { copied, .. } => {
                if let Some(bar) = &*current {
                    bar.set_position(u64::try_from(*copied).unwrap_or(u64::MAX));
                }
            }
            Progress::CloneFinished { .. } | Progress::CopyFinished { .. } => {
                if let Some(bar) = current.take() {
                    bar.finish_and_clear();
                }
            }
        }
    }))
}

/// Reads and validates a spec from `path` (`-` is standard input).
pub(crate) fn read_spec(path: &Path) -> anyhow::Result<EnvironmentSpec> {
    let mut text = String::new();
    if path == Path::new("-") {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the spec from standard input")?;
    } else {
        text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
    }
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON", path.display()))?;
    Ok(EnvironmentSpec::from_json(&value)?)
}
