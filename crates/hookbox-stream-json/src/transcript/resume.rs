//! Reading a transcript back for `--resume ID`, `--continue` and `--resume-session-at UUID`:
//! the entries from the conversation's start to its leaf (the message to resume at, else the
//! latest one), following `parentUuid` as the SDKs' `get_session_messages` does, and the
//! model's history they make.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use hookbox_llm::{Message, Thinking, ToolCall, ToolResult};
use serde_json::{Map, Value};

use super::{is_uuid, open_to_read};
use crate::argv::SdkArgs;

/// A conversation read back from a transcript.
pub(crate) struct Resumed {
    /// The session whose transcript was read.
    pub(crate) session_id: String,
    /// Its entries from the start to the leaf, oldest first.
    pub(crate) entries: Vec<Map<String, Value>>,
    /// The model's history they make.
    pub(crate) history: Vec<Message>,
}

impl Resumed {
    /// The uuid of the last entry: what the next entry follows.
    pub(crate) fn leaf(&self) -> Option<String> {
        self.entries
            .last()
            .and_then(|entry| entry.get("uuid"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    }
}

/// The conversation `args` ask to go on with (`--resume ID`, else `--continue`), read from
/// session directory `project`; `None` when they ask for none. An id that is not a UUID, a
/// session that does not exist and a `--resume-session-at` message that is not in it are
/// errors that say so.
pub(crate) fn resume(project: &Path, args: &SdkArgs) -> Result<Option<Resumed>, String> {
    let session_id = match (&args.resume, args.continue_latest) {
        (Some(id), _) => {
            if !is_uuid(id) {
                return Err(format!(
                    "cannot resume `{id}`: a session id is a UUID such as \
                     550e8400-e29b-41d4-a716-446655440000 (the SDK's list_sessions() lists them)"
                ));
            }
            if !project.join(format!("{id}.jsonl")).is_file() {
                return Err(format!(
                    "No conversation found with session ID: {id} (looked in {})",
                    project.display()
                ));
            }
            id.clone()
        }
        (None, true) => latest(project).ok_or_else(|| {
            format!(
                "No conversation found to continue (no session in {})",
                project.display()
            )
        })?,
        (None, false) => return Ok(None),
    };
    let path = project.join(format!("{session_id}.jsonl"));
    let mut text = String::new();
    open_to_read(&path)
        .and_then(|mut file| file.read_to_string(&mut text))
        .map_err(|err| format!("cannot read the transcript {}: {err}", path.display()))?;
    let entries = chain(parse(&text), args.resume_session_at.as_deref()).ok_or_else(|| {
        format!(
            "--resume-session-at: no message {} in session {session_id}",
            args.resume_session_at.as_deref().unwrap_or_default()
        )
    })?;
    let history = history(&entries);
    Ok(Some(Resumed {
        session_id,
        entries,
        history,
    }))
}

/// The id of the session in `project` written last (by modification time).
fn latest(project: &Path) -> Option<String> {
    std::fs::read_dir(project)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let name = entry
                .file_name()
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_owned();
            let metadata = entry.metadata().ok()?;
            (is_uuid(&name) && metadata.is_file() && metadata.len() > 0)
                .then(|| (metadata.modified().ok(), name))
        })
        .max()
        .map(|(_, name)| name)
}

/// The conversation entries of a transcript (`user`, `assistant`, `system` with a `uuid`), in
/// file order; lines that are not JSON (a line cut by a crash) are skipped.
fn parse(text: &str) -> Vec<Map<String, Value>> {
    text.lines()
        .filter_map(|line| match serde_json::from_str(line) {
            Ok(Value::Object(entry)) => Some(entry),
            _ => None,
        })
        .filter(|entry| {
            matches!(
                entry.get("type").and_then(Value::as_str),
                Some("user" | "assistant" | "system")
            ) && entry.get("uuid").is_some_and(Value::is_string)
        })
        .collect()
}

/// The entries from the start of the conversation to `at` (else to the latest message of
/// the main agent), by `parentUuid`; `None` when `at` is not there.
fn chain(entries: Vec<Map<String, Value>>, at: Option<&str>) -> Option<Vec<Map<String, Value>>> {
    let uuid = |entry: &Map<String, Value>| -> String {
        entry
            .get("uuid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let leaf = match at {
        Some(at) => entries.iter().position(|entry| uuid(entry) == at)?,
        None => {
            let Some(leaf) = entries.iter().rposition(|entry| {
                matches!(
                    entry.get("type").and_then(Value::as_str),
                    Some("user" | "assistant")
                ) && entry.get("isSidechain") != Some(&Value::Bool(true))
            }) else {
                return Some(Vec::new());
            };
            leaf
        }
    };
    let by_uuid: HashMap<String, usize> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| (uuid(entry), index))
        .collect();
    let mut chain = Vec::new();
    let mut seen = vec![false; entries.len()];
    let mut current = Some(leaf);
    while let Some(index) = current.filter(|index| !seen[*index]) {
        seen[index] = true;
        chain.push(index);
        current = entries[index]
            .get("parentUuid")
            .and_then(Value::as_str)
            .and_then(|parent| by_uuid.get(parent).copied());
    }
    chain.reverse();
    Some(
        chain
            .into_iter()
            .map(|index| entries[index].clone())
            .collect(),
    )
}

/// The model's history that `entries` make: prompts, turns (one per API message, however
/// many entries it was written in) and tool results; system and meta entries are not part
/// of it.
fn history(entries: &[Map<String, Value>]) -> Vec<Message> {
    let mut messages = Vec::new();
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut last_turn: Option<String> = None;
    for entry in entries {
        if entry.get("isMeta") == Some(&Value::Bool(true)) {
            continue;
        }
        let message = entry.get("message").cloned().unwrap_or(Value::Null);
        match entry.get("type").and_then(Value::as_str) {
            Some("user") => {
                last_turn = None;
                user(&message["content"], &tool_names, &mut messages);
            }
            Some("assistant") => {
                let id = message["id"].as_str().map(str::to_owned);
                let same_turn = id.is_some() && id == last_turn;
                last_turn = id;
                if !same_turn || !matches!(messages.last(), Some(Message::Assistant { .. })) {
                    messages.push(Message::Assistant {
                        text: String::new(),
                        tool_calls: Vec::new(),
                        thinking: Vec::new(),
                    });
                }
                if let Some(Message::Assistant {
                    text,
                    tool_calls,
                    thinking,
                }) = messages.last_mut()
                {
                    for block in message["content"].as_array().into_iter().flatten() {
                        match block["type"].as_str() {
                            Some("text") => text.push_str(block["text"].as_str().unwrap_or("")),
                            Some("thinking") => thinking.push(Thinking {
                                text: block["thinking"].as_str().unwrap_or("").to_owned(),
                                signature: block["signature"].as_str().unwrap_or("").to_owned(),
                            }),
                            Some("tool_use") => {
                                let call = ToolCall {
                                    id: block["id"].as_str().unwrap_or("").to_owned(),
                                    name: block["name"].as_str().unwrap_or("").to_owned(),
                                    args: block["input"].clone(),
                                };
                                tool_names.insert(call.id.clone(), call.name.clone());
                                tool_calls.push(call);
                            }
                            _ => {}
                        }
                    }
                }
            }
            _ => last_turn = None,
        }
    }
    messages
}

/// A user entry's `content` as messages: its text as one prompt, each `tool_result` block as
/// the result of the call it answers.
fn user(content: &Value, tool_names: &HashMap<String, String>, messages: &mut Vec<Message>) {
    let blocks = match content {
        Value::String(text) => {
            messages.push(Message::User { text: text.clone() });
            return;
        }
        Value::Array(blocks) => blocks,
        _ => return,
    };
    let mut texts = Vec::new();
    for block in blocks {
        match block["type"].as_str() {
            Some("text") => texts.push(block["text"].as_str().unwrap_or("").to_owned()),
            Some("tool_result") => {
                let call_id = block["tool_use_id"].as_str().unwrap_or("").to_owned();
                let content = match &block["content"] {
                    Value::String(text) => text.clone(),
                    Value::Array(parts) => parts
                        .iter()
                        .filter_map(|part| part["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                    _ => String::new(),
                };
                messages.push(Message::ToolResult(ToolResult {
                    name: tool_names.get(&call_id).cloned().unwrap_or_default(),
                    call_id,
                    content: Value::String(content),
                    is_error: block["is_error"] == Value::Bool(true),
                }));
            }
            _ => {}
        }
    }
    if !texts.is_empty() {
        messages.push(Message::User {
            text: texts.join("\n"),
        });
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn lines(entries: &[Value]) -> String {
        entries
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_chain_follows_parents_to_the_leaf_or_the_message_asked_for() {
        let text = lines(&[
            json!({"type": "user", "uuid": "u1", "parentUuid": null, "message": {"role": "user", "content": "hi"}}),
            json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {"id": "m1", "content": [{"type": "text", "text": "hello"}]}}),
            json!({"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": "first branch"}}),
            json!({"type": "user", "uuid": "u3", "parentUuid": "a1", "message": {"role": "user", "content": "second branch"}}),
            json!({"type": "assistant", "uuid": "s1", "parentUuid": "u3", "isSidechain": true, "message": {"content": []}}),
        ]) + "\n{\"type\":\"user\",\"uuid\":\"cut";
        let entries = parse(&text);
        assert_eq!(entries.len(), 5);
        let ids = |chain: &[Map<String, Value>]| -> Vec<String> {
            chain
                .iter()
                .map(|entry| entry["uuid"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(
            ids(&chain(entries.clone(), None).unwrap_or_default()),
            ["u1", "a1", "u3"]
        );
        assert_eq!(
            ids(&chain(entries.clone(), Some("u2")).unwrap_or_default()),
            ["u1", "a1", "u2"]
        );
        assert!(chain(entries, Some("nope")).is_none());
    }

    #[test]
    fn history_joins_a_turn_written_in_pieces_and_names_tool_results() {
        let entries = parse(&lines(&[
            json!({"type": "user", "uuid": "u1", "message": {"role": "user", "content": "list"}}),
            json!({"type": "assistant", "uuid": "a1", "message": {"id": "m1", "content": [{"type": "text", "text": "Listing."}]}}),
            json!({"type": "assistant", "uuid": "a2", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}]}}),
            json!({"type": "user", "uuid": "u2", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt", "is_error": false}]}}),
            json!({"type": "system", "uuid": "x1", "subtype": "compact_boundary"}),
            json!({"type": "user", "uuid": "u3", "isMeta": true, "message": {"role": "user", "content": "meta"}}),
        ]));
        let history = history(&entries);
        assert_eq!(history.len(), 3, "{history:?}");
        assert_eq!(
            history[0],
            Message::User {
                text: "list".into()
            }
        );
        let Message::Assistant {
            text, tool_calls, ..
        } = &history[1]
        else {
            panic!("a turn expected: {history:?}");
        };
        assert_eq!(text, "Listing.");
        assert_eq!(tool_calls[0].name, "Bash");
        let Message::ToolResult(result) = &history[2] else {
            panic!("a tool result expected: {history:?}");
        };
        assert_eq!(
            (result.name.as_str(), result.content.as_str()),
            ("Bash", Some("a.txt"))
        );
    }
}
