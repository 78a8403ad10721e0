//! Whether a command hook can start at all: its program (and, under an interpreter, its script)
//! is there. A gate that cannot start fails open on every call (`sh` exits 127, `python3`
//! exits 2), so `hookbox check` and `hookbox install` look before it is relied on.
//!
//! The command is read the way `/bin/sh -c` will run it, but only as far as it can be judged
//! for certain: a command with quoting, escapes, redirections, pipes, lists, subshells,
//! globs, comments or a leading assignment is left alone, as is a program that is the shell's
//! own (`cd`, `exec`, `test`…) (`/bin/sh` is a POSIX shell: no brace expansion), a word with a variable this check does not know, a relative
//! path when the working directory is not known, and an interpreter option other than the few
//! that take no argument. Only what certainly cannot start is reported.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::diagnostic::{Diagnostic, Severity};
use crate::handler::Handler;
use crate::hookset::HookSet;

/// Characters after which the command is shell syntax this check does not interpret.
const SHELL_SYNTAX: &[char] = &[
    '\'', '"', '\\', '`', ';', '&', '|', '<', '>', '(', ')', '*', '?', '[', ']', '~', '#', '\n',
];

/// The shell's own commands and keywords: found without `PATH`, so never missing.
const SHELL_OWN: &[&str] = &[
    ".", ":", "[", "!", "{", "}", "alias", "bg", "break", "case", "cd", "command", "continue",
    "do", "done", "echo", "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fc",
    "fg", "fi", "for", "function", "getopts", "hash", "if", "in", "jobs", "kill", "local",
    "printf", "pwd", "read", "readonly", "return", "select", "set", "shift", "source", "test",
    "then", "time", "times", "trap", "true", "type", "ulimit", "umask", "unalias", "unset",
    "until", "wait", "while",
];

/// Interpreters whose first non-option argument is a script file, with the options that take
/// no argument (any other option, such as `-c`, `-m` or `-e`, means there is no script to check).
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("sh", &["-e", "-u", "-x", "-eu", "-ex", "-eux"]),
    ("bash", &["-e", "-u", "-x", "-eu", "-ex", "-eux"]),
    ("dash", &["-e", "-u", "-x", "-eu", "-ex", "-eux"]),
    ("zsh", &["-e", "-u", "-x"]),
    (
        "python",
        &["-u", "-B", "-E", "-I", "-O", "-OO", "-s", "-S", "-q"],
    ),
    (
        "python3",
        &["-u", "-B", "-E", "-I", "-O", "-OO", "-s", "-S", "-q"],
    ),
    ("node", &[]),
    ("ruby", &["-w"]),
    ("perl", &["-w", "-T"]),
];

/// The file names `node FILE` tries for `FILE`.
const NODE_SUFFIXES: &[&str] = &["", ".js", ".mjs", ".cjs", ".json", ".node"];

/// Where a command hook will run, as far as it is known.
#[derive(Debug, Clone, Default)]
pub struct StartContext {
    /// The working directory it starts in (`None`: not known, relative paths are not judged).
    pub cwd: Option<PathBuf>,
    /// The `PATH` it gets (`None`: not known, programs found on it are not judged).
    pub path: Option<std::ffi::OsString>,
    /// Variables whose values it will have (`CLAUDE_PROJECT_DIR`…): `$NAME` or `${NAME}` at
    /// the start of a word is replaced by its value.
    pub variables: Vec<(String, String)>,
    /// Only programs looked up on `PATH` or named by a path in a system directory the sandbox
    /// takes from this host ([`hookbox_exec::HOST_SYSTEM_DIRS`]) are judged, not other files
    /// named by path: for hooks that run where paths name another filesystem (an
    /// environment's sandbox, whose system directories are this host's).
    pub programs_only: bool,
}

/// One error per command hook of `hooks` that cannot start, at its handler's JSON path.
pub fn start_problems(hooks: &HookSet, context: &StartContext) -> Vec<Diagnostic> {
    hooks
        .bindings()
        .filter_map(|binding| {
            let Handler::Command(command) = &binding.handler else {
                return None;
            };
            let message = cannot_start(&command.command, context)?;
            Some(Diagnostic {
                severity: Severity::Error,
                source: binding.origin.source.clone(),
                json_path: binding.origin.json_path.clone(),
                message: format!("command hook `{}` cannot start: {message}", command.command),
                hint: Some(
                    "fix the path (a gate that cannot start lets every call through), or pass \
                     --allow-missing if it exists only where the hook runs (then check it there)"
                        .to_owned(),
                ),
            })
        })
        .collect()
}

/// Why `command` certainly cannot start in `context`, or `None` when it can or cannot be told.
pub fn cannot_start(command: &str, context: &StartContext) -> Option<String> {
    if command.contains(SHELL_SYNTAX) {
        return None;
    }
    let mut words = command.split_whitespace();
    let program = words.next()?;
    if program.contains('=') || SHELL_OWN.contains(&program) {
        return None;
    }
    let program = expand(program, context)?;
    if context.programs_only && program.contains('/') && !on_host_in_sandbox(&program) {
        return None;
    }
    if let Some(problem) = missing_program(&program, context) {
        return Some(problem);
    }
    if context.programs_only {
        return None;
    }
    let name = Path::new(&program).file_name()?.to_str()?;
    let name = if name.starts_with("python3.") {
        "python3"
    } else {
        name
    };
    let (interpreter, flags) = INTERPRETERS.iter().find(|(known, _)| *known == name)?;
    let script = words.find(|word| !flags.contains(word))?;
    if script.starts_with('-') {
        return None;
    }
    let script = resolve(&expand(script, context)?, context)?;
    missing_script(interpreter, &script)
}

/// Whether the absolute `path` is below a system directory a sandbox takes from this host, so
/// it names the same file inside as here.
fn on_host_in_sandbox(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let top = rest.split('/').next().unwrap_or_default();
    hookbox_exec::HOST_SYSTEM_DIRS.contains(&top) && !rest.split('/').any(|part| part == "..")
}

/// `word` with a known `$NAME` or `${NAME}` at its start replaced; `None` when it holds a
/// variable that is not known.
fn expand(word: &str, context: &StartContext) -> Option<String> {
    let Some(rest) = word.strip_prefix('$') else {
        return (!word.contains('$')).then(|| word.to_owned());
    };
    let (name, tail) = match rest.strip_prefix('{') {
        Some(braced) => {
            let end = braced.find('}')?;
            (&braced[..end], &braced[end + 1..])
        }
        None => {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            (&rest[..end], &rest[end..])
        }
    };
    if tail.contains('$') {
        return None;
    }
    let (_, value) = context.variables.iter().find(|(known, _)| known == name)?;
    Some(format!("{value}{tail}"))
}

/// `path` against the working directory; `None` when it is relative and that is not known.
fn resolve(path: &str, context: &StartContext) -> Option<PathBuf> {
    let path = Path::new(path.trim_start_matches("./"));
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    context.cwd.as_ref().map(|cwd| cwd.join(path))
}

/// Why `program` cannot be started, if it certainly cannot.
fn missing_program(program: &str, context: &StartContext) -> Option<String> {
    if program.contains('/') {
        let path = resolve(program, context)?;
        return match std::fs::metadata(&path) {
            Err(_) => Some(format!("{} does not exist", path.display())),
            Ok(meta) if meta.is_dir() => Some(format!("{} is a directory", path.display())),
            Ok(meta) if meta.permissions().mode() & 0o111 == 0 => Some(format!(
                "{} is not executable (chmod +x it, or run it with its interpreter)",
                path.display()
            )),
            Ok(_) => None,
        };
    }
    let search = context.path.as_deref()?;
    let found = std::env::split_paths(search).any(|dir| {
        // An empty `PATH` entry is the working directory.
        let dir = if dir.as_os_str().is_empty() {
            match &context.cwd {
                Some(cwd) => cwd.clone(),
                None => return true,
            }
        } else {
            dir
        };
        std::fs::metadata(dir.join(program))
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    });
    (!found).then(|| {
        format!(
            "`{program}` is not on the PATH the hook gets ({})",
            search.to_string_lossy()
        )
    })
}

/// Why `interpreter` cannot run `script`, if it certainly cannot.
fn missing_script(interpreter: &str, script: &Path) -> Option<String> {
    let suffixes: &[&str] = if interpreter == "node" {
        NODE_SUFFIXES
    } else {
        &[""]
    };
    let mut candidates = suffixes.iter().map(|suffix| {
        let mut name = script.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name)
    });
    let Some(found) = candidates.find(|candidate| candidate.exists()) else {
        return Some(format!(
            "the script {} does not exist ({interpreter} exits with an error)",
            script.display()
        ));
    };
    // Only Python runs a directory (its `__main__.py`); a shell reads one as an empty script
    // and exits 0, so such a gate would be silently absent.
    if found.is_dir() {
        return match interpreter.starts_with("python") {
            true if found.join("__main__.py").is_file() => None,
            true => Some(format!(
                "{} is a directory without a __main__.py ({interpreter} exits with an error)",
                found.display()
            )),
            false => Some(format!(
                "{} is a directory, not a script ({interpreter} would run nothing)",
                found.display()
            )),
        };
    }
    std::fs::File::open(&found)
        .err()
        .map(|err| format!("the script {} cannot be read: {err}", found.display()))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// Every row: a command (`%` is a directory holding `gate.py`, `gate.sh`, `gate.js`,
    /// `run` (executable), `plain` (not executable) and `sub/`; the hook runs in `%`, with
    /// `PATH=%/bin`, which holds the programs named here, and `CLAUDE_PROJECT_DIR=%`) and the start of what is wrong with
    /// it (`None`: it can start, or cannot be told). A new case is one line.
    const CASES: &[(&str, Option<&str>)] = &[
        // Programs.
        ("%/run", None),
        ("%/runn", Some("%/runn does not exist")),
        ("%/plain", Some("%/plain is not executable")),
        ("%/sub", Some("%/sub is a directory")),
        ("./run --flag", None),
        ("./runn", Some("%/runn does not exist")),
        ("sub/../run", None),
        ("$CLAUDE_PROJECT_DIR/run", None),
        ("${CLAUDE_PROJECT_DIR}/runn", Some("%/runn does not exist")),
        ("$CLAUDE_PROJECT_DIR/runn", Some("%/runn does not exist")),
        ("cat", None),
        (
            "no-such-gate-program",
            Some("`no-such-gate-program` is not on the PATH"),
        ),
        (
            "no-such-gate-program arg",
            Some("`no-such-gate-program` is not on the PATH"),
        ),
        // Scripts under an interpreter.
        ("python3 %/gate.py", None),
        (
            "python3 %/gaet.py",
            Some("the script %/gaet.py does not exist"),
        ),
        (
            "python3 -u %/gaet.py",
            Some("the script %/gaet.py does not exist"),
        ),
        (
            "python3 gaet.py",
            Some("the script %/gaet.py does not exist"),
        ),
        (
            "python3 $CLAUDE_PROJECT_DIR/gaet.py",
            Some("the script %/gaet.py does not exist"),
        ),
        ("python3 $CLAUDE_PROJECT_DIR/gate.py --strict", None),
        (
            "python3 %/sub",
            Some("%/sub is a directory without a __main__.py"),
        ),
        ("sh %/sub", Some("%/sub is a directory, not a script")),
        ("bash %/sub/", Some("%/sub/ is a directory, not a script")),
        ("node %/gate.js", None),
        ("node %/gate", None),
        (
            "node %/gaet.js",
            Some("the script %/gaet.js does not exist"),
        ),
        ("bash %/gate.sh", None),
        ("sh gate.sh", None),
        ("sh %/gaet.sh", Some("the script %/gaet.sh does not exist")),
        (
            "bash -eu %/gaet.sh",
            Some("the script %/gaet.sh does not exist"),
        ),
        ("python3", None),
        // What cannot be told is left alone.
        ("python3 -m gate", None),
        ("python3 -c pass", None),
        ("node -e 1", None),
        ("bash -c %/gaet.sh", None),
        ("python3 $UNKNOWN/gaet.py", None),
        ("$UNKNOWN/runn", None),
        ("python3 '%/gaet.py'", None),
        ("%/runn | cat", None),
        ("cat > /dev/null; echo '{}'", None),
        ("FOO=1 %/runn", None),
        ("cd DIR && ./runn", None),
        ("exec %/runn", None),
        ("test -x %/runn", None),
        ("%/runn$SUFFIX", None),
    ];

    #[test]
    fn each_command_is_judged_as_the_shell_would_start_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().to_str().expect("utf-8");
        for (name, mode) in [
            ("gate.py", 0o644),
            ("gate.sh", 0o644),
            ("gate.js", 0o644),
            ("run", 0o755),
            ("plain", 0o644),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, "").expect("write");
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("mode");
        }
        std::fs::create_dir(dir.path().join("sub")).expect("sub");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        for program in ["python3", "node", "bash", "sh", "cat"] {
            std::fs::write(bin.join(program), "").expect("program");
            std::fs::set_permissions(bin.join(program), std::fs::Permissions::from_mode(0o755))
                .expect("mode");
        }
        let context = StartContext {
            cwd: Some(dir.path().to_path_buf()),
            path: Some(bin.into_os_string()),
            variables: vec![("CLAUDE_PROJECT_DIR".to_owned(), root.to_owned())],
            programs_only: false,
        };
        let mut wrong = Vec::new();
        for &(command, expected) in CASES {
            let command = command.replace('%', root);
            let got = cannot_start(&command, &context);
            let expected = expected.map(|text| text.replace('%', root));
            let matches = match (&got, &expected) {
                (None, None) => true,
                (Some(got), Some(expected)) => got.starts_with(expected.as_str()),
                _ => false,
            };
            if !matches {
                wrong.push(format!("{command}: got {got:?}, expected {expected:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// In a sandbox (`programs_only`), only a program looked up on `PATH` or named by a path in
    /// a system directory the sandbox takes from this host is judged.
    #[test]
    fn programs_only_judges_names_on_path_and_system_paths_and_leaves_other_paths_alone() {
        let context = StartContext {
            cwd: Some(PathBuf::from("/")),
            path: Some("/nonexistent-bin".into()),
            variables: Vec::new(),
            programs_only: true,
        };
        for (command, problem) in [
            (
                "python3 /.agents/gaet.py",
                Some("`python3` is not on the PATH"),
            ),
            ("/.agents/gaet.sh", None),
            ("./gaet.sh", None),
            ("/workspace/gaet.sh", None),
            (
                "/usr/bin/no-such-gate-program --check",
                Some("/usr/bin/no-such-gate-program does not exist"),
            ),
            (
                "/bin/no-such-gate-program",
                Some("/bin/no-such-gate-program does not exist"),
            ),
            (
                "/sbin/no-such-gate-program",
                Some("/sbin/no-such-gate-program does not exist"),
            ),
            (
                "/lib/no-such-gate-program",
                Some("/lib/no-such-gate-program does not exist"),
            ),
            ("/usr/bin", Some("/usr/bin is a directory")),
            ("/bin/sh -c true", None),
            ("/usr/bin/env true", None),
            ("/usrx/gate", None),
        ] {
            let got = cannot_start(command, &context);
            assert_eq!(
                got.as_deref()
                    .map(|got| problem.is_some_and(|p| got.starts_with(p))),
                problem.map(|_| true),
                "{command}: {got:?}"
            );
        }
    }

    #[test]
    fn without_a_working_directory_or_path_relative_paths_and_names_are_not_judged() {
        let context = StartContext::default();
        for command in ["./runn", "python3 gaet.py", "no-such-gate-program"] {
            assert_eq!(cannot_start(command, &context), None, "{command}");
        }
        assert!(
            cannot_start("/nonexistent/gate", &context)
                .is_some_and(|problem| problem.contains("does not exist"))
        );
    }
}
