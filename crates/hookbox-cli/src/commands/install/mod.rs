//! `hookbox install AGENT`: writes (or merges into) an agent's hook file so that every event
//! `hookbox hook AGENT` answers (mapped or passed through) runs it (as `hookbox-hook AGENT`, the
//! thin client, when it is installed next to hookbox); `--uninstall` undoes that, `--list`
//! shows what is installed where; `hookbox doctor` ([`doctor`]) what the agent will run.

pub(crate) mod doctor;
mod document;
mod files;
mod narrowing;
mod sources;
mod target;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};
use hookbox_hooks::adapter::{Agent, PolicyFiles};
use hookbox_hooks::startable::{StartContext, start_problems};

use self::document::Document;
use self::files::{Record, Records};
pub(crate) use self::target::Scope;
pub(crate) use self::target::shell_quote;
use self::target::{config_path, events, layout, location};
use crate::cli::InstallArgs;

/// The thin client installed next to `hookbox`, which the agents' hook files run when present.
const THIN_CLIENT: &str = "hookbox-hook";

pub(crate) fn run(args: &InstallArgs) -> anyhow::Result<ExitCode> {
    let home = hookbox_env::Environments::default_home()?;
    let mut records = Records::read(&home)?;
    let text = match (args.list, args.agent) {
        (true, _) => list(args.project.as_deref(), &records)?,
        (false, None) => bail!("name the agent: hookbox install AGENT (or --list)"),
        (false, Some(agent)) => {
            let file = Target::of(Agent::from(agent), args)?;
            file.check_no_links()?;
            if args.uninstall {
                uninstall(&file, &mut records)?
            } else {
                let warnings = vet_policy(&file, args, &home)?;
                warnings + &install(&file, args, &home, &mut records)? + &merged(&file)?
            }
        }
    };
    crate::render::print_text(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// One agent's hook file.
struct Target {
    /// The agent.
    agent: Agent,
    /// The user's file, a project's or the managed one.
    scope: Scope,
    /// The home or project directory the file is under (the managed file's: `/etc`).
    base: PathBuf,
    /// The directories from `base` to the file (created when missing).
    dirs: &'static [&'static str],
    /// The hook file.
    path: PathBuf,
}

impl Target {
    /// The file `args` name for `agent`: `--project DIR`, `--user` or `--scope SCOPE`.
    fn of(agent: Agent, args: &InstallArgs) -> anyhow::Result<Self> {
        let scope = match (args.scope, &args.project, args.user) {
            (Some(Scope::Managed), None, false) => Scope::Managed,
            (None | Some(Scope::Project), Some(_), false) => Scope::Project,
            (None | Some(Scope::User), None, true) | (Some(Scope::User), None, false) => {
                Scope::User
            }
            _ => {
                bail!("say whose configuration to change: --project DIR, --user or --scope managed")
            }
        };
        let (base, dirs, path) = match (scope, &args.project) {
            (Scope::Project, Some(dir)) => {
                let base = std::fs::canonicalize(dir)
                    .with_context(|| format!("--project {}", dir.display()))?;
                let (dirs, _) = location(agent, true);
                let path = config_path(agent, true, &base);
                (base, dirs, path)
            }
            (Scope::Managed, _) if args.policy.is_none() && !args.uninstall => bail!(
                "--scope managed needs --policy FILE (a file only root can write, such as \
                 /etc/hookbox/policy.json): the managed entry serves every user, so it cannot pin \
                 one user's home, and it must not take the policy from an environment a project \
                 can set; nothing was written"
            ),
            (Scope::Managed, _) if !rustix::process::geteuid().is_root() => bail!(
                "--scope managed writes {}'s managed settings, which only root may change: run \
                 it with sudo; nothing was written",
                agent.name()
            ),
            (Scope::Managed, _) => target::managed_file(agent).with_context(|| {
                format!(
                    "hookbox does not install into {}'s managed settings{}; use --user or \
                     --project DIR",
                    agent.name(),
                    if agent == Agent::Codex {
                        " (its managed hooks are TOML tables in /etc/codex/requirements.toml: \
                         see docs/agent-adapters.md)"
                    } else {
                        ""
                    }
                )
            })?,
            _ => {
                let base = user_home()?;
                let (dirs, _) = location(agent, false);
                let path = config_path(agent, false, &base);
                (base, dirs, path)
            }
        };
        Ok(Self {
            agent,
            scope,
            base,
            dirs,
            path,
        })
    }

    /// Refuses the file when it, or a directory to it under `base`, is a symbolic link.
    fn check_no_links(&self) -> anyhow::Result<()> {
        files::check_no_links(&self.base, self.dirs, &self.path)
    }

    /// The file's path as records key it.
    fn key(&self) -> String {
        self.path.display().to_string()
    }

    /// `problem` (a JSON path and what is wrong there) as an error naming the file.
    fn invalid(&self, problem: &str) -> anyhow::Error {
        anyhow!(
            "{}: {problem}; fix the file, then run `hookbox install` again; nothing was written",
            self.path.display()
        )
    }
}

/// Refuses to install hooks whose policy would not gate: one that does not load (every event
/// would be blocked), one with no hooks (every call let through; `--allow-empty`), or one with
/// a command hook that cannot start (it fails open on every call; `--allow-missing` makes it
/// a warning, returned). Nothing is written when it refuses.
fn vet_policy(file: &Target, args: &InstallArgs, home: &Path) -> anyhow::Result<String> {
    let project = (file.scope == Scope::Project).then_some(file.base.as_path());
    let files = match &args.policy {
        Some(policy) => PolicyFiles::Explicit(
            std::fs::canonicalize(policy)
                .with_context(|| format!("--policy {}", policy.display()))?,
        ),
        None => {
            let config = hookbox_runtime::Config::read(None, home)?;
            // A user-wide install has no one project: only the managed and user files.
            let project = project.map_or_else(|| home.join("no-project"), Path::to_path_buf);
            crate::commands::hook::layered_files(home, &config, &project)
        }
    };
    let policy =
        crate::commands::hook::load_policy_files(&files, args.fail_closed).map_err(|err| {
            anyhow!(
                "{err:#}\nthe policy does not load, so `hookbox hook` would block every event; fix \
             it (`hookbox check FILE`), then run `hookbox install` again; nothing was written"
            )
        })?;
    if policy.hooks.bindings().next().is_none() && !args.allow_empty {
        let (paths, _) = files.paths();
        let paths: Vec<String> = paths
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        let untrusted = policy.untrusted.map(|untrusted| untrusted.policy);
        let untrusted = untrusted.map_or_else(String::new, |file| {
            format!(
                " ({} is not trusted yet: review it, then `hookbox trust {}`)",
                file.display(),
                file.display()
            )
        });
        bail!(
            "no policy hooks in {}{untrusted}: `hookbox hook` would let every call through; write \
             a policy (or name one with --policy FILE), or pass --allow-empty if that is what you \
             want; nothing was written",
            paths.join(", ")
        );
    }
    let context = StartContext {
        cwd: project.map(Path::to_path_buf),
        path: std::env::var_os("PATH"),
        variables: project
            .map(|project| {
                ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]
                    .map(|name| (name.to_owned(), project.display().to_string()))
                    .to_vec()
            })
            .unwrap_or_default(),
        programs_only: false,
    };
    let problems: Vec<String> = start_problems(&policy.hooks, &context)
        .iter()
        .map(ToString::to_string)
        .collect();
    if problems.is_empty() {
        return Ok(String::new());
    }
    if !args.allow_missing {
        bail!(
            "{}\na gate that cannot start lets every call through; fix it, or pass \
             --allow-missing if it exists only where the hook runs; nothing was written",
            problems.join("\n")
        );
    }
    Ok(problems
        .iter()
        .map(|problem| format!("warning: {problem}\n"))
        .collect())
}

/// Adds hookbox's entries for every event `hookbox hook` answers to the agent's hook file
/// (those already there are left as they are), backing the original up the first time.
fn install(
    file: &Target,
    args: &InstallArgs,
    home: &Path,
    records: &mut Records,
) -> anyhow::Result<String> {
    let agent = file.agent;
    let exe = std::env::current_exe().context("cannot find the path of this hookbox binary")?;
    // The home is pinned: a project's settings can hand the hook another `HOOKBOX_HOME`.
    let home = std::path::absolute(home)
        .with_context(|| format!("cannot make {} absolute", home.display()))?;
    let mut options = String::new();
    if args.fail_closed {
        options.push_str(" --fail-closed");
    }
    if let Some(policy) = args.policy.as_deref() {
        let policy = std::fs::canonicalize(policy)
            .with_context(|| format!("--policy {}", policy.display()))?;
        options.push_str(&format!(
            " --policy {}",
            shell_quote(&policy.display().to_string())
        ));
    }
    // A managed entry serves every user: its policy is pinned by `--policy` instead.
    let arguments = match file.scope {
        Scope::Managed => format!("{}{options}", agent.name()),
        Scope::User | Scope::Project => format!(
            "{} --home {}{options}",
            agent.name(),
            shell_quote(&home.display().to_string())
        ),
    };
    // The same calls without `--home` (older installs, or written by hand from older docs)
    // take the agent's `HOOKBOX_HOME`: they are upgraded to the pinned form.
    let unpinned = [
        format!(
            "{} hook {}{options}",
            shell_quote(&exe.display().to_string()),
            agent.name()
        ),
        format!(
            "{} {}{options}",
            shell_quote(&exe.with_file_name(THIN_CLIENT).display().to_string()),
            agent.name()
        ),
    ];
    // The same call through `hookbox hook`: an older install's form, or written by hand.
    let through_hookbox = format!(
        "{} hook {arguments}",
        shell_quote(&exe.display().to_string())
    );
    // The thin client starts several times faster than hookbox; without it, `hookbox hook`.
    let thin = exe.with_file_name(THIN_CLIENT);
    let command = if thin.is_file() {
        format!("{} {arguments}", shell_quote(&thin.display().to_string()))
    } else {
        through_hookbox.clone()
    };
    let original = files::read_if_present(&file.path)?;
    let mut document =
        Document::parse(original.as_deref()).map_err(|problem| file.invalid(&problem))?;
    let layout = layout(agent);
    let previous = records.by_path.get(&file.key()).cloned();
    // Entries of an earlier install with another command (policy, binary) are replaced.
    let mut removed = 0;
    if let Some(previous) = previous.as_ref().filter(|old| old.command != command) {
        for event in events(agent) {
            let old = target::command(agent, &previous.command, event);
            removed += document.remove(layout, event, &old);
        }
    }
    // A look-alike (this command under a matcher that matches nothing, an `if`, `async`…)
    // reads as installed while the gate never decides: it is replaced.
    let mut lookalikes = Vec::new();
    for found in document.found(agent, layout) {
        if let Some(why) = found.narrowing.as_deref()
            && [&command, &through_hookbox]
                .iter()
                .any(|ours| target::command(agent, ours, &found.event) == found.command)
        {
            lookalikes.push(format!(
                "replaced a look-alike entry under {}: it runs `{}` but {why}\n",
                found.event, found.command
            ));
        }
    }
    for event in events(agent) {
        for old in &unpinned {
            removed += document.remove(layout, event, &target::command(agent, old, event));
        }
        for ours in [&command, &through_hookbox] {
            removed += document.remove_narrowed(
                agent,
                layout,
                event,
                &target::command(agent, ours, event),
            );
        }
    }
    // An event whose entry makes the same call through `hookbox hook` gets no second one.
    let present = document.all_commands(layout);
    let mut added = Vec::new();
    for event in events(agent) {
        let same = (
            event.to_string(),
            target::command(agent, &through_hookbox, event),
        );
        let run = target::command(agent, &command, event);
        if !present.contains(&same)
            && document.add(layout, event, &run, target::entry(agent, event, &run))
        {
            added.push(event);
        }
    }
    if added.is_empty() && removed == 0 {
        return Ok(format!(
            "{} already runs `{command}` on every event hookbox answers; nothing changed\n",
            file.path.display()
        ));
    }
    let bytes = document.to_bytes();
    let mut record = match previous {
        Some(previous) => previous,
        None => Record {
            agent: agent.name().to_owned(),
            scope: file.scope.name().to_owned(),
            command: String::new(),
            backup: original
                .as_deref()
                .map(|original| records.back_up(&file.path, original))
                .transpose()?,
            created_dirs: Vec::new(),
            installed: String::new(),
        },
    };
    record.command = command.clone();
    record
        .created_dirs
        .extend(files::create_dirs(&file.base, file.dirs)?);
    record.installed = String::from_utf8_lossy(&bytes).into_owned();
    let backup = record
        .backup
        .as_deref()
        .map(|name| records.backup_path(name));
    records.by_path.insert(file.key(), record);
    records.write()?;
    // A link planted while the directories were being created is refused here.
    file.check_no_links()?;
    files::write_atomically(&file.path, &bytes, 0o644)?;
    let kept = match backup {
        Some(backup) => format!("the original is backed up at {}", backup.display()),
        None => "the file is new".to_owned(),
    };
    let place = match file.scope {
        Scope::User => "--user".to_owned(),
        Scope::Managed => "--scope managed".to_owned(),
        Scope::Project => format!(
            "--project {}",
            shell_quote(&file.base.display().to_string())
        ),
    };
    Ok(format!(
        "{}installed into {} ({} scope): {} runs `{command}` on {}; {kept}; `hookbox install {} \
         {place} --uninstall` undoes it\n{}",
        lookalikes.concat(),
        file.path.display(),
        file.scope.name(),
        agent.name(),
        added.join(", "),
        agent.name(),
        note(agent)
    ))
}

/// A warning when, with every layer of the agent's settings merged, some event still does not
/// reach the policy (another layer switches hooks off, say) in the project installed into (any
/// other scope: the current directory).
fn merged(file: &Target) -> anyhow::Result<String> {
    let project = match file.scope {
        Scope::Project => file.base.clone(),
        Scope::User | Scope::Managed => {
            std::env::current_dir().context("cannot read the current directory")?
        }
    };
    let (fired, all) = doctor::reaching(file.agent, &user_home()?, &project);
    Ok(if fired < all {
        format!(
            "warning: with every layer of {}'s settings merged, {fired} of {all} events reach the \
             policy in {}; `hookbox doctor {} --project {}` says why and how to fix it\n",
            file.agent.name(),
            project.display(),
            file.agent.name(),
            shell_quote(&project.display().to_string())
        )
    } else {
        String::new()
    })
}

/// What the user must still do for the agent to run the new hooks, if anything.
fn note(agent: Agent) -> &'static str {
    match agent {
        Agent::Codex => {
            "note: Codex runs new or changed hooks only once trusted: review them with `/hooks` \
             in Codex\n"
        }
        Agent::Copilot => {
            "note: Copilot CLI loads a repository's hooks in prompt mode (-p) only in a trusted \
             folder (or with GITHUB_COPILOT_PROMPT_MODE_REPO_HOOKS=true); the coding agent reads \
             .github/hooks/ from the default branch\n"
        }
        Agent::ClaudeCode | Agent::GeminiCli | Agent::Cursor => "",
    }
}

/// Undoes an install: the original back byte for byte when the file is as hookbox left it;
/// else (someone edited it since) only hookbox's entries removed, the edits kept.
fn uninstall(file: &Target, records: &mut Records) -> anyhow::Result<String> {
    let path = file.path.display();
    let Some(record) = records.by_path.remove(&file.key()) else {
        bail!(
            "{path}: no `hookbox install {}` is recorded for it; nothing changed",
            file.agent.name()
        );
    };
    if record.agent != file.agent.name() {
        bail!(
            "{path} was installed for {}, not {}; nothing changed",
            record.agent,
            file.agent.name()
        );
    }
    let backup = record
        .backup
        .as_deref()
        .map(|name| records.backup_path(name));
    let current = files::read_if_present(&file.path)?;
    let message = if current.as_deref() == Some(record.installed.as_bytes()) {
        match &backup {
            Some(backup) => {
                let original = std::fs::read(backup)
                    .with_context(|| format!("cannot read the backup {}", backup.display()))?;
                files::write_atomically(&file.path, &original, 0o644)?;
                std::fs::remove_file(backup)
                    .with_context(|| format!("cannot remove {}", backup.display()))?;
                format!("restored {path} as it was before `hookbox install`, byte for byte\n")
            }
            None => {
                remove_created(&file.path, &record)?;
                format!("removed {path}, which `hookbox install` created\n")
            }
        }
    } else {
        let kept = match &backup {
            Some(backup) => format!(
                "the file as it was before the install is kept at {}",
                backup.display()
            ),
            None => "there was no file before the install".to_owned(),
        };
        let Some(current) = current else {
            records.write()?;
            return Ok(format!(
                "{path} no longer exists; nothing to remove ({kept})\n"
            ));
        };
        let mut document =
            Document::parse(Some(&current)).map_err(|problem| file.invalid(&problem))?;
        let layout = layout(file.agent);
        let removed: usize = events(file.agent)
            .iter()
            .map(|event| {
                document.remove(
                    layout,
                    event,
                    &target::command(file.agent, &record.command, event),
                )
            })
            .sum();
        document.tidy(layout);
        if removed > 0 && document.is_empty() && backup.is_none() {
            remove_created(&file.path, &record)?;
        } else if removed > 0 {
            files::write_atomically(&file.path, &document.to_bytes(), 0o644)?;
        }
        format!(
            "{path} changed since `hookbox install` wrote it, so it is not restored: removed \
             hookbox's {removed} entries only and kept everything else ({kept})\n"
        )
    };
    records.write()?;
    Ok(message)
}

/// Removes the hook file hookbox created, and the directories it created for it when empty.
fn remove_created(path: &Path, record: &Record) -> anyhow::Result<()> {
    std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    for dir in record.created_dirs.iter().rev() {
        // A directory that holds anything else now stays.
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}

/// `--list`: for every agent, the user's hook file and the project's (`project`, else the
/// current directory), then any other file with a recorded install: which events run
/// `hookbox hook`, and whether `hookbox install` put them there.
fn list(project: Option<&Path>, records: &Records) -> anyhow::Result<String> {
    let project = match project {
        Some(dir) => dir.to_path_buf(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let project = std::fs::canonicalize(&project)
        .with_context(|| format!("--project {}", project.display()))?;
    let home = user_home().ok();
    let mut seen = BTreeSet::new();
    let mut text = String::new();
    for agent in target::AGENTS {
        let bases = [
            (Scope::User, home.clone()),
            (Scope::Project, Some(project.clone())),
        ];
        for (scope, base) in bases {
            let Some(base) = base else { continue };
            let path = config_path(agent, scope == Scope::Project, &base);
            if seen.insert(path.clone()) {
                text.push_str(&describe(agent, scope.name(), &path, records));
            }
        }
        // What the agent will run, its layers merged (managed ones too), switches and
        // look-alikes counted.
        if let Some(home) = &home {
            let (fired, all) = doctor::reaching(agent, home, &project);
            text.push_str(&format!(
                "{:<12} merged   {fired} of {all} events reach the policy in {}{}\n",
                agent.name(),
                project.display(),
                if fired < all {
                    format!("; `hookbox doctor {}` says why", agent.name())
                } else {
                    String::new()
                }
            ));
        }
    }
    for (path, record) in &records.by_path {
        let path = PathBuf::from(path);
        let agent = target::AGENTS
            .into_iter()
            .find(|agent| agent.name() == record.agent);
        if let (Some(agent), true) = (agent, seen.insert(path.clone())) {
            text.push_str(&describe(agent, &record.scope, &path, records));
        }
    }
    Ok(text)
}

/// One `--list` entry: `agent`'s hook file at `path` and what of hookbox it holds.
fn describe(agent: Agent, scope: &str, path: &Path, records: &Records) -> String {
    let record = records.by_path.get(&path.display().to_string());
    let status = match files::read_if_present(path) {
        Err(err) => format!("cannot read: {err:#}"),
        Ok(None) => "no file: not installed".to_owned(),
        Ok(Some(bytes)) => match Document::parse(Some(&bytes)) {
            Err(problem) => format!("not a hook file: {problem}"),
            Ok(document) => {
                let (ours, lookalikes): (Vec<_>, Vec<_>) = document
                    .found(agent, layout(agent))
                    .into_iter()
                    .filter(|found| runs_hookbox_hook(&found.command, agent))
                    .partition(|found| found.narrowing.is_none());
                let lookalikes: String = lookalikes
                    .iter()
                    .map(|found| {
                        format!(
                            "\n  look-alike under {}: `{}` does not gate: {}; `hookbox install {} \
                             ...` replaces it",
                            found.event,
                            found.command,
                            found.narrowing.as_deref().unwrap_or_default(),
                            agent.name()
                        )
                    })
                    .collect();
                let ours: Vec<(String, String)> = ours
                    .into_iter()
                    .map(|found| (found.event, found.command))
                    .collect();
                let origin = match record {
                    None => "not written by `hookbox install`".to_owned(),
                    Some(record) => {
                        let edited = if record.installed.as_bytes() == bytes {
                            ""
                        } else {
                            ", edited since"
                        };
                        let original = if record.backup.is_some() {
                            "original backed up"
                        } else {
                            "file created by it"
                        };
                        format!("installed by `hookbox install` ({original}{edited})")
                    }
                };
                let listed = match ours.first() {
                    None => format!("no `hookbox hook` entries; {origin}"),
                    Some((_, command)) => {
                        let events: Vec<&str> =
                            ours.iter().map(|(event, _)| event.as_str()).collect();
                        let count = match events.len() {
                            1 => "1 event runs".to_owned(),
                            n => format!("{n} events run"),
                        };
                        format!(
                            "{count} `{command}`{}: {}; {origin}",
                            if agent == Agent::Copilot {
                                " (with --event)"
                            } else {
                                ""
                            },
                            events.join(", ")
                        )
                    }
                };
                listed + &lookalikes
            }
        },
    };
    format!(
        "{:<12} {:<8} {}\n  {status}\n",
        agent.name(),
        scope,
        path.display()
    )
}

/// Whether `command` runs `hookbox hook AGENT` or `hookbox-hook AGENT` (any hookbox binary).
fn runs_hookbox_hook(command: &str, agent: Agent) -> bool {
    [("hookbox", " hook "), (THIN_CLIENT, " ")]
        .iter()
        .any(|(binary, separator)| {
            command
                .split_once(&format!("{separator}{}", agent.name()))
                .is_some_and(|(program, _)| program.trim_matches('\'').ends_with(binary))
        })
}

/// The user's home directory (`$HOME`).
fn user_home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .context("HOME is not set, so the user's configuration cannot be found; use --project DIR")
}
