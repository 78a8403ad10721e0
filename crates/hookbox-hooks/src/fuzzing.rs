//! Entry points for the fuzz targets in the repository's `fuzz/` directory (feature `fuzzing`,
//! never enabled by hookbox itself): the hook reply decoders are not public API.

use std::time::Duration;

use hookbox_exec::{CapturedOutput, ExitKind, ProcessOutput};

use crate::binding::{Binding, Origin, Trust};
use crate::decode::{RawReply, decode};
use crate::event::HookEvent;
use crate::handler::{CommandHandler, Handler, OnError};
use crate::outcome::Decision;

/// Decodes `stdout` and `stderr` as the reply of a command hook on `event` that ended as
/// `exit` (its stdout cut after `stdout.len()` bytes when `truncated`), failing closed when
/// `fail_closed`; returns the decision it makes, if any.
pub fn decode_command_reply(
    event: HookEvent,
    exit: ExitKind,
    stdout: &[u8],
    stderr: &[u8],
    truncated: bool,
    fail_closed: bool,
) -> Option<Decision> {
    let handler = Handler::Command(CommandHandler {
        command: "fuzz".into(),
        timeout: Duration::from_secs(1),
        on_error: if fail_closed {
            OnError::Deny
        } else {
            OnError::Allow
        },
    });
    let output = ProcessOutput {
        exit,
        stdout: CapturedOutput {
            bytes: stdout.to_vec(),
            dropped: u64::from(truncated),
        },
        stderr: CapturedOutput {
            bytes: stderr.to_vec(),
            dropped: 0,
        },
        duration: Duration::ZERO,
    };
    let origin = Origin {
        source: "fuzz".into(),
        group: None,
        json_path: "$".into(),
        trust: Trust::Owner,
    };
    let binding = Binding::new(event, None, handler, origin);
    decode(event, &binding, RawReply::Process(output)).decision
}

#[cfg(test)]
mod tests {
    use hookbox_exec::ExitKind;

    use super::decode_command_reply;
    use crate::event::HookEvent;
    use crate::outcome::Decision;

    #[test]
    fn replies_decode_by_their_dialect() {
        let deny = br#"{"decision": "deny", "reason": "no"}"#;
        let gate = HookEvent::PreToolExecution;
        assert_eq!(
            decode_command_reply(gate, ExitKind::Exited(0), deny, b"", false, false),
            Some(Decision::Deny)
        );
        // A cut answer is never an allow.
        assert_eq!(
            decode_command_reply(gate, ExitKind::Exited(0), b"{}", b"", true, false),
            Some(Decision::Deny)
        );
        assert_eq!(
            decode_command_reply(
                gate,
                ExitKind::Exited(0),
                b"\xff not json",
                b"",
                false,
                false
            ),
            None
        );
        for event in HookEvent::ALL {
            for stdout in [&deny[..], b"\xff not json", b""] {
                decode_command_reply(event, ExitKind::Exited(2), stdout, b"why", false, true);
            }
        }
    }
}
