//! `hookbox doctor AGENT [--project DIR]`: reads the agent's settings as it merges them
//! (managed, user, project, local) and says, per event, whether hookbox's policy will decide
//! it; what switches it off (`disableAllHooks` and its kin, a look-alike entry, a project's
//! `HOOKBOX_HOME`, an untrusted project policy, a gate that cannot start); and the fix.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use hookbox_hooks::adapter::{Agent, PolicyFiles};
use hookbox_hooks::startable::{StartContext, start_problems};

use super::sources::{Off, Source, Switch, sources, switches};
use super::target::{events, layout, shell_quote};
use super::{runs_hookbox_hook, user_home};
use crate::cli::DoctorArgs;

/// Runs `hookbox doctor`; exit status 1 when some event will not reach the policy, or
/// something switches the policy.
pub(crate) fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let agent = Agent::from(args.agent);
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let project = std::fs::canonicalize(&project)
        .with_context(|| format!("--project {}", project.display()))?;
    let home = user_home()?;
    let sources = sources(agent, &home, &project);
    let switches = switches(agent, &sources, &project);
    let install = format!(
        "hookbox install {} --project {} (or --user, or --scope managed --policy FILE as root)",
        agent.name(),
        shell_quote(&project.display().to_string())
    );
    let mut text = format!("{} in {}\n", agent.name(), project.display());
    let mut problems = Vec::new();
    for source in &sources {
        let state = match &source.value {
            Ok(None) => "absent".to_owned(),
            Ok(Some(_)) => "read".to_owned(),
            Err(err) => {
                problems.push(format!(
                    "{} cannot be read ({err}): the agent may skip it or refuse to start; fix the \
                     file",
                    source.path.display()
                ));
                "unreadable".to_owned()
            }
        };
        text.push_str(&format!(
            "  {:<8} {} ({state})\n",
            source.layer,
            source.path.display()
        ));
    }

    let mut firing_commands = Vec::new();
    // Events that will not fire, grouped by why (and the fix).
    let mut silent: Vec<(String, String, Vec<&str>)> = Vec::new();
    for event in events(agent) {
        match judge(agent, event, &sources, &switches) {
            Ok(command) => firing_commands.push(command),
            Err((why, fix)) => {
                let fix = fix.unwrap_or_else(|| install.clone());
                match silent.iter_mut().find(|(w, f, _)| *w == why && *f == fix) {
                    Some((_, _, events)) => events.push(event),
                    None => silent.push((why, fix, vec![event])),
                }
            }
        }
    }
    let fired = firing_commands.len();
    text.push_str(&format!(
        "{fired} of {} events reach the policy\n",
        events(agent).len()
    ));
    for (why, fix, events) in &silent {
        problems.push(format!(
            "will NOT fire on {}: {why}; fix: {fix}",
            events.join(", ")
        ));
    }
    firing_commands.sort();
    firing_commands.dedup();
    // What each entry that fires pins: its home (`--home`) and its policy (`--policy`).
    let pins: Vec<(Option<String>, Option<String>)> = firing_commands
        .iter()
        .map(|command| (option(command, "--home"), option(command, "--policy")))
        .collect();
    for switch in &switches {
        if let Off::Home(theirs) = &switch.off {
            match pins.iter().find(|pin| *pin == &(None, None)) {
                Some(_) => problems.push(format!(
                    "{} in {} hands the hook HOOKBOX_HOME={theirs}: an entry without --home \
                     (or --policy) then takes the policy of {theirs}, not yours; fix: {install} \
                     (it pins --home)",
                    switch.what,
                    switch.path.display()
                )),
                None => text.push_str(&format!(
                    "note: {} in {} sets HOOKBOX_HOME={theirs}; ignored, the entries pin their \
                     home or policy\n",
                    switch.what,
                    switch.path.display()
                )),
            }
        }
    }
    let hookbox_home = match pins.iter().find_map(|(home, _)| home.as_deref()) {
        Some(home) => PathBuf::from(home),
        None => hookbox_env::Environments::default_home()?,
    };
    let explicit = pins.iter().find_map(|(_, policy)| policy.as_deref());
    problems.extend(policy_problems(
        &hookbox_home,
        explicit.map(Path::new),
        &project,
    ));
    if agent == Agent::Codex && fired > 0 {
        text.push_str(
            "note: Codex runs a new or changed non-managed hook only once trusted in its `/hooks` \
             view\n",
        );
    }
    for problem in &problems {
        text.push_str(&format!("problem: {problem}\n"));
    }
    if problems.is_empty() {
        text.push_str("ok: every event reaches the policy\n");
    }
    crate::render::print_text(&text)?;
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// How many of the events hookbox answers `agent` will really ask the policy about in
/// `project` (for the user whose home is `home`), of how many.
pub(super) fn reaching(agent: Agent, home: &Path, project: &Path) -> (usize, usize) {
    let sources = sources(agent, home, project);
    let switches = switches(agent, &sources, project);
    let events = events(agent);
    let fired = events
        .iter()
        .filter(|event| judge(agent, event, &sources, &switches).is_ok())
        .count();
    (fired, events.len())
}

/// Whether `agent` runs hookbox's policy for `event`: the command of an entry that fires, or
/// why none does and the fix when it is not (re)installing.
fn judge(
    agent: Agent,
    event: &str,
    sources: &[Source],
    switches: &[Switch],
) -> Result<String, (String, Option<String>)> {
    let mut why = Vec::new();
    let mut fix = None;
    for source in sources {
        let Some(document) = source.document() else {
            continue;
        };
        let found = document
            .found(agent, layout(agent))
            .into_iter()
            .filter(|found| found.event == event && runs_hookbox_hook(&found.command, agent));
        for found in found {
            let path = source.path.display();
            if let Some(narrowing) = &found.narrowing {
                why.push(format!(
                    "a look-alike in {path} runs `{}` but {narrowing}",
                    found.command
                ));
                continue;
            }
            let off = switches.iter().find(|switch| match &switch.off {
                Off::All => true,
                Off::Unmanaged => !source.managed(),
                Off::Command(command) => *command == found.command,
                Off::Home(_) => false,
            });
            if let Some(switch) = off {
                why.push(format!(
                    "{} in {} switches off the entry in {path}",
                    switch.what,
                    switch.path.display(),
                ));
                fix = Some(switch.fix.clone());
                continue;
            }
            if let Some(missing) = missing_program(&found.command) {
                why.push(format!(
                    "the entry in {path} runs {missing}, which is not there"
                ));
                continue;
            }
            return Ok(found.command);
        }
    }
    if why.is_empty() {
        why.push(format!("no entry runs `hookbox hook {}`", agent.name()));
    }
    Err((why.join("; "), fix))
}

/// The words of `command` as a POSIX shell splits them (quotes and backslashes; no expansions,
/// which hookbox's entries do not use).
fn words(command: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                let current = word.get_or_insert_with(String::new);
                current.extend(chars.by_ref().take_while(|&c| c != '\''));
            }
            '"' => {
                let current = word.get_or_insert_with(String::new);
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => current.extend(chars.next()),
                        c => current.push(c),
                    }
                }
            }
            '\\' => word.get_or_insert_with(String::new).extend(chars.next()),
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// The value of `name` (`--home DIR`, `--policy FILE`) in `command`, if any.
fn option(command: &str, name: &str) -> Option<String> {
    let words = words(command);
    let at = words.iter().position(|word| word == name)?;
    words.get(at + 1).cloned()
}

/// The program `command` starts, when it is not an executable file.
fn missing_program(command: &str) -> Option<String> {
    let program = words(command).into_iter().next()?;
    let executable = std::fs::metadata(&program)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
    (!executable).then_some(program)
}

/// What keeps the policy (`explicit`, else the layered files of `home`) from deciding in
/// `project`: it does not load, its project file is not trusted (new, or changed since), or a
/// command hook of it cannot start.
fn policy_problems(home: &Path, explicit: Option<&Path>, project: &Path) -> Vec<String> {
    let files = match explicit {
        Some(policy) => PolicyFiles::Explicit(policy.to_path_buf()),
        None => match hookbox_runtime::Config::read(None, home) {
            Ok(config) => crate::commands::hook::layered_files(home, &config, project),
            Err(err) => return vec![format!("{err:#}; fix the config file")],
        },
    };
    // The one place doctor asks whether the project policy is trusted.
    let policy = match crate::commands::hook::load_policy_files(&files, false) {
        Ok(policy) => policy,
        Err(err) => {
            return vec![format!(
                "{err:#}\nthe policy does not load, so every event is blocked; fix it \
                 (`hookbox check FILE`)"
            )];
        }
    };
    let mut problems = Vec::new();
    if let Some(untrusted) = policy.untrusted {
        // `hookbox trust` records into the home of its own environment.
        let pinned = match hookbox_env::Environments::default_home() {
            Ok(default) if default == home => None,
            _ => Some(home.as_os_str()),
        };
        problems.push(format!(
            "{untrusted}, so its hooks do not run; fix: review it and the files its hooks run, \
             then `{}`",
            crate::commands::hook::trust_command(&untrusted, pinned)
        ));
    }
    if policy.hooks.bindings().next().is_none() {
        problems.push(format!(
            "the policy of {} has no hooks: every call is let through; fix: write {}",
            home.display(),
            home.join("policy.json").display()
        ));
    }
    let context = StartContext {
        cwd: Some(project.to_path_buf()),
        path: std::env::var_os("PATH"),
        variables: ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR"]
            .map(|name| (name.to_owned(), project.display().to_string()))
            .to_vec(),
        programs_only: false,
    };
    problems.extend(start_problems(&policy.hooks, &context).iter().map(|problem| {
        format!(
            "{problem}: it fails open on every call; fix: install what it runs, or fix the policy \
             (`hookbox check FILE`)"
        )
    }));
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_as_a_shell_splits_them() {
        for (command, expected) in [
            (
                "/a/hookbox-hook claude-code --home /h",
                &["/a/hookbox-hook", "claude-code", "--home", "/h"][..],
            ),
            (
                "'/a b/hookbox' hook codex --home '/h q'",
                &["/a b/hookbox", "hook", "codex", "--home", "/h q"],
            ),
            ("'it'\\''s' \"x\\\"y\"  z", &["it's", "x\"y", "z"]),
        ] {
            assert_eq!(words(command), expected, "{command}");
        }
        assert_eq!(
            option("x claude-code --home '/h q'", "--home").as_deref(),
            Some("/h q")
        );
        assert_eq!(option("x claude-code", "--home"), None);
    }
}
