//! `hookbox hook AGENT`: answer one hook event of Claude Code, Gemini CLI, Codex, Cursor or
//! Copilot with the hookbox policy, and log the decision.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use hookbox_agent::sandbox_hooks_builder;
use hookbox_hooks::adapter::{self, Agent, PolicyFiles, Reply};
use hookbox_hooks::{
    Dispatcher, HookOutcome, HookSet, HostCommandRunner, ProjectCommandRunner, Runners,
};
use hookbox_runtime::Config;
use hookbox_store::{DecisionJournal, NewDecision, SqliteStore, Timestamp};

use crate::cli::{HookArgs, TrustArgs};

/// The trust store of project policy files, under `$HOOKBOX_HOME`.
const TRUST_STORE: &str = "trusted-policies.json";

/// The managed policy when hookbox.toml names none.
const MANAGED_POLICY: &str = "/etc/hookbox/policy.json";

pub(crate) fn run(args: &HookArgs) -> ExitCode {
    let started = Instant::now();
    let agent = Agent::from(args.agent);
    let (reply, decision) = answer(agent, args);
    let _ = std::io::stdout().write_all(reply.stdout.as_bytes());
    let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
    if let Some(mut decision) = decision {
        decision.latency = started.elapsed();
        if let Err(err) = record(args, &decision) {
            let _ = writeln!(
                std::io::stderr(),
                "hookbox hook {}: the decision was not logged: {err:#}",
                agent.name()
            );
        }
    }
    ExitCode::from(reply.exit_code)
}

/// A journal past this size is imported into the store by the `hookbox hook` that grew it (so
/// it stays small even when nobody runs `hookbox log`).
const JOURNAL_IMPORT_BYTES: u64 = 256 * 1024;

/// Logs `decision`: appended to the decision journal in `$HOOKBOX_HOME` (a few microseconds;
/// the store's decision log takes it at the next `hookbox log`, or here once the journal is
/// large), unless `[policy] keep_decisions = 0`.
fn record(args: &HookArgs, decision: &NewDecision) -> anyhow::Result<()> {
    let home = hookbox_env::Environments::default_home()?;
    let config = Config::read(args.config.as_deref(), &home)?;
    let keep = config.policy.keep_decisions();
    if keep == 0 {
        return Ok(());
    }
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let journal = DecisionJournal::in_dir(&home);
    let size = journal.append(Timestamp::now(), decision)?;
    if size > JOURNAL_IMPORT_BYTES {
        let path = home.join("hookbox.db");
        let store = SqliteStore::open_appender(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        journal.import(&store, keep)?;
    }
    Ok(())
}

/// Reads the event, loads the policy and decides; every failure becomes the agent's reply.
/// Also what the decision log keeps of it (nothing when the input could not be read at all).
fn answer(agent: Agent, args: &HookArgs) -> (Reply, Option<NewDecision>) {
    let mut stdin = Vec::new();
    let input = match std::io::stdin().read_to_end(&mut stdin) {
        Ok(_) => agent.translate(&stdin, args.event.as_deref()),
        Err(err) => Err(format!("cannot read the hook input: {err}")),
    };
    let cwd = input
        .as_ref()
        .ok()
        .and_then(|translated| translated.cwd())
        .map(PathBuf::from)
        .filter(|cwd| cwd.is_dir())
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    // The agent names its project (e.g. `CLAUDE_PROJECT_DIR`); else it is the working directory.
    let project = agent
        .project_variable()
        .and_then(std::env::var_os)
        .map_or_else(|| cwd.clone(), PathBuf::from);
    // Without its policy nothing can be let through that the policy would deny: block.
    let (hooks, untrusted) = match load_policy(args, &project) {
        Ok(loaded) => loaded,
        Err(err) => {
            let message = format!("{err:#}");
            let decision = input
                .as_ref()
                .ok()
                .map(|translated| translated.failed(agent, &message, true));
            return (agent.failure(&message, true), decision);
        }
    };
    let translated = match input {
        Ok(translated) => translated,
        Err(message) => return (agent.failure(&message, adapter::fails_closed(&hooks)), None),
    };
    // Warnings (e.g. a project group ignored because the managed policy defines it) are shown.
    let mut warnings: String = hooks
        .diagnostics()
        .iter()
        .map(|warning| format!("hookbox hook {}: {warning}\n", agent.name()))
        .collect();
    if let Some(project) = untrusted {
        warnings.push_str(&format!(
            "hookbox hook {}: {} is not trusted (new, or changed since it was trusted), so its \
             hooks do not run; review it, then run `hookbox trust {}`\n",
            agent.name(),
            project.display(),
            project.display()
        ));
    }
    let outcome = if translated.has_handlers(&hooks) {
        match decide(hooks, &translated, cwd, project) {
            Ok(outcome) => outcome,
            Err(err) => {
                let message = format!("{err:#}");
                let decision = translated.failed(agent, &message, true);
                return (agent.failure(&message, true), Some(decision));
            }
        }
    } else {
        HookOutcome::default()
    };
    let mut reply = agent.answer(&translated, &outcome);
    reply.stderr.insert_str(0, &warnings);
    (reply, Some(translated.decision(agent, &outcome)))
}

/// The policy for this call: `--policy FILE`, else the managed, user and (when trusted)
/// project files; also the project file left out as untrusted. A file that cannot be read or
/// has errors is an error (its broken handler might have been a gate).
fn load_policy(args: &HookArgs, project: &Path) -> anyhow::Result<(HookSet, Option<PathBuf>)> {
    let files = match &args.policy {
        Some(path) => PolicyFiles::Explicit(path.clone()),
        None => {
            let home = hookbox_env::Environments::default_home()?;
            let config = Config::read(args.config.as_deref(), &home)?;
            PolicyFiles::Layered {
                managed: config
                    .policy
                    .managed
                    .unwrap_or_else(|| PathBuf::from(MANAGED_POLICY)),
                user: home.join("policy.json"),
                project: project.join(".agents").join("hooks.json"),
                trust_store: home.join(TRUST_STORE),
            }
        }
    };
    let mut builder = sandbox_hooks_builder();
    let loaded = files.load(&mut builder)?;
    let hooks = builder.build();
    if hooks.has_errors() {
        let problems: Vec<String> = hooks
            .diagnostics()
            .iter()
            .map(ToString::to_string)
            .collect();
        anyhow::bail!("the policy has errors:\n{}", problems.join("\n"));
    }
    Ok((hooks, loaded.untrusted))
}

/// `hookbox trust FILE`: records the reviewed content of a project policy file as trusted.
pub(crate) fn trust(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let home = hookbox_env::Environments::default_home()?;
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let digest = adapter::trust(&home.join(TRUST_STORE), &args.file)?;
    crate::render::print_text(&format!(
        "trusted {} (sha256 {digest}); `hookbox hook` runs its hooks until it changes\n",
        args.file.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Runs the policy's handlers for `translated`: the owner's (managed, user, `--policy`) on this
/// host in `cwd`, the project's own in a read-only sandbox over `project` (the agent can write
/// that file and the scripts it names: nothing it wrote may run on the host).
fn decide(
    hooks: HookSet,
    translated: &adapter::Translated,
    cwd: PathBuf,
    project: PathBuf,
) -> anyhow::Result<HookOutcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let runners = Runners {
        command: Arc::new(ProjectCommandRunner {
            host: HostCommandRunner {
                cwd: Some(cwd.clone()),
                env: Vec::new(),
            },
            project,
        }),
        ..Runners::host(Some(cwd)).context("cannot build the HTTP client")?
    };
    let dispatcher = Dispatcher::new(Arc::new(hooks), runners);
    Ok(runtime.block_on(adapter::evaluate(&dispatcher, translated)))
}
