//! The server-sent events of an interaction (`spec/interactions-api.md` §7), derived from what
//! the store holds, so a live stream and a replay (`GET …?stream=true&last_event_id=`) give the
//! same events with the same ids.
//!
//! Ids are positions in the sequence: `0` `interaction.created`; for step `i`, `3i+1`
//! `step.start`, `3i+2` `step.delta` (the whole step's content in one delta), `3i+3`
//! `step.stop`; once the interaction has stopped, `3n+1` `interaction.status_update` and `3n+2`
//! `interaction.completed` (the final interaction object).

use hookbox_store::InteractionWithSteps;
use serde_json::{Value, json};

/// One event: its id, its `event_type`, and the `data` JSON (with `event_type` and `event_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The position in the sequence.
    pub id: u64,
    /// The `event_type`.
    pub event_type: &'static str,
    /// The JSON payload.
    pub data: Value,
}

/// The events of `stored` after `last_event_id` (all when `None`), and whether the sequence is
/// complete (the interaction has stopped).
pub fn events_after(
    stored: &InteractionWithSteps,
    last_event_id: Option<u64>,
) -> (Vec<Event>, bool) {
    let interaction = &stored.interaction;
    let finished = !interaction.status.is_running();
    let mut events = Vec::new();
    let mut push = |id: u64, event_type: &'static str, mut data: Value| {
        if last_event_id.is_some_and(|last| id <= last) {
            return;
        }
        data["event_type"] = event_type.into();
        data["event_id"] = id.to_string().into();
        events.push(Event {
            id,
            event_type,
            data,
        });
    };
    push(
        0,
        "interaction.created",
        json!({"interaction": {
            "id": interaction.id,
            "status": "in_progress",
            "agent": interaction.agent,
            "created": interaction.created.to_string(),
            "updated": interaction.created.to_string(),
        }}),
    );
    let mut next = 1u64;
    for (index, step) in stored.steps.iter().enumerate() {
        let (start, delta) = split(&step.body);
        push(next, "step.start", json!({"index": index, "step": start}));
        push(
            next + 1,
            "step.delta",
            json!({"index": index, "delta": delta}),
        );
        push(next + 2, "step.stop", json!({"index": index}));
        next += 3;
    }
    if finished {
        let mut update =
            json!({"interaction_id": interaction.id, "status": interaction.status.as_str()});
        if let Some(usage) = &interaction.usage {
            update["usage"] = usage.clone();
        }
        push(next, "interaction.status_update", update);
        push(
            next + 1,
            "interaction.completed",
            json!({"interaction": super::view(stored)}),
        );
    }
    (events, finished)
}

/// A step as its `step.start` (without its payload) and its one `step.delta` (the payload).
fn split(step: &Value) -> (Value, Value) {
    let kind = step["type"].as_str().unwrap_or_default();
    let text = || -> String {
        step["content"]
            .as_array()
            .map(|parts| {
                parts
                    .iter()
                    .filter_map(|part| part["text"].as_str())
                    .collect()
            })
            .unwrap_or_default()
    };
    match kind {
        "user_input" | "model_output" => (
            json!({"type": kind, "content": []}),
            json!({"type": "text", "text": text()}),
        ),
        "code_execution_call" => (
            json!({"type": kind, "id": step["id"], "arguments": {}}),
            json!({"type": "code_execution_call", "arguments": step["arguments"]}),
        ),
        "code_execution_result" => (
            json!({"type": kind, "call_id": step["call_id"], "result": ""}),
            json!({"type": "code_execution_result", "result": step["result"], "is_error": step["is_error"]}),
        ),
        "function_call" => (
            json!({"type": kind, "id": step["id"], "name": step["name"], "arguments": {}}),
            json!({"type": "arguments_delta", "arguments": step["arguments"].to_string()}),
        ),
        "function_result" => (
            json!({"type": kind, "call_id": step["call_id"], "name": step["name"], "result": ""}),
            json!({"type": "function_result", "call_id": step["call_id"], "name": step["name"],
                   "result": step["result"], "is_error": step["is_error"]}),
        ),
        _ => (step.clone(), step.clone()),
    }
}
