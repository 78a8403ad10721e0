//! Finding an environment's hooks: `/.agents/hooks.json`, then `/workspace/.agents/hooks.json`,
//! read through the confined file tools on every call and re-parsed only when they changed.

use std::sync::{Arc, Mutex, PoisonError};

use hookbox_env::{FileTools, ToolError};
use hookbox_hooks::{Diagnostic, Dialect, HookSet, LoadError, Severity};
use serde_json::{Value, json};

/// Where hook configuration is discovered inside an environment, root first.
pub const HOOK_FILES: [&str; 2] = ["/.agents/hooks.json", "/workspace/.agents/hooks.json"];

/// The hooks of one environment, cached by the exact contents of its hook files.
#[derive(Debug, Default)]
pub struct HookDiscovery {
    cached: Mutex<Option<Discovered>>,
}

/// One parse of the hook files.
#[derive(Debug, Clone)]
struct Discovered {
    /// Each hook file's text, `None` when absent.
    contents: Vec<Option<String>>,
    hooks: Arc<HookSet>,
    /// Problems that made a whole file unusable (per-element problems are in the set).
    problems: Vec<Diagnostic>,
}

impl HookDiscovery {
    /// The hooks as the files say now, and the problems of files that could not be used at all.
    ///
    /// A hook file that is missing is no hooks; one that cannot be read or parsed is reported
    /// and skipped (its gates do not run, as with any failing hook in the sandbox dialect), so
    /// callers must surface the problems.
    pub fn load(&self, files: &FileTools) -> (Arc<HookSet>, Vec<Diagnostic>) {
        let mut problems = Vec::new();
        let contents: Vec<Option<String>> = HOOK_FILES
            .iter()
            .map(|path| match read(files, path) {
                Ok(text) => text,
                Err(message) => {
                    problems.push(problem(path, message));
                    None
                }
            })
            .collect();
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cached.as_ref().filter(|found| found.contents == contents) {
            problems.extend(found.problems.iter().cloned());
            return (Arc::clone(&found.hooks), problems);
        }
        let mut builder = HookSet::builder();
        for (path, text) in HOOK_FILES.iter().zip(&contents) {
            let Some(text) = text else { continue };
            if let Err(err) = builder.load_str(path, text, Some(Dialect::Sandbox)) {
                problems.push(match err {
                    LoadError::Invalid(diagnostic) => *diagnostic,
                    LoadError::Read { .. } => problem(path, err.to_string()),
                });
            }
        }
        let found = Discovered {
            contents,
            hooks: Arc::new(builder.build()),
            problems: problems.clone(),
        };
        let hooks = Arc::clone(&found.hooks);
        *cached = Some(found);
        (hooks, problems)
    }
}

/// The text of hook file `path`, `None` when it does not exist.
fn read(files: &FileTools, path: &str) -> Result<Option<String>, String> {
    match files.call("read_file", &json!({ "path": path })) {
        Ok(result) => match (result.get("content"), result.get("encoding")) {
            (Some(Value::String(text)), None) => Ok(Some(text.clone())),
            _ => Err(format!("`{path}` is not UTF-8 text")),
        },
        Err(ToolError::NotFound { .. }) => Ok(None),
        Err(err) => Err(err.to_string()),
    }
}

/// A whole-file problem with hook file `path`.
fn problem(path: &str, message: String) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        source: path.to_owned(),
        json_path: "$".to_owned(),
        message,
        hint: Some("fix or remove the file; until then its hooks do not run".to_owned()),
    }
}
