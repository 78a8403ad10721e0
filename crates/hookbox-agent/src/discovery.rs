//! Finding an environment's hooks: `/.agents/hooks.json`, then `/workspace/.agents/hooks.json`,
//! read through the confined file tools on every call and re-parsed only when they changed.
//!
//! A file is the owner's when the environment's owner supplied its `.agents` directory and the
//! model cannot write it (`agents_writable` is off); any other hook file is model-writable:
//! bounded ([`hookbox_hooks::MODEL_FILE_MAX_BYTES`], [`hookbox_hooks::MODEL_FILE_MAX_HANDLERS`])
//! and its HTTP hooks get no widened network rights. A file that cannot be read or parsed makes
//! every call deny (see [`Discovered::unusable`]).

use std::sync::{Arc, Mutex, PoisonError};

use hookbox_env::{FileTools, ToolError};
use hookbox_hooks::{Diagnostic, Dialect, HookSet, LoadError, Severity};
use serde_json::{Value, json};

use crate::sandbox_hooks_builder;

/// Where hook configuration is discovered inside an environment, root first.
pub const HOOK_FILES: [&str; 2] = ["/.agents/hooks.json", "/workspace/.agents/hooks.json"];

/// The hooks of one environment, cached by the exact contents of its hook files.
#[derive(Debug)]
pub struct HookDiscovery {
    /// Which of [`HOOK_FILES`] are the owner's (out of the model's reach).
    owner_files: [bool; 2],
    cached: Mutex<Option<Parsed>>,
}

/// One parse of the hook files, kept while their contents stay the same.
#[derive(Debug, Clone)]
struct Parsed {
    /// Each hook file's text, `None` when absent.
    contents: Vec<Option<String>>,
    hooks: Arc<HookSet>,
    /// Files that could not be parsed at all.
    problems: Vec<Diagnostic>,
}

/// The hooks of an environment as its files say now.
#[derive(Debug, Clone)]
pub struct Discovered {
    /// The hooks of the usable files.
    pub hooks: Arc<HookSet>,
    /// Problems that made a whole file unusable (per-element problems are in the set).
    pub problems: Vec<Diagnostic>,
    /// Why calls must be denied: a hook file exists but could not be read or parsed, so the
    /// gates it declares cannot be known (`None` when every file is usable or absent).
    pub unusable: Option<String>,
}

impl HookDiscovery {
    /// Discovery for `environment`: `/.agents/hooks.json` is the owner's unless the model may
    /// write `.agents`; `/workspace/.agents/hooks.json` is the owner's only when the owner
    /// supplied `/workspace/.agents` (and the model may not write it).
    pub fn for_environment(environment: &hookbox_env::Environment) -> Self {
        let protected = environment.protected_agents_dirs();
        Self {
            owner_files: HOOK_FILES.map(|file| {
                protected
                    .iter()
                    .any(|dir| file.strip_prefix(dir.as_str()) == Some("/hooks.json"))
            }),
            cached: Mutex::default(),
        }
    }

    /// The hooks as the files say now.
    ///
    /// A hook file that is missing is no hooks; a model-writable one over its bounds is
    /// ignored and reported (in the set's diagnostics); one that cannot be read or parsed is
    /// reported and makes [`Discovered::unusable`] say so.
    pub fn load(&self, files: &FileTools) -> Discovered {
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
        let parsed = self.parse(contents);
        problems.extend(parsed.problems);
        let unusable = (!problems.is_empty()).then(|| {
            let causes: Vec<String> = problems
                .iter()
                .map(|d| format!("`{}`: {}", d.source, d.message))
                .collect();
            format!(
                "hookbox denies every tool call while a hook file cannot be used (the gates it \
                 declares are unknown): {}; fix or remove the file",
                causes.join("; ")
            )
        });
        Discovered {
            hooks: parsed.hooks,
            problems,
            unusable,
        }
    }

    /// The parse of `contents`, from the cache when they did not change.
    fn parse(&self, contents: Vec<Option<String>>) -> Parsed {
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = cached.as_ref().filter(|found| found.contents == contents) {
            return found.clone();
        }
        let mut builder = sandbox_hooks_builder();
        let mut problems = Vec::new();
        for ((path, text), owner) in HOOK_FILES.iter().zip(&contents).zip(self.owner_files) {
            let Some(text) = text else { continue };
            let loaded = if owner {
                builder.load_str(path, text, Some(Dialect::Sandbox))
            } else {
                builder.load_model_writable(path, text, Some(Dialect::Sandbox))
            };
            if let Err(err) = loaded {
                problems.push(match err {
                    LoadError::Invalid(diagnostic) => *diagnostic,
                    LoadError::Read { .. } => problem(path, err.to_string()),
                });
            }
        }
        let parsed = Parsed {
            contents,
            hooks: Arc::new(builder.build()),
            problems,
        };
        *cached = Some(parsed.clone());
        parsed
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
        hint: Some("fix or remove the file; until then every tool call is denied".to_owned()),
    }
}
