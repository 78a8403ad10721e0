//! The files a session's settings and the repository's git configuration make the host run:
//! the settings files themselves, the scripts their command hooks name, and the paths git's
//! configuration names ([`super::git`]). The coding tools keep them read-only to the model
//! (`hookbox_env::CodingTools::protect_files`), and with them what the host would load because
//! of them: a script's whole directory (what it imports beside it: `json.py` beside `gate.py`),
//! a Python virtual environment it lies in, and for a Node script the `package.json` and
//! `node_modules` of every directory above it in the model's reach (Node reads them to start
//! the script). A missing path is masked (created empty on the host: a directory, or an empty
//! file for a configuration file git includes), so the model cannot create it. What cannot be
//! kept out of the model's reach is refused, with the reason: a script directly in a directory
//! the model writes in (its neighbours would be the model's), a hooks directory that is one.
//! How a command line is read, and what code run inline looks up in its working directory,
//! is [`super::inline`]'s.

use std::path::{Component, Path, PathBuf};

use hookbox_hooks::{Handler, HookSet};

use super::inline;

/// The variable Claude Code hook commands use for the project directory.
pub(crate) const PROJECT_DIR_VARIABLE: &str = "CLAUDE_PROJECT_DIR";

/// Extensions that make a file a script (run, not read as data).
const SCRIPT_EXTENSIONS: [&str; 16] = [
    "sh", "bash", "zsh", "py", "js", "mjs", "cjs", "ts", "mts", "cts", "rb", "pl", "pm", "php",
    "lua", "jq",
];

/// What an interpreter reads in every directory above a script it starts, by the script's
/// extension: one line per interpreter.
const READ_ABOVE: &[(&[&str], &[&str])] = &[(
    &["js", "mjs", "cjs", "ts", "mts", "cts"],
    &["package.json", "node_modules"],
)];

/// How the host uses a path a hook command or git's configuration names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// A configuration file it reads: kept read-only; a missing one is masked by an empty file.
    Config,
    /// A directory whose files it runs (git hooks): kept read-only; a missing one is masked by
    /// an empty directory.
    Dir,
    /// A word of a command it runs: a script is kept read-only with its directory (and what
    /// its interpreter reads above it); a data file alone; a missing script is masked.
    Command,
    /// A file an interpreter runs or a shell sources, whatever its name: kept as a script.
    Script,
    /// A name an interpreter looks up in its working directory and above (Node's
    /// `node_modules`): kept read-only; a missing one is masked by an empty directory, which
    /// the lookup passes over.
    LookedUp,
    /// A path that moves others (`core.worktree`): nothing of its own to protect.
    Data,
}

/// A path the host uses, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    /// The path, absolute.
    pub(crate) path: PathBuf,
    /// How it is used.
    pub(crate) used: Use,
}

/// The paths the command hooks of `hooks` name ([`inline::analyse`]): every word of a command
/// that contains a `/` or has a file extension, every script an interpreter runs or a shell
/// sources, and what an interpreter started without a script looks up in the working
/// directory and above; with `$CLAUDE_PROJECT_DIR` / `${CLAUDE_PROJECT_DIR}` replaced by
/// `project_dir` (relative ones are relative to it, the hooks' working directory).
pub(crate) fn hook_commands(hooks: &HookSet, project_dir: &Path) -> Vec<Named> {
    let dir = project_dir.display().to_string();
    let expand = |word: &String| {
        word.replace(&format!("${{{PROJECT_DIR_VARIABLE}}}"), &dir)
            .replace(&format!("${PROJECT_DIR_VARIABLE}"), &dir)
    };
    let mut named = Vec::new();
    for binding in hooks.bindings() {
        let Handler::Command(command) = &binding.handler else {
            continue;
        };
        let analysis = inline::analyse(&command.command);
        let words = analysis
            .words
            .iter()
            .map(expand)
            .filter(|w| names_a_file(w));
        let scripts = analysis.scripts.iter().map(expand);
        for (word, used) in words
            .map(|word| (word, Use::Command))
            .chain(scripts.map(|word| (word, Use::Script)))
        {
            if !word.contains('$') {
                named.push(Named {
                    path: project_dir.join(word),
                    used,
                });
            }
        }
        for above in project_dir.ancestors() {
            named.extend(analysis.looked_up.iter().map(|name| Named {
                path: above.join(name),
                used: Use::LookedUp,
            }));
        }
    }
    named
}

/// Whether a word of a command may name a file: it has a `/` or an extension.
pub(crate) fn names_a_file(word: &str) -> bool {
    word.contains('/') || Path::new(word).extension().is_some()
}

/// The paths to keep read-only to the model so that nothing `named` makes the host run or
/// read is the model's, where it writes beneath `roots` (canonical directories), masking
/// missing ones on the host; or why that cannot hold.
pub(crate) fn to_protect(named: &[Named], roots: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut paths = Vec::new();
    for item in named {
        let path = normalise(&item.path);
        let exists = std::fs::symlink_metadata(&path).is_ok();
        // An existing path is judged where it really lies too (a link from outside into the
        // project); the one named is kept as well, so a link on its route is refused.
        let real = path.canonicalize().ok().filter(|real| *real != path);
        for path in std::iter::once(path).chain(real) {
            let Some(root) = roots.iter().find(|root| path.starts_with(root)) else {
                continue;
            };
            if path == *root {
                if item.used == Use::Dir {
                    return Err(format!(
                        "git runs the hooks in {}, a directory the model writes in; set \
                         core.hooksPath to a directory of its own",
                        path.display()
                    ));
                }
                continue;
            }
            match item.used {
                Use::Config if !exists => mask(root, &path, Mask::File),
                Use::Dir | Use::LookedUp if !exists => mask(root, &path, Mask::Dir),
                Use::Command | Use::Script => {
                    paths.extend(command_paths(&path, root, item.used == Use::Script)?);
                    continue;
                }
                Use::Data => continue,
                _ => {}
            }
            paths.push(path);
        }
    }
    Ok(paths)
}

/// The paths to protect for `path`, a word of a command beneath writable `root` (`script`:
/// one that runs whatever its name).
fn command_paths(path: &Path, root: &Path, script: bool) -> Result<Vec<PathBuf>, String> {
    let script = script || is_script(path);
    let Ok(meta) = std::fs::metadata(path) else {
        if script {
            mask(root, path, Mask::Dir);
            return Ok(vec![path.to_path_buf()]);
        }
        return Ok(Vec::new());
    };
    if !meta.is_file() {
        return Ok(Vec::new());
    }
    if !script && std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 == 0 {
        return Ok(vec![path.to_path_buf()]);
    }
    let dir = path.parent().unwrap_or(root);
    if dir == root {
        return Err(format!(
            "{} is run on the host, and it lies directly in {}, a directory the model writes \
             in: what the script loads beside it would be the model's; move it to a directory \
             of its own (.claude/hooks/ is read-only in every session)",
            path.display(),
            root.display()
        ));
    }
    let mut paths = vec![dir.to_path_buf()];
    // A program in a Python virtual environment reads the environment's `pyvenv.cfg` and runs
    // its `site-packages/*.pth`: the whole environment.
    paths.extend(
        dir.ancestors()
            .take_while(|above| above.starts_with(root) && *above != root)
            .filter(|above| above.join("pyvenv.cfg").is_file())
            .map(Path::to_path_buf),
    );
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    for (extensions, entries) in READ_ABOVE {
        if !extensions.contains(&extension) {
            continue;
        }
        for above in dir.ancestors().skip(1).take_while(|a| a.starts_with(root)) {
            for entry in *entries {
                let entry = above.join(entry);
                if std::fs::symlink_metadata(&entry).is_err() {
                    mask(root, &entry, Mask::Dir);
                }
                paths.push(entry);
            }
        }
    }
    Ok(paths)
}

/// What masks a missing path.
#[derive(Clone, Copy)]
enum Mask {
    /// An empty file (a configuration file reads as empty).
    File,
    /// An empty directory (nothing can be written in it; running it fails).
    Dir,
}

/// Creates missing `path` (beneath `root`) empty on the host, with its missing directories,
/// following no link: on a link or any error nothing more is created (the protection of
/// `path` then refuses the sandbox, saying why).
fn mask(root: &Path, path: &Path, kind: Mask) {
    let Ok(relative) = path.strip_prefix(root) else {
        return;
    };
    let mut here = root.to_path_buf();
    let parts: Vec<Component> = relative.components().collect();
    for (index, part) in parts.iter().enumerate() {
        here.push(part);
        match std::fs::symlink_metadata(&here) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => return,
            Err(_) => {}
        }
        let last = index + 1 == parts.len();
        let made = match (last, kind) {
            (true, Mask::File) => std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&here)
                .map(drop),
            _ => std::fs::create_dir(&here),
        };
        if made.is_err() {
            return;
        }
    }
}

/// Whether `path` names a script by its extension.
fn is_script(path: &Path) -> bool {
    path.extension()
        .and_then(|extension| extension.to_str())
        .is_some_and(|extension| SCRIPT_EXTENSIONS.contains(&extension))
}

/// `path` with `.` and `..` resolved by name.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each hook command form and what a session keeps read-only for it, in a project holding
    /// `lib.sh` and `gate` at its top and `hooks/lib.sh`: the paths (relative), or words of
    /// the refusal. A new form is one line.
    const PROTECTED: &[(&str, Result<&[&str], &str>)] = &[
        ("python3 -c 'import json'", Ok(&[])),
        ("python3 -m gate", Ok(&[])),
        ("node -e \"require('x')\"", Ok(NODE)),
        ("node -p 1", Ok(NODE)),
        ("cat | node", Ok(NODE)),
        ("sh -c 'node -e 1'", Ok(NODE)),
        ("perl -e 1", Ok(&[])),
        ("bash -c '. hooks/lib.sh'", Ok(&["hooks"])),
        ("bash -c 'source lib.sh'", Err("lies directly in")),
        ("python3 gate", Err("lies directly in")),
        ("python3 hooks/lib.sh", Ok(&["hooks"])),
    ];

    const NODE: &[&str] = &["package.json", "node_modules"];

    #[test]
    fn every_hook_form_keeps_what_its_interpreter_loads_the_owners() {
        for (command, expected) in PROTECTED {
            let dir = tempfile::tempdir().unwrap();
            let project = dir.path().canonicalize().unwrap();
            std::fs::create_dir(project.join("hooks")).unwrap();
            for file in ["lib.sh", "gate", "hooks/lib.sh"] {
                std::fs::write(project.join(file), ":\n").unwrap();
            }
            let settings = serde_json::json!({"hooks": {"PreToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": command}]}]}});
            let mut builder = HookSet::builder();
            builder
                .load_str(
                    "settings",
                    &settings.to_string(),
                    Some(hookbox_hooks::Dialect::Sdk),
                )
                .unwrap();
            let named = hook_commands(&builder.build(), &project);
            let protected = to_protect(&named, std::slice::from_ref(&project));
            match (protected, expected) {
                (Ok(paths), Ok(expected)) => {
                    let paths: std::collections::BTreeSet<PathBuf> = paths
                        .iter()
                        .map(|path| path.strip_prefix(&project).unwrap().to_path_buf())
                        .collect();
                    let expected = expected.iter().map(PathBuf::from).collect();
                    assert_eq!(paths, expected, "{command}");
                    for path in &paths {
                        assert!(
                            project.join(path).exists(),
                            "{command}: {path:?} not masked"
                        );
                    }
                }
                (Err(why), Err(words)) => assert!(why.contains(words), "{command}: {why}"),
                (got, expected) => panic!("{command}: {got:?}, expected {expected:?}"),
            }
        }
    }
}
