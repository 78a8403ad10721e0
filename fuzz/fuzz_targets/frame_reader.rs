//! One line from an SDK, read by the stream-json frame reader: never panics, and a line that
//! decodes to JSON re-encodes to one ASCII line within the protocol's limit.
#![no_main]

use hookbox_stream_json::frame::{InputLine, MAX_LINE, encode, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Some(InputLine::Json(value)) = parse_line(data)
        && let Ok(line) = encode(&value)
    {
        assert!(line.is_ascii() && line.len() <= MAX_LINE);
        assert_eq!(line.iter().filter(|byte| **byte == b'\n').count(), 1);
    }
});
