//! Where a query's messages go: the caller's stream and, when the session has one, its
//! transcript file (one stream-json line per message).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::Path;

use tokio::sync::mpsc::UnboundedSender;

use super::messages::SessionMessage;

/// Sends messages to the stream and appends them to the transcript.
pub(crate) struct Emitter<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) stream: UnboundedSender<SessionMessage>,
    pub(crate) transcript: Option<&'a mut File>,
}

impl Emitter<'_> {
    /// Emits one message. A reader that went away or a full disk does not stop the session:
    /// the stream is best-effort once its reader is gone, and the transcript is a record.
    pub(crate) fn emit(&mut self, message: SessionMessage) {
        if let Some(file) = self.transcript.as_deref_mut() {
            let line = message.to_wire(self.session_id, &new_uuid().unwrap_or_default());
            let _ = writeln!(file, "{line}");
        }
        let _ = self.stream.send(message);
    }
}

/// A random version-4 UUID, like the ids Claude Code gives sessions and messages.
pub(crate) fn new_uuid() -> io::Result<String> {
    let mut bytes = [0u8; 16];
    File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    ))
}

/// Opens (creating) `dir/<session_id>.jsonl` for appending, private to the user.
pub(crate) fn open_transcript(dir: &Path, session_id: &str) -> io::Result<(File, String)> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::create_dir_all(dir)?;
    let path = dir.join(format!("{session_id}.jsonl"));
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)?;
    Ok((file, path.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_have_the_v4_shape() {
        let uuid = new_uuid().unwrap_or_default();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
        assert_ne!(new_uuid().unwrap_or_default(), uuid);
    }
}
