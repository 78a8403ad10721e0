//! `hookbox check`: validate config files and show what each defines.

use std::process::ExitCode;

use hookbox_agent::sandbox_hooks_builder;
use hookbox_hooks::startable::StartContext;
use hookbox_hooks::{Diagnostic, Dialect, HookSet, LoadError, Severity};
use serde_json::{Value, json};

use crate::cli::CheckArgs;
use crate::render;

/// What checking one file found.
struct FileReport {
    path: String,
    hooks: Option<HookSet>,
    diagnostics: Vec<Diagnostic>,
}

impl FileReport {
    fn valid(&self) -> bool {
        self.hooks.is_some()
            && !self
                .diagnostics
                .iter()
                .any(|d| d.severity == Severity::Error)
    }
}

pub(crate) fn run(args: &CheckArgs) -> anyhow::Result<ExitCode> {
    let reports: Vec<FileReport> = args
        .paths
        .iter()
        .map(|path| {
            let mut builder = sandbox_hooks_builder();
            let loaded = builder
                .load_file(path, args.dialect.map(Into::into))
                .map(|_| ());
            let path = path.display().to_string();
            match loaded {
                Ok(()) => {
                    let hooks = builder.build();
                    let mut diagnostics = hooks.diagnostics().to_vec();
                    diagnostics.extend(start_problems(&hooks, args.allow_missing));
                    FileReport {
                        path,
                        hooks: Some(hooks),
                        diagnostics,
                    }
                }
                Err(LoadError::Invalid(diagnostic)) => FileReport {
                    path,
                    hooks: None,
                    diagnostics: vec![*diagnostic],
                },
                Err(err @ LoadError::Read { .. }) => FileReport {
                    diagnostics: vec![Diagnostic {
                        severity: Severity::Error,
                        source: path.clone(),
                        json_path: "$".to_owned(),
                        message: err.to_string(),
                        hint: Some("check the path and its permissions".to_owned()),
                    }],
                    path,
                    hooks: None,
                },
            }
        })
        .collect();
    let mut reports = reports;
    add_precedence(&mut reports, args);
    let valid = reports.iter().all(FileReport::valid);
    if args.json {
        let files: Vec<Value> = reports.iter().map(report_json).collect();
        render::print_json(&json!({ "valid": valid, "files": files }))?;
    } else {
        render::print_text(&reports.iter().map(report_text).collect::<String>())?;
    }
    Ok(ExitCode::from(if valid { 0 } else { 1 }))
}

/// The command hooks of `hooks` that cannot start as they would run from here: in this
/// directory (the project the agent runs in, `$CLAUDE_PROJECT_DIR` and `$GEMINI_PROJECT_DIR`
/// when they are not set) with this `PATH`. Errors, or warnings with `allow_missing`.
fn start_problems(hooks: &HookSet, allow_missing: bool) -> Vec<Diagnostic> {
    let cwd = std::env::current_dir().ok();
    let project = cwd.as_ref().map(|cwd| cwd.display().to_string());
    let variables = ["CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "HOME"]
        .into_iter()
        .filter_map(|name| {
            let value = std::env::var(name)
                .ok()
                .or_else(|| (name != "HOME").then(|| project.clone()).flatten())?;
            Some((name.to_owned(), value))
        })
        .collect();
    let here = StartContext {
        cwd,
        path: std::env::var_os("PATH"),
        variables,
        programs_only: false,
    };
    let mut problems = hookbox_hooks::startable::start_problems(hooks, &here);
    if allow_missing {
        for problem in &mut problems {
            problem.severity = Severity::Warning;
        }
    }
    problems
}

/// Adds to each sandbox-dialect file's report what loading the files together, in the order
/// given (the trust order, e.g. `/.agents/hooks.json` then `/workspace/.agents/hooks.json`),
/// says about it: a group that an earlier file already defines is ignored.
fn add_precedence(reports: &mut [FileReport], args: &CheckArgs) {
    let sandbox: Vec<usize> = (0..reports.len())
        .filter(|&index| {
            reports[index].hooks.as_ref().is_some_and(|hooks| {
                hooks
                    .sources()
                    .first()
                    .is_some_and(|source| source.dialect == Dialect::Sandbox)
            })
        })
        .collect();
    if sandbox.len() < 2 {
        return;
    }
    let mut together = sandbox_hooks_builder();
    for &index in &sandbox {
        // Each loaded alone a moment ago; a failure now only means no precedence report.
        let _ = together.load_file(&args.paths[index], Some(Dialect::Sandbox));
    }
    let together = together.build();
    for &index in &sandbox {
        let report = &mut reports[index];
        let added: Vec<Diagnostic> = together
            .diagnostics()
            .iter()
            .filter(|d| d.source == report.path && !report.diagnostics.contains(d))
            .cloned()
            .collect();
        report.diagnostics.extend(added);
    }
}

fn report_json(report: &FileReport) -> Value {
    let (dialect, groups, bindings) = match &report.hooks {
        Some(hooks) => {
            let source = hooks.sources().first();
            let groups: Vec<Value> = source
                .map(|source| {
                    source
                        .groups
                        .iter()
                        .map(|group| json!({"name": group.name, "enabled": group.enabled}))
                        .collect()
                })
                .unwrap_or_default();
            let bindings: Vec<Value> = hooks.bindings().map(render::binding_json).collect();
            (source.map(|source| json!(source.dialect)), groups, bindings)
        }
        None => (None, Vec::new(), Vec::new()),
    };
    json!({
        "path": report.path,
        "valid": report.valid(),
        "dialect": dialect,
        "groups": groups,
        "bindings": bindings,
        "diagnostics": report.diagnostics,
    })
}

fn report_text(report: &FileReport) -> String {
    let mut text = String::new();
    match &report.hooks {
        Some(hooks) => {
            if let Some(source) = hooks.sources().first() {
                let dialect = match source.dialect {
                    hookbox_hooks::Dialect::Sandbox => "sandbox",
                    hookbox_hooks::Dialect::Sdk => "sdk",
                };
                text.push_str(&format!("{} ({dialect} dialect)\n", report.path));
                for group in source.groups.iter().filter(|group| !group.enabled) {
                    text.push_str(&format!("  group {} is disabled\n", group.name));
                }
            }
            let mut any = false;
            for binding in hooks.bindings() {
                any = true;
                text.push_str(&format!("  {}\n", render::binding_line(binding)));
            }
            if !any {
                text.push_str("  (no active hooks)\n");
            }
        }
        None => text.push_str(&format!("{} (not loaded)\n", report.path)),
    }
    for diagnostic in &report.diagnostics {
        text.push_str(&format!("{diagnostic}\n"));
    }
    let errors = report
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = report.diagnostics.len() - errors;
    let verdict = if report.valid() { "valid" } else { "INVALID" };
    text.push_str(&format!(
        "{}: {verdict} ({errors} errors, {warnings} warnings)\n\n",
        report.path
    ));
    text
}
