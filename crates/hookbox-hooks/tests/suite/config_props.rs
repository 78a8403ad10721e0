//! Property tests: `config::parse` never panics, whatever it is given, and every diagnostic
//! it produces points into the document.

use hookbox_hooks::Dialect;
use hookbox_hooks::config::parse;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Keys the parsers look for, so generated documents reach deep into them.
const KEYS: [&str; 26] = [
    "pre_tool_execution",
    "post_tool_execution",
    "enabled",
    "matcher",
    "hooks",
    "type",
    "command",
    "url",
    "timeout",
    "headers",
    "on_error",
    "if",
    "async",
    "args",
    "statusMessage",
    "allowedEnvVars",
    "disableAllHooks",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "UserPromptSubmit",
    "Stop",
    "Notification",
    "PreCompact",
    "PostCompact",
    "Authorization",
];

/// Strings the parsers give meaning to.
const STRINGS: [&str; 16] = [
    "command",
    "http",
    "prompt",
    "mcp_tool",
    "allow",
    "deny",
    "*",
    "",
    "*_file",
    "(a{1000}){1000}",
    "code_execution",
    "read_file|write_file",
    "https://hooks.example.com/x",
    "ftp://x",
    "10",
    "Bearer secret",
];

/// A key: usually a real one, sometimes anything.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(&KEYS[..]).prop_map(str::to_owned),
        1 => ".{0,12}",
    ]
}

/// A scalar, biased towards values that matter (timeouts, handler types, matchers).
fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop::sample::select(vec![0_i64, -1, 1, 5, 30, 86_400, 86_401, i64::MIN])
            .prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(&STRINGS[..]).prop_map(Value::from),
        ".{0,16}".prop_map(Value::String),
    ]
}

/// Any JSON value, nested a few levels, with objects keyed mostly by real key names.
fn document() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Parses `text` in every mode and checks what comes back points into the document.
fn check(text: &str) -> Result<(), TestCaseError> {
    for dialect in [None, Some(Dialect::Sandbox), Some(Dialect::Sdk)] {
        match parse("fuzz.json", text, dialect, &[]) {
            Ok(parsed) => {
                for diagnostic in &parsed.diagnostics {
                    prop_assert!(diagnostic.json_path.starts_with('$'), "{diagnostic:?}");
                    prop_assert_eq!(&diagnostic.source, "fuzz.json");
                }
                for binding in &parsed.bindings {
                    prop_assert!(binding.origin.json_path.starts_with('$'));
                }
                if let Some(dialect) = dialect {
                    prop_assert_eq!(parsed.dialect, dialect);
                }
            }
            Err(diagnostic) => prop_assert_eq!(diagnostic.json_path, "$"),
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,64}") {
        check(&text)?;
    }

    #[test]
    fn arbitrary_documents_never_panic(value in document()) {
        check(&value.to_string())?;
    }

    #[test]
    fn truncated_documents_never_panic(value in document(), cut in any::<prop::sample::Index>()) {
        let text = value.to_string();
        let end = (0..=cut.index(text.len() + 1))
            .rev()
            .find(|&end| text.is_char_boundary(end))
            .unwrap_or(0);
        check(&text[..end])?;
    }

    #[test]
    fn hook_shaped_documents_never_panic(
        group in key(),
        event in key(),
        rule in prop::collection::vec((key(), document()), 0..4),
        handler in prop::collection::vec((key(), document()), 0..6),
        wrap in any::<bool>(),
    ) {
        let handler: Map<String, Value> = handler.into_iter().collect();
        let mut rule: Map<String, Value> = rule.into_iter().collect();
        rule.insert("hooks".to_owned(), Value::Array(vec![Value::Object(handler)]));
        let rules = Value::Array(vec![Value::Object(rule)]);
        let inner = Value::Object(Map::from_iter([(event, rules)]));
        let outer = if wrap { "hooks".to_owned() } else { group };
        check(&Value::Object(Map::from_iter([(outer, inner)])).to_string())?;
    }
}
