//! What a command hook printed, decoded by the rules of its event's dialect.
//!
//! Input: the event (byte 0), how the hook ended (byte 1: exit 0, 1, 2, 127, -1, its timeout,
//! SIGKILL, or an exit status of that byte itself), whether stdout was cut and whether the hook
//! fails closed (bits 0 and 1 of byte 2), then stdout, and after its first NUL, stderr.
//!
//! Asserts that a reply a hook completed keeps its blocking decision however the hook's process
//! ended afterwards (its timeout, a signal).
#![no_main]

use hookbox_exec::ExitKind;
use hookbox_hooks::{Decision, HookEvent};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let [event, code, flags, output @ ..] = data else {
        return;
    };
    let event = HookEvent::ALL[usize::from(*event) % HookEvent::ALL.len()];
    let exit = match code {
        0..=4 => ExitKind::Exited([0, 1, 2, 127, -1][usize::from(*code)]),
        5 => ExitKind::TimedOut,
        6 => ExitKind::Signaled(9),
        other => ExitKind::Exited(i32::from(*other)),
    };
    let (stdout, stderr) = match output.iter().position(|byte| *byte == 0) {
        Some(nul) => (&output[..nul], &output[nul + 1..]),
        None => (output, &[][..]),
    };
    let (truncated, fail_closed) = (flags & 1 != 0, flags & 2 != 0);
    let decode = |exit| {
        hookbox_hooks::fuzzing::decode_command_reply(
            event,
            exit,
            stdout,
            stderr,
            truncated,
            fail_closed,
        )
    };
    decode(exit);
    if !truncated
        && matches!(
            decode(ExitKind::Exited(0)),
            Some(Decision::Deny | Decision::Block)
        )
    {
        for ending in [ExitKind::TimedOut, ExitKind::Signaled(9)] {
            assert!(
                matches!(decode(ending), Some(Decision::Deny | Decision::Block)),
                "a completed block was lost at {ending:?}"
            );
        }
    }
});
