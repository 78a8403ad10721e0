//! Fake model servers speaking the exact wire formats of Gemini `generateContent`,
//! OpenAI-compatible chat completions and Anthropic messages, built on [`TestHttpServer`].
//!
//! Each checks what a real API would refuse (path, auth header, JSON shape, tool call /
//! tool result pairing) and answers a violation with HTTP 400 and a provider-format error
//! naming the problem (message starting `fake <provider>: `). A valid request gets the next
//! [`FakeTurn`], streamed (SSE) when the request asked for streaming, with text and tool call
//! arguments split across several events.

mod anthropic;
mod gemini;
mod openai;

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::{RecordedRequest, Reply, TestHttpServer};

/// Usage numbers every fake reports: input tokens.
pub const FAKE_INPUT_TOKENS: u64 = 11;
/// Usage numbers every fake reports: output tokens.
pub const FAKE_OUTPUT_TOKENS: u64 = 7;

/// A tool call a fake model makes.
#[derive(Debug, Clone, PartialEq)]
pub struct FakeToolCall {
    /// The call id (Gemini: an empty id is left out, as Gemini often does).
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments object.
    pub args: Value,
}

/// What a fake model server answers to the next valid request.
#[derive(Debug, Clone, PartialEq)]
pub enum FakeTurn {
    /// A successful answer: thinking and text (either may be empty) and tool calls.
    Reply {
        /// The model's thinking before it answers: an Anthropic `thinking` block (signed
        /// `fake-signature`) or a Gemini `thought` part; the OpenAI fake has none (chat
        /// completions return no reasoning text).
        thinking: String,
        /// The text.
        text: String,
        /// The tool calls.
        tool_calls: Vec<FakeToolCall>,
    },
    /// An error status with the provider's error body and an optional `Retry-After` (seconds).
    Error {
        /// The HTTP status.
        status: u16,
        /// The message in the error body.
        message: String,
        /// The `Retry-After` header value in seconds.
        retry_after: Option<u64>,
    },
    /// Exactly this reply (for malformed answers).
    Raw(Reply),
}

impl FakeTurn {
    /// A text answer.
    pub fn text(text: &str) -> Self {
        Self::Reply {
            thinking: String::new(),
            text: text.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    /// A text answer after some thinking.
    pub fn thought(thinking: &str, text: &str) -> Self {
        Self::Reply {
            thinking: thinking.to_owned(),
            text: text.to_owned(),
            tool_calls: Vec::new(),
        }
    }

    /// An answer with one tool call and optional text.
    pub fn tool_call(text: &str, id: &str, name: &str, args: Value) -> Self {
        Self::Reply {
            thinking: String::new(),
            text: text.to_owned(),
            tool_calls: vec![FakeToolCall {
                id: id.to_owned(),
                name: name.to_owned(),
                args,
            }],
        }
    }

    /// An error answer.
    pub fn error(status: u16, message: &str) -> Self {
        Self::Error {
            status,
            message: message.to_owned(),
            retry_after: None,
        }
    }
}

/// Which API a fake speaks, and what it expects of requests.
#[derive(Debug, Clone)]
enum Dialect {
    Gemini { model: String, key: String },
    OpenAi { model: String, key: Option<String> },
    Anthropic { model: String, key: String },
}

impl Dialect {
    fn name(&self) -> &'static str {
        match self {
            Self::Gemini { .. } => "gemini",
            Self::OpenAi { .. } => "openai",
            Self::Anthropic { .. } => "anthropic",
        }
    }

    /// Checks the request; `Ok(stream)` tells whether it asked for streaming.
    fn check(&self, request: &RecordedRequest) -> Result<bool, String> {
        if request.method != "POST" {
            return Err(format!("expected POST, got {}", request.method));
        }
        if !request
            .header("content-type")
            .is_some_and(|value| value.starts_with("application/json"))
        {
            return Err("expected content-type: application/json".to_owned());
        }
        let body: Value = serde_json::from_slice(&request.body)
            .map_err(|error| format!("the body is not JSON: {error}"))?;
        match self {
            Self::Gemini { model, key } => gemini::check(request, &body, model, key),
            Self::OpenAi { model, key } => openai::check(request, &body, model, key.as_deref()),
            Self::Anthropic { model, key } => anthropic::check(request, &body, model, key),
        }
    }

    fn answer(&self, thinking: &str, text: &str, calls: &[FakeToolCall], stream: bool) -> Reply {
        match (self, stream) {
            (Self::Gemini { model, .. }, false) => {
                Reply::json(200, &gemini::reply(model, thinking, text, calls))
            }
            (Self::Gemini { model, .. }, true) => sse(gemini::stream(model, thinking, text, calls)),
            (Self::OpenAi { model, .. }, false) => {
                Reply::json(200, &openai::reply(model, text, calls))
            }
            (Self::OpenAi { model, .. }, true) => sse(openai::stream(model, text, calls)),
            (Self::Anthropic { model, .. }, false) => {
                Reply::json(200, &anthropic::reply(model, thinking, text, calls))
            }
            (Self::Anthropic { model, .. }, true) => {
                sse(anthropic::stream(model, thinking, text, calls))
            }
        }
    }

    fn error(&self, status: u16, message: &str) -> Reply {
        let body = match self {
            Self::Gemini { .. } => gemini::error(status, message),
            Self::OpenAi { .. } => openai::error(status, message),
            Self::Anthropic { .. } => anthropic::error(status, message),
        };
        Reply::json(status, &body)
    }

    fn respond(&self, turns: &Mutex<VecDeque<FakeTurn>>, request: &RecordedRequest) -> Reply {
        let stream = match self.check(request) {
            Ok(stream) => stream,
            Err(problem) => {
                return self.error(
                    400,
                    &format!("fake {}: bad request: {problem}", self.name()),
                );
            }
        };
        let turn = turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match turn {
            None => self.error(
                400,
                &format!("fake {}: no scripted turns left", self.name()),
            ),
            Some(FakeTurn::Reply {
                thinking,
                text,
                tool_calls,
            }) => self.answer(&thinking, &text, &tool_calls, stream),
            Some(FakeTurn::Error {
                status,
                message,
                retry_after,
            }) => {
                let mut reply = self.error(status, &message);
                if let Some(seconds) = retry_after {
                    reply
                        .headers
                        .push(("retry-after".to_owned(), seconds.to_string()));
                }
                reply
            }
            Some(FakeTurn::Raw(reply)) => reply,
        }
    }
}

/// A fake model API on a local [`TestHttpServer`], answering scripted [`FakeTurn`]s in order.
pub struct FakeModelServer {
    server: TestHttpServer,
    turns: Arc<Mutex<VecDeque<FakeTurn>>>,
    base_path: &'static str,
}

impl FakeModelServer {
    /// A fake Gemini API for `model` expecting `x-goog-api-key: api_key`. Its
    /// [`base_url`](Self::base_url) ends in `/v1beta`.
    pub async fn gemini(model: &str, api_key: &str, turns: Vec<FakeTurn>) -> io::Result<Self> {
        let dialect = Dialect::Gemini {
            model: model.to_owned(),
            key: api_key.to_owned(),
        };
        Self::start(dialect, "v1beta", turns).await
    }

    /// A fake OpenAI-compatible API for `model`, expecting `authorization: Bearer <api_key>`
    /// (or no authorization header when `api_key` is `None`, like a local server). Its
    /// [`base_url`](Self::base_url) ends in `/v1`.
    pub async fn openai(
        model: &str,
        api_key: Option<&str>,
        turns: Vec<FakeTurn>,
    ) -> io::Result<Self> {
        let dialect = Dialect::OpenAi {
            model: model.to_owned(),
            key: api_key.map(str::to_owned),
        };
        Self::start(dialect, "v1", turns).await
    }

    /// A fake Anthropic API for `model` expecting `x-api-key: api_key` and an
    /// `anthropic-version`. Its [`base_url`](Self::base_url) is the server root.
    pub async fn anthropic(model: &str, api_key: &str, turns: Vec<FakeTurn>) -> io::Result<Self> {
        let dialect = Dialect::Anthropic {
            model: model.to_owned(),
            key: api_key.to_owned(),
        };
        Self::start(dialect, "", turns).await
    }

    async fn start(
        dialect: Dialect,
        base_path: &'static str,
        turns: Vec<FakeTurn>,
    ) -> io::Result<Self> {
        let turns = Arc::new(Mutex::new(VecDeque::from(turns)));
        let queue = Arc::clone(&turns);
        let server = TestHttpServer::start(move |request| dialect.respond(&queue, request)).await?;
        Ok(Self {
            server,
            turns,
            base_path,
        })
    }

    /// The base URL to configure the provider with (no trailing slash).
    pub fn base_url(&self) -> String {
        self.server
            .url(self.base_path)
            .trim_end_matches('/')
            .to_owned()
    }

    /// Every request received so far, including refused ones.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.server.requests()
    }

    /// The JSON bodies of every request received so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().iter().map(RecordedRequest::json).collect()
    }

    /// Queues another turn.
    pub fn push(&self, turn: FakeTurn) {
        self.turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push_back(turn);
    }
}

/// A `text/event-stream` reply made of `events` (already framed).
fn sse(events: Vec<String>) -> Reply {
    Reply {
        status: 200,
        headers: vec![
            ("content-type".to_owned(), "text/event-stream".to_owned()),
            ("cache-control".to_owned(), "no-cache".to_owned()),
        ],
        body: events.concat().into_bytes(),
        delay: std::time::Duration::ZERO,
    }
}

/// `text` cut into up to four pieces at character boundaries (one if it is short; none if
/// empty), as a model streams its text.
fn text_pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return Vec::new();
    }
    let size = chars.len().div_ceil(4).max(1);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

/// Whether `data` looks like standard base64 (what the real APIs require of inline media).
fn is_base64(data: &str) -> bool {
    let body = data.trim_end_matches('=');
    !data.is_empty()
        && data.len() - body.len() <= 2
        && body
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
}

/// Whether `url` is a `data:<mime>;base64,<data>` URL with valid base64.
fn is_data_url(url: &str) -> bool {
    url.strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .is_some_and(|(mime, data)| !mime.is_empty() && is_base64(data))
}

/// `text` cut in two at a character boundary (one piece if it is too short; none if empty).
fn halves(text: &str) -> Vec<String> {
    let count = text.chars().count();
    if count == 0 {
        return Vec::new();
    }
    if count < 2 {
        return vec![text.to_owned()];
    }
    let middle = text
        .char_indices()
        .nth(count / 2)
        .map_or(text.len(), |(index, _)| index);
    vec![text[..middle].to_owned(), text[middle..].to_owned()]
}

/// A JSON-path-like description of where a problem is, for messages.
fn at(path: &str, index: usize) -> String {
    format!("{path}[{index}]")
}
