//! A model behind an HTTP API: one [`Wire`] format per provider, one shared request path.

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::time::Instant;

use super::sse::{SseDecoder, SseEvent};
use super::transport::Transport;
use super::{Conversation, Delta, Model, ModelError, ModelReply, ToolDeclaration, whole_reply};

/// Why a provider's response could not be turned into a reply.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The response does not have the expected shape.
    Malformed(String),
    /// The provider reported an error inside a 2xx response (e.g. an SSE `error` event).
    Reported(String),
}

/// Whether a stream goes on after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// The provider signalled the end (`[DONE]`, `message_stop`).
    Done,
}

/// Assembles a streamed response into a reply, event by event.
pub(crate) trait StreamAssembler: Send {
    /// Takes one SSE event; text and thinking deltas are passed to `on_delta` as they arrive.
    fn event(
        &mut self,
        event: SseEvent,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Flow, WireError>;

    /// The reply, once the stream has ended.
    fn finish(self: Box<Self>) -> Result<ModelReply, WireError>;
}

/// One provider's wire format.
pub(crate) trait Wire: Send + Sync {
    /// The endpoint URL, streaming or not.
    fn url(&self, stream: bool) -> String;
    /// The request body.
    fn body(&self, conversation: &Conversation, tools: &[ToolDeclaration], stream: bool) -> Value;
    /// Parses a complete (non-streamed) response body.
    fn parse(&self, body: &Value) -> Result<ModelReply, WireError>;
    /// A fresh assembler for a streamed response.
    fn assembler(&self) -> Box<dyn StreamAssembler>;
}

/// A [`Model`] speaking `W` through a [`Transport`].
pub(crate) struct HttpModel<W> {
    pub(crate) label: String,
    pub(crate) transport: Transport,
    pub(crate) wire: W,
    /// Whether [`Model::complete`] uses the streaming endpoint.
    pub(crate) stream: bool,
}

impl<W: Wire> HttpModel<W> {
    async fn run(
        &self,
        conversation: &Conversation,
        tools: &[ToolDeclaration],
        stream: bool,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<ModelReply, ModelError> {
        let deadline = Instant::now() + self.transport.timeout;
        let url = self.wire.url(stream);
        let body = self.wire.body(conversation, tools, stream);
        let mut reply = self.transport.send(&url, &body, deadline).await?;
        let wire_error = |error: WireError| self.wire_error(&url, error);
        if !stream {
            let bytes = reply
                .read_to_end()
                .await
                .map_err(|error| self.transport.net_error(&url, error))?;
            let json: Value = serde_json::from_slice(&bytes).map_err(|error| {
                wire_error(WireError::Malformed(format!(
                    "the body is not JSON ({error})"
                )))
            })?;
            let parsed = self.wire.parse(&json).map_err(wire_error)?;
            whole_reply(&parsed, on_delta);
            return Ok(parsed);
        }
        let mut decoder = SseDecoder::default();
        let mut assembler = self.wire.assembler();
        'read: loop {
            let chunk = reply
                .next_chunk()
                .await
                .map_err(|error| self.transport.net_error(&url, error))?;
            let events = match &chunk {
                Some(chunk) => decoder.push(chunk),
                None => std::mem::take(&mut decoder).finish().into_iter().collect(),
            };
            for event in events {
                if assembler.event(event, on_delta).map_err(wire_error)? == Flow::Done {
                    break 'read;
                }
            }
            if chunk.is_none() {
                break;
            }
        }
        assembler.finish().map_err(wire_error)
    }

    fn wire_error(&self, url: &str, error: WireError) -> ModelError {
        let (provider, url) = (self.transport.provider, url.to_owned());
        match error {
            WireError::Malformed(reason) => ModelError::Malformed {
                provider,
                url,
                reason,
            },
            WireError::Reported(message) => ModelError::Stream {
                provider,
                url,
                message,
            },
        }
    }
}

impl<W: Wire> Model for HttpModel<W> {
    fn label(&self) -> &str {
        &self.label
    }

    fn complete<'a>(
        &'a self,
        conversation: &'a Conversation,
        tools: &'a [ToolDeclaration],
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(async move {
            self.run(conversation, tools, self.stream, &mut |_: Delta<'_>| {})
                .await
        })
    }

    fn complete_streaming<'a>(
        &'a self,
        conversation: &'a Conversation,
        tools: &'a [ToolDeclaration],
        on_delta: &'a mut (dyn FnMut(Delta<'_>) + Send),
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(self.run(conversation, tools, true, on_delta))
    }
}

/// Parses a JSON `data:` payload of a stream event.
pub(crate) fn event_json(event: &SseEvent) -> Result<Value, WireError> {
    serde_json::from_str(&event.data).map_err(|error| {
        WireError::Malformed(format!(
            "a stream event's data is not JSON ({error}): {}",
            event.data.chars().take(200).collect::<String>()
        ))
    })
}
