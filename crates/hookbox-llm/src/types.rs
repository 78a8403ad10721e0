//! Provider-neutral conversation, tool and reply types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What is sent to a model: an optional system instruction and the messages so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    /// The system instruction, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<String>,
    /// The messages, oldest first.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Images and documents carried by user messages, each naming its message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The extended-thinking budget (tokens) of requests for this conversation, for providers
    /// that think (Anthropic `thinking`, Gemini `thinkingConfig`); `None`: the provider's
    /// default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
}

/// Inline media (an image or a PDF document) given with a user message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Media {
    /// The MIME type, e.g. `image/png` or `application/pdf`.
    pub mime_type: String,
    /// The bytes, base64 encoded (standard alphabet).
    pub data: String,
}

impl Media {
    /// Whether this is a document (PDF) rather than an image.
    pub fn is_document(&self) -> bool {
        self.mime_type == "application/pdf"
    }

    /// The media as a `data:` URL.
    pub fn data_url(&self) -> String {
        format!("data:{};base64,{}", self.mime_type, self.data)
    }
}

/// Media attached to one user message of a [`Conversation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The index in [`Conversation::messages`] of the user message it belongs to.
    pub message: usize,
    /// The media.
    pub media: Media,
}

impl Conversation {
    /// An empty conversation with an optional system instruction.
    pub fn new(system: Option<String>) -> Self {
        Self {
            system,
            messages: Vec::new(),
            attachments: Vec::new(),
            thinking_budget: None,
        }
    }

    /// Appends a user message carrying `media` after its text.
    pub fn push_user_with_media(&mut self, text: impl Into<String>, media: Vec<Media>) {
        let message = self.messages.len();
        self.push_user(text);
        self.attachments
            .extend(media.into_iter().map(|media| Attachment { message, media }));
    }

    /// The media attached to message `index`, in order.
    pub fn media_of(&self, index: usize) -> impl Iterator<Item = &Media> {
        self.attachments
            .iter()
            .filter(move |attachment| attachment.message == index)
            .map(|attachment| &attachment.media)
    }

    /// Appends a user message.
    pub fn push_user(&mut self, text: impl Into<String>) {
        self.messages.push(Message::User { text: text.into() });
    }

    /// Appends the model's reply as an assistant message.
    pub fn push_reply(&mut self, reply: &ModelReply) {
        self.messages.push(Message::Assistant {
            text: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            thinking: reply.thinking.clone(),
        });
    }

    /// Appends the result of a tool call.
    pub fn push_tool_result(&mut self, result: ToolResult) {
        self.messages.push(Message::ToolResult(result));
    }
}

/// One message of a [`Conversation`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Text from the user.
    User {
        /// The text.
        text: String,
    },
    /// A model turn: text (possibly empty) and the tool calls it asked for.
    Assistant {
        /// The text, empty when the model only called tools.
        #[serde(default)]
        text: String,
        /// The tool calls, in the order the model made them.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The model's thinking before it answered (sent back to providers that require it).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<Thinking>,
    },
    /// The outcome of one tool call, answering the call with the same id.
    ToolResult(ToolResult),
}

/// A block of the model's extended thinking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinking {
    /// The thought, as the provider shows it (it may be a summary).
    pub text: String,
    /// The provider's signature of the block (Anthropic), empty when it gives none.
    #[serde(default)]
    pub signature: String,
}

/// A piece of a reply as it streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// More of the answer's text.
    Text(&'a str),
    /// More of the model's thinking.
    Thinking(&'a str),
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id: the provider's when it gives one, otherwise made up by hookbox (unique in
    /// the reply). Tool results refer to it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, a JSON value (normally an object).
    pub args: Value,
}

/// The result of a tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The [`ToolCall::id`] this answers.
    pub call_id: String,
    /// The tool's name (Gemini matches results by name).
    pub name: String,
    /// What the tool returned (or the error), as JSON. A string is sent as text.
    pub content: Value,
    /// Whether the call failed or was denied.
    #[serde(default)]
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDeclaration {
    /// The tool's name.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// The arguments' JSON schema (an `object` schema).
    pub parameters: Value,
}

/// A model's answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelReply {
    /// The text, empty when the model only called tools.
    pub text: String,
    /// The tool calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The model's thinking, in order (empty unless thinking was asked for and shown).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// Why the model stopped.
    pub finish: FinishReason,
    /// Token counts, when the provider reports them.
    pub usage: Usage,
}

/// Why a model stopped producing output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end of the answer.
    Stop,
    /// The model wants tool results before going on.
    ToolCalls,
    /// The output token limit was reached.
    MaxTokens,
    /// The provider's safety filter stopped the answer.
    ContentFilter,
    /// Another reason, as the provider named it.
    Other(String),
}

/// Token counts reported by the provider.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the request (prompt).
    pub input_tokens: Option<u64>,
    /// Tokens in the answer.
    pub output_tokens: Option<u64>,
}

/// A tool result's content as text: a JSON string as is, anything else serialized.
pub fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
