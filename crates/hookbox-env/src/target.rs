//! Where a source lands in the sandbox, and which places a source may not write.

use std::fmt;

use crate::json::SpecError;
use crate::sandbox_path::SandboxPath;

/// Top-level names the sandbox takes from the host or owns itself (besides `lib*` and the hooks'
/// view of the owner's directories); no source may write there.
const SYSTEM_DIRS: &[&str] = &[
    "usr", "bin", "sbin", "etc", "proc", "sys", "dev", "tmp", "run", "var", "boot", "root", "home",
    "opt", "srv", "mnt", "media",
];

/// A validated source target: a path below `/` outside the system directories.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Target(SandboxPath);

impl Target {
    /// Validates `text` (relative to `/`; a leading `/` is accepted), reporting errors at `path`.
    pub(crate) fn parse(text: &str, path: &str) -> Result<Self, SpecError> {
        let parsed =
            SandboxPath::parse(text, "").map_err(|p| SpecError::new(path, p.explain(text)))?;
        let Some(top) = parsed.top() else {
            return Err(SpecError::new(
                path,
                format!(
                    "target `{text}` is the sandbox root; name a file or directory below it, \
                     e.g. `workspace/{}`",
                    text.trim_matches(['/', '.'])
                ),
            ));
        };
        if is_system(top) {
            return Err(SpecError::new(
                path,
                format!(
                    "target `{text}` is inside `/{top}`, a system directory of the sandbox; put \
                     sources under `workspace/` or `.agents/` (or another top-level name that is \
                     not one of: {}, lib*)",
                    SYSTEM_DIRS.join(", ")
                ),
            ));
        }
        Ok(Self(parsed))
    }

    /// A target built from a path already known to be valid (a default target).
    pub(crate) fn from_path(path: SandboxPath) -> Self {
        Self(path)
    }

    /// The sandbox path.
    pub(crate) fn path(&self) -> &SandboxPath {
        &self.0
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Whether `top` (a top-level name) is a system directory.
pub(crate) fn is_system(top: &str) -> bool {
    SYSTEM_DIRS.contains(&top)
        || top.starts_with("lib")
        || Some(top) == crate::hook_view::HOOK_VIEW.strip_prefix('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(text: &str) -> Result<String, SpecError> {
        Target::parse(text, "$.t").map(|t| t.to_string())
    }

    #[test]
    fn targets_are_relative_to_the_root() {
        assert_eq!(target(".agents/hooks.json").unwrap(), "/.agents/hooks.json");
        assert_eq!(target("/workspace/x").unwrap(), "/workspace/x");
        assert_eq!(target("a.txt").unwrap(), "/a.txt");
        assert_eq!(target("library.txt").unwrap_err().path, "$.t");
    }

    #[test]
    fn system_paths_escapes_and_the_root_are_refused() {
        for bad in [
            "etc/passwd",
            "usr/bin/x",
            "/lib64/x",
            "lib",
            "../x",
            "",
            "/",
            "a\0",
            "w/../..",
            ".hookbox/workspace/.agents/gate.js",
        ] {
            let err = target(bad).unwrap_err();
            assert_eq!(err.path, "$.t", "{bad}");
        }
        assert!(
            target("etc/passwd")
                .unwrap_err()
                .problem
                .contains("workspace/")
        );
    }
}
