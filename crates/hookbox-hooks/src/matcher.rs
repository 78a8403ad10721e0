//! Matcher patterns: RE2 syntax, anchored full match, wildcards, size limits.
//!
//! `"*"`, `".*"`, `""` and a missing matcher match everything. Any other pattern is compiled as
//! `^(?:PATTERN)$` with the `regex` crate (RE2 syntax, linear time), so `code_execution` does not
//! match `my_code_execution`. Patterns are size-limited so a hostile config cannot make
//! compilation or matching expensive.

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// Largest compiled program one user-written pattern may produce.
const PATTERN_SIZE_LIMIT: usize = 256 * 1024;
/// Largest lazy-DFA cache one pattern may use.
const PATTERN_DFA_LIMIT: usize = 1024 * 1024;
/// Largest compiled program for all of one event's patterns together.
const SET_SIZE_LIMIT: usize = 64 * 1024 * 1024;
/// Largest lazy-DFA cache for one event's set.
const SET_DFA_LIMIT: usize = 16 * 1024 * 1024;

/// What one matcher pattern means after compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatcherKind {
    /// Matches every value.
    All,
    /// Matches values the anchored pattern (this source) fully matches.
    Pattern(String),
    /// Not a valid pattern: matches nothing.
    Invalid(String),
}

/// Compiles one pattern as written in a config (`None` = no matcher) into what it means.
///
/// An invalid pattern is not an error here: it becomes [`MatcherKind::Invalid`] with the
/// reason, so loaders can report it and dispatch can match nothing, as the seeds specify.
pub(crate) fn compile(pattern: Option<&str>) -> MatcherKind {
    let Some(pattern) = pattern else {
        return MatcherKind::All;
    };
    if matches!(pattern, "" | "*" | ".*") {
        return MatcherKind::All;
    }
    let anchored = format!("^(?:{pattern})$");
    match RegexBuilder::new(&anchored)
        .size_limit(PATTERN_SIZE_LIMIT)
        .dfa_size_limit(PATTERN_DFA_LIMIT)
        .build()
    {
        Ok(_) => MatcherKind::Pattern(anchored),
        Err(err) => MatcherKind::Invalid(describe_error(pattern, &err)),
    }
}

/// The reason text for an invalid pattern, with a hint for the shell-glob mistake.
fn describe_error(pattern: &str, err: &regex::Error) -> String {
    let detail = match err {
        regex::Error::CompiledTooBig(limit) => {
            format!("pattern compiles to more than {limit} bytes; simplify it")
        }
        other => other
            .to_string()
            .lines()
            .last()
            .unwrap_or_default()
            .trim()
            .to_owned(),
    };
    if pattern.starts_with('*') || pattern.contains("|*") {
        format!(
            "`{pattern}` is not a valid regular expression ({detail}); matchers are RE2 \
             regular expressions, not shell globs: write `.*{}` instead",
            pattern.trim_start_matches('*')
        )
    } else {
        format!("`{pattern}` is not a valid regular expression ({detail})")
    }
}

/// All the matchers of one event, compiled together so one pass selects the matching ones.
#[derive(Debug, Clone)]
pub struct MatcherSet {
    /// Indices of bindings that match everything.
    always: Vec<usize>,
    /// How the patterned bindings are tested.
    patterns: PatternTest,
    /// Binding index of each pattern, in pattern order.
    pattern_owner: Vec<usize>,
}

/// The compiled form of an event's patterns.
#[derive(Debug, Clone)]
enum PatternTest {
    /// One automaton for all patterns (the normal case).
    Set(RegexSet),
    /// One regex each, used when the patterns together exceed the set's size limit.
    Each(Vec<Regex>),
}

impl MatcherSet {
    /// Compiles the matchers of one event's bindings, given in registration order.
    pub fn new<'a>(kinds: impl IntoIterator<Item = &'a MatcherKind>) -> Self {
        let mut always = Vec::new();
        let mut sources = Vec::new();
        let mut pattern_owner = Vec::new();
        for (index, kind) in kinds.into_iter().enumerate() {
            match kind {
                MatcherKind::All => always.push(index),
                MatcherKind::Pattern(source) => {
                    sources.push(source.as_str());
                    pattern_owner.push(index);
                }
                MatcherKind::Invalid(_) => {}
            }
        }
        let patterns = match RegexSetBuilder::new(&sources)
            .size_limit(SET_SIZE_LIMIT)
            .dfa_size_limit(SET_DFA_LIMIT)
            .build()
        {
            Ok(set) => PatternTest::Set(set),
            Err(_) => PatternTest::Each(
                sources
                    .iter()
                    .filter_map(|source| {
                        RegexBuilder::new(source)
                            .size_limit(PATTERN_SIZE_LIMIT)
                            .dfa_size_limit(PATTERN_DFA_LIMIT)
                            .build()
                            .ok()
                    })
                    .collect(),
            ),
        };
        Self {
            always,
            patterns,
            pattern_owner,
        }
    }

    /// Indices of the bindings whose matcher accepts `value`, in registration order.
    pub fn select(&self, value: &str) -> Vec<usize> {
        let mut selected = self.always.clone();
        match &self.patterns {
            PatternTest::Set(set) => {
                selected.extend(set.matches(value).iter().map(|i| self.pattern_owner[i]));
            }
            PatternTest::Each(regexes) => selected.extend(
                regexes
                    .iter()
                    .zip(&self.pattern_owner)
                    .filter(|(regex, _)| regex.is_match(value))
                    .map(|(_, owner)| *owner),
            ),
        }
        selected.sort_unstable();
        selected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: Option<&str>, value: &str) -> bool {
        let kind = compile(pattern);
        !MatcherSet::new([&kind]).select(value).is_empty()
    }

    #[test]
    fn wildcards_match_everything() {
        for pattern in [None, Some(""), Some("*"), Some(".*")] {
            assert!(matches(pattern, "code_execution"));
            assert!(matches(pattern, ""));
        }
    }

    #[test]
    fn patterns_are_anchored() {
        assert!(matches(Some("code_execution"), "code_execution"));
        assert!(!matches(Some("code_execution"), "my_code_execution"));
        assert!(!matches(Some("code_execution"), "code_execution_2"));
        assert!(matches(Some("read_file|write_file"), "write_file"));
        assert!(!matches(Some("read_file|write_file"), "xread_file"));
    }

    #[test]
    fn shell_glob_is_invalid_with_hint() {
        let MatcherKind::Invalid(reason) = compile(Some("*_file")) else {
            panic!("`*_file` must be invalid");
        };
        assert!(reason.contains("`.*_file`"), "{reason}");
        assert!(!matches(Some("*_file"), "read_file"));
    }

    #[test]
    fn huge_pattern_is_refused() {
        let kind = compile(Some("(a{1000}){1000}"));
        assert!(matches!(kind, MatcherKind::Invalid(_)), "{kind:?}");
    }

    #[test]
    fn selection_keeps_registration_order() {
        let kinds = [
            compile(Some("b.*")),
            compile(None),
            compile(Some("[")),
            compile(Some("bash")),
        ];
        assert_eq!(MatcherSet::new(&kinds).select("bash"), vec![0, 1, 3]);
    }
}
