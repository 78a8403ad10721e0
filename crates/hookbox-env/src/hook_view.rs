//! Where owner hooks see their own directories: on a path no model-writable directory lies on.
//!
//! An interpreter starting a hook looks around its script for its configuration: Node reads
//! the nearest `package.json` (`"type": "module"` turns a CommonJS gate into a crash) and
//! searches `node_modules` upwards, other tools look for `pyvenv.cfg`, `Gemfile`,
//! `.ruby-version`, `.perltidyrc`… An owner's `/workspace/.agents` is read-only to the model,
//! but its parent `/workspace` is the model's, so whatever the model puts there would be read
//! as the gate starts. So each owner directory below a model-writable one is also bound
//! read-only at [`HOOK_VIEW`] followed by its own path (`/.hookbox/workspace/.agents`), whose
//! ancestors are the sandbox's own read-only root; and a hook command's literal words naming
//! it (the words the owner's door checks, see `hook_check`) are mapped there before it runs.
//! The hook's working directory `/` is read-only already, and `/.agents` lies right below it.

use std::path::Path;

use hookbox_exec::Bind;

use crate::hook_check;

/// The sandbox directory below which hooks see the owner's directories (the sandbox's own:
/// no source may write there).
pub(crate) const HOOK_VIEW: &str = "/.hookbox";

/// The protected directories (sandbox paths) that lie below a model-writable directory: all
/// but those right below `/`.
fn nested(protected: &[String]) -> impl Iterator<Item = &str> {
    protected
        .iter()
        .map(String::as_str)
        .filter(|dir| dir.trim_start_matches('/').contains('/'))
}

/// The read-only binds of the owner's `protected` directories below a model-writable one, from
/// the environment root `root`, at their places in [`HOOK_VIEW`].
pub(crate) fn binds(root: &Path, protected: &[String]) -> Vec<Bind> {
    nested(protected)
        .map(|dir| Bind {
            host: root.join(dir.trim_start_matches('/')),
            target: format!("{HOOK_VIEW}{dir}").into(),
            writable: false,
        })
        .collect()
}

/// `command` with every literal word naming one of the `protected` directories below a
/// model-writable one, or a path in it, mapped into [`HOOK_VIEW`]: however the door's check
/// spells it (see `hook_check::named_path`: `--opt=PATH`, `//`, `.`, `..`).
pub(crate) fn map_command(command: &str, protected: &[String]) -> String {
    let mut mapped = String::with_capacity(command.len());
    let mut copied = 0;
    for word in hook_check::literal_words(command) {
        let Some((start, path)) = hook_check::named_path(word) else {
            continue;
        };
        let names_dir = nested(protected).any(|dir| {
            path.strip_prefix(dir)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        if names_dir {
            let word_start = word.as_ptr() as usize - command.as_ptr() as usize;
            mapped.push_str(&command[copied..word_start + start]);
            mapped.push_str(HOOK_VIEW);
            mapped.push_str(&path);
            copied = word_start + word.len();
        }
    }
    mapped.push_str(&command[copied..]);
    mapped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_paths_in_the_owners_workspace_directory_are_mapped() {
        let protected = ["/.agents".to_owned(), "/workspace/.agents".to_owned()];
        for (command, expected) in [
            (
                "node /workspace/.agents/gate.js",
                "node /.hookbox/workspace/.agents/gate.js",
            ),
            (
                "cd /workspace/.agents && python3 '/workspace/.agents/a b.py'",
                "cd /.hookbox/workspace/.agents && python3 '/.hookbox/workspace/.agents/a b.py'",
            ),
            ("python3 /.agents/gate.py", "python3 /.agents/gate.py"),
            (
                "node --require=/workspace/.agents/loader.js /workspace//.agents/gate.js",
                "node --require=/.hookbox/workspace/.agents/loader.js \
                 /.hookbox/workspace/.agents/gate.js",
            ),
            (
                "NODE_OPTIONS=--require=/workspace/.agents/l.js node /workspace/./.agents/g.js",
                "NODE_OPTIONS=--require=/.hookbox/workspace/.agents/l.js \
                 node /.hookbox/workspace/.agents/g.js",
            ),
            (
                "sh /workspace/x/../.agents/a.sh /workspace/.agents/",
                "sh /.hookbox/workspace/.agents/a.sh /.hookbox/workspace/.agents",
            ),
            (
                "cat /workspace/.agents/../x a=/workspace/y",
                "cat /workspace/.agents/../x a=/workspace/y",
            ),
            (
                "cat /workspace/.agentsx /workspace/a/.agents/x x/workspace/.agents/y",
                "cat /workspace/.agentsx /workspace/a/.agents/x x/workspace/.agents/y",
            ),
            (
                "sh /workspace/.agents/$NAME; ls /workspace/.agents/*",
                "sh /workspace/.agents/$NAME; ls /workspace/.agents/*",
            ),
        ] {
            assert_eq!(map_command(command, &protected), expected, "{command}");
        }
        assert_eq!(
            map_command("node /workspace/.agents/gate.js", &["/.agents".to_owned()]),
            "node /workspace/.agents/gate.js",
            "a directory the owner did not supply is the model's: nothing to protect"
        );
    }
}
