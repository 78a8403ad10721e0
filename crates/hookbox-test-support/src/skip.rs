//! Tests that skip themselves where the machine lacks what they need (root, user namespaces, a
//! loop device, the Python SDKs…), but never in CI, where a skipped boundary test would pass
//! without having checked anything.

use std::fmt::Display;

/// Says that `test` cannot run here because of `reason`; the test then returns early.
///
/// Prints `SKIPPED {test}: {reason}`, or, when the environment variable `CI` is `true`,
/// **panics** with that reason instead: CI must provide everything every test needs.
pub fn skip(test: &str, reason: impl Display) {
    let ci = std::env::var_os("CI").is_some_and(|value| value == "true");
    skip_unless_ci(test, &reason, ci);
}

/// Whether this process runs as root; when it does not, `test` is skipped (see [`skip`]).
pub fn require_root(test: &str) -> bool {
    let root = rustix::process::geteuid().is_root();
    if !root {
        skip(test, "it needs root");
    }
    root
}

/// [`skip`], told whether it runs in CI.
#[expect(clippy::print_stderr, reason = "a skipped test says why")]
fn skip_unless_ci(test: &str, reason: &dyn Display, ci: bool) {
    assert!(
        !ci,
        "{test} cannot run here ({reason}), and CI=true: CI must run every test, so give this \
         machine what the test needs"
    );
    eprintln!("SKIPPED {test}: {reason}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_outside_ci_only_reports() {
        skip_unless_ci("probe", &"nothing here", false);
    }

    #[test]
    #[should_panic(expected = "probe cannot run here (nothing here), and CI=true")]
    fn a_skip_in_ci_fails_the_test() {
        skip_unless_ci("probe", &"nothing here", true);
    }

    #[test]
    fn root_is_never_skipped() {
        if rustix::process::geteuid().is_root() {
            assert!(require_root("probe"));
        }
    }
}
