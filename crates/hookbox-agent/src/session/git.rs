//! What git, run later on the host by the user (`git status`, `git commit`), reads and runs
//! from the paths its configuration names. `.git` is read-only to the model, but the
//! configuration can point into the work tree: `core.hooksPath = .husky` runs the hooks there,
//! `include.path = ../.gitconfig` reads more configuration from there (a `core.fsmonitor`
//! command, say), a driver's command names a script there. At session start the configuration
//! is resolved as git would resolve it (the system, global and repository files, every
//! `include` and every `includeIf` whatever its condition), and every path it names is
//! returned with how git uses it ([`KEYS`]), for the session to keep read-only to the model.

use std::path::{Path, PathBuf};

use super::inline;
use super::protect::{self, Named, Use};

/// How git uses each key's value: the key (`section.name`, or `section.*.name` for any
/// subsection; compared as git does, section and name case-insensitively) and its use. A key
/// that names a path or runs a command is one line here.
pub(crate) const KEYS: &[(&str, Use)] = &[
    ("include.path", Use::Config),
    ("includeif.*.path", Use::Config),
    ("core.hookspath", Use::Dir),
    ("init.templatedir", Use::Dir),
    ("core.worktree", Use::Data),
    ("core.fsmonitor", Use::Command),
    ("core.sshcommand", Use::Command),
    ("core.editor", Use::Command),
    ("core.pager", Use::Command),
    ("core.askpass", Use::Command),
    ("core.gitproxy", Use::Command),
    ("sequence.editor", Use::Command),
    ("diff.external", Use::Command),
    ("diff.*.command", Use::Command),
    ("diff.*.textconv", Use::Command),
    ("merge.*.driver", Use::Command),
    ("filter.*.clean", Use::Command),
    ("filter.*.smudge", Use::Command),
    ("filter.*.process", Use::Command),
    ("pager.*", Use::Command),
    ("alias.*", Use::Command),
    ("credential.helper", Use::Command),
    ("credential.*.helper", Use::Command),
    ("gpg.program", Use::Command),
    ("gpg.*.program", Use::Command),
    ("gpg.ssh.defaultkeycommand", Use::Command),
    ("hook.*.command", Use::Command),
    ("difftool.*.cmd", Use::Command),
    ("mergetool.*.cmd", Use::Command),
    ("interactive.difffilter", Use::Command),
    ("remote.*.uploadpack", Use::Command),
    ("remote.*.receivepack", Use::Command),
    ("uploadpack.packobjectshook", Use::Command),
    ("core.alternaterefscommand", Use::Command),
    ("trailer.*.cmd", Use::Command),
    ("trailer.*.command", Use::Command),
    ("difftool.*.path", Use::Command),
    ("mergetool.*.path", Use::Command),
    ("browser.*.cmd", Use::Command),
    ("browser.*.path", Use::Command),
    ("man.*.cmd", Use::Command),
    ("man.*.path", Use::Command),
    ("sendemail.sendmailcmd", Use::Command),
];

/// Include files followed at most in depth (git's own limit).
const MAX_DEPTH: usize = 10;

/// Largest configuration file read.
const MAX_FILE: u64 = 1024 * 1024;

/// The paths git's configuration names for a repository holding `cwd` (none outside one),
/// with the configuration files themselves; `env` is the environment git runs with (its
/// `HOME`, `XDG_CONFIG_HOME`, `GIT_CONFIG_*`).
pub(crate) fn named_paths(cwd: &Path, env: &dyn Fn(&str) -> Option<String>) -> Vec<Named> {
    let home = env("HOME").map(PathBuf::from);
    let mut files: Vec<PathBuf> = Vec::new();
    if env("GIT_CONFIG_NOSYSTEM").is_none() {
        files.push(
            env("GIT_CONFIG_SYSTEM").map_or_else(|| PathBuf::from("/etc/gitconfig"), PathBuf::from),
        );
    }
    match env("GIT_CONFIG_GLOBAL") {
        Some(global) => files.push(PathBuf::from(global)),
        None => {
            let xdg = env("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|home| home.join(".config")));
            files.extend(xdg.map(|xdg| xdg.join("git/config")));
            files.extend(home.as_ref().map(|home| home.join(".gitconfig")));
        }
    }
    let Some(repo) = discover(cwd) else {
        return Vec::new();
    };
    files.push(repo.common.join("config"));
    // Read only when it exists: a missing one is in the git directory, which a mask there
    // would only clutter (the git directory in the project is read-only as a whole).
    files.extend(Some(repo.gitdir.join("config.worktree")).filter(|file| file.exists()));
    let mut resolver = Resolver {
        home,
        top: repo.top,
        named: Vec::new(),
        entries: Vec::new(),
    };
    for file in files {
        resolver.read(&file, 0);
    }
    // Then what the environment gives (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`,
    // `GIT_CONFIG_VALUE_<n>`), which git reads after every file.
    let count = env("GIT_CONFIG_COUNT").and_then(|count| count.trim().parse::<usize>().ok());
    for n in 0..count.unwrap_or(0).min(MAX_ENV_ENTRIES) {
        let key = env(&format!("GIT_CONFIG_KEY_{n}"));
        let value = env(&format!("GIT_CONFIG_VALUE_{n}"));
        let (Some(key), Some(value)) = (key, value) else {
            continue;
        };
        if use_of(&key) == Some(Use::Config) {
            let included = resolver.expand(&value, &resolver.top.clone());
            resolver.read(&included, 1);
        }
        resolver.entries.push((key, value));
    }
    resolver.finish()
}

/// Entries read from the environment at most (git's own bound is its environment's size).
const MAX_ENV_ENTRIES: usize = 1024;

/// A repository as git finds it from a directory: its git directory, the common one (of the
/// main work tree, for a linked one) and the top of its work tree.
struct Repository {
    gitdir: PathBuf,
    common: PathBuf,
    top: PathBuf,
}

/// The repository holding `dir`, found as git finds it: the nearest `.git` directory, or
/// `.git` file naming one (`gitdir: PATH`), in `dir` or above it.
fn discover(dir: &Path) -> Option<Repository> {
    for top in dir.ancestors() {
        let dot_git = top.join(".git");
        let Ok(meta) = std::fs::metadata(&dot_git) else {
            continue;
        };
        let gitdir = if meta.is_dir() {
            dot_git
        } else {
            let text = read_bounded(&dot_git)?;
            let named = text.lines().find_map(|line| line.strip_prefix("gitdir:"))?;
            top.join(named.trim())
        };
        if !gitdir.join("HEAD").exists() {
            continue;
        }
        let common = read_bounded(&gitdir.join("commondir"))
            .map_or_else(|| gitdir.clone(), |text| gitdir.join(text.trim()));
        return Some(Repository {
            gitdir,
            common,
            top: top.to_path_buf(),
        });
    }
    None
}

/// The configuration being read, and what it names.
struct Resolver {
    home: Option<PathBuf>,
    /// The top of the work tree, where git runs hooks and drivers (relative paths start here).
    top: PathBuf,
    named: Vec<Named>,
    /// Every `(key, value)` read, in order.
    entries: Vec<(String, String)>,
}

impl Resolver {
    /// Reads configuration file `file` (included at `depth`), following its includes.
    fn read(&mut self, file: &Path, depth: usize) {
        self.named.push(Named {
            path: file.to_path_buf(),
            used: Use::Config,
        });
        if depth > MAX_DEPTH {
            return;
        }
        let Some(text) = read_bounded(file) else {
            return;
        };
        for (key, value) in parse(&text) {
            if use_of(&key) == Some(Use::Config) {
                let included = self.expand(&value, file.parent().unwrap_or(Path::new("/")));
                self.read(&included, depth + 1);
            }
            self.entries.push((key, value));
        }
    }

    /// The paths every entry names, `core.worktree` moving the top first.
    fn finish(mut self) -> Vec<Named> {
        if let Some((_, worktree)) = self
            .entries
            .iter()
            .rev()
            .find(|(key, _)| key.eq_ignore_ascii_case("core.worktree"))
        {
            self.top = self.expand(worktree, &self.top.clone());
        }
        let entries = std::mem::take(&mut self.entries);
        for (key, value) in entries {
            match use_of(&key) {
                Some(Use::Dir) => self.named.push(Named {
                    path: self.expand(&value, &self.top.clone()),
                    used: Use::Dir,
                }),
                Some(Use::Command) => {
                    let command = value.strip_prefix('!').unwrap_or(&value);
                    let analysis = inline::analyse(command);
                    let words = analysis
                        .words
                        .into_iter()
                        .filter(|w| protect::names_a_file(w));
                    let words = words
                        .map(|word| (word, Use::Command))
                        .chain(analysis.scripts.into_iter().map(|word| (word, Use::Script)));
                    for (word, used) in words.filter(|(word, _)| !word.contains('$')) {
                        let path = self.expand(&word, &self.top.clone());
                        self.named.push(Named { path, used });
                    }
                    // Git runs it in the work tree's top.
                    for above in self.top.clone().ancestors() {
                        self.named
                            .extend(analysis.looked_up.iter().map(|name| Named {
                                path: above.join(name),
                                used: Use::LookedUp,
                            }));
                    }
                }
                _ => {}
            }
        }
        self.named
    }

    /// Path `value` as git expands it: `~/` is the home directory, a relative path is
    /// relative to `base`.
    fn expand(&self, value: &str, base: &Path) -> PathBuf {
        match (value.strip_prefix("~/"), &self.home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => base.join(value),
        }
    }
}

/// How git uses `key`, per [`KEYS`].
fn use_of(key: &str) -> Option<Use> {
    let (section, rest) = key.split_once('.')?;
    let (subsection, name) = match rest.rsplit_once('.') {
        Some((subsection, name)) => (Some(subsection), name),
        None => (None, rest),
    };
    KEYS.iter().find_map(|(pattern, used)| {
        let parts: Vec<&str> = pattern.split('.').collect();
        let matches = match (parts.as_slice(), subsection) {
            ([s, "*"], _) => s.eq_ignore_ascii_case(section),
            ([s, n], None) => s.eq_ignore_ascii_case(section) && n.eq_ignore_ascii_case(name),
            ([s, "*", n], Some(_)) => {
                s.eq_ignore_ascii_case(section) && n.eq_ignore_ascii_case(name)
            }
            ([s, sub, n], Some(subsection)) => {
                s.eq_ignore_ascii_case(section)
                    && sub.eq_ignore_ascii_case(subsection)
                    && n.eq_ignore_ascii_case(name)
            }
            _ => false,
        };
        matches.then_some(*used)
    })
}

/// The text of regular file `path` (links followed), when it is at most [`MAX_FILE`] long.
fn read_bounded(path: &Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_FILE {
        return None;
    }
    std::fs::read(path)
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

/// The `(section[.subsection].name, value)` entries of git configuration `text`, in order:
/// `[section]`, `[section "subsection"]` and `[section.subsection]` headers, `name = value`
/// (quotes, escapes and `\` line continuations as git reads them; a name alone is `true`),
/// `#` and `;` comments; like git, a leading byte-order mark is skipped and a carriage return
/// before a line feed is part of the line end.
fn parse(text: &str) -> Vec<(String, String)> {
    let text = text
        .strip_prefix('\u{feff}')
        .unwrap_or(text)
        .replace("\r\n", "\n");
    let mut entries = Vec::new();
    let mut section = String::new();
    let mut chars = text.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c == '#' || c == ';' {
            for c in chars.by_ref() {
                if c == '\n' {
                    break;
                }
            }
        } else if c == '[' {
            chars.next();
            section = header(&mut chars);
        } else if c.is_ascii_alphanumeric() {
            let mut name = String::new();
            while let Some(&c) = chars.peek() {
                if c.is_ascii_alphanumeric() || c == '-' {
                    name.push(c);
                    chars.next();
                } else {
                    break;
                }
            }
            while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
                chars.next();
            }
            let value = if chars.peek() == Some(&'=') {
                chars.next();
                value(&mut chars)
            } else {
                "true".to_owned()
            };
            entries.push((format!("{section}.{name}"), value));
        } else {
            // Not configuration git would accept: skip the line.
            for c in chars.by_ref() {
                if c == '\n' {
                    break;
                }
            }
        }
    }
    entries
}

/// A section header after its `[`: `section`, `section "sub"` or `section.sub`.
fn header(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut name = String::new();
    while let Some(c) = chars.next() {
        match c {
            ']' => return name,
            '"' => {
                name.push('.');
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => name.extend(chars.next()),
                        c => name.push(c),
                    }
                }
            }
            ' ' | '\t' => {}
            c => name.push(c),
        }
    }
    name
}

/// A value after its `=`, to the end of its (continued) line.
fn value(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> String {
    let mut value = String::new();
    let mut quoted = false;
    // Blanks not yet kept: kept only if more of the value follows.
    let mut blanks = String::new();
    while let Some(c) = chars.next() {
        match c {
            '\n' => break,
            '"' => {
                value.push_str(&std::mem::take(&mut blanks));
                quoted = !quoted;
            }
            '#' | ';' if !quoted => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                break;
            }
            ' ' | '\t' if !quoted => {
                if !value.is_empty() {
                    blanks.push(c);
                }
            }
            '\\' => {
                value.push_str(&std::mem::take(&mut blanks));
                match chars.next() {
                    Some('\n') | None => {}
                    Some('n') => value.push('\n'),
                    Some('t') => value.push('\t'),
                    Some('b') => {
                        value.pop();
                    }
                    Some(other) => value.push(other),
                }
            }
            c => {
                value.push_str(&std::mem::take(&mut blanks));
                value.push(c);
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_is_read_as_git_reads_it() {
        let text = "# c\n[core]\n\thooksPath = .husky ; note\n[diff \"x\"]\n\ttextconv = \"sh \
                    a\\\"b\" \\\nc.sh\n[alias.Sub]\nbare\n[include]path=../inc";
        let entries = parse(text);
        assert_eq!(
            entries,
            [
                ("core.hooksPath".to_owned(), ".husky".to_owned()),
                ("diff.x.textconv".to_owned(), "sh a\"b c.sh".to_owned()),
                ("alias.Sub.bare".to_owned(), "true".to_owned()),
                ("include.path".to_owned(), "../inc".to_owned()),
            ]
        );
        assert_eq!(use_of("diff.x.textconv"), Some(Use::Command));
        assert_eq!(use_of("diff.textconv"), None);
        assert_eq!(use_of("CORE.HOOKSPATH"), Some(Use::Dir));
        assert_eq!(use_of("includeIf.gitdir:~/w/.path"), Some(Use::Config));
        assert_eq!(use_of("alias.st"), Some(Use::Command));
        assert_eq!(use_of("user.name"), None);
    }

    #[test]
    fn configuration_from_the_environment_is_read_after_the_files() {
        let project = tempfile::tempdir().expect("project");
        let top = project.path().canonicalize().expect("top");
        std::fs::create_dir(top.join(".git")).expect(".git");
        std::fs::write(top.join(".git/HEAD"), "ref: refs/heads/main\n").expect("HEAD");
        std::fs::write(top.join(".git/config"), "").expect("config");
        let env = |name: &str| {
            match name {
                "GIT_CONFIG_NOSYSTEM" => Some("1"),
                "GIT_CONFIG_GLOBAL" => Some("/dev/null"),
                "GIT_CONFIG_COUNT" => Some("2"),
                "GIT_CONFIG_KEY_0" => Some("core.hooksPath"),
                "GIT_CONFIG_VALUE_0" => Some(".githooks"),
                "GIT_CONFIG_KEY_1" => Some("core.fsmonitor"),
                "GIT_CONFIG_VALUE_1" => Some("tools/fsmon.sh"),
                _ => None,
            }
            .map(str::to_owned)
        };
        let named = named_paths(&top, &env);
        let has = |path: &str, used: Use| {
            named
                .iter()
                .any(|named| named.path == top.join(path) && named.used == used)
        };
        assert!(has(".githooks", Use::Dir), "{named:?}");
        assert!(has("tools/fsmon.sh", Use::Command), "{named:?}");
    }
}
