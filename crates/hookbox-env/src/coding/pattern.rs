//! Glob patterns (`*`, `**`, `?`, `[…]`, `{a,b}`), matched by `globset`: `*` and `?` never
//! match `/`, `**/` matches any number of directories, a backslash escapes the next character.

use globset::{GlobBuilder, GlobMatcher};

/// A compiled glob, matched against `/`-separated relative paths.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    matcher: GlobMatcher,
    /// Whether the pattern has a `/`: without one, it matches a file's name anywhere.
    has_slash: bool,
}

impl Glob {
    /// Compiles `pattern`, or says why it is not a valid glob.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|error| format!("invalid glob `{pattern}`: {}", error.kind()))?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            has_slash: pattern.contains('/'),
        })
    }

    /// Whether the relative path `rel` matches the whole pattern.
    pub(crate) fn matches_path(&self, rel: &str) -> bool {
        self.matcher.is_match(rel)
    }

    /// Whether `rel` matches as a file filter: the whole path when the pattern has a `/`, else
    /// the file's name.
    pub(crate) fn matches_file(&self, rel: &str) -> bool {
        if self.has_slash {
            self.matcher.is_match(rel)
        } else {
            self.matcher.is_match(rel.rsplit('/').next().unwrap_or(rel))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(pattern: &str) -> Glob {
        Glob::new(pattern).unwrap()
    }

    #[test]
    fn stars_question_marks_classes_and_braces() {
        assert!(glob("*.rs").matches_path("a.rs"));
        assert!(!glob("*.rs").matches_path("src/a.rs"));
        assert!(glob("**/*.rs").matches_path("a.rs"));
        assert!(glob("**/*.rs").matches_path("src/deep/a.rs"));
        assert!(glob("src/**").matches_path("src/x/y"));
        assert!(glob("src/**/mod.rs").matches_path("src/mod.rs"));
        assert!(glob("src/**/mod.rs").matches_path("src/a/b/mod.rs"));
        assert!(glob("?.txt").matches_path("a.txt"));
        assert!(!glob("?.txt").matches_path("ab.txt"));
        assert!(glob("[ab].txt").matches_path("b.txt"));
        assert!(!glob("[!ab].txt").matches_path("b.txt"));
        assert!(glob("*.{ts,tsx}").matches_path("x.tsx"));
        assert!(!glob("*.{ts,tsx}").matches_path("x.js"));
        assert!(glob("a+b(c).txt").matches_path("a+b(c).txt"));
        assert!(glob("[^ab].txt").matches_path("c.txt"));
        assert!(glob(r"\*.txt").matches_path("*.txt"));
        assert!(!glob(r"\*.txt").matches_path("a.txt"));
        assert!(!glob("src/**").matches_path("other/x"));
    }

    #[test]
    fn file_filters_match_names_without_a_slash() {
        assert!(glob("*.rs").matches_file("src/deep/a.rs"));
        assert!(!glob("src/*.rs").matches_file("other/a.rs"));
    }

    #[test]
    fn bad_globs_are_reported() {
        assert!(Glob::new("[abc").is_err());
        assert!(Glob::new("{a,b").is_err());
    }
}
