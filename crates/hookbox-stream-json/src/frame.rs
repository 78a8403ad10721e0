//! Line framing (`docs/wire/sdk-control-protocol.md` §2): every message to the SDK is one line of
//! ASCII-escaped JSON, at most [`MAX_LINE`] bytes, written with one write and one flush; lines from
//! the SDK are read up to `\n` whatever bytes they hold.
//!
//! [`parse_line`] is the reader's decoding of one line's bytes, without I/O: the entry point
//! for fuzzing the frame reader.

use std::io;

use serde_json::Value;
use serde_json::ser::Formatter;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The largest line the SDKs accept (`max_buffer_size`), newline included.
pub const MAX_LINE: usize = 1024 * 1024;

/// The longest line accepted from the SDK; longer ones are skipped.
const MAX_INPUT_LINE: usize = 64 * 1024 * 1024;

/// A compact JSON formatter that escapes every non-ASCII character as `\uXXXX`.
struct AsciiFormatter;

impl Formatter for AsciiFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut start = 0;
        for (index, character) in fragment.char_indices() {
            if character.is_ascii() {
                continue;
            }
            writer.write_all(&fragment.as_bytes()[start..index])?;
            let mut units = [0u16; 2];
            for unit in character.encode_utf16(&mut units) {
                write!(writer, "\\u{unit:04x}")?;
            }
            start = index + character.len_utf8();
        }
        writer.write_all(&fragment.as_bytes()[start..])
    }
}

/// `value` as one ASCII JSON line with its `\n`.
fn ascii_line(value: &Value) -> io::Result<Vec<u8>> {
    let mut line = Vec::with_capacity(256);
    let mut serializer = serde_json::Serializer::with_formatter(&mut line, AsciiFormatter);
    serde::Serialize::serialize(value, &mut serializer).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// `value` as one ASCII JSON line of at most [`MAX_LINE`] bytes: while it is too long, the
/// longest string in it is cut in half and marked as truncated.
pub fn encode(value: &Value) -> io::Result<Vec<u8>> {
    let mut line = ascii_line(value)?;
    if line.len() <= MAX_LINE {
        return Ok(line);
    }
    let mut value = value.clone();
    for _ in 0..64 {
        let Some(longest) = longest_string(&mut value) else {
            break;
        };
        let keep = longest.chars().count() / 2;
        let cut: String = longest.chars().take(keep).collect();
        let dropped = longest.len() - cut.len();
        *longest = format!(
            "{cut}\n[hookbox: {dropped} bytes truncated to fit the SDK's 1 MiB line limit]"
        );
        line = ascii_line(&value)?;
        if line.len() <= MAX_LINE {
            return Ok(line);
        }
    }
    Err(io::Error::other(
        "a message does not fit in 1 MiB even truncated",
    ))
}

fn longest_string(value: &mut Value) -> Option<&mut String> {
    match value {
        Value::String(text) => Some(text),
        Value::Array(items) => items
            .iter_mut()
            .filter_map(longest_string)
            .max_by_key(|text| text.len()),
        Value::Object(map) => map
            .values_mut()
            .filter_map(longest_string)
            .max_by_key(|text| text.len()),
        _ => None,
    }
}

/// Writes `value` as one line with a single write, then flushes.
pub async fn write_message<W: AsyncWrite + Unpin>(writer: &mut W, value: &Value) -> io::Result<()> {
    let line = encode(value)?;
    writer.write_all(&line).await?;
    writer.flush().await
}

/// One line from the SDK.
#[derive(Debug)]
pub enum InputLine {
    /// A JSON value.
    Json(Value),
    /// A line that is not JSON (reported and skipped).
    Invalid(String),
}

/// Reads the next non-empty line; `None` at end of input. A line longer than 64 MiB is
/// skipped and reported as [`InputLine::Invalid`].
pub async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> io::Result<Option<InputLine>> {
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let read = (&mut *reader)
            .take(MAX_INPUT_LINE as u64)
            .read_until(b'\n', &mut buffer)
            .await?;
        if read == 0 {
            return Ok(None);
        }
        if buffer.len() >= MAX_INPUT_LINE && buffer.last() != Some(&b'\n') {
            // Skip the rest of an overlong line.
            let mut sink = Vec::new();
            reader.read_until(b'\n', &mut sink).await?;
            return Ok(Some(InputLine::Invalid(
                "a line longer than 64 MiB".to_owned(),
            )));
        }
        if let Some(line) = parse_line(&buffer) {
            return Ok(Some(line));
        }
    }
}

/// Decodes one line from the SDK (any bytes, with or without its `\n`); `None` for a line
/// of only whitespace, which the reader skips.
pub fn parse_line(line: &[u8]) -> Option<InputLine> {
    let text = line.trim_ascii();
    if text.is_empty() {
        return None;
    }
    Some(match serde_json::from_slice(text) {
        Ok(value) => InputLine::Json(value),
        Err(err) => InputLine::Invalid(format!(
            "{err}: {}",
            String::from_utf8_lossy(&text[..text.len().min(200)])
        )),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lines_are_ascii_and_round_trip() {
        let value = json!({"text": "héllo \u{1F600} \u{FFFD} tab\t \"q\"", "n": 1});
        let line = encode(&value).unwrap();
        assert!(line.is_ascii());
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|byte| **byte == b'\n').count(), 1);
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back, value);
        assert!(String::from_utf8(line).unwrap().contains("\\ud83d\\ude00"));
    }

    #[test]
    fn oversized_messages_are_truncated_below_the_limit() {
        let big = "é".repeat(MAX_LINE);
        let value = json!({"type": "user", "message": {"content": [{"type": "tool_result", "content": big}]}, "small": "kept"});
        let line = encode(&value).unwrap();
        assert!(line.len() <= MAX_LINE, "{}", line.len());
        let back: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(back["small"], "kept");
        assert!(
            back["message"]["content"][0]["content"]
                .as_str()
                .unwrap()
                .contains("truncated")
        );
    }

    #[tokio::test]
    async fn reads_lines_and_reports_bad_ones() {
        let input: &[u8] = b"{\"a\":1}\n\n  \nnot json\n\xff\xfe\n{\"b\":2}";
        let mut reader = tokio::io::BufReader::new(input);
        assert!(
            matches!(read_line(&mut reader).await.unwrap(), Some(InputLine::Json(v)) if v == json!({"a":1}))
        );
        assert!(matches!(
            read_line(&mut reader).await.unwrap(),
            Some(InputLine::Invalid(_))
        ));
        assert!(matches!(
            read_line(&mut reader).await.unwrap(),
            Some(InputLine::Invalid(_))
        ));
        assert!(
            matches!(read_line(&mut reader).await.unwrap(), Some(InputLine::Json(v)) if v == json!({"b":2}))
        );
        assert!(read_line(&mut reader).await.unwrap().is_none());
    }

    #[test]
    fn parse_line_skips_blank_lines_and_never_panics_on_bytes() {
        assert!(parse_line(b"").is_none());
        assert!(parse_line(b" \t\r\n").is_none());
        assert!(matches!(parse_line(b"[1]\r\n"), Some(InputLine::Json(v)) if v == json!([1])));
        let long_garbage = [0xffu8; 1000];
        let Some(InputLine::Invalid(problem)) = parse_line(&long_garbage) else {
            panic!("garbage decoded");
        };
        assert!(problem.len() < 1000, "{problem}");
    }
}
