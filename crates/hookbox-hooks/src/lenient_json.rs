//! JSON from hooks and agents, read so that one odd character never turns an answer into a
//! failure: an escaped lone UTF-16 surrogate (`\udcff`, which Python's `json.dumps` writes for
//! a byte it decoded with `surrogateescape`, and JavaScript's `JSON.stringify` for a lone
//! surrogate in a string) is read as U+FFFD, the character it becomes once encoded as UTF-8,
//! where `serde_json` refuses the whole document.

use serde::de::DeserializeOwned;

/// Parses `bytes` as JSON, reading escaped lone surrogates as U+FFFD.
pub(crate) fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    serde_json::from_slice(bytes).or_else(|error| {
        match std::str::from_utf8(bytes)
            .ok()
            .and_then(without_lone_surrogates)
        {
            Some(repaired) => serde_json::from_str(&repaired),
            None => Err(error),
        }
    })
}

/// Whether `error` says the JSON is nested deeper than `serde_json` reads (128 levels).
pub(crate) fn too_deep(error: &serde_json::Error) -> bool {
    error.to_string().starts_with("recursion limit exceeded")
}

/// `text` with every escape of a lone surrogate replaced by `\ufffd`; `None` when it has none.
/// Escapes are found by their backslash alone: outside a string a backslash is invalid JSON
/// anyway, and an escaped backslash is skipped whole, so `\\udcff` stays as it is.
fn without_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut repaired = String::new();
    let mut copied = 0;
    let mut at = 0;
    while let Some(offset) = bytes
        .get(at..)
        .and_then(|rest| rest.iter().position(|byte| *byte == b'\\'))
    {
        let slash = at + offset;
        at = slash + 2;
        match escaped_unit(bytes, slash) {
            Some(0xD800..=0xDBFF)
                if matches!(escaped_unit(bytes, slash + 6), Some(0xDC00..=0xDFFF)) =>
            {
                at = slash + 12;
            }
            Some(0xD800..=0xDFFF) => {
                repaired.push_str(&text[copied..slash]);
                repaired.push_str("\\ufffd");
                copied = slash + 6;
                at = copied;
            }
            _ => {}
        }
    }
    if copied == 0 {
        return None;
    }
    repaired.push_str(&text[copied..]);
    Some(repaired)
}

/// The code unit of the `\uXXXX` escape starting at `slash`, if one starts there.
fn escaped_unit(bytes: &[u8], slash: usize) -> Option<u16> {
    match bytes.get(slash..slash + 6)? {
        [b'\\', b'u', digits @ ..] if digits.iter().all(u8::is_ascii_hexdigit) => {
            u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::from_slice;

    #[test]
    fn lone_surrogates_read_as_the_replacement_character() {
        for (text, reason) in [
            (r#"{"reason":"bad \udcff byte"}"#, "bad \u{fffd} byte"),
            (r#"{"reason":"\ud800"}"#, "\u{fffd}"),
            (r#"{"reason":"\udbff\u0041"}"#, "\u{fffd}A"),
            (r#"{"reason":"\udc00\ud800"}"#, "\u{fffd}\u{fffd}"),
            (
                r#"{"reason":"pair \ud83d\ude00 then \udcff"}"#,
                "pair 😀 then \u{fffd}",
            ),
            (r#"{"reason":"\\udcff stays"}"#, "\\udcff stays"),
            (r#"{"reason":"\\\udcff"}"#, "\\\u{fffd}"),
        ] {
            let value: Value = from_slice(text.as_bytes()).expect(text);
            assert_eq!(value, json!({ "reason": reason }), "{text}");
        }
    }

    #[test]
    fn what_is_not_json_stays_an_error() {
        for text in [
            r#"{"reason":"\udcff"#,
            r#"\udcff"#,
            // A backslash at the very end, after a lone surrogate or alone.
            r#"{"a":"\udcff\"#,
            "\\",
            r#"{"a":"x\"#,
            r#"{"a":\udcff}"#,
            "\u{0}",
        ] {
            assert!(from_slice::<Value>(text.as_bytes()).is_err(), "{text}");
        }
    }

    proptest! {
        /// Any string, with lone surrogates spliced in as Python or JavaScript escape them,
        /// reads back as that string with each lone surrogate replaced.
        #[test]
        fn any_string_with_lone_surrogates_reads_back(
            parts in prop::collection::vec((".{0,8}", prop::option::of(0xD800u16..=0xDFFF)), 0..8),
        ) {
            let mut escaped = String::new();
            let mut expected = String::new();
            let mut previous_high = false;
            for (text, surrogate) in &parts {
                let quoted = serde_json::to_string(text).expect("string");
                escaped.push_str(&quoted[1..quoted.len() - 1]);
                expected.push_str(text);
                // A low surrogate right after a high one would form a pair: keep them apart.
                if text.is_empty() && previous_high {
                    escaped.push('.');
                    expected.push('.');
                }
                previous_high = false;
                if let Some(unit) = surrogate {
                    escaped.push_str(&format!("\\u{unit:04x}"));
                    expected.push('\u{fffd}');
                    previous_high = (0xD800..=0xDBFF).contains(unit);
                }
            }
            let document = format!(r#"{{"decision":"deny","reason":"{escaped}"}}"#);
            let value: Value = from_slice(document.as_bytes()).expect("parses");
            prop_assert_eq!(value, json!({"decision": "deny", "reason": expected}));
        }
    }
}
