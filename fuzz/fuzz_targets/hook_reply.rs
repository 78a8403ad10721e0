//! What a command hook printed, decoded by the rules of its event's dialect.
//!
//! Input: the event (byte 0), the exit status (byte 1: 0, 1, 2, 127, -1, or that byte itself),
//! whether stdout was cut and whether the hook fails closed (bits 0 and 1 of byte 2), then
//! stdout, and after its first NUL, stderr.
#![no_main]

use hookbox_hooks::HookEvent;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [event, code, flags, output @ ..] = data else {
        return;
    };
    let event = HookEvent::ALL[usize::from(*event) % HookEvent::ALL.len()];
    let exit_code = match code {
        0..=4 => [0, 1, 2, 127, -1][usize::from(*code)],
        other => i32::from(*other),
    };
    let (stdout, stderr) = match output.iter().position(|byte| *byte == 0) {
        Some(nul) => (&output[..nul], &output[nul + 1..]),
        None => (output, &[][..]),
    };
    hookbox_hooks::fuzzing::decode_command_reply(
        event,
        exit_code,
        stdout,
        stderr,
        flags & 1 != 0,
        flags & 2 != 0,
    );
});
