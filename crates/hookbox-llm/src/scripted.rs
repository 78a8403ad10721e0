//! The scripted model: replays a JSON file of model turns, for offline demos and tests. It is
//! always labelled `scripted:…`, so nobody mistakes it for a real model.
//!
//! The file is either `{"turns": [TURN, …]}` or a bare `[TURN, …]`, where a turn is
//! `{"text": "…", "tool_calls": [{"name": "…", "args": {…}, "id": "…"}]}` (all fields
//! optional; ids default to `script-call-<turn>-<n>`). The turn answered is the number of
//! assistant messages already in the conversation, so replay is stateless: the same script
//! serves any number of conversations, each from its first turn.

use std::path::{Path, PathBuf};

use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{
    Conversation, FinishReason, Message, Model, ModelError, ModelReply, ToolCall, ToolDeclaration,
    Usage,
};

/// One scripted model turn.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    text: String,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
}

/// One scripted tool call.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptedCall {
    name: String,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    id: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Object {
        #[serde(rename = "turns")]
        turns: Vec<Turn>,
    },
    Bare(Vec<Turn>),
}

/// A model that replays a script of turns. Its label is `scripted:<file name>`.
#[derive(Debug, Clone)]
pub struct ScriptedModel {
    path: PathBuf,
    label: String,
    turns: Vec<Turn>,
}

impl ScriptedModel {
    /// Reads and checks the script at `path`.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let script_error = |reason: String| ModelError::Script {
            path: path.to_owned(),
            reason,
        };
        let text = std::fs::read_to_string(path)
            .map_err(|error| script_error(format!("cannot read the file: {error}")))?;
        Self::parse(path, &text).map_err(script_error)
    }

    /// Parses a script given as text; `path` only names it in the label and in errors.
    pub fn from_json(path: &Path, text: &str) -> Result<Self, ModelError> {
        Self::parse(path, text).map_err(|reason| ModelError::Script {
            path: path.to_owned(),
            reason,
        })
    }

    fn parse(path: &Path, text: &str) -> Result<Self, String> {
        let file: ScriptFile = serde_json::from_str(text).map_err(|error| {
            format!(
                "not a script ({error}); expected {{\"turns\": [{{\"text\": …, \"tool_calls\": \
                 [{{\"name\": …, \"args\": {{…}}}}]}}]}}"
            )
        })?;
        let turns = match file {
            ScriptFile::Object { turns } | ScriptFile::Bare(turns) => turns,
        };
        let name = path.file_name().map_or_else(
            || path.display().to_string(),
            |name| name.to_string_lossy().into_owned(),
        );
        Ok(Self {
            path: path.to_owned(),
            label: format!("scripted:{name}"),
            turns,
        })
    }

    /// How many turns the script holds.
    pub fn turns(&self) -> usize {
        self.turns.len()
    }

    fn reply(&self, conversation: &Conversation) -> Result<ModelReply, ModelError> {
        let index = conversation
            .messages
            .iter()
            .filter(|message| matches!(message, Message::Assistant { .. }))
            .count();
        let turn = self
            .turns
            .get(index)
            .ok_or_else(|| ModelError::ScriptExhausted {
                path: self.path.clone(),
                turns: self.turns.len(),
                requested: index + 1,
            })?;
        let tool_calls: Vec<ToolCall> = turn
            .tool_calls
            .iter()
            .enumerate()
            .map(|(n, call)| ToolCall {
                id: call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("script-call-{}-{}", index + 1, n + 1)),
                name: call.name.clone(),
                args: call
                    .args
                    .clone()
                    .unwrap_or_else(|| Value::Object(Map::new())),
            })
            .collect();
        Ok(ModelReply {
            text: turn.text.clone(),
            finish: if tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            },
            tool_calls,
            thinking: Vec::new(),
            usage: Usage::default(),
        })
    }
}

impl Model for ScriptedModel {
    fn label(&self) -> &str {
        &self.label
    }

    fn complete<'a>(
        &'a self,
        conversation: &'a Conversation,
        _tools: &'a [ToolDeclaration],
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move { self.reply(conversation) })
    }
}
