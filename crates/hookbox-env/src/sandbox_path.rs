//! Paths as the sandbox sees them: absolute, `/`-separated, lexically normalised.

use std::fmt;

/// The sandbox's writable working directory, relative to `/`.
pub(crate) const WORKSPACE: &str = "workspace";

/// The directory holding hook configuration, relative to `/`.
pub(crate) const AGENTS: &str = ".agents";

/// Why a string is not a usable sandbox path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathProblem {
    /// The empty string.
    Empty,
    /// A NUL byte.
    Nul,
    /// A `..` that would climb above `/`.
    Escapes,
    /// Longer than [`MAX_PATH_BYTES`].
    TooLong,
}

/// Longest path text accepted: Linux's `PATH_MAX`, past which no file could be opened by it.
pub(crate) const MAX_PATH_BYTES: usize = 4096;

impl PathProblem {
    /// A sentence explaining the problem with `text` and what to do.
    pub(crate) fn explain(self, text: &str) -> String {
        match self {
            Self::Empty => format!("path `{text}` is empty; name a file or directory"),
            Self::Nul => "path contains a NUL byte; remove it".to_owned(),
            Self::Escapes => {
                format!("path `{text}` climbs above `/` with `..`; use a path inside the sandbox")
            }
            Self::TooLong => format!(
                "the path is {} bytes, longer than the {MAX_PATH_BYTES} Linux takes; use a \
                 shorter path",
                text.len()
            ),
        }
    }
}

/// A normalised absolute sandbox path: no `.`, no `..`, no empty components.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SandboxPath {
    components: Vec<String>,
}

impl SandboxPath {
    /// Parses `text`; a relative path is taken relative to `/<base>` (`base` may be empty).
    ///
    /// `..` is resolved lexically; one that climbs above `/` is an error rather than being
    /// clamped, so a confused caller learns about it.
    pub(crate) fn parse(text: &str, base: &str) -> Result<Self, PathProblem> {
        if text.is_empty() {
            return Err(PathProblem::Empty);
        }
        if text.contains('\0') {
            return Err(PathProblem::Nul);
        }
        if text.len() > MAX_PATH_BYTES {
            return Err(PathProblem::TooLong);
        }
        let mut components: Vec<String> = Vec::new();
        if !text.starts_with('/') {
            components.extend(base.split('/').filter(|c| !c.is_empty()).map(str::to_owned));
        }
        for component in text.split('/') {
            match component {
                "" | "." => {}
                ".." => {
                    if components.pop().is_none() {
                        return Err(PathProblem::Escapes);
                    }
                }
                name => components.push(name.to_owned()),
            }
        }
        Ok(Self { components })
    }

    /// The path made of `components` (each a plain name: not empty, not `.` or `..`, no `/`).
    pub(crate) fn from_components(components: Vec<String>) -> Self {
        Self { components }
    }

    /// `/workspace`.
    pub(crate) fn workspace() -> Self {
        Self {
            components: vec![WORKSPACE.to_owned()],
        }
    }

    /// The path's components, outermost first (none for `/`).
    pub(crate) fn components(&self) -> &[String] {
        &self.components
    }

    /// The first component (the top-level entry of the sandbox), if any.
    pub(crate) fn top(&self) -> Option<&str> {
        self.components.first().map(String::as_str)
    }

    /// The path relative to `/`, e.g. `workspace/a.txt` (`.` for `/` itself).
    pub(crate) fn relative(&self) -> String {
        if self.components.is_empty() {
            ".".to_owned()
        } else {
            self.components.join("/")
        }
    }

    /// This path with `name` appended.
    pub(crate) fn join(&self, name: &str) -> Self {
        let mut components = self.components.clone();
        components.push(name.to_owned());
        Self { components }
    }
}

impl fmt::Display for SandboxPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "/{}", self.components.join("/"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, base: &str) -> Result<String, PathProblem> {
        SandboxPath::parse(text, base).map(|p| p.to_string())
    }

    #[test]
    fn relative_paths_start_at_the_base() {
        assert_eq!(
            parse("a/b.txt", WORKSPACE),
            Ok("/workspace/a/b.txt".to_owned())
        );
        assert_eq!(
            parse(".agents/hooks.json", ""),
            Ok("/.agents/hooks.json".to_owned())
        );
        assert_eq!(parse("/etc/x", WORKSPACE), Ok("/etc/x".to_owned()));
        assert_eq!(parse("./a//./b/", ""), Ok("/a/b".to_owned()));
    }

    #[test]
    fn dot_dot_is_lexical_and_may_not_climb_above_the_root() {
        assert_eq!(parse("a/../b", WORKSPACE), Ok("/workspace/b".to_owned()));
        assert_eq!(parse("../x", WORKSPACE), Ok("/x".to_owned()));
        assert_eq!(
            parse("../../etc/passwd", WORKSPACE),
            Err(PathProblem::Escapes)
        );
        assert_eq!(parse("a/../../x", ""), Err(PathProblem::Escapes));
        assert_eq!(
            parse("%2e%2e/x", WORKSPACE),
            Ok("/workspace/%2e%2e/x".to_owned())
        );
    }

    #[test]
    fn empty_and_nul_are_refused() {
        assert_eq!(parse("", WORKSPACE), Err(PathProblem::Empty));
        assert_eq!(parse("/", ""), Ok("/".to_owned()));
        assert_eq!(parse("a\0b", WORKSPACE), Err(PathProblem::Nul));
        assert_eq!(parse("/", WORKSPACE), Ok("/".to_owned()));
    }
}
