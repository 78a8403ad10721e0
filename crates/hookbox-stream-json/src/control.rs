//! The control envelope (`docs/wire/sdk-control-protocol.md` §5): requests hookbox sends to the
//! SDK, matched with their responses by `request_id` in whatever order they come, and the parsing
//! of every line the SDK sends.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hookbox_agent::session::SessionControl;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

/// Where outgoing messages go: the single writer task that owns stdout.
pub(crate) type Outbox = mpsc::UnboundedSender<Value>;

/// What a request to the SDK came back with: the success payload or the error message.
pub(crate) type Reply = Result<Value, String>;

/// One line from the SDK, classified.
#[derive(Debug, PartialEq)]
pub(crate) enum Incoming {
    /// The answer to one of hookbox's requests.
    Response {
        /// The request it answers.
        request_id: String,
        /// Its payload or error.
        reply: Reply,
    },
    /// A request from the SDK (`initialize`, `interrupt`, …).
    Request {
        /// Its id, to answer with.
        request_id: String,
        /// The `subtype`.
        subtype: String,
        /// The whole `request` object.
        request: Map<String, Value>,
    },
    /// The SDK gave up on one of its requests.
    Cancel {
        /// The request.
        request_id: String,
    },
    /// A user message.
    User(Prompt),
    /// Anything else (reported and ignored).
    Other(String),
}

/// Classifies one JSON line from the SDK.
pub(crate) fn classify(line: Value) -> Incoming {
    let Value::Object(mut line) = line else {
        return Incoming::Other("a JSON line that is not an object".to_owned());
    };
    let kind = line
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    match kind.as_str() {
        "control_response" => {
            let Some(Value::Object(response)) = line.remove("response") else {
                return Incoming::Other("a control_response without `response`".to_owned());
            };
            let request_id = string(&response, "request_id");
            let reply = if response.get("subtype").and_then(Value::as_str) == Some("error") {
                Err(response
                    .get("error")
                    .map(|error| match error {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    })
                    .unwrap_or_else(|| "the SDK answered with an error".to_owned()))
            } else {
                Ok(response
                    .get("response")
                    .cloned()
                    .unwrap_or_else(|| json!({})))
            };
            Incoming::Response { request_id, reply }
        }
        "control_request" => {
            let request_id = string(&line, "request_id");
            let request = match line.remove("request") {
                Some(Value::Object(request)) => request,
                _ => Map::new(),
            };
            let subtype = string(&request, "subtype");
            Incoming::Request {
                request_id,
                subtype,
                request,
            }
        }
        "control_cancel_request" => Incoming::Cancel {
            request_id: string(&line, "request_id"),
        },
        "user" => Incoming::User(Prompt {
            text: prompt_text(line.get("message")),
            origin: line
                .remove("origin")
                .filter(|origin| origin.get("kind").is_some_and(Value::is_string)),
            uuid: line
                .remove("uuid")
                .and_then(|uuid| uuid.as_str().map(str::to_owned)),
        }),
        other => Incoming::Other(format!("a message of type `{other}`")),
    }
}

/// A user message from the SDK: its text and what its result echoes.
#[derive(Debug, PartialEq)]
pub(crate) struct Prompt {
    /// The prompt text.
    pub(crate) text: String,
    /// Its `origin` (an object with a string `kind`), echoed on its result.
    pub(crate) origin: Option<Value>,
    /// Its `uuid`, echoed on its result as `user_message_uuid`.
    pub(crate) uuid: Option<String>,
}

fn string(map: &Map<String, Value>, key: &str) -> String {
    match map.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// The text of a user message: string content as is, block content as its text blocks
/// joined with newlines.
pub(crate) fn prompt_text(message: Option<&Value>) -> String {
    let content = message.and_then(|message| message.get("content").or(Some(message)));
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|block| match block {
                Value::String(text) => Some(text.as_str()),
                block if block.get("type").and_then(Value::as_str) == Some("text") => {
                    block.get("text").and_then(Value::as_str)
                }
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A success response to the SDK's request `request_id`.
pub(crate) fn success(request_id: &str, response: Value) -> Value {
    json!({"type": "control_response", "response": {"subtype": "success", "request_id": request_id, "response": response}})
}

/// An error response to the SDK's request `request_id`.
pub(crate) fn error(request_id: &str, message: &str) -> Value {
    json!({"type": "control_response", "response": {"subtype": "error", "request_id": request_id, "error": message}})
}

#[derive(Default)]
struct PendingState {
    waiting: HashMap<String, oneshot::Sender<Reply>>,
    closed: bool,
    /// The session to interrupt when the SDK goes, before its requests fail.
    interrupt_on_close: Option<SessionControl>,
}

/// Sends requests to the SDK and hands each response to its waiter. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ControlClient {
    outbox: Outbox,
    /// Where cancellations go: straight to the output, so that a withdrawn request's cancel
    /// precedes whatever the query emits after withdrawing it.
    cancels: Outbox,
    next: Arc<AtomicU64>,
    pending: Arc<Mutex<PendingState>>,
}

impl ControlClient {
    /// A client writing its requests through `outbox` and its cancellations through `cancels`.
    pub(crate) fn new(outbox: Outbox, cancels: Outbox) -> Self {
        Self {
            outbox,
            cancels,
            next: Arc::new(AtomicU64::new(1)),
            pending: Arc::new(Mutex::new(PendingState::default())),
        }
    }

    /// The same client writing its requests straight to the output instead of through the
    /// query driver: for requests the driver itself waits on (connecting the SDK's MCP servers
    /// before the session starts), which it could not forward.
    pub(crate) fn direct(&self) -> Self {
        Self {
            outbox: self.cancels.clone(),
            ..self.clone()
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, PendingState> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `request` (an object with its `subtype`) and waits for the response. Fails at once
    /// when the SDK is gone. Dropping the future (a timeout) withdraws the request and tells the
    /// SDK with `control_cancel_request`.
    pub(crate) async fn request(&self, request: Value) -> Reply {
        let request_id = format!("hookbox_req_{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (sender, receiver) = oneshot::channel();
        {
            let mut state = self.state();
            if state.closed {
                return Err("the SDK disconnected (stdin closed)".to_owned());
            }
            state.waiting.insert(request_id.clone(), sender);
        }
        let mut guard = Withdraw {
            client: self,
            request_id: &request_id,
            armed: true,
        };
        let envelope =
            json!({"type": "control_request", "request_id": request_id, "request": request});
        if self.outbox.send(envelope).is_err() {
            guard.armed = false;
            self.state().waiting.remove(&request_id);
            return Err("the connection to the SDK is closed".to_owned());
        }
        let reply = receiver
            .await
            .unwrap_or_else(|_| Err("the SDK disconnected before answering".to_owned()));
        guard.armed = false;
        reply
    }

    /// Hands a response to its waiter; `false` when no request has that id.
    pub(crate) fn resolve(&self, request_id: &str, reply: Reply) -> bool {
        let sender = self.state().waiting.remove(request_id);
        match sender {
            Some(sender) => {
                let _ = sender.send(reply);
                true
            }
            None => false,
        }
    }

    /// The SDK is gone: every waiting request fails now, later ones at once.
    pub(crate) fn close(&self) {
        let mut state = self.state();
        // First the interrupt, so the query that waited on a request stops there rather than
        // going on with the failed request's outcome.
        if let Some(control) = state.interrupt_on_close.take() {
            control.interrupt();
        }
        state.closed = true;
        state.waiting.clear();
    }

    /// Interrupts `control`'s session when the SDK goes ([`close`](Self::close)), before its
    /// pending requests fail: for sessions whose queries depend on the SDK's answers.
    pub(crate) fn interrupt_on_close(&self, control: SessionControl) {
        self.state().interrupt_on_close = Some(control);
    }

    /// How many requests wait for an answer.
    #[cfg(test)]
    pub(crate) fn pending(&self) -> usize {
        self.state().waiting.len()
    }
}

/// Withdraws an unanswered request when its future is dropped.
struct Withdraw<'a> {
    client: &'a ControlClient,
    request_id: &'a str,
    armed: bool,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let removed = self
            .client
            .state()
            .waiting
            .remove(self.request_id)
            .is_some();
        if removed {
            let _ = self
                .client
                .cancels
                .send(json!({"type": "control_cancel_request", "request_id": self.request_id}));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn classifies_every_line_kind() {
        assert_eq!(
            classify(
                json!({"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"a":1}}})
            ),
            Incoming::Response {
                request_id: "r1".into(),
                reply: Ok(json!({"a":1}))
            }
        );
        assert_eq!(
            classify(
                json!({"type":"control_response","response":{"subtype":"error","request_id":"r2","error":"boom"}})
            ),
            Incoming::Response {
                request_id: "r2".into(),
                reply: Err("boom".into())
            }
        );
        let Incoming::Request {
            request_id,
            subtype,
            ..
        } = classify(
            json!({"type":"control_request","request_id":"req_1","request":{"subtype":"initialize","hooks":null}}),
        )
        else {
            panic!("not a request");
        };
        assert_eq!(
            (request_id.as_str(), subtype.as_str()),
            ("req_1", "initialize")
        );
        assert_eq!(
            classify(
                json!({"type":"user","session_id":"","message":{"role":"user","content":"hi"}})
            ),
            Incoming::User(Prompt {
                text: "hi".into(),
                origin: None,
                uuid: None
            })
        );
        assert_eq!(
            classify(
                json!({"type":"user","uuid":"u-1","origin":{"kind":"human"},"message":{"role":"user","content":"hi"}})
            ),
            Incoming::User(Prompt {
                text: "hi".into(),
                origin: Some(json!({"kind": "human"})),
                uuid: Some("u-1".into())
            })
        );
        let Incoming::User(malformed) = classify(
            json!({"type":"user","origin":"human","message":{"role":"user","content":"hi"}}),
        ) else {
            panic!("not a user message");
        };
        assert_eq!(malformed.origin, None);
        assert_eq!(
            classify(
                json!({"type":"user","message":{"role":"user","content":[{"type":"text","text":"a"},{"type":"image"},{"type":"text","text":"b"}]}})
            ),
            Incoming::User(Prompt {
                text: "a\nb".into(),
                origin: None,
                uuid: None
            })
        );
        assert!(matches!(
            classify(json!({"type":"keep_alive"})),
            Incoming::Other(_)
        ));
        assert!(matches!(classify(json!([1])), Incoming::Other(_)));
    }

    #[tokio::test]
    async fn out_of_order_responses_reach_their_requests() {
        let (outbox, mut sent) = mpsc::unbounded_channel();
        let client = ControlClient::new(outbox.clone(), outbox);
        let first = tokio::spawn({
            let client = client.clone();
            async move {
                client
                    .request(json!({"subtype": "hook_callback", "n": 1}))
                    .await
            }
        });
        let second = tokio::spawn({
            let client = client.clone();
            async move {
                client
                    .request(json!({"subtype": "hook_callback", "n": 2}))
                    .await
            }
        });
        let mut ids = HashMap::new();
        for _ in 0..2 {
            let envelope = sent.recv().await.unwrap();
            ids.insert(
                envelope["request"]["n"].as_i64().unwrap(),
                envelope["request_id"].as_str().unwrap().to_owned(),
            );
        }
        assert!(client.resolve(&ids[&2], Ok(json!("two"))));
        assert!(client.resolve(&ids[&1], Err("one".into())));
        assert!(!client.resolve("unknown", Ok(json!(null))));
        assert_eq!(second.await.unwrap(), Ok(json!("two")));
        assert_eq!(first.await.unwrap(), Err("one".into()));
    }

    #[tokio::test]
    async fn close_fails_pending_and_later_requests() {
        let (outbox, mut sent) = mpsc::unbounded_channel();
        let client = ControlClient::new(outbox.clone(), outbox);
        let waiting = tokio::spawn({
            let client = client.clone();
            async move { client.request(json!({"subtype": "hook_callback"})).await }
        });
        sent.recv().await.unwrap();
        client.close();
        assert!(waiting.await.unwrap().is_err());
        assert!(client.request(json!({})).await.is_err());
    }

    #[tokio::test]
    async fn a_timed_out_request_is_cancelled() {
        let (outbox, mut sent) = mpsc::unbounded_channel();
        let client = ControlClient::new(outbox.clone(), outbox);
        let result = tokio::time::timeout(
            Duration::from_millis(20),
            client.request(json!({"subtype": "x"})),
        )
        .await;
        assert!(result.is_err());
        let request = sent.recv().await.unwrap();
        let cancel = sent.recv().await.unwrap();
        assert_eq!(cancel["type"], "control_cancel_request");
        assert_eq!(cancel["request_id"], request["request_id"]);
        assert_eq!(client.pending(), 0);
    }
}
