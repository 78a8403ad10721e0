//! The real [`HookFileCheck`] for environments: an owner's hook file must load as the sandbox
//! dialect with no error diagnostic, and each command hook's program must be on the sandbox's
//! `PATH`. hookbox-env takes it from its caller, so it never depends
//! on hookbox-hooks.

use hookbox_env::{HookCommand, HookFileCheck};
use hookbox_hooks::startable::{StartContext, start_problems};
use hookbox_hooks::{Diagnostic, Dialect, Handler, LoadError, Severity};

use crate::sandbox_hooks_builder;

/// Checks owners' hook files with hookbox-hooks: give it to
/// [`Environments::with_hook_file_check`](hookbox_env::Environments::with_hook_file_check).
#[derive(Debug, Clone, Copy, Default)]
pub struct OwnerHookFiles;

impl HookFileCheck for OwnerHookFiles {
    fn commands(&self, file: &str, text: &str) -> Result<Vec<HookCommand>, String> {
        let mut builder = sandbox_hooks_builder();
        if let Err(err) = builder.load_str(file, text, Some(Dialect::Sandbox)) {
            return Err(match err {
                LoadError::Invalid(diagnostic) => located(&diagnostic),
                LoadError::Read { .. } => err.to_string(),
            });
        }
        let hooks = builder.build();
        let errors: Vec<String> = hooks
            .diagnostics()
            .iter()
            .filter(|diagnostic| diagnostic.severity == Severity::Error)
            .map(located)
            .collect();
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        // Hooks run in the sandbox, whose `PATH` directories are this host's system
        // directories: a program looked up there can be judged here (scripts under the owner's
        // directories are checked by hookbox-env against the environment's files).
        let sandbox = StartContext {
            cwd: None,
            path: Some(hookbox_exec::SANDBOX_PATH.into()),
            variables: Vec::new(),
            programs_only: true,
        };
        let cannot_start: Vec<String> = start_problems(&hooks, &sandbox)
            .iter()
            .map(|problem| {
                format!(
                    "at `{}.command`: {}; a gate that cannot start lets every call through: \
                     name a program the sandbox has, or fix the command",
                    problem.json_path, problem.message
                )
            })
            .collect();
        if !cannot_start.is_empty() {
            return Err(cannot_start.join("; "));
        }
        Ok(hooks
            .bindings()
            .filter_map(|binding| match &binding.handler {
                Handler::Command(command) => Some(HookCommand {
                    json_path: binding.origin.json_path.to_string(),
                    command: command.command.clone(),
                }),
                _ => None,
            })
            .collect())
    }
}

/// "at `PATH`: MESSAGE; HINT" for a diagnostic.
fn located(diagnostic: &Diagnostic) -> String {
    match &diagnostic.hint {
        Some(hint) => format!(
            "at `{}`: {}; {hint}",
            diagnostic.json_path, diagnostic.message
        ),
        None => format!("at `{}`: {}", diagnostic.json_path, diagnostic.message),
    }
}
