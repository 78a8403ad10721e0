//! Where a query's messages go: the caller's stream and, when the session has one, its
//! transcript file (one stream-json line per message).

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use tokio::sync::mpsc::UnboundedSender;

use super::messages::SessionMessage;
use hookbox_store::new_uuid;

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
            let line = message.to_wire(self.session_id, &new_uuid());
            let _ = writeln!(file, "{line}");
        }
        let _ = self.stream.send(message);
    }
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
