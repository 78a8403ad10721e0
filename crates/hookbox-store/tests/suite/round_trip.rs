use hookbox_store::{
    Append, EnvironmentRecord, NewInteraction, NewStep, NewTrace, PageRequest, Status, Store,
    Timestamp, Update,
};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{memory, request, start, text_step};

#[test]
fn an_interaction_is_created_as_given() {
    let store = memory();
    let before = Timestamp::now();
    let new = NewInteraction {
        id: Some("int_123".to_owned()),
        environment_id: Some("env_1".to_owned()),
        ..NewInteraction::new("hookbox", request("list files"))
    };
    let created = store.create_interaction(new).unwrap();
    assert!(created.created);
    let interaction = created.interaction;
    assert_eq!(interaction.id, "int_123");
    assert_eq!(interaction.agent, "hookbox");
    assert_eq!(interaction.status, Status::InProgress);
    assert_eq!(interaction.environment_id.as_deref(), Some("env_1"));
    assert_eq!(interaction.previous_interaction_id, None);
    assert_eq!(interaction.request, request("list files"));
    assert_eq!(
        (interaction.outputs.clone(), interaction.usage.clone()),
        (None, None)
    );
    assert_eq!(interaction.error, None);
    assert!(interaction.created >= before && interaction.updated == interaction.created);
    assert_eq!(store.get_interaction("int_123").unwrap(), interaction);
}

#[test]
fn generated_ids_look_like_interaction_ids() {
    let store = memory();
    let (a, b) = (start(&store, "a"), start(&store, "b"));
    assert_ne!(a, b);
    for id in [a, b] {
        let token = id.strip_prefix("int_").unwrap();
        assert_eq!(token.len(), 26, "{id}");
        assert!(
            token
                .bytes()
                .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
        );
    }
}

/// The steps of the spec's minimal example, appended as the loop would, come back in order with
/// the hook traces of the tool call; the final update completes the interaction.
#[test]
fn steps_traces_and_updates_round_trip() {
    let store = memory();
    let id = start(&store, "list files");
    let user = NewStep::new(
        json!({"type": "user_input", "content": [{"type": "text", "text": "list files"}]}),
    );
    assert_eq!(store.append_steps(&id, vec![user]).unwrap(), 0..1);

    let pre = json!({"event": "pre_tool_execution", "handler": "command", "label": "./gate.sh",
                     "result": {"decided": "allow"}, "duration_ms": 1.5});
    let call = NewStep {
        body: json!({"type": "code_execution_call", "id": "call_1",
                     "arguments": {"language": "bash", "code": "ls"}}),
        traces: vec![pre.clone()],
    };
    let result = NewStep::new(
        json!({"type": "code_execution_result", "call_id": "call_1", "result": "a.txt\n",
               "is_error": false}),
    );
    let post = json!({"event": "post_tool_execution", "handler": "http",
                      "failure": {"kind": "http_status", "status": 500}});
    let appended = store
        .append(
            &id,
            Append {
                steps: vec![call, result],
                traces: vec![NewTrace {
                    step_index: Some(2),
                    entry: post.clone(),
                }],
                update: Some(Update {
                    environment_id: Some("env_1".to_owned()),
                    ..Update::default()
                }),
            },
        )
        .unwrap();
    assert_eq!(appended.steps, 1..3);
    assert_eq!(
        appended.interaction.environment_id.as_deref(),
        Some("env_1")
    );
    assert_eq!(appended.interaction.status, Status::InProgress);

    let stop = json!({"event": "Stop", "result": "no_decision"});
    let usage = json!({"total_input_tokens": 1, "total_output_tokens": 2, "total_tokens": 3});
    let done = store
        .append(
            &id,
            Append {
                steps: vec![text_step("Hello world")],
                traces: vec![NewTrace {
                    step_index: None,
                    entry: stop.clone(),
                }],
                update: Some(Update {
                    status: Some(Status::Completed),
                    usage: Some(usage.clone()),
                    outputs: Some(json!({"output_text": "Hello world"})),
                    ..Update::default()
                }),
            },
        )
        .unwrap();
    assert_eq!(done.steps, 3..4);
    assert_eq!(done.interaction.status, Status::Completed);
    assert_eq!(done.interaction.usage, Some(usage));
    assert_eq!(
        done.interaction.environment_id.as_deref(),
        Some("env_1"),
        "kept"
    );
    assert!(done.interaction.updated >= done.interaction.created);

    let full = store.get_interaction_with_steps(&id).unwrap();
    assert_eq!(full.interaction, done.interaction);
    let types: Vec<_> = full
        .steps
        .iter()
        .map(|step| step.body["type"].clone())
        .collect();
    assert_eq!(
        types,
        [
            "user_input",
            "code_execution_call",
            "code_execution_result",
            "model_output"
        ]
    );
    assert_eq!(
        full.steps.iter().map(|step| step.index).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert_eq!(store.list_steps(&id).unwrap(), full.steps);

    let traces: Vec<_> = store
        .list_traces(&id)
        .unwrap()
        .into_iter()
        .map(|trace| (trace.seq, trace.step_index, trace.entry))
        .collect();
    assert_eq!(
        traces,
        [(0, Some(1), pre), (1, Some(2), post), (2, None, stop)]
    );
}

#[test]
fn a_stopped_interaction_cannot_change() {
    let store = memory();
    let id = start(&store, "x");
    let cancel = Update {
        status: Some(Status::Cancelled),
        ..Update::default()
    };
    assert_eq!(
        store
            .update_interaction(&id, cancel.clone())
            .unwrap()
            .status,
        Status::Cancelled
    );
    let error = store
        .append_steps(&id, vec![text_step("late")])
        .unwrap_err();
    assert!(
        matches!(
            &error,
            hookbox_store::Error::Stopped {
                status: Status::Cancelled,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("is cancelled"), "{error}");
    assert!(store.update_interaction(&id, cancel).is_err());
    assert!(store.list_steps(&id).unwrap().is_empty());
}

#[test]
fn every_status_round_trips() {
    let store = memory();
    for status in Status::ALL {
        assert_eq!(status.as_str().parse::<Status>().unwrap(), status);
        let new = NewInteraction {
            status,
            ..NewInteraction::new("hookbox", request(status.as_str()))
        };
        let id = store.create_interaction(new).unwrap().interaction.id;
        assert_eq!(store.get_interaction(&id).unwrap().status, status);
    }
    assert!("budget_exceeded".parse::<Status>().is_err());
}

#[test]
fn deleting_an_interaction_removes_its_steps_and_traces() {
    let store = memory();
    let id = start(&store, "x");
    let step = NewStep {
        traces: vec![json!({"event": "pre_tool_execution"})],
        ..text_step("hi")
    };
    store.append_steps(&id, vec![step]).unwrap();
    let other = start(&store, "y");
    store.append_steps(&other, vec![text_step("kept")]).unwrap();

    store.delete_interaction(&id).unwrap();
    assert!(store.get_interaction(&id).is_err());
    assert!(store.list_steps(&id).is_err());
    assert_eq!(store.list_steps(&other).unwrap().len(), 1);
    assert!(
        store.delete_interaction(&id).is_err(),
        "a second delete finds nothing"
    );
}

#[test]
fn environments_round_trip() {
    let store = memory();
    let metadata = json!({"network": "disabled", "sources": [{"type": "inline", "target": "a"}]});
    let put = store.put_environment("env_a", metadata.clone()).unwrap();
    assert_eq!(
        put,
        EnvironmentRecord {
            id: "env_a".to_owned(),
            created: put.created,
            updated: put.created,
            metadata,
        }
    );
    assert_eq!(store.get_environment("env_a").unwrap(), put);

    let replaced = store
        .put_environment("env_a", json!({"network": "allowed"}))
        .unwrap();
    assert_eq!(replaced.created, put.created, "created is kept");
    assert!(replaced.updated >= put.updated);
    assert_eq!(replaced.metadata, json!({"network": "allowed"}));

    store.delete_environment("env_a").unwrap();
    assert!(store.get_environment("env_a").is_err());
}

#[test]
fn environments_are_listed_a_page_at_a_time() {
    let store = memory();
    let ids: Vec<String> = (0..7).map(|n| format!("env_{n}")).collect();
    for id in &ids {
        store.put_environment(id, json!({})).unwrap();
    }
    let mut seen = Vec::new();
    let mut after = None;
    let mut pages = 0;
    loop {
        let page = store
            .list_environments(PageRequest { limit: 3, after })
            .unwrap();
        pages += 1;
        assert!(page.items.len() <= 3);
        seen.extend(page.items.into_iter().map(|environment| environment.id));
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(sorted, ids, "each environment exactly once");

    let all = store.list_environments(PageRequest::default()).unwrap();
    assert_eq!((all.items.len(), all.next), (7, None));
}
