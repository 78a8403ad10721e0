//! `hookbox hook AGENT`: answer one hook event of Claude Code, Gemini CLI, Codex, Cursor or
//! Copilot with the hookbox policy, and log the decision.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::Context;
use hookbox_agent::sandbox_hooks_builder;
use hookbox_hooks::adapter::{self, Agent, PolicyFiles, Reply, TrustStore, Untrusted};
use hookbox_hooks::{
    Dispatcher, HookOutcome, HookSet, HostCommandRunner, ProjectCommandRunner, ProjectView, Runners,
};
use hookbox_runtime::Config;
use hookbox_store::{DecisionJournal, NewDecision, SqliteStore, Timestamp};

use crate::cli::{HookArgs, TrustArgs};

/// The managed policy when hookbox.toml names none.
const MANAGED_POLICY: &str = "/etc/hookbox/policy.json";

/// One `hookbox hook` call: what the agent handed the process it started. The in-process path
/// takes it from this process; `hookbox daemon` from the thin client that the agent started.
#[derive(Debug)]
pub(crate) struct Call {
    /// The parsed command line, its relative paths resolved against `cwd`.
    pub(crate) args: HookArgs,
    /// The hook event's bytes, or why they could not be read.
    pub(crate) stdin: Result<Vec<u8>, String>,
    /// The caller's working directory.
    pub(crate) cwd: PathBuf,
    /// The caller's whole environment: the home, the agent's project variable, and what the
    /// policy's command hooks run with (its `HOOKBOX_HOME` the home `--home` pins, if any).
    pub(crate) env: Vec<(OsString, OsString)>,
    /// Why the caller's `HOOKBOX_HOME` was ignored, when it disagreed with `--home`.
    home_ignored: Option<String>,
    /// Whether the call's policy fails closed, once it is loaded (for an answer given before
    /// the call ends: [`deadline_reply`]).
    fails_closed: OnceLock<bool>,
    /// Set once the call was answered before it ended (at the daemon's deadline): that answer
    /// is its log entry, not the late outcome.
    overdue: OnceLock<()>,
}

impl Call {
    /// A call made of `args` and its caller's `stdin`, `cwd` and `env`.
    pub(crate) fn new(
        mut args: HookArgs,
        stdin: Result<Vec<u8>, String>,
        cwd: PathBuf,
        env: Vec<(OsString, OsString)>,
    ) -> Self {
        args.policy = args.policy.map(|path| cwd.join(path));
        args.config = args.config.map(|path| cwd.join(path));
        args.home = args.home.map(|path| cwd.join(path));
        let (env, home_ignored) = match &args.home {
            Some(home) => pin_home(env, home, Agent::from(args.agent)),
            None => (env, None),
        };
        Self {
            args,
            stdin,
            cwd,
            env,
            home_ignored,
            fails_closed: OnceLock::new(),
            overdue: OnceLock::new(),
        }
    }

    /// The caller's variable `name`.
    fn var(&self, name: &str) -> Option<OsString> {
        self.env
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
    }

    /// The caller's `$HOOKBOX_HOME` (or its default) and its `hookbox.toml`, read once per
    /// call: for the policy files and for the decision log.
    fn settings(&self) -> anyhow::Result<Settings> {
        let home = hookbox_env::Environments::home_in(|name| self.var(name))?;
        let config = Config::read(self.args.config.as_deref(), &home)?;
        Ok(Settings { home, config })
    }
}

/// `env` with `HOOKBOX_HOME` set to `home`, the home `--home` pins, and the warning when
/// `env` named another one: the agent's environment can come from a project's settings (a
/// Claude Code `env`, a Gemini CLI `.env`), which must not choose the policy.
fn pin_home(
    mut env: Vec<(OsString, OsString)>,
    home: &Path,
    agent: Agent,
) -> (Vec<(OsString, OsString)>, Option<String>) {
    let theirs = env
        .iter()
        .find(|(name, value)| name == "HOOKBOX_HOME" && !value.is_empty())
        .map(|(_, value)| PathBuf::from(value));
    let same = |theirs: &Path| {
        theirs == home
            || std::fs::canonicalize(theirs)
                .is_ok_and(|theirs| std::fs::canonicalize(home).is_ok_and(|home| home == theirs))
    };
    let warning = theirs.filter(|theirs| !same(theirs)).map(|theirs| {
        format!(
            "hookbox hook {}: HOOKBOX_HOME is {} in the agent's environment (a project's \
             settings can set it), but this hook is pinned to --home {}; ignored: the policy \
             of {} applies. `hookbox doctor {}` shows where it is set",
            agent.name(),
            theirs.display(),
            home.display(),
            home.display(),
            agent.name()
        )
    });
    env.retain(|(name, _)| name != "HOOKBOX_HOME");
    env.push(("HOOKBOX_HOME".into(), home.into()));
    (env, warning)
}

/// A call's home and configuration (see [`Call::settings`]).
struct Settings {
    /// `$HOOKBOX_HOME`.
    home: PathBuf,
    /// Its `hookbox.toml` (or `--config`).
    config: Config,
}

/// The settings of a call, or why they could not be read (each user of them reports it).
type SettingsRead<'a> = Result<&'a Settings, &'a anyhow::Error>;

/// The settings read, or their error as the caller's own.
fn settings_of(read: SettingsRead<'_>) -> anyhow::Result<&Settings> {
    read.map_err(|err| anyhow::anyhow!("{err:#}"))
}

/// A loaded policy: its hooks, the project file left out as untrusted, and where a trusted
/// project's hooks run.
#[derive(Debug, Clone)]
pub(crate) struct LoadedPolicy {
    /// The hooks of every file loaded.
    pub(crate) hooks: Arc<HookSet>,
    /// The project file that exists but is not trusted (so not loaded), and why.
    pub(crate) untrusted: Option<Untrusted>,
    /// What a trusted project's hooks see: the snapshot of its trusted files at its root.
    pub(crate) view: Option<ProjectView>,
}

/// What a call's policy is loaded and run with: built for the one call in-process
/// ([`InProcess`]), kept warm across calls by `hookbox daemon`.
pub(crate) trait Engine {
    /// The policy in `files`, as they are now (`fail_closed`: see [`load_policy_files`]).
    fn policy(&self, files: &PolicyFiles, fail_closed: bool) -> anyhow::Result<LoadedPolicy>;
    /// Runs `hooks` for `translated`, command hooks as `command` runs them (or faster, with
    /// the same outcome).
    fn evaluate(
        &self,
        hooks: Arc<HookSet>,
        command: ProjectCommandRunner,
        translated: &adapter::Translated,
    ) -> anyhow::Result<HookOutcome>;
}

/// The engine of a `hookbox hook` that answers its one call itself: the policy read and the
/// async runtime and HTTP client built for that call (and only when a handler matches).
pub(crate) struct InProcess;

impl Engine for InProcess {
    fn policy(&self, files: &PolicyFiles, fail_closed: bool) -> anyhow::Result<LoadedPolicy> {
        load_policy_files(files, fail_closed)
    }

    fn evaluate(
        &self,
        hooks: Arc<HookSet>,
        command: ProjectCommandRunner,
        translated: &adapter::Translated,
    ) -> anyhow::Result<HookOutcome> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let runners = Runners {
            command: Arc::new(command),
            ..Runners::host(None).context("cannot build the HTTP client")?
        };
        let dispatcher = Dispatcher::new(hooks, runners);
        Ok(runtime.block_on(adapter::evaluate(&dispatcher, translated)))
    }
}

/// `hookbox hook AGENT` answered in this process: `stdin` is the event when the thin client
/// already read it; `daemon_failed` says how the daemon failed after it was handed the call
/// (then the answer is the policy's failure answer, never an allow the policy would not give).
pub(crate) fn run(
    args: HookArgs,
    stdin: Option<Result<Vec<u8>, String>>,
    daemon_failed: Option<&str>,
) -> ExitCode {
    let stdin = match stdin {
        Some(read) => read,
        None => {
            let mut bytes = Vec::new();
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map(|_| bytes)
                .map_err(|err| format!("cannot read the hook input: {err}"))
        }
    };
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    let call = Call::new(args, stdin, cwd, std::env::vars_os().collect());
    let reply = match daemon_failed {
        Some(message) => respond_failed(&call, message),
        None => respond(&call, &InProcess),
    };
    let _ = std::io::stdout().write_all(reply.stdout.as_bytes());
    let _ = std::io::stderr().write_all(reply.stderr.as_bytes());
    ExitCode::from(reply.exit_code)
}

/// Answers `call` with `engine` and logs the decision (a logging problem is added to stderr).
pub(crate) fn respond(call: &Call, engine: &dyn Engine) -> Reply {
    let started = Instant::now();
    let settings = call.settings();
    let (reply, decision) = answer(call, settings.as_ref(), engine);
    // Answered at its deadline already, and logged as the agent got it.
    let decision = decision.filter(|_| call.overdue.get().is_none());
    logged(call, settings.as_ref(), reply, decision, started)
}

/// `reply`, after `decision` (if any) was logged with its latency since `started`.
fn logged(
    call: &Call,
    settings: SettingsRead<'_>,
    mut reply: Reply,
    decision: Option<NewDecision>,
    started: Instant,
) -> Reply {
    if let Some(mut decision) = decision {
        decision.latency = started.elapsed();
        if let Err(err) = settings_of(settings).and_then(|settings| record(settings, &decision)) {
            reply.stderr.push_str(&format!(
                "hookbox hook {}: the decision was not logged: {err:#}\n",
                Agent::from(call.args.agent).name()
            ));
        }
    }
    reply
}

/// The answer when the daemon failed after it was handed `call` (`message` says how): the
/// agent's blocking failure when the policy fails closed anywhere (or cannot be read) or the
/// event cannot be read, its non-blocking one otherwise.
fn respond_failed(call: &Call, message: &str) -> Reply {
    let started = Instant::now();
    let settings = call.settings();
    let agent = Agent::from(call.args.agent);
    let translated = call
        .stdin
        .as_ref()
        .ok()
        .and_then(|stdin| agent.translate(stdin, call.args.event.as_deref()).ok());
    let cwd = working_dir(call, translated.as_ref());
    let deny = translated.is_none()
        || locate_policy(call, settings.as_ref(), &cwd)
            .and_then(|files| load_policy_files(&files, call.args.fail_closed))
            .map_or(true, |policy| {
                let lapsed = policy.untrusted.and_then(|untrusted| untrusted.lapsed);
                adapter::fails_closed(&policy.hooks)
                    || lapsed.is_some_and(|lapsed| lapsed.fails_closed || call.args.fail_closed)
            });
    let decision = translated.map(|translated| translated.failed(agent, message, deny));
    let reply = agent.failure(message, deny);
    logged(call, settings.as_ref(), reply, decision, started)
}

/// The answer to `call` given before it ended (`message` says why; `started` when it came in),
/// logged: the agent's blocking failure unless the event was read and the call's policy was
/// loaded and fails open (the policy is not read again: that may be what hangs).
pub(crate) fn deadline_reply(call: &Call, message: &str, started: Instant) -> Reply {
    let _ = call.overdue.set(());
    let agent = Agent::from(call.args.agent);
    let translated = call
        .stdin
        .as_ref()
        .ok()
        .and_then(|stdin| agent.translate(stdin, call.args.event.as_deref()).ok());
    let deny = translated.is_none() || call.fails_closed.get().copied().unwrap_or(true);
    let decision = translated.map(|translated| translated.failed(agent, message, deny));
    let settings = call.settings();
    logged(
        call,
        settings.as_ref(),
        agent.failure(message, deny),
        decision,
        started,
    )
}

/// A journal past this size is imported into the store by the `hookbox hook` that grew it (so
/// it stays small even when nobody runs `hookbox log`).
const JOURNAL_IMPORT_BYTES: u64 = 256 * 1024;

/// Logs `decision`: appended to the decision journal in `$HOOKBOX_HOME` (a few microseconds;
/// the store's decision log takes it at the next `hookbox log`, or here once the journal is
/// large), unless `[policy] keep_decisions = 0`.
fn record(settings: &Settings, decision: &NewDecision) -> anyhow::Result<()> {
    let Settings { home, config } = settings;
    let keep = config.policy.keep_decisions();
    if keep == 0 {
        return Ok(());
    }
    std::fs::create_dir_all(home).with_context(|| format!("cannot create {}", home.display()))?;
    let journal = DecisionJournal::in_dir(home);
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
fn answer(
    call: &Call,
    settings: SettingsRead<'_>,
    engine: &dyn Engine,
) -> (Reply, Option<NewDecision>) {
    let agent = Agent::from(call.args.agent);
    let input = match &call.stdin {
        Ok(stdin) => agent.translate(stdin, call.args.event.as_deref()),
        Err(message) => Err(message.clone()),
    };
    let cwd = working_dir(call, input.as_ref().ok());
    // Without its policy nothing can be let through that the policy would deny: block.
    let loaded = locate_policy(call, settings, &cwd)
        .and_then(|files| engine.policy(&files, call.args.fail_closed));
    let LoadedPolicy {
        hooks,
        untrusted,
        view,
    } = match loaded {
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
    // A trusted project whose trust lapsed has its gates off: the policy in force fails as
    // for a failing gate (closed under `--fail-closed` or the trusted `on_error: deny`).
    let lapse = untrusted.as_ref().and_then(|untrusted| {
        let lapsed = untrusted.lapsed?;
        let message = format!(
            "the trusted project's gates are off: {}",
            untrusted_message(untrusted, call.var("HOOKBOX_HOME").as_deref())
        );
        Some((message, call.args.fail_closed || lapsed.fails_closed))
    });
    // The root of a project whose policy applies: trusted, or whose trust lapsed.
    let project_root = view.as_ref().map(|view| view.root.clone()).or_else(|| {
        let untrusted = untrusted
            .as_ref()
            .filter(|untrusted| untrusted.lapsed.is_some())?;
        Some(untrusted.policy.parent()?.parent()?.to_path_buf())
    });
    let fails_closed =
        adapter::fails_closed(&hooks) || lapse.as_ref().is_some_and(|(_, deny)| *deny);
    let _ = call.fails_closed.set(fails_closed);
    let translated = match input {
        Ok(translated) => translated,
        Err(message) => return (agent.failure(&unreadable(&message), true), None),
    };
    if let Some((message, true)) = &lapse {
        let decision = translated.failed(agent, message, true);
        return (agent.failure(message, true), Some(decision));
    }
    // Warnings (e.g. a project group ignored because the managed policy defines it) are shown.
    let mut warnings: String = hooks
        .diagnostics()
        .iter()
        .map(|warning| format!("hookbox hook {}: {warning}\n", agent.name()))
        .collect();
    if let Some(untrusted) = untrusted.filter(|_| lapse.is_none()) {
        warnings.push_str(&format!(
            "hookbox hook {}: {}\n",
            agent.name(),
            untrusted_message(&untrusted, call.var("HOOKBOX_HOME").as_deref())
        ));
    }
    let outcome = if translated.has_handlers(&hooks) {
        // The owner's hooks (managed, user, `--policy`) run on this host in `cwd` with the
        // caller's environment, the project's own in a read-only sandbox that shows the
        // snapshot of its trusted files at the project's path (the agent can write the
        // project: nothing it wrote may run, be imported or be read by them).
        let command = ProjectCommandRunner {
            host: HostCommandRunner {
                cwd: Some(cwd),
                env: call.env.clone(),
                env_clear: true,
            },
            project: view,
        };
        match engine.evaluate(hooks, command, &translated) {
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
    let mut outcome = outcome;
    // Said where the agent's user sees it, as a gate that failed open is.
    let exposed = settings.ok().and_then(|settings| {
        let root = project_root.as_deref()?;
        let warning = TrustStore::in_home(&settings.home).exposed_to(root)?;
        Some(format!("hookbox hook {}: {warning}", agent.name()))
    });
    let shown = [
        exposed,
        lapse
            .as_ref()
            .map(|(message, _)| format!("hookbox: {message} (not gated)")),
        call.home_ignored.clone(),
    ];
    for message in shown.into_iter().flatten() {
        warnings.push_str(&message);
        warnings.push('\n');
        if matches!(agent, Agent::ClaudeCode | Agent::Codex | Agent::GeminiCli) {
            outcome.system_message = Some(match outcome.system_message.take() {
                Some(theirs) => format!("{theirs}\n{message}"),
                None => message,
            });
        }
    }
    let mut reply = agent.answer(&translated, &outcome);
    reply.stderr.insert_str(0, &warnings);
    let mut decision = translated.decision(agent, &outcome);
    if let Some((message, _)) = lapse {
        // Logged as the gate that failed open, never hidden behind `none`.
        decision.reason = Some(match decision.reason.take() {
            Some(reason) if decision.decision != "none" => format!("{reason} (and {message})"),
            _ => message,
        });
        if decision.decision == "none" {
            decision.decision = "fail-open".to_owned();
        }
    }
    (reply, Some(decision))
}

/// Why an event that cannot be read is denied whatever the policy's `on_error` says: the
/// model shapes tool arguments (nesting them past what a JSON reader accepts, say), so an
/// unreadable event answered as a failing gate would let it make any call unjudged.
fn unreadable(message: &str) -> String {
    format!(
        "{message}; no gate could judge this event, and its tool arguments are the model's, so \
         it is denied whatever the policy's on_error says"
    )
}

/// Where `call`'s command hooks run: the working directory the agent reported in `translated`
/// when it is one, else the caller's.
fn working_dir(call: &Call, translated: Option<&adapter::Translated>) -> PathBuf {
    translated
        .and_then(adapter::Translated::cwd)
        .map(PathBuf::from)
        .filter(|cwd| cwd.is_dir())
        .unwrap_or_else(|| call.cwd.clone())
}

/// The policy files of `call`: `--policy FILE`, else the managed, user and project files, the
/// project being the directory the agent names (e.g. `CLAUDE_PROJECT_DIR`), else the project
/// `cwd` is in (see [`TrustStore::project_of`]).
fn locate_policy(
    call: &Call,
    settings: SettingsRead<'_>,
    cwd: &Path,
) -> anyhow::Result<PolicyFiles> {
    let files = match &call.args.policy {
        Some(path) => PolicyFiles::Explicit(path.clone()),
        None => {
            let Settings { home, config } = settings_of(settings)?;
            let project = Agent::from(call.args.agent)
                .project_variable()
                .and_then(|name| call.var(name))
                .map_or_else(|| TrustStore::in_home(home).project_of(cwd), PathBuf::from);
            layered_files(home, config, &project)
        }
    };
    Ok(files)
}

/// The managed, user and (when trusted) `project`'s policy files of `home` and its `config`.
pub(crate) fn layered_files(home: &Path, config: &Config, project: &Path) -> PolicyFiles {
    PolicyFiles::Layered {
        managed: config
            .policy
            .managed
            .clone()
            .unwrap_or_else(|| PathBuf::from(MANAGED_POLICY)),
        user: home.join("policy.json"),
        project: project.join(adapter::PROJECT_POLICY),
        trust_store: TrustStore::in_home(home),
    }
}

/// Loads `files`. A file that cannot be read or has errors is an error (its broken handler
/// might have been a gate). `fail_closed` (`--fail-closed`): a failing handler denies unless
/// it or its file says `"on_error": "allow"`.
pub(crate) fn load_policy_files(
    files: &PolicyFiles,
    fail_closed: bool,
) -> anyhow::Result<LoadedPolicy> {
    let mut builder = sandbox_hooks_builder();
    builder.answers_agents();
    if fail_closed {
        builder.fails_closed();
    }
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
    Ok(LoadedPolicy {
        hooks: Arc::new(hooks),
        untrusted: loaded.untrusted,
        view: loaded.view,
    })
}

/// `hookbox trust FILE`: records the reviewed content of a project's policy and of every file
/// its hooks name as trusted for that project, and snapshots them.
pub(crate) fn trust(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let home = hookbox_env::Environments::default_home()?;
    std::fs::create_dir_all(&home).with_context(|| format!("cannot create {}", home.display()))?;
    let store = TrustStore::in_home(&home);
    let recorded = store.trust(&args.file)?;
    if let Some(warning) = store.exposed_to(&recorded.root) {
        let _ = writeln!(std::io::stderr(), "hookbox trust: warning: {warning}");
    }
    let files: Vec<String> = recorded
        .files
        .iter()
        .map(|file| format!("  {}\n", file.display()))
        .collect();
    crate::render::print_text(&format!(
        "trusted for the project {} (sha256 {}):\n{}`hookbox hook` runs its hooks from the \
         snapshot {} until one of these files changes\n",
        recorded.root.display(),
        recorded.closure,
        files.concat(),
        recorded.snapshot.display()
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// What the user is told about `untrusted`: why, and the command that trusts it.
pub(crate) fn untrusted_message(untrusted: &Untrusted, home: Option<&std::ffi::OsStr>) -> String {
    format!(
        "{untrusted}, so its hooks do not run; review it and the files its hooks run, then run \
         `{}`",
        trust_command(untrusted, home)
    )
}

/// The exact command that trusts `untrusted` (with `home` as `HOOKBOX_HOME` when given).
pub(crate) fn trust_command(untrusted: &Untrusted, home: Option<&std::ffi::OsStr>) -> String {
    let home = home
        .filter(|home| !home.is_empty())
        .map(|home| {
            format!(
                "HOOKBOX_HOME={} ",
                crate::commands::install::shell_quote(&home.to_string_lossy())
            )
        })
        .unwrap_or_default();
    format!(
        "{home}hookbox trust {}",
        crate::commands::install::shell_quote(&untrusted.policy.display().to_string())
    )
}
