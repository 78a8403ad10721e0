//! Glob patterns (`*`, `**`, `?`, `[…]`, `{a,b}`), compiled to anchored regular expressions.

use regex::Regex;

/// A compiled glob, matched against `/`-separated relative paths.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    regex: Regex,
    /// Whether the pattern has a `/`: without one, it matches a file's name anywhere.
    has_slash: bool,
}

impl Glob {
    /// Compiles `pattern`, or says why it is not a valid glob.
    pub(crate) fn new(pattern: &str) -> Result<Self, String> {
        let source = translate(pattern)?;
        let regex =
            Regex::new(&source).map_err(|error| format!("invalid glob `{pattern}`: {error}"))?;
        Ok(Self {
            regex,
            has_slash: pattern.contains('/'),
        })
    }

    /// Whether the relative path `rel` matches the whole pattern.
    pub(crate) fn matches_path(&self, rel: &str) -> bool {
        self.regex.is_match(rel)
    }

    /// Whether `rel` matches as a file filter: the whole path when the pattern has a `/`, else
    /// the file's name.
    pub(crate) fn matches_file(&self, rel: &str) -> bool {
        if self.has_slash {
            self.regex.is_match(rel)
        } else {
            self.regex.is_match(rel.rsplit('/').next().unwrap_or(rel))
        }
    }
}

/// The regular expression for `pattern`, anchored at both ends.
fn translate(pattern: &str) -> Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("^");
    let mut braces = 0_usize;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                let at_start = i == 0 || chars[i - 1] == '/';
                i += 2;
                if at_start && chars.get(i) == Some(&'/') {
                    out.push_str("(?:[^/]*/)*");
                    i += 1;
                } else {
                    out.push_str(".*");
                }
                continue;
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => {
                let close = chars[i + 1..]
                    .iter()
                    .enumerate()
                    .skip(1)
                    .find(|(_, c)| **c == ']')
                    .map(|(at, _)| i + 1 + at)
                    .ok_or_else(|| format!("invalid glob `{pattern}`: unclosed `[`"))?;
                let mut class = String::from("[");
                let mut body = &chars[i + 1..close];
                if let Some('!' | '^') = body.first() {
                    class.push('^');
                    body = &body[1..];
                }
                for &ch in body {
                    if matches!(ch, '\\' | '[' | ']' | '&' | '~' | '^') {
                        class.push('\\');
                    }
                    class.push(ch);
                }
                class.push(']');
                out.push_str(&class);
                i = close;
            }
            '{' => {
                braces += 1;
                out.push_str("(?:");
            }
            '}' if braces > 0 => {
                braces -= 1;
                out.push(')');
            }
            ',' if braces > 0 => out.push('|'),
            '\\' if i + 1 < chars.len() => {
                i += 1;
                out.push_str(&regex::escape(&chars[i].to_string()));
            }
            other => out.push_str(&regex::escape(&other.to_string())),
        }
        i += 1;
    }
    if braces > 0 {
        return Err(format!("invalid glob `{pattern}`: unclosed `{{`"));
    }
    out.push('$');
    Ok(out)
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
