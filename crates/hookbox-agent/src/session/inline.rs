//! Hook commands whose code has no script file of its own: `python3 -c '…'`, `python3 -m mod`,
//! `node -e '…'`, `perl -e '…'`, `bash -c '…'`, or code fed on stdin. Such an interpreter
//! looks for what the code loads in its working directory, which for a settings hook is the
//! project: the model's. Each row of [`INTERPRETERS`] says how an inline start is told and
//! what keeps that lookup the owner's ([`Guard`]):
//!
//! * Python puts the working directory first on `sys.path`. What the code imports from there
//!   cannot be listed in advance (`json`, `sitecustomize`, any name), so the hook runs with
//!   `PYTHONSAFEPATH=1`, which keeps the working directory off `sys.path`. A script hook does
//!   not get it: its directory is protected instead, and it may import its neighbours.
//! * Node resolves a package the code requires through the `node_modules` and `package.json`
//!   of the working directory and of every directory above it: those are kept read-only
//!   (masked when missing), as above a Node script.
//! * Perl (5.26 and later) has no `.` in `@INC`: nothing to keep.
//! * A shell's code is a command line: it is read as one, and a file it sources (`. x`,
//!   `source x`, which bash looks for in the working directory too) is protected as a script.
//!
//! An invocation is inline unless a script follows its options: erring on that side costs a
//! script its neighbour imports, never a lookup among the model's files. Only a command's
//! first words are taken for its program (after assignments and wrappers such as `env`), so
//! `grep node x` starts no Node.

use std::path::Path;

use futures_util::future::BoxFuture;
use hookbox_exec::{ExecError, ProcessOutput};
use hookbox_hooks::{CommandRequest, CommandRunner, HostCommandRunner};

/// What keeps an inline start's working-directory lookup the owner's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guard {
    /// This variable is set for the hook.
    Env(&'static str, &'static str),
    /// These names in the working directory and every directory above it are protected.
    Protect(&'static [&'static str]),
    /// The code is a shell command line, read as one.
    Shell,
    /// The interpreter looks up nothing in its working directory.
    Nothing,
}

/// An interpreter: how its inline starts are told apart from script starts, and their guard.
struct Interpreter {
    /// Program names; a name followed by a version (`python3.12`) is the same interpreter.
    names: &'static [&'static str],
    /// Options that make the start inline; the next word is their code or module. A cluster
    /// of short options ending in one (`-ec`) counts.
    inline: &'static [&'static str],
    /// Other options whose argument is the next word.
    with_argument: &'static [&'static str],
    /// What keeps an inline start's lookup the owner's.
    guard: Guard,
}

/// One row per interpreter.
const INTERPRETERS: &[Interpreter] = &[
    Interpreter {
        names: &["python", "python3", "pypy", "pypy3"],
        inline: &["-c", "-m", "-"],
        with_argument: &["-W", "-X", "--check-hash-based-pycs"],
        guard: Guard::Env("PYTHONSAFEPATH", "1"),
    },
    Interpreter {
        names: &["node", "nodejs"],
        inline: &[
            "-e",
            "--eval",
            "-p",
            "--print",
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "-",
        ],
        with_argument: &["--input-type", "-C", "--conditions", "--title"],
        guard: Guard::Protect(&["package.json", "node_modules"]),
    },
    Interpreter {
        names: &["perl"],
        inline: &["-e", "-E", "-"],
        with_argument: &["-I"],
        guard: Guard::Nothing,
    },
    Interpreter {
        names: &["sh", "bash", "dash", "zsh", "ksh"],
        inline: &["-c"],
        with_argument: &["-o", "-O", "--rcfile", "--init-file"],
        guard: Guard::Shell,
    },
];

/// Programs that run the command that follows them (with their own options and, for
/// `timeout`, a duration).
const WRAPPERS: &[&str] = &["env", "exec", "command", "nice", "nohup", "time", "timeout"];

/// What a hook command line makes the host run and look up.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// Its words that may name files, without the code of inline starts (a shell's code is
    /// read for its own).
    pub(crate) words: Vec<String>,
    /// Words an interpreter runs or a shell sources whatever their names: scripts.
    pub(crate) scripts: Vec<String>,
    /// Names looked up in the working directory and every directory above it.
    pub(crate) looked_up: Vec<&'static str>,
    /// Variables the command must run with.
    pub(crate) env: Vec<(&'static str, &'static str)>,
}

/// Reads `command`, a shell command line.
pub(crate) fn analyse(command: &str) -> Analysis {
    let mut analysis = Analysis::default();
    add(&mut analysis, command, 0);
    analysis.looked_up.dedup();
    analysis.env.dedup();
    analysis
}

/// Runs hook commands as `host` does, each with the variables its inline starts need
/// ([`Analysis::env`]) added.
pub(crate) struct GuardedRunner {
    /// The runner of every command.
    pub(crate) host: HostCommandRunner,
}

impl CommandRunner for GuardedRunner {
    fn run(&self, request: CommandRequest) -> BoxFuture<'_, Result<ProcessOutput, ExecError>> {
        let env = analyse(&request.command).env;
        if env.is_empty() {
            return self.host.run(request);
        }
        let mut host = self.host.clone();
        host.env.extend(
            env.into_iter()
                .map(|(name, value)| (name.into(), value.into())),
        );
        Box::pin(async move { host.run(request).await })
    }
}

/// Shell code nested deeper than this (`sh -c "sh -c '…'"`) is not read further; its words
/// still count as the outer code's.
const MAX_NESTING: usize = 8;

/// Adds what shell code `command` runs and looks up to `analysis`.
fn add(analysis: &mut Analysis, command: &str, depth: usize) {
    let (commands, targets) = simple_commands(command);
    analysis.words.extend(targets);
    for simple in commands {
        let start = program_start(&simple);
        let Some(program) = simple.get(start) else {
            analysis.words.extend(simple);
            continue;
        };
        analysis.words.extend(simple[..=start].iter().cloned());
        let rest = &simple[start + 1..];
        if program == "." || program == "source" {
            analysis.scripts.extend(rest.first().cloned());
            analysis.words.extend(rest.iter().cloned());
            continue;
        }
        let Some(interpreter) = interpreter(program) else {
            analysis.words.extend(rest.iter().cloned());
            continue;
        };
        let mut at = 0;
        let mut inline = true;
        while let Some(word) = rest.get(at) {
            if is_inline_option(interpreter, word) {
                let code = rest.get(at + 1);
                match (interpreter.guard, code) {
                    (Guard::Shell, Some(code)) if depth < MAX_NESTING => {
                        add(analysis, code, depth + 1);
                    }
                    (Guard::Shell, Some(code)) => analysis.words.push(code.clone()),
                    _ => {}
                }
                analysis.words.extend(rest.iter().skip(at + 2).cloned());
                break;
            }
            if interpreter.with_argument.contains(&word.as_str()) {
                analysis
                    .words
                    .extend(rest.get(at..at + 2).into_iter().flatten().cloned());
                at += 2;
                continue;
            }
            if word.starts_with('-') {
                analysis.words.push(word.clone());
                at += 1;
                continue;
            }
            inline = false;
            analysis.scripts.push(word.clone());
            analysis.words.extend(rest[at..].iter().cloned());
            break;
        }
        if !inline {
            continue;
        }
        match interpreter.guard {
            Guard::Env(name, value) => analysis.env.push((name, value)),
            Guard::Protect(names) => analysis.looked_up.extend(names),
            Guard::Shell | Guard::Nothing => {}
        }
    }
}

/// The index of the program in `simple`, past assignments and wrappers with their options.
fn program_start(simple: &[String]) -> usize {
    let mut at = 0;
    let mut wrapped = false;
    while let Some(word) = simple.get(at) {
        let assignment = word
            .split_once('=')
            .is_some_and(|(name, _)| !name.is_empty() && !name.contains('/'));
        let wrapper = WRAPPERS.contains(&word.as_str());
        let wrapper_argument = wrapped
            && (word.starts_with('-') || word.chars().all(|c| c.is_ascii_digit() || c == '.'));
        if !(assignment || wrapper || wrapper_argument) {
            break;
        }
        wrapped |= wrapper;
        at += 1;
    }
    at
}

/// The interpreter `program` (a path or a name) starts, if it is one of [`INTERPRETERS`].
fn interpreter(program: &str) -> Option<&'static Interpreter> {
    let name = Path::new(program).file_name()?.to_str()?;
    INTERPRETERS.iter().find(|interpreter| {
        interpreter.names.iter().any(|known| {
            name.strip_prefix(known)
                .is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
        })
    })
}

/// Whether `word` is an option of `interpreter` that makes its start inline.
fn is_inline_option(interpreter: &Interpreter, word: &str) -> bool {
    if interpreter.inline.contains(&word) {
        return true;
    }
    let Some(cluster) = word.strip_prefix('-') else {
        return false;
    };
    !cluster.starts_with('-')
        && cluster.chars().all(|c| c.is_ascii_alphabetic())
        && cluster
            .chars()
            .last()
            .is_some_and(|last| interpreter.inline.contains(&format!("-{last}").as_str()))
}

/// The simple commands of a shell command line, roughly: words split at blanks, quotes
/// removed, a new command after each control operator (`;`, `|`, `&`, parentheses, backquote,
/// newline); and apart, the targets of its redirections (`python3 < x.py` runs no script,
/// but its shell reads `x.py`).
fn simple_commands(command: &str) -> (Vec<Vec<String>>, Vec<String>) {
    let mut commands = Vec::new();
    let mut targets = Vec::new();
    let mut simple: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut redirected = false;
    for character in command.chars() {
        let ends = match (quote, character) {
            (Some(open), c) if c == open => {
                quote = None;
                false
            }
            (Some(_), c) => {
                word.push(c);
                false
            }
            (None, '\'' | '"') => {
                quote = Some(character);
                false
            }
            (None, c) if c.is_whitespace() || ";|&()`<>".contains(c) => true,
            (None, c) => {
                word.push(c);
                false
            }
        };
        if !ends {
            continue;
        }
        if !word.is_empty() {
            let done = std::mem::take(&mut word);
            if std::mem::take(&mut redirected) {
                targets.push(done);
            } else {
                simple.push(done);
            }
        }
        if "<>".contains(character) {
            redirected = true;
        } else if ";|&()`\n".contains(character) {
            redirected = false;
            if !simple.is_empty() {
                commands.push(std::mem::take(&mut simple));
            }
        }
    }
    if !word.is_empty() {
        if redirected {
            targets.push(word);
        } else {
            simple.push(word);
        }
    }
    if !simple.is_empty() {
        commands.push(simple);
    }
    (commands, targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each hook command form: the scripts, the names looked up in the working directory and
    /// the variables it must run with. A new form is one line.
    #[expect(clippy::type_complexity, reason = "a table of cases")]
    const CASES: &[(&str, &[&str], &[&str], &[(&str, &str)])] = &[
        ("python3 -c 'import json'", &[], &[], &[SAFE]),
        ("python3 -Ic 'import json'", &[], &[], &[SAFE]),
        ("python3 -m gate", &[], &[], &[SAFE]),
        ("/usr/bin/python3.12 -u -m gate --x", &[], &[], &[SAFE]),
        ("python3 - <<'EOF'", &[], &[], &[SAFE]),
        ("python3 < .claude/hooks/gate.py", &[], &[], &[SAFE]),
        ("cat | python3", &[], &[], &[SAFE]),
        ("env A=1 python3 -W ignore -c x", &[], &[], &[SAFE]),
        ("timeout 5 python3 -c x", &[], &[], &[SAFE]),
        ("python3 scripts/gate.py", &["scripts/gate.py"], &[], &[]),
        ("python3 -W ignore gate.py -c x", &["gate.py"], &[], &[]),
        ("python3 gate", &["gate"], &[], &[]),
        ("node -e \"require('x')\"", &[], NODE, &[]),
        ("node -p 1", &[], NODE, &[]),
        ("node --require x tools/gate.js", &[], NODE, &[]),
        ("nodejs", &[], NODE, &[]),
        ("node tools/gate.js", &["tools/gate.js"], &[], &[]),
        ("perl -e 'use strict'", &[], &[], &[]),
        ("perl -I lib gate.pl", &["gate.pl"], &[], &[]),
        ("bash -c 'source x'", &["x"], &[], &[]),
        (
            "sh -ec '. lib/x.sh; python3 -c 1'",
            &["lib/x.sh"],
            &[],
            &[SAFE],
        ),
        ("bash -c \"node -e 1\"", &[], NODE, &[]),
        ("bash gate.sh", &["gate.sh"], &[], &[]),
        ("source lib.sh && jq .", &["lib.sh"], &[], &[]),
        ("grep node x | jq -r .python", &[], &[], &[]),
        ("echo python3 -c x", &[], &[], &[]),
    ];

    const SAFE: (&str, &str) = ("PYTHONSAFEPATH", "1");
    const NODE: &[&str] = &["package.json", "node_modules"];

    #[test]
    fn every_inline_form_is_guarded_and_every_script_named() {
        for (command, scripts, looked_up, env) in CASES {
            let analysis = analyse(command);
            assert_eq!(analysis.scripts, *scripts, "{command}: scripts");
            assert_eq!(analysis.looked_up, *looked_up, "{command}: looked up");
            assert_eq!(analysis.env, *env, "{command}: env");
        }
    }

    #[test]
    fn words_drop_quotes_and_split_at_operators() {
        let analysis = analyse(
            r#"python3 "$CLAUDE_PROJECT_DIR"/.claude/hooks/x.py|jq -r '.a b'; ./run.sh>out"#,
        );
        assert_eq!(
            analysis.words,
            [
                "out",
                "python3",
                "$CLAUDE_PROJECT_DIR/.claude/hooks/x.py",
                "jq",
                "-r",
                ".a b",
                "./run.sh"
            ]
        );
    }

    #[test]
    fn inline_code_is_no_word_and_shell_code_is_read() {
        let analysis = analyse("python3 -c 'open(\"a/b.py\")' && bash -c 'python3 s/x.py'");
        assert!(!analysis.words.iter().any(|word| word.contains("b.py")));
        assert!(analysis.words.contains(&"s/x.py".to_owned()));
        assert!(!analysis.words.iter().any(|word| word.contains(' ')));
        let analysis = analyse("python3 < .claude/hooks/gate.py > out");
        assert_eq!(analysis.words, [".claude/hooks/gate.py", "out", "python3"]);
    }
}
