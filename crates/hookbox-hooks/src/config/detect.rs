//! Telling the two dialects apart from a document's shape.
//!
//! Exact evidence wins over near misses, so a file with typos is still read as what it was
//! meant to be and its typos are reported with hints:
//!
//! 1. a top-level Claude event key (bare SDK options), unless its value is a sandbox group;
//! 2. a top-level `hooks` object with Claude event keys, or empty (Claude settings);
//! 3. a top-level object with `enabled` / `pre_tool_execution` / `post_tool_execution`
//!    (a sandbox group), or with Claude event keys (a sandbox group written with the wrong
//!    event names);
//! 4. near misses of SDK event names holding a list at the top level, or under `hooks`, then
//!    near misses of sandbox group keys (agents' own event names included);
//! 5. `{}` is an empty sandbox file.

use serde_json::{Map, Value};

use super::sandbox::{GROUP_KEYS, group_key_names};
use super::sdk::{event_names, is_event_name};
use super::suggest::did_you_mean;
use crate::event::Dialect;

/// Whether `value` is an object with a sandbox group key.
pub(super) fn is_sandbox_group(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|group| GROUP_KEYS.iter().any(|key| group.contains_key(*key)))
}

/// Whether `name` is a near miss of an SDK event hookbox implements.
fn looks_like_event(name: &str) -> bool {
    did_you_mean(name, event_names()).is_some()
}

/// The dialect `document` is written in, if its shape says.
pub(super) fn dialect(document: &Map<String, Value>) -> Option<Dialect> {
    let hooks = document
        .get("hooks")
        .filter(|hooks| !is_sandbox_group(hooks))
        .and_then(Value::as_object);
    let groups = || document.values().filter_map(Value::as_object);
    if document
        .iter()
        .any(|(key, value)| is_event_name(key) && !is_sandbox_group(value))
        || hooks.is_some_and(|hooks| hooks.is_empty() || hooks.keys().any(|key| is_event_name(key)))
    {
        Some(Dialect::Sdk)
    } else if document.values().any(is_sandbox_group)
        || groups().any(|group| group.keys().any(|key| is_event_name(key)))
    {
        Some(Dialect::Sandbox)
    } else if document
        .iter()
        .any(|(key, value)| value.is_array() && looks_like_event(key))
        || hooks.is_some_and(|hooks| hooks.keys().any(|key| looks_like_event(key)))
    {
        Some(Dialect::Sdk)
    } else if document.is_empty()
        || groups().any(|group| {
            group
                .keys()
                .any(|key| did_you_mean(key, group_key_names()).is_some())
        })
    {
        Some(Dialect::Sandbox)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn detect(document: Value) -> Option<Dialect> {
        dialect(document.as_object().unwrap())
    }

    #[test]
    fn claude_settings_and_sdk_options() {
        for document in [
            json!({"hooks": {"PreToolUse": []}, "permissions": {}, "model": "x"}),
            json!({"hooks": {}, "env": {}}),
            json!({"PreToolUse": [], "Stop": []}),
            json!({"hooks": {"PostCompact": []}}),
            json!({"BeforeModel": []}),
            json!({"hooks": {"PreToolUs": []}}),
            json!({"pretooluse": []}),
        ] {
            assert_eq!(detect(document.clone()), Some(Dialect::Sdk), "{document}");
        }
    }

    #[test]
    fn sandbox_files() {
        for document in [
            json!({}),
            json!({"security-gate": {"pre_tool_execution": []}}),
            json!({"off": {"enabled": false}}),
            json!({"hooks": {"pre_tool_execution": []}}),
            json!({"Stop": {"post_tool_execution": []}}),
            json!({"gate": {"PreToolUse": []}}),
            json!({"gate": {"pre_tool_use": []}}),
            json!({"gate": {"BeforeModel": []}}),
            json!({"gate": {"BeforeModle": []}}),
        ] {
            assert_eq!(
                detect(document.clone()),
                Some(Dialect::Sandbox),
                "{document}"
            );
        }
    }

    #[test]
    fn undecidable_shapes() {
        for document in [
            json!({"permissions": {"allow": []}}),
            json!({"gate": {"hooks": []}}),
            json!({"hooks": []}),
            json!({"a": 1}),
        ] {
            assert_eq!(detect(document.clone()), None, "{document}");
        }
    }
}
