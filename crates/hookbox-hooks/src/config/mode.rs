//! The `mode` of a sandbox group or an SDK matcher group (hookbox extension): `"enforce"` (the
//! default) or `"shadow"`, where hooks run and a deny is only recorded as `would_deny`.

use serde_json::Value;

use super::path::JsonPath;
use super::report::Report;

/// Whether the `mode` value at `path` asks for shadow mode; an unknown value is an error and
/// enforces (the safe reading of a typo).
pub(super) fn is_shadow(report: &mut Report, value: &Value, path: &JsonPath) -> bool {
    match report.string(value, path) {
        Some("shadow") => true,
        Some("enforce") | None => false,
        Some(other) => {
            report.error(
                path,
                format!("unknown `mode` value `{other}`; the hooks are enforced"),
                Some(
                    "`mode` is `enforce` (the default) or `shadow` (the hooks run and a deny is \
                     recorded as `would_deny` in the trace, never enforced)"
                        .to_owned(),
                ),
            );
            false
        }
    }
}
