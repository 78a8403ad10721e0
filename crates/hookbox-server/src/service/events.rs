//! The server-sent events of an interaction (`docs/wire/interactions-api.md` §7), derived from what
//! the store holds, so a live stream and a replay (`GET …?stream=true&last_event_id=`) give the
//! same events with the same ids.
//!
//! Ids are positions in the sequence: `0` `interaction.created`; then for each step a
//! `step.start`, its `step.delta`s and a `step.stop`; once the interaction has stopped,
//! `interaction.status_update` and `interaction.completed` (the final interaction object). A step
//! has one delta (its whole content), except a `model_output` whose text the model streamed: one
//! text delta per piece, as the pieces arrived. The pieces' byte lengths are stored with the
//! interaction (`outputs.deltas["<step index>"]`), so a replay cuts the stored text the same way;
//! while the step is still being streamed its pieces come from the run ([`Partial`]). Without
//! streamed text step `i` has ids `3i+1` to `3i+3`.
//!
//! A running interaction's events are also published as they happen (`super::runs`), numbered
//! by the same functions ([`step_events`], [`streamed_start`], [`streamed_delta`]), so a stream
//! that catches up from the store and then follows the run sees one sequence.

use hookbox_store::InteractionWithSteps;
use serde_json::{Value, json};

/// The text of the `model_output` step a run is streaming, not stored yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Partial {
    /// The index the step will have.
    pub(crate) index: usize,
    /// The pieces so far.
    pub(crate) pieces: Vec<String>,
    /// The id of its `step.start`.
    pub(crate) first_event: u64,
}

/// One event: its id, its `event_type`, and the `data` JSON (with `event_type` and `event_id`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    /// The position in the sequence.
    pub(crate) id: u64,
    /// The `event_type`.
    pub(crate) event_type: &'static str,
    /// The JSON payload.
    pub(crate) data: Value,
}

impl Event {
    /// Event `id` of `event_type` with `data`, which gains `event_type` and `event_id`.
    pub(crate) fn new(id: u64, (event_type, mut data): (&'static str, Value)) -> Self {
        data["event_type"] = event_type.into();
        data["event_id"] = id.to_string().into();
        Self {
            id,
            event_type,
            data,
        }
    }
}

/// The events of `stored` after `last_event_id` (all when `None`), followed by the events of
/// `partial` when the interaction is running and `partial` is the step after the stored ones,
/// and whether the sequence is complete (the interaction has stopped).
pub(crate) fn events_live(
    stored: &InteractionWithSteps,
    partial: Option<&Partial>,
    last_event_id: Option<u64>,
) -> (Vec<Event>, bool) {
    let interaction = &stored.interaction;
    let finished = !interaction.status.is_running();
    let mut events = Vec::new();
    let mut push = |id: u64, event: (&'static str, Value)| {
        if last_event_id.is_none_or(|last| id > last) {
            events.push(Event::new(id, event));
        }
    };
    push(
        0,
        (
            "interaction.created",
            json!({"interaction": {
                "id": interaction.id,
                "status": "in_progress",
                super::view::name_field(stored): interaction.agent,
                "created": interaction.created.to_string(),
                "updated": interaction.created.to_string(),
            }}),
        ),
    );
    let mut next = 1u64;
    let lengths = interaction
        .outputs
        .as_ref()
        .and_then(|outputs| outputs.get("deltas"));
    for (index, step) in stored.steps.iter().enumerate() {
        let streamed = lengths.and_then(|lengths| lengths.get(index.to_string()));
        for event in step_events(index, &step.body, streamed) {
            push(next, event);
            next += 1;
        }
    }
    if let Some(partial) = partial
        && !finished
        && partial.index == stored.steps.len()
    {
        push(next, streamed_start(partial.index));
        next += 1;
        for piece in &partial.pieces {
            push(next, streamed_delta(partial.index, piece));
            next += 1;
        }
    }
    if finished {
        let mut update =
            json!({"interaction_id": interaction.id, "status": interaction.status.as_str()});
        if let Some(usage) = &interaction.usage {
            update["usage"] = usage.clone();
        }
        push(next, ("interaction.status_update", update));
        push(
            next + 1,
            (
                "interaction.completed",
                json!({"interaction": super::view::view(stored)}),
            ),
        );
    }
    (events, finished)
}

/// The events of step `index` (`step.start`, its deltas, `step.stop`), without ids. `lengths`
/// are the byte lengths of the pieces its text was streamed in, if it was.
pub(crate) fn step_events(
    index: usize,
    body: &Value,
    lengths: Option<&Value>,
) -> Vec<(&'static str, Value)> {
    let (start, delta) = split(body);
    let mut events = vec![("step.start", json!({"index": index, "step": start}))];
    let streamed = lengths.filter(|_| body["type"] == "model_output");
    let deltas = match (streamed, delta["text"].as_str()) {
        (Some(lengths), Some(text)) => cut(text, lengths)
            .into_iter()
            .map(|piece| json!({"type": "text", "text": piece}))
            .collect(),
        _ => vec![delta],
    };
    for delta in deltas {
        events.push(("step.delta", json!({"index": index, "delta": delta})));
    }
    events.push(("step.stop", json!({"index": index})));
    events
}

/// The `step.start` of `model_output` step `index` while its text is being streamed.
pub(crate) fn streamed_start(index: usize) -> (&'static str, Value) {
    (
        "step.start",
        json!({"index": index, "step": {"type": "model_output", "content": []}}),
    )
}

/// The `step.delta` of one streamed text `piece` of step `index`.
pub(crate) fn streamed_delta(index: usize, piece: &str) -> (&'static str, Value) {
    (
        "step.delta",
        json!({"index": index, "delta": {"type": "text", "text": piece}}),
    )
}

/// `text` cut into pieces of the byte `lengths` (a JSON list) the model streamed; what the
/// lengths do not cover (they should cover all of it) is one more piece.
fn cut<'a>(text: &'a str, lengths: &Value) -> Vec<&'a str> {
    let mut pieces = Vec::new();
    let mut at = 0;
    for length in lengths.as_array().into_iter().flatten() {
        let Some(end) = length
            .as_u64()
            .and_then(|length| usize::try_from(length).ok())
            .map(|length| at + length)
        else {
            break;
        };
        match text.get(at..end) {
            Some(piece) if !piece.is_empty() => pieces.push(piece),
            Some(_) => {}
            None => break,
        }
        at = end;
    }
    if let Some(rest) = text.get(at..).filter(|rest| !rest.is_empty()) {
        pieces.push(rest);
    }
    if pieces.is_empty() {
        pieces.push(text);
    }
    pieces
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

#[cfg(test)]
mod tests {
    use hookbox_store::{Interaction, Status, Step, Timestamp};

    use super::*;

    /// The events of `stored` after `last_event_id` (all when `None`), and whether the sequence is
    /// complete (the interaction has stopped).
    fn events_after(
        stored: &InteractionWithSteps,
        last_event_id: Option<u64>,
    ) -> (Vec<Event>, bool) {
        events_live(stored, None, last_event_id)
    }

    fn stored(status: Status, steps: &[Value], outputs: Option<Value>) -> InteractionWithSteps {
        InteractionWithSteps {
            interaction: Interaction {
                id: "int_1".to_owned(),
                agent: "a".to_owned(),
                status,
                created: Timestamp::now(),
                updated: Timestamp::now(),
                environment_id: None,
                previous_interaction_id: None,
                request: json!({"agent": "a"}),
                outputs,
                usage: None,
                error: None,
            },
            steps: steps
                .iter()
                .enumerate()
                .map(|(index, body)| Step {
                    index: u32::try_from(index).unwrap_or_default(),
                    body: body.clone(),
                    created: Timestamp::now(),
                })
                .collect(),
        }
    }

    #[test]
    fn text_streamed_live_is_a_prefix_of_the_replay() {
        let input = json!({"type": "user_input", "content": [{"type": "text", "text": "hi"}]});
        let output =
            json!({"type": "model_output", "content": [{"type": "text", "text": "Héllo world"}]});
        let partial = Partial {
            index: 1,
            pieces: vec!["Hé".to_owned(), "llo".to_owned()],
            first_event: 4,
        };
        let running = stored(Status::InProgress, std::slice::from_ref(&input), None);
        let (live, finished) = events_live(&running, Some(&partial), None);
        assert!(!finished);
        assert_eq!(live.len(), 7);
        assert_eq!(live[5].data["delta"]["text"], "Hé");
        // A partial that is not the next step (the recorder lags) is not shown.
        let early = Partial {
            index: 2,
            ..partial
        };
        assert_eq!(events_live(&running, Some(&early), None).0.len(), 4);

        let done = stored(
            Status::Completed,
            &[input, output],
            Some(json!({"deltas": {"1": [3, 3, 6]}})),
        );
        let (replay, finished) = events_after(&done, None);
        assert!(finished);
        assert_eq!(replay[..live.len()], live[..]);
        let texts: Vec<&str> = replay
            .iter()
            .filter(|event| event.event_type == "step.delta" && event.data["index"] == 1)
            .filter_map(|event| event.data["delta"]["text"].as_str())
            .collect();
        assert_eq!(texts, ["Hé", "llo", " world"]);
        let ids: Vec<u64> = replay.iter().map(|event| event.id).collect();
        assert_eq!(ids, (0..11).collect::<Vec<_>>());
        // Resuming after a live delta continues with the rest.
        assert_eq!(events_after(&done, Some(6)).0, replay[7..].to_vec());
    }
}
