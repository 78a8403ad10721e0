use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use hookbox_hooks::{
    Decision, Dispatcher, EventInput, Failure, HookSet, OutboxError, OutboxEvent, OutboxQueue,
    OutboxSink, Trust,
};
use hookbox_test_support::{Reply, TestHttpServer};
use serde_json::{Value, json};

use super::support::{dispatcher, hookset, local_runners};

/// A sink that records what it is given, or refuses everything.
#[derive(Default)]
struct Recording {
    events: Mutex<Vec<OutboxEvent>>,
    refuse: bool,
}

impl OutboxSink for Recording {
    fn enqueue(&self, event: OutboxEvent) -> BoxFuture<'_, Result<(), OutboxError>> {
        Box::pin(async move {
            if self.refuse {
                return Err(OutboxError("disk full".to_owned()));
            }
            self.events.lock().expect("lock").push(event);
            Ok(())
        })
    }
}

fn audit(url: &str, delivery: &str) -> Value {
    json!({"audit-logging": {"post_tool_execution": [{
        "matcher": "read_file|write_file",
        "hooks": [{"type": "http", "url": url, "timeout": 10, "delivery": delivery,
                   "headers": {"X-Source": "hookbox"}}]
    }]}})
}

/// A dispatcher over `configs` whose at-least-once events go to `sink`.
fn with_outbox(configs: &[Value], sink: Arc<Recording>) -> Dispatcher {
    let mut runners = local_runners(None);
    runners.outbox = Some(sink);
    Dispatcher::new(hookset(configs), runners)
}

fn read_call() -> EventInput {
    EventInput::post_tool_execution(
        "read_file",
        json!({"path": "/workspace/audit.log"}),
        "env_audit",
        Some("int_1"),
        Some(json!({"content": "event 1"})),
        None,
    )
}

#[tokio::test]
async fn an_at_least_once_event_is_stored_not_posted() {
    let server = TestHttpServer::start(|_| Reply::json(200, &json!({})))
        .await
        .expect("server");
    let sink = Arc::new(Recording::default());
    let hooks = with_outbox(
        &[audit(&server.url("/events"), "at_least_once")],
        Arc::clone(&sink),
    );
    let call = read_call();
    let outcome = hooks.dispatch(&call).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert!(server.requests().is_empty(), "posted while the call waited");
    let events = sink.events.lock().expect("lock").clone();
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert!(event.id.starts_with("msg_"), "{}", event.id);
    assert_eq!(
        event.queue,
        OutboxQueue::Environment("env_audit".to_owned())
    );
    assert_eq!(event.url, server.url("/events"));
    assert_eq!(
        event.headers,
        [("X-Source".to_owned(), "hookbox".to_owned())]
    );
    assert_eq!(event.trust, Trust::Owner);
    assert_eq!(
        event.handler,
        r#"config0.json $["audit-logging"].post_tool_execution[0].hooks[0]"#
    );
    let body: Value = serde_json::from_slice(&event.body).expect("json");
    assert_eq!(body, Value::Object(call.payload().clone()));
    assert_eq!(outcome.trace.len(), 1);
    assert_eq!(
        outcome.trace[0].webhook_id.as_deref(),
        Some(event.id.as_str())
    );
    assert_eq!(outcome.trace[0].failure, None);
}

#[tokio::test]
async fn a_refused_event_is_traced_and_the_call_goes_on() {
    let sink = Arc::new(Recording {
        refuse: true,
        ..Recording::default()
    });
    let hooks = with_outbox(
        &[audit("https://telemetry.example.com/e", "at_least_once")],
        sink,
    );
    let outcome = hooks.dispatch(&read_call()).await;
    assert_eq!(outcome.decision, Decision::Allow);
    assert_eq!(
        outcome.trace[0].failure,
        Some(Failure::Outbox {
            message: "disk full".to_owned()
        })
    );
    assert_eq!(outcome.trace[0].webhook_id, None);
}

#[tokio::test]
async fn fire_and_forget_and_no_outbox_post_now() {
    let server = TestHttpServer::start(|_| Reply::json(200, &json!({})))
        .await
        .expect("server");
    let sink = Arc::new(Recording::default());
    let default = with_outbox(
        &[audit(&server.url("/a"), "fire_and_forget")],
        Arc::clone(&sink),
    );
    default.dispatch(&read_call()).await;
    let without_outbox = dispatcher(&[audit(&server.url("/b"), "at_least_once")], None);
    let outcome = without_outbox.dispatch(&read_call()).await;
    assert!(sink.events.lock().expect("lock").is_empty());
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(paths, ["/a", "/b"]);
    assert_eq!(outcome.trace[0].webhook_id, None);
}

#[tokio::test]
async fn a_hook_file_the_model_writes_is_posted_once_not_queued() {
    let server = TestHttpServer::start(|_| Reply::json(200, &json!({})))
        .await
        .expect("server");
    let sink = Arc::new(Recording::default());
    let mut builder = HookSet::builder();
    builder
        .load_model_writable(
            "/workspace/.agents/hooks.json",
            &audit(&server.url("/events"), "at_least_once").to_string(),
            None,
        )
        .expect("config loads");
    let mut runners = local_runners(None);
    runners.outbox = Some(Arc::clone(&sink) as Arc<dyn OutboxSink>);
    let hooks = Dispatcher::new(Arc::new(builder.build()), runners);
    let outcome = hooks.dispatch(&read_call()).await;
    assert_eq!(outcome.decision, Decision::Allow);
    // Queued, a model's events could fill the owner's outbox and get the owner's shed.
    assert!(sink.events.lock().expect("lock").is_empty(), "queued");
    assert_eq!(server.requests().len(), 1);
}
