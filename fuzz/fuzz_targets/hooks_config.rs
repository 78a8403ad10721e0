//! A hook configuration document of either dialect (`.agents/hooks.json`, Claude-style
//! settings), detected from its shape or forced, as `hookbox_hooks::config::parse` reads it.
#![no_main]

use hookbox_hooks::Dialect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u8, &str)| {
    let (choice, text) = input;
    let dialect = match choice % 3 {
        0 => None,
        1 => Some(Dialect::Sandbox),
        _ => Some(Dialect::Sdk),
    };
    let _ = hookbox_hooks::config::parse("fuzz.json", text, dialect, &[]);
});
