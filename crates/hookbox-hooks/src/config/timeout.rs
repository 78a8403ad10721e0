//! Handler and matcher timeouts: seconds, positive, at most a day.
//!
//! The sandbox dialect documents an integer (`10`; a whole float such as `10.0`, which
//! Python's `json.dumps` writes, is accepted too); the SDK dialect a number that may be
//! fractional (`0.5`).

use std::time::Duration;

use serde_json::Value;

use super::path::JsonPath;
use super::report::Report;
use crate::event::Dialect;

/// The longest timeout accepted, in seconds: one day.
const MAX_SECONDS: f64 = 86_400.0;

/// The timeout written at `path` for a `dialect` document, or an error (and `None`).
pub(super) fn read(
    report: &mut Report,
    value: &Value,
    path: &JsonPath,
    dialect: Dialect,
) -> Option<Duration> {
    let Some(seconds) = value.as_f64() else {
        report.wrong_type(value, path, "a number");
        return None;
    };
    let duration = Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|duration| !duration.is_zero());
    let (message, hint) = if seconds > MAX_SECONDS {
        (
            format!("timeout of {value} seconds is more than a day ({MAX_SECONDS} s)"),
            "timeouts are in seconds, not milliseconds",
        )
    } else if duration.is_none() {
        (
            format!("timeout must be positive, found {value}"),
            "omit `timeout` to use the default",
        )
    } else if dialect == Dialect::Sandbox && seconds.fract() != 0.0 {
        (
            format!("timeout must be a whole number of seconds, found {value}"),
            "the sandbox dialect's `timeout` is an integer",
        )
    } else {
        return duration;
    };
    report.error(path, message, Some(hint.to_owned()));
    None
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(value: Value, dialect: Dialect) -> Result<Duration, String> {
        let mut report = Report::new("test");
        let read = read(
            &mut report,
            &value,
            &JsonPath::root().key("timeout"),
            dialect,
        );
        let diagnostics = report.into_diagnostics();
        match read {
            Some(duration) if diagnostics.is_empty() => Ok(duration),
            None if diagnostics.len() == 1 => Err(diagnostics[0].message.clone()),
            other => panic!("{other:?} with {diagnostics:?}"),
        }
    }

    #[test]
    fn good_timeouts() {
        assert_eq!(
            check(json!(10), Dialect::Sandbox),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            check(json!(10.0), Dialect::Sandbox),
            Ok(Duration::from_secs(10))
        );
        assert_eq!(
            check(json!(86_400), Dialect::Sandbox),
            Ok(Duration::from_secs(86_400))
        );
        assert_eq!(
            check(json!(0.5), Dialect::Sdk),
            Ok(Duration::from_millis(500))
        );
    }

    #[test]
    fn bad_timeouts() {
        let err = |value, dialect| check(value, dialect).unwrap_err();
        assert!(err(json!(0), Dialect::Sandbox).contains("positive"));
        assert!(err(json!(-5), Dialect::Sdk).contains("positive"));
        assert!(err(json!(1e-300), Dialect::Sdk).contains("positive"));
        assert!(err(json!(2.5), Dialect::Sandbox).contains("whole number"));
        assert!(check(json!(30_000), Dialect::Sdk).is_ok());
        assert!(err(json!(100_000), Dialect::Sdk).contains("more than a day"));
        assert!(err(json!(1e300), Dialect::Sandbox).contains("more than a day"));
        assert_eq!(
            err(json!("10"), Dialect::Sandbox),
            "expected a number, found a string"
        );
    }
}
