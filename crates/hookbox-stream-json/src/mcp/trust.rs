//! The code of a stdio server, kept out of the model's hands. A server gets its configured
//! `env` (often a secret) and runs for the whole session, so its program and script must not be
//! the model's to rewrite: each file its command names (the program when it is a path, every
//! argument with a `/` or an extension, as a hook script is found in a hook's command) that
//! lies where the model writes is kept read-only to the model with its whole directory (what
//! the script imports beside it), as hook scripts are: bound read-only in the sandbox, and
//! `Write` / `Edit` of it ask in every mode but `bypassPermissions`; a missing one is protected
//! too (a missing script is masked, as a hook script is), so the model cannot create it for a
//! later session. A server is refused instead when that cannot hold: its existing file lies
//! directly in the working directory or an added one (making that read-only would stop the
//! session's work), or is reached through a link or directory there that the model could point
//! elsewhere. Directories named as arguments (a filesystem server's root) are data, left as
//! they are.

use std::path::{Path, PathBuf};

use super::config::{ServerConfig, Transport};
use super::writable::{Place, Writable};

/// Keeps the stdio `servers`' files read-only to the model: returns the paths to protect, and turns a server whose files cannot be protected into [`Transport::Refused`],
/// saying why and what to do. Relative paths are relative to `cwd`, where servers start.
pub(crate) fn secure(
    servers: &mut [ServerConfig],
    writable: &Writable,
    cwd: &Path,
) -> Vec<PathBuf> {
    let mut protected = Vec::new();
    for server in servers {
        let Transport::Stdio { command, args, .. } = &server.transport else {
            continue;
        };
        let named = std::iter::once(command)
            .filter(|command| command.contains('/'))
            .chain(args.iter().filter(|arg| names_a_file(arg)));
        let mut dirs = Vec::new();
        let mut refusal = None;
        for word in named {
            match to_protect(word, writable, cwd) {
                Ok(paths) => dirs.extend(paths),
                Err(why) => {
                    refusal = Some(format!(
                        "refused: {why}; hookbox keeps an MCP server's program and script, and \
                         the directory holding them, read-only to the model, since the server \
                         runs with its configured env; keep the server in a directory of its \
                         own: .claude/mcp/{name}/ (read-only in every session) or mcp/{name}/",
                        name = server.name
                    ));
                    break;
                }
            }
        }
        match refusal {
            Some(why) => server.transport = Transport::Refused(why),
            None => protected.extend(dirs),
        }
    }
    protected
}

/// Whether a word of a command may name a file: it has a `/` or an extension.
fn names_a_file(word: &str) -> bool {
    word.contains('/') || Path::new(word).extension().is_some()
}

/// The paths to protect for file `word`: none when the model cannot change it (out of its
/// reach) or it is a directory; an existing file's directory; for a missing file, the nearest
/// existing directory above it, or the file itself (masked) when that is the working or an
/// added directory. An error saying why when an existing file cannot be protected.
fn to_protect(word: &str, writable: &Writable, cwd: &Path) -> Result<Vec<PathBuf>, String> {
    let file = match writable.place(&cwd.join(word)) {
        Place::Safe => return Ok(Vec::new()),
        Place::Through(entry) => {
            return Err(format!(
                "`{word}` is reached through {}, which the model can change (a link, or a \
                 directory it could replace by one); name the file by its real path",
                entry.display()
            ));
        }
        Place::Inside(file) => file,
    };
    let exists = match std::fs::symlink_metadata(&file) {
        Ok(meta) if meta.is_file() => true,
        Ok(_) => return Ok(Vec::new()),
        Err(_) => false,
    };
    let mut dir = file.parent();
    while let Some(here) = dir.filter(|here| !exists && !here.exists()) {
        dir = here.parent();
    }
    match dir.filter(|dir| !writable.is_root(dir)) {
        Some(dir) => Ok(vec![dir.to_path_buf()]),
        None if !exists => Ok(vec![file]),
        None => Err(format!(
            "`{word}` is {}, directly in a directory the model writes in (the session's \
             working directory or an --add-dir), which cannot be made read-only",
            file.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every place of a server's files, one line each: the command and arguments (relative
    /// to the project), and the directories protected or the refusal's words.
    #[test]
    fn every_server_file_is_protected_or_refused() {
        let scratch = tempfile::tempdir().unwrap();
        let base = scratch.path().canonicalize().unwrap();
        for dir in ["project/mcp/s", "outside"] {
            std::fs::create_dir_all(base.join(dir)).unwrap();
        }
        for file in [
            "project/mcp/s/server.py",
            "project/top.py",
            "outside/server.py",
        ] {
            std::fs::write(base.join(file), "x").unwrap();
        }
        std::os::unix::fs::symlink(base.join("outside"), base.join("project/link")).unwrap();
        std::os::unix::fs::symlink(base.join("project/mcp/s"), base.join("outside/in")).unwrap();
        let cwd = base.join("project");
        let outside = base.join("outside/server.py").display().to_string();
        let into = base.join("outside/in/server.py").display().to_string();
        let protected = |dir: &str| Ok(vec![base.join(dir)]);
        let refused = |words: &str| Err(words.to_owned());
        /// The directories protected, or words of the refusal.
        type Outcome = Result<Vec<PathBuf>, String>;
        let cases: Vec<(&str, Vec<&str>, Outcome)> = vec![
            (
                "python3",
                vec!["mcp/s/server.py"],
                protected("project/mcp/s"),
            ),
            (
                "python3",
                vec!["./mcp/s/server.py", "-v"],
                protected("project/mcp/s"),
            ),
            ("mcp/s/server.py", vec![], protected("project/mcp/s")),
            ("python3", vec![&into], protected("project/mcp/s")),
            ("python3", vec![&outside], Ok(vec![])),
            ("python3", vec!["-m", "pkg"], Ok(vec![])),
            (
                "python3",
                vec!["mcp/s/missing.py"],
                protected("project/mcp/s"),
            ),
            ("python3", vec!["new.py"], protected("project/new.py")),
            (
                "python3",
                vec!["new/dir/s.py"],
                protected("project/new/dir/s.py"),
            ),
            ("python3", vec!["mcp/new/s.py"], protected("project/mcp")),
            ("python3", vec!["mcp/s"], Ok(vec![])),
            (
                "python3",
                vec!["top.py"],
                refused("directly in a directory the model"),
            ),
            (
                "./top.py",
                vec![],
                refused("directly in a directory the model"),
            ),
            (
                "python3",
                vec!["link/server.py"],
                refused("is reached through"),
            ),
        ];
        for (command, args, expected) in cases {
            let mut servers = vec![ServerConfig {
                name: "s".to_owned(),
                kind: "stdio".to_owned(),
                source: "test".to_owned(),
                transport: Transport::Stdio {
                    command: command.to_owned(),
                    args: args.iter().map(|arg| (*arg).to_owned()).collect(),
                    env: Vec::new(),
                },
            }];
            let dirs = secure(&mut servers, &Writable::new([cwd.clone()]), &cwd);
            let got = match &servers[0].transport {
                Transport::Refused(why) => Err(why.clone()),
                _ => Ok(dirs),
            };
            match (&got, &expected) {
                (Err(why), Err(words)) => assert!(
                    why.contains(words) && why.contains("mcp/s/"),
                    "{command} {args:?}: {why}"
                ),
                _ => assert_eq!(got, expected, "{command} {args:?}"),
            }
        }
    }
}
