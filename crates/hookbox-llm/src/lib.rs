//! hookbox's model clients: one provider-neutral interface ([`Model`]) over the real wire formats of
//! Gemini `generateContent`, OpenAI-compatible chat completions and Anthropic messages, each
//! with tool calling and optional streaming, plus a [`ScriptedModel`] that replays a file.
//!
//! Build one from a [`ModelConfig`] with [`build`]. Every request goes through hookbox-net's
//! guarded client, built with [`client_options`]. 429 and 5xx answers are retried with exponential backoff (honouring
//! `Retry-After`) within one overall deadline; a missing API key, an unreachable endpoint, an
//! error status and a malformed answer each give a [`ModelError`] saying what to fix.
//!
//! This crate knows nothing of hooks, sandboxes or tools beyond their declarations: the agent
//! loop (`hookbox-agent`) drives it.

mod anthropic;
mod config;
mod error;
mod gemini;
mod http_model;
mod openai;
mod scripted;
mod sse;
mod transport;
mod types;

use futures_util::future::BoxFuture;

pub use config::{ModelConfig, ProviderKind, Temperature, build, build_with_env, client_options};
pub use error::ModelError;
pub use scripted::ScriptedModel;
pub use types::{
    Attachment, Conversation, Delta, FinishReason, Media, Message, ModelReply, Thinking, ToolCall,
    ToolDeclaration, ToolResult, Usage, content_text,
};

/// A language model that answers a conversation, possibly with tool calls.
pub trait Model: Send + Sync {
    /// What to show for this model: `provider:model` (`gemini:gemini-2.5-flash`), or
    /// `scripted:<file>` for a script, so a scripted run is never mistaken for a real one.
    fn label(&self) -> &str;

    /// Asks for the next turn of `conversation`, offering `tools`.
    fn complete<'a>(
        &'a self,
        conversation: &'a Conversation,
        tools: &'a [ToolDeclaration],
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;

    /// Like [`complete`](Self::complete), passing text and thinking to `on_delta` as they
    /// arrive. HTTP providers use their streaming endpoint; the default calls `complete` and
    /// passes the whole thinking, then the whole text, at once.
    fn complete_streaming<'a>(
        &'a self,
        conversation: &'a Conversation,
        tools: &'a [ToolDeclaration],
        on_delta: &'a mut (dyn FnMut(Delta<'_>) + Send),
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            let reply = self.complete(conversation, tools).await?;
            whole_reply(&reply, on_delta);
            Ok(reply)
        })
    }
}

/// Passes a complete `reply` to `on_delta`: each thinking block, then the text.
pub(crate) fn whole_reply(reply: &ModelReply, on_delta: &mut (dyn FnMut(Delta<'_>) + Send)) {
    for thinking in &reply.thinking {
        on_delta(Delta::Thinking(&thinking.text));
    }
    if !reply.text.is_empty() {
        on_delta(Delta::Text(&reply.text));
    }
}
