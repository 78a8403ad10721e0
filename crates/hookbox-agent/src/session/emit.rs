//! Where a query's messages go: the caller's stream and, when the session has one, its
//! transcript file (one line per message, in the format its caller chose).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use tokio::sync::mpsc::UnboundedSender;

use super::messages::SessionMessage;

/// How a transcript writes one message of session `session_id`: one line, without its
/// newline (e.g. `hookbox-stream-json`'s stream-json line).
pub type TranscriptFormat = fn(&SessionMessage, &str) -> String;

/// A session's transcript: the file and the format of its lines.
pub(crate) struct Transcript {
    pub(crate) file: File,
    pub(crate) format: TranscriptFormat,
}

/// Sends messages to the stream and appends them to the transcript.
pub(crate) struct Emitter<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) stream: UnboundedSender<SessionMessage>,
    pub(crate) transcript: Option<&'a mut Transcript>,
}

impl Emitter<'_> {
    /// Emits one message. A reader that went away or a full disk does not stop the session:
    /// the stream is best-effort once its reader is gone, and the transcript is a record.
    pub(crate) fn emit(&mut self, message: SessionMessage) {
        if let Some(transcript) = self.transcript.as_deref_mut() {
            let line = (transcript.format)(&message, self.session_id);
            let _ = writeln!(transcript.file, "{line}");
        }
        let _ = self.stream.send(message);
    }
}

/// Where a session's transcripts go: `DIR/<session_id>.jsonl`, written by the session in
/// `format`, or (`None`) by its caller, the session only naming the file to hooks.
pub(crate) type TranscriptPlace = (PathBuf, Option<TranscriptFormat>);

/// The transcript of session `session_id` at `place` (`None` when the caller writes it), and
/// its path as hooks receive it (`transcript_path`; empty without a place).
pub(crate) fn place_transcript(
    place: Option<&TranscriptPlace>,
    session_id: &str,
) -> io::Result<(Option<Transcript>, String)> {
    match place {
        None => Ok((None, String::new())),
        Some((dir, None)) => Ok((
            None,
            dir.join(format!("{session_id}.jsonl"))
                .display()
                .to_string(),
        )),
        Some((dir, Some(format))) => {
            let (file, path) = open_transcript(dir, session_id)?;
            let format = *format;
            Ok((Some(Transcript { file, format }), path))
        }
    }
}

/// Where the transcript of sub-agent `agent_id` of session `session_id` is, when its caller
/// writes the transcripts at `place`: Claude Code's `DIR/<session_id>/subagents/agent-<agent_id>.jsonl`.
/// `None` when the session writes its own (its sub-agents' turns go to its file) or keeps none.
pub(crate) fn subagent_transcript_path(
    place: Option<&TranscriptPlace>,
    session_id: &str,
    agent_id: &str,
) -> Option<String> {
    match place {
        Some((dir, None)) => Some(
            dir.join(session_id)
                .join("subagents")
                .join(format!("agent-{agent_id}.jsonl"))
                .display()
                .to_string(),
        ),
        _ => None,
    }
}

/// Opens (creating) `dir/<session_id>.jsonl` for appending, private to the user.
fn open_transcript(dir: &Path, session_id: &str) -> io::Result<(File, String)> {
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
