//! Warm interpreters for the daemon's command hooks. A hook of the owner's (managed, user or
//! `--policy` file; a project file's hooks run sandboxed as before) whose command is exactly
//! `python3 SCRIPT.py [ARG…]` or `python SCRIPT.py [ARG…]`, every word plain (letters, digits
//! and `_-./:=@%+,` only: nothing the shell would expand, quote, redirect or separate), runs
//! forked from a zygote of the interpreter that the caller's `PATH` names
//! ([`hookbox_exec::PythonZygotes`]) instead of through `sh -c`; every other hook, and every
//! hook of a caller whose `HOOKBOX_WARM_INTERPRETERS` is `off` (or `0`, `false`, `no`), runs
//! as before, and so does one whose zygote cannot be used.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use hookbox_exec::{CpuShare, ExecError, ProcessOutput, ProcessSpec, PythonZygotes};
use hookbox_hooks::{
    CommandRequest, CommandRunner, HANDLER_OUTPUT_LIMIT, ProjectCommandRunner, Trust,
};

/// What a command runner returns (`futures_util`'s `BoxFuture`).
type Running<'a> = Pin<Box<dyn Future<Output = Result<ProcessOutput, ExecError>> + Send + 'a>>;

/// The caller's variable that turns warm interpreters off.
pub(crate) const WARM_VARIABLE: &str = "HOOKBOX_WARM_INTERPRETERS";

/// The daemon's command runner: warm Python for the hooks that qualify, `cold` for the rest.
pub(super) struct WarmPython {
    /// How every other hook runs (and one whose zygote cannot be used).
    pub(super) cold: ProjectCommandRunner,
    /// The daemon's zygotes.
    pub(super) zygotes: Arc<PythonZygotes>,
}

impl CommandRunner for WarmPython {
    fn run(&self, request: CommandRequest) -> Running<'_> {
        let Some(spec) = self.warm_spec(&request) else {
            return self.cold.run(request);
        };
        Box::pin(async move {
            match self.zygotes.run(&spec).await {
                Some(output) => output,
                None => self.cold.run(request).await,
            }
        })
    }
}

impl WarmPython {
    /// The warm run of `request`, when it qualifies (see the module's documentation).
    fn warm_spec(&self, request: &CommandRequest) -> Option<ProcessSpec> {
        let host = &self.cold.host;
        if request.trust != Trust::Owner || !host.env_clear || !enabled(&host.env) {
            return None;
        }
        let (interpreter, args) = python_command(&request.command)?;
        let path = host.env.iter().rev().find(|(name, _)| name == "PATH")?;
        Some(ProcessSpec {
            program: on_path(interpreter, &path.1)?.into_os_string(),
            args,
            cwd: host.cwd.clone(),
            env_clear: true,
            env: host.env.clone(),
            stdin: request.stdin.clone(),
            timeout: request.timeout,
            output_limit: HANDLER_OUTPUT_LIMIT,
            die_with_parent: true,
            sandbox: None,
            cpu: CpuShare::Hook,
        })
    }
}

/// Whether `env` leaves warm interpreters on.
fn enabled(env: &[(OsString, OsString)]) -> bool {
    env.iter()
        .rev()
        .find(|(name, _)| name == WARM_VARIABLE)
        .is_none_or(|(_, value)| {
            !matches!(
                value.to_string_lossy().to_ascii_lowercase().as_str(),
                "off" | "0" | "false" | "no"
            )
        })
}

/// The interpreter's name and the arguments (script first) of `command` when it is exactly
/// `python3 SCRIPT.py [ARG…]` or `python SCRIPT.py [ARG…]` in plain words.
fn python_command(command: &str) -> Option<(&str, Vec<OsString>)> {
    let mut words = command.split([' ', '\t']).filter(|word| !word.is_empty());
    let interpreter = words
        .next()
        .filter(|name| matches!(*name, "python3" | "python"))?;
    let args: Vec<&str> = words.collect();
    let script = args.first()?;
    let plain = |word: &&str| {
        word.bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"_-./:=@%+,".contains(&byte))
    };
    if !script.ends_with(".py") || script.starts_with('-') || !args.iter().all(plain) {
        return None;
    }
    Some((interpreter, args.into_iter().map(OsString::from).collect()))
}

/// Where `sh` would find `name` on `path`: the first executable file of that name in its
/// directories; `None` when a directory is not absolute (relative to the working directory,
/// left to `sh`) or none has it.
fn on_path(name: &str, path: &OsString) -> Option<PathBuf> {
    for dir in std::env::split_paths(path) {
        if !dir.is_absolute() {
            return None;
        }
        let candidate = dir.join(name);
        let executable = std::fs::metadata(&candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0);
        if executable {
            return Some(candidate);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn only_plain_python_script_commands_qualify() {
        let args = |command| python_command(command).map(|(_, args)| args);
        assert_eq!(
            args("python3 /srv/gate.py --strict a=b"),
            Some(vec!["/srv/gate.py".into(), "--strict".into(), "a=b".into()])
        );
        assert!(python_command("python  gate.py").is_some());
        for command in [
            "python3 gate.py; rm -rf x",
            "python3 gate.py > out",
            "python3 $HOME/gate.py",
            "python3 'gate.py'",
            "python3 ~/gate.py",
            "python3 gate.py\nrm x",
            "python3 -c 'print(1)'",
            "python3 -m gate.py",
            "python3 gate.sh",
            "python3",
            "python3.11 gate.py",
            "/usr/bin/python3 gate.py",
            "env python3 gate.py",
            "python3 gate.py #",
            "python3 g*.py",
        ] {
            assert_eq!(python_command(command), None, "{command:?}");
        }
    }

    #[test]
    fn the_switch_turns_warm_interpreters_off() {
        let env = |value: &str| vec![(OsString::from(WARM_VARIABLE), OsString::from(value))];
        assert!(enabled(&[]));
        assert!(enabled(&env("on")));
        for value in ["off", "OFF", "0", "false", "no"] {
            assert!(!enabled(&env(value)), "{value}");
        }
    }

    #[test]
    fn the_interpreter_is_found_on_the_callers_path_only_through_absolute_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin");
        let python = bin.join("python3");
        std::fs::write(&python, "").expect("write");
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).expect("path");
        assert_eq!(on_path("python3", &path(&[dir.path(), &bin])), None);
        std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(on_path("python3", &path(&[dir.path(), &bin])), Some(python));
        assert_eq!(on_path("python3", &path(&[Path::new("rel"), &bin])), None);
    }
}
