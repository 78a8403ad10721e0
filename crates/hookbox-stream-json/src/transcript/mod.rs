//! Session transcripts where Claude Code keeps them, so the SDKs' session helpers
//! (`list_sessions`, `get_session_messages`, `list_subagents`, `get_subagent_messages`) read
//! hookbox sessions: `<config>/projects/<cwd with every character but ASCII letters and digits
//! made '-'>/<session_id>.jsonl`, `<config>` being `CLAUDE_CONFIG_DIR` or `~/.claude`. One
//! JSON entry per line, chained by `parentUuid`: the user's prompts, the model's turns, the
//! tool results, compaction boundaries and their summaries. A sub-agent's turns go to
//! `<session_id>/subagents/agent-<id>.jsonl`, with `agent-<id>.meta.json` naming the `Task`
//! call (`toolUseId`) that started it.
//!
//! Transcript files are opened without following symbolic links (`O_NOFOLLOW`), for reading
//! and for writing.
//!
//! Each entry is written as it comes with one `write` on a file opened for appending, then
//! synced by a thread of its own (the protocol never waits for the disk; the driver waits for
//! that thread before the process exits): a crash loses at most the entry being written, and
//! a cut line is skipped by every reader (and followed by a newline before the next entry). Directories are private to the user (0700),
//! files too (0600). Only the conversation is written: never the system prompt, hook
//! configuration, settings or the environment, so no credential the session holds (model API
//! keys, hook headers) reaches a transcript.

mod resume;

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use hookbox_agent::session::{SessionMessage, new_uuid, subagent_id};
use hookbox_store::Timestamp;
use serde_json::{Map, Value, json};

pub(crate) use resume::{Resumed, resume};

use crate::warn;

/// The longest project directory name before Claude Code shortens it with a hash.
const MAX_SANITIZED_LENGTH: usize = 200;

/// `CLAUDE_CONFIG_DIR`, else `$HOME/.claude`: where Claude Code, and the SDKs' session helpers,
/// keep sessions. `None` without either.
pub fn config_dir() -> Option<PathBuf> {
    std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|dir| !dir.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|home| !home.is_empty())
                .map(|home| PathBuf::from(home).join(".claude"))
        })
}

/// The directory of `cwd`'s sessions under `config` (`config/projects/<sanitized cwd>`), the
/// way Claude Code and the SDKs name it: `cwd` resolved (symbolic links followed), every
/// character but ASCII letters and digits replaced by `-`, and a name longer than 200
/// characters cut there and followed by `-` and a hash of the path.
pub(crate) fn project_dir(config: &Path, cwd: &Path) -> PathBuf {
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let cwd = cwd.to_string_lossy();
    let mut name: String = cwd
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    if name.chars().count() > MAX_SANITIZED_LENGTH {
        name = format!(
            "{}-{}",
            name.chars().take(MAX_SANITIZED_LENGTH).collect::<String>(),
            simple_hash(&cwd)
        );
    }
    config.join("projects").join(name)
}

/// The 32-bit string hash in base 36 that names long project directories (the SDKs'
/// `simpleHash`, over UTF-16 code units as in JavaScript).
fn simple_hash(text: &str) -> String {
    let mut hash: i32 = 0;
    for unit in text.encode_utf16() {
        hash = hash
            .wrapping_shl(5)
            .wrapping_sub(hash)
            .wrapping_add(i32::from(unit));
    }
    let mut n = hash.unsigned_abs();
    if n == 0 {
        return "0".to_owned();
    }
    let mut digits = Vec::new();
    while n > 0 {
        let digit = n % 36;
        digits.push(char::from_digit(digit, 36).unwrap_or('0'));
        n /= 36;
    }
    digits.iter().rev().collect()
}

/// Whether `id` is a UUID (`8-4-4-4-12` hexadecimal digits): the only session ids Claude Code
/// and the SDKs' helpers accept, and never a path.
pub(crate) fn is_uuid(id: &str) -> bool {
    let groups: Vec<&str> = id.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(group, len)| group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Creates `dir` and its missing parents, private to the user.
fn create_private_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Opens the transcript `path` to read it, refusing a symbolic link: whoever could plant
/// one (a config directory the model can write) must not make hookbox read or append to
/// another file.
fn open_to_read(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Opens `path` for appending (creating it private to the user, never through a symbolic
/// link); a cut last line left by a crash is ended first, so it stays one unreadable line of
/// its own.
fn open_to_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let length = file.metadata()?.len();
    if length > 0 {
        let mut last = [0u8; 1];
        file.seek(SeekFrom::Start(length - 1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            file.write_all(b"\n")?;
        }
    }
    Ok(file)
}

/// The transcript files of a session: each entry is appended as one line in one `write` as it
/// comes (so a crash of the process loses nothing written, and hooks read an up-to-date
/// transcript), then synced to disk by a thread of its own, so the protocol never waits for
/// the disk.
struct Disk {
    files: HashMap<PathBuf, File>,
    syncer: Option<mpsc::Sender<File>>,
    thread: Option<JoinHandle<bool>>,
    /// Whether a write failed already (reported once).
    failed: bool,
}

impl Disk {
    fn start() -> Self {
        let (syncer, files) = mpsc::channel::<File>();
        let thread = std::thread::Builder::new()
            .name("hookbox-transcript-sync".into())
            .spawn(move || files.into_iter().all(|file| file.sync_data().is_ok()));
        let (syncer, thread) = match thread {
            Ok(thread) => (Some(syncer), Some(thread)),
            // Written, not synced: still a transcript.
            Err(_) => (None, None),
        };
        Self {
            files: HashMap::new(),
            syncer,
            thread,
            failed: false,
        }
    }

    fn append(&mut self, path: &Path, entry: &Value) {
        let mut line = entry.to_string();
        line.push('\n');
        let written = match self.files.get_mut(path) {
            Some(file) => file.write_all(line.as_bytes()),
            None => open_to_append(path).and_then(|mut file| {
                file.write_all(line.as_bytes())?;
                self.files.insert(path.to_path_buf(), file);
                Ok(())
            }),
        }
        .and_then(|()| match (&self.syncer, self.files.get(path)) {
            (Some(syncer), Some(file)) => {
                let _ = syncer.send(file.try_clone()?);
                Ok(())
            }
            _ => Ok(()),
        });
        // The first failure is reported; the session goes on without a complete transcript
        // rather than stopping.
        if let Err(err) = written
            && !std::mem::replace(&mut self.failed, true)
        {
            warn(&format!(
                "cannot write the session transcript {}: {err}; the session goes on, but it \
                 cannot be fully listed or resumed",
                path.display()
            ));
        }
    }

    /// Waits until every entry is synced; whether all were written and synced.
    fn finish(&mut self) -> bool {
        self.syncer = None;
        let synced = self
            .thread
            .take()
            .is_none_or(|thread| thread.join().unwrap_or(false));
        if !synced && !std::mem::replace(&mut self.failed, true) {
            warn("cannot sync the session transcript to disk: a system crash may lose its end");
        }
        !self.failed
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A chain of entries in one file: the file and the uuid the next entry follows.
struct Chain {
    path: PathBuf,
    parent: Option<String>,
}

/// A sub-agent's transcript.
struct Subagent {
    agent_id: String,
    chain: Chain,
}

/// Writes one SDK session's transcript as its messages go by (see the module documentation).
pub(crate) struct TranscriptWriter {
    project: PathBuf,
    cwd: String,
    session_id: String,
    main: Chain,
    /// Sub-agent transcripts by the id of the `Task` call that started them.
    subagents: HashMap<String, Subagent>,
    /// `Task` calls of the main agent by id: the sub-agent type and its prompt.
    tasks: HashMap<String, (String, String)>,
    disk: Disk,
}

impl TranscriptWriter {
    /// A writer for session `session_id` in project directory `project`, whose next entry
    /// follows `parent` (`None` for a new conversation).
    pub(crate) fn new(
        project: PathBuf,
        cwd: &Path,
        session_id: &str,
        parent: Option<String>,
    ) -> Self {
        Self {
            main: Chain {
                path: project.join(format!("{session_id}.jsonl")),
                parent,
            },
            project,
            cwd: cwd.display().to_string(),
            session_id: session_id.to_owned(),
            subagents: HashMap::new(),
            tasks: HashMap::new(),
            disk: Disk::start(),
        }
    }

    /// Waits until every entry is on disk (also done when the writer is dropped); whether
    /// all were written.
    pub(crate) fn finish(&mut self) -> bool {
        self.disk.finish()
    }

    /// The user's prompt `text`, under the uuid its message had (or a new one).
    pub(crate) fn prompt(&mut self, text: &str, uuid: &str) {
        let entry = self.entry("user", json!({"role": "user", "content": text}), uuid, None);
        self.write_main(entry);
    }

    /// One message of the session, `wire` being its stream-json line (whose `uuid` and
    /// `message` the entry shares, so a uuid the SDK saw names the same entry here).
    pub(crate) fn message(&mut self, message: &SessionMessage, wire: &Value) {
        let uuid = wire.get("uuid").and_then(Value::as_str).unwrap_or_default();
        match message {
            SessionMessage::Assistant {
                parent_tool_use_id, ..
            }
            | SessionMessage::User {
                parent_tool_use_id, ..
            } => {
                let kind = if matches!(message, SessionMessage::Assistant { .. }) {
                    "assistant"
                } else {
                    "user"
                };
                let mut entry = self.entry(kind, wire["message"].clone(), uuid, None);
                if let Some(result) = wire.get("tool_use_result") {
                    entry["toolUseResult"] = result.clone();
                }
                match parent_tool_use_id {
                    None => {
                        if kind == "assistant" {
                            self.note_tasks(&wire["message"]);
                        }
                        self.write_main(entry);
                    }
                    Some(call) => self.write_subagent(call, entry),
                }
            }
            SessionMessage::CompactBoundary {
                trigger,
                pre_tokens,
                summary,
            } => {
                // The boundary starts a new chain (readers stop at it); the summary follows.
                let mut boundary = self.entry("system", Value::Null, uuid, None);
                if let Some(entry) = boundary.as_object_mut() {
                    entry.remove("message");
                    entry.insert("parentUuid".into(), Value::Null);
                    entry.insert("logicalParentUuid".into(), json!(self.main.parent));
                    entry.insert("subtype".into(), json!("compact_boundary"));
                    entry.insert("content".into(), json!("Conversation compacted"));
                    entry.insert(
                        "compactMetadata".into(),
                        json!({"trigger": trigger.as_str(), "preTokens": pre_tokens}),
                    );
                }
                self.write_main(boundary);
                let mut summary = self.entry(
                    "user",
                    json!({"role": "user", "content": summary}),
                    &new_uuid(),
                    None,
                );
                summary["isCompactSummary"] = json!(true);
                self.write_main(summary);
            }
            SessionMessage::ConversationReset { session_id, .. } => {
                // A new file for the new session, written by the same disk thread.
                self.session_id.clone_from(session_id);
                self.main = Chain {
                    path: self.project.join(format!("{session_id}.jsonl")),
                    parent: None,
                };
                self.subagents.clear();
                self.tasks.clear();
            }
            SessionMessage::Init { .. }
            | SessionMessage::HookFailed(_)
            | SessionMessage::HookSystemMessage { .. }
            | SessionMessage::StreamEvent { .. }
            | SessionMessage::Result(_) => {}
        }
    }

    /// Copies `entries` (an earlier session's conversation) to the start of this one's
    /// transcript, each stamped with this session's id and where it came from
    /// (`forkedFrom`), as Claude Code's `--fork-session` does.
    pub(crate) fn fork_from(&mut self, from: &str, entries: &[Map<String, Value>]) {
        for entry in entries {
            let mut entry = entry.clone();
            let uuid = entry.get("uuid").cloned().unwrap_or(Value::Null);
            entry.insert("sessionId".into(), json!(self.session_id));
            entry.insert(
                "forkedFrom".into(),
                json!({"sessionId": from, "messageUuid": uuid}),
            );
            self.write_main(Value::Object(entry));
        }
    }

    /// A transcript entry of this session: `kind` (`user`, `assistant`, `system`) with
    /// `message`, under `uuid`, following the main chain (`agent`: a sub-agent's entry,
    /// whose parent the caller sets).
    fn entry(&self, kind: &str, message: Value, uuid: &str, agent: Option<&str>) -> Value {
        let mut entry = json!({
            "parentUuid": self.main.parent,
            "isSidechain": agent.is_some(),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": env!("CARGO_PKG_VERSION"),
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": Timestamp::now().to_string(),
        });
        if let Some(agent) = agent {
            entry["agentId"] = json!(agent);
        }
        entry
    }

    /// Remembers the `Task` calls of a main-agent turn, to name and start their sub-agents'
    /// transcripts.
    fn note_tasks(&mut self, message: &Value) {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_use" && block["name"] == "Task" {
                let id = block["id"].as_str().unwrap_or_default().to_owned();
                let kind = block["input"]["subagent_type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                let prompt = block["input"]["prompt"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                self.tasks.insert(id, (kind, prompt));
            }
        }
    }

    /// Appends `entry` to the main chain (its `uuid` becomes the parent of the next entry).
    fn write_main(&mut self, entry: Value) {
        if let Some(uuid) = entry.get("uuid").and_then(Value::as_str) {
            self.main.parent = Some(uuid.to_owned());
        }
        self.disk.append(&self.main.path, &entry);
    }

    /// Appends `entry` to the transcript of the sub-agent that `Task` call `call` started,
    /// beginning it (its metadata, then the task's prompt) at its first entry.
    fn write_subagent(&mut self, call: &str, mut entry: Value) {
        if !self.subagents.contains_key(call) {
            // The id its hooks saw (`agent_id`, and `agent_transcript_path` names this file).
            let agent_id = subagent_id(&self.session_id, call);
            let dir = self.project.join(&self.session_id).join("subagents");
            let (kind, prompt) = self.tasks.get(call).cloned().unwrap_or_default();
            self.disk.append(
                &dir.join(format!("agent-{agent_id}.meta.json")),
                &json!({"agentType": kind, "toolUseId": call}),
            );
            let mut first = self.entry(
                "user",
                json!({"role": "user", "content": prompt}),
                &new_uuid(),
                Some(&agent_id),
            );
            first["parentUuid"] = Value::Null;
            let chain = Chain {
                path: dir.join(format!("agent-{agent_id}.jsonl")),
                parent: first["uuid"].as_str().map(str::to_owned),
            };
            self.disk.append(&chain.path, &first);
            self.subagents
                .insert(call.to_owned(), Subagent { agent_id, chain });
        }
        let Some(subagent) = self.subagents.get_mut(call) else {
            return;
        };
        entry["parentUuid"] = json!(subagent.chain.parent);
        entry["isSidechain"] = json!(true);
        entry["agentId"] = json!(subagent.agent_id);
        subagent.chain.parent = entry["uuid"].as_str().map(str::to_owned);
        self.disk.append(&subagent.chain.path, &entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::argv::SdkArgs;

    #[test]
    fn project_directories_are_named_as_claude_code_names_them() {
        let config = Path::new("/c");
        assert_eq!(
            project_dir(config, Path::new("/no/such/dir.x_y")),
            PathBuf::from("/c/projects/-no-such-dir-x-y")
        );
        let long = format!("/no/{}", "a".repeat(250));
        let name = project_dir(config, Path::new(&long));
        let name = name
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        assert!(
            name.starts_with(&format!("-no-{}", "a".repeat(196))),
            "{name}"
        );
        assert_eq!(name.len(), 201 + simple_hash(&long).len());
        // The SDKs' simpleHash of "abc" (JavaScript: 96354 in base 36).
        assert_eq!(simple_hash("abc"), "22ci");
    }

    #[test]
    fn a_line_cut_by_a_crash_is_ended_and_skipped_and_the_rest_resumes() {
        use std::os::unix::fs::PermissionsExt;

        use hookbox_llm::Message;

        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("projects").join("p");
        let id = "550e8400-e29b-41d4-a716-446655440000";
        let path = project.join(format!("{id}.jsonl"));
        let mut writer = TranscriptWriter::new(project.clone(), dir.path(), id, None);
        writer.prompt("hello", "u1");
        assert!(writer.finish());
        // A crash in the middle of the next entry.
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        file.write_all(br#"{"type":"user","uuid":"u2","message":{"role":"us"#)
            .unwrap();
        drop(file);
        let mut writer = TranscriptWriter::new(project.clone(), dir.path(), id, Some("u1".into()));
        writer.prompt("again", "u3");
        assert!(writer.finish());
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert!(text.ends_with('\n'));
        let args = SdkArgs {
            resume: Some(id.to_owned()),
            ..SdkArgs::default()
        };
        let resumed = resume(&project, &args).unwrap().unwrap();
        assert_eq!(
            resumed.history,
            [
                Message::User {
                    text: "hello".into()
                },
                Message::User {
                    text: "again".into()
                }
            ]
        );
        assert_eq!(resumed.leaf().as_deref(), Some("u3"));
        let mode = |path: &Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&project), 0o700);
    }

    #[test]
    fn a_transcript_that_is_a_symbolic_link_is_neither_read_nor_written() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("p");
        std::fs::create_dir_all(&project).unwrap();
        let target = dir.path().join("bashrc");
        std::fs::write(&target, "# mine\n").unwrap();
        let id = "550e8400-e29b-41d4-a716-446655440000";
        std::os::unix::fs::symlink(&target, project.join(format!("{id}.jsonl"))).unwrap();
        let args = SdkArgs {
            resume: Some(id.to_owned()),
            ..SdkArgs::default()
        };
        let error = resume(&project, &args).err().unwrap_or_default();
        assert!(error.contains("cannot read the transcript"), "{error}");
        let mut writer = TranscriptWriter::new(project, dir.path(), id, None);
        writer.prompt("hello", "u1");
        assert!(!writer.finish());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "# mine\n");
    }

    #[test]
    fn only_uuids_are_session_ids_to_resume() {
        assert!(is_uuid("550e8400-e29b-41d4-a716-446655440000"));
        assert!(!is_uuid("../../x"));
        assert!(!is_uuid("550e8400-e29b-41d4-a716-44665544000/"));
        assert!(!is_uuid("550e8400e29b41d4a716446655440000"));
        assert!(!is_uuid(""));
    }
}
