use std::path::Path;

use hookbox_llm::{ModelConfig, ProviderKind};
use hookbox_test_support::{FakeModelServer, FakeTurn};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::Api;

const AGENT: &str = "fake-openai";
const MODEL: &str = "gpt-fake";
const TEXT: &str = "Hello there, streaming world!";
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// A server whose agent `AGENT` is an OpenAI-compatible fake (no key), streaming when `stream`.
async fn start(turns: Vec<FakeTurn>, stream: bool) -> (Api, FakeModelServer) {
    let fake = FakeModelServer::openai(MODEL, None, turns).await.unwrap();
    let base_url = fake.base_url();
    let api = Api::start_with(|config| {
        let mut model = ModelConfig::new(ProviderKind::Openai, MODEL);
        model.base_url = Some(base_url);
        model.stream = stream;
        model.max_attempts = Some(1);
        config.agents.insert(AGENT.to_owned(), model);
    })
    .await;
    (api, fake)
}

/// Parses an SSE body into its `data` JSON objects, checking it ends with `[DONE]`.
fn sse_events(body: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(body);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect();
    assert_eq!(data.last(), Some(&"[DONE]"), "{text}");
    data[..data.len() - 1]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|event| event["event_type"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn model_text_is_streamed_as_several_deltas_and_replayed_identically() {
    let (api, fake) = start(vec![FakeTurn::text(TEXT)], true).await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "hi", "stream": true}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    assert_eq!(fake.bodies()[0]["stream"], true);
    let events = sse_events(&reply.body);
    let kinds = kinds(&events);
    // created; user_input (start, delta, stop); model_output (start, 4 deltas, stop); end.
    let mut expected = vec![
        "interaction.created",
        "step.start",
        "step.delta",
        "step.stop",
    ];
    expected.push("step.start");
    expected.extend(["step.delta"; 4]);
    expected.extend([
        "step.stop",
        "interaction.status_update",
        "interaction.completed",
    ]);
    assert_eq!(kinds, expected);
    let ids: Vec<String> = events
        .iter()
        .map(|event| event["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        (0..events.len()).map(|i| i.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        events[4]["step"],
        json!({"type": "model_output", "content": []})
    );
    let pieces: Vec<&str> = events[5..9]
        .iter()
        .map(|event| {
            assert_eq!(event["index"], 1);
            assert_eq!(event["delta"]["type"], "text");
            event["delta"]["text"].as_str().unwrap()
        })
        .collect();
    assert_eq!(pieces.concat(), TEXT);
    assert_eq!(
        events[9],
        json!({"index": 1, "event_type": "step.stop", "event_id": "9"})
    );

    // The stored steps are as without streaming.
    let id = events[0]["interaction"]["id"].as_str().unwrap();
    let stored = api.get(&format!("/v1/interactions/{id}")).await.json();
    assert_eq!(stored["status"], "completed");
    assert_eq!(
        stored["steps"][1],
        json!({"type": "model_output", "content": [{"type": "text", "text": TEXT}]})
    );
    assert_eq!(stored["usage"]["total_tokens"], 18);

    // A replay is what was streamed; a resume continues it.
    let replay = api.get(&format!("/v1/interactions/{id}?stream=true")).await;
    assert_eq!(sse_events(&replay.body), events);
    let resumed = api
        .get(&format!(
            "/v1/interactions/{id}?stream=true&last_event_id=6"
        ))
        .await;
    assert_eq!(sse_events(&resumed.body), events[7..].to_vec());
}

#[tokio::test]
async fn a_non_streaming_agent_sends_the_text_in_one_delta() {
    let (api, fake) = start(vec![FakeTurn::text(TEXT)], false).await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "hi", "stream": true}),
        )
        .await;
    let events = sse_events(&reply.body);
    assert_eq!(events.len(), 9, "{events:?}");
    assert_eq!(events[5]["delta"]["text"], TEXT);
    assert_eq!(fake.bodies()[0].get("stream"), None);
}

#[tokio::test]
async fn the_model_form_names_an_agent_and_passes_its_generation_config() {
    let (api, fake) = start(vec![FakeTurn::text(TEXT)], false).await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"model": AGENT, "input": "hi",
                    "generation_config": {"temperature": 0.5, "max_output_tokens": 32, "top_p": 0.9}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["model"], AGENT);
    assert_eq!(interaction.get("agent"), None);
    assert_eq!(interaction["status"], "completed");
    assert_eq!(interaction["steps"][1]["content"][0]["text"], TEXT);
    let sent = &fake.bodies()[0];
    assert_eq!(sent["temperature"], json!(0.5));
    assert_eq!(sent["max_tokens"], json!(32));
    assert_eq!(sent.get("top_p"), None);
    let id = interaction["id"].as_str().unwrap();
    let got = api.get(&format!("/v1/interactions/{id}")).await.json();
    assert_eq!(got["model"], AGENT);

    let unknown = api
        .post_json(
            "/v1/interactions",
            &json!({"model": "gemini-2.5-flash", "input": "hi"}),
        )
        .await;
    assert_eq!(unknown.status, 400);
    let message = unknown.message();
    assert!(
        message.contains("`$.model`")
            && message.contains(AGENT)
            && message.contains("`model` names an agent"),
        "{message}"
    );
    let both = api
        .post_json(
            "/v1/interactions",
            &json!({"model": AGENT, "agent": AGENT, "input": "hi"}),
        )
        .await;
    assert_eq!(both.status, 400);
    assert!(both.message().contains("not both"), "{}", both.message());
    let bad = api
        .post_json(
            "/v1/interactions",
            &json!({"model": AGENT, "input": "hi", "generation_config": {"max_output_tokens": -1}}),
        )
        .await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.message()
            .contains("$.generation_config.max_output_tokens")
    );
}

#[tokio::test]
async fn an_image_reaches_the_model_and_stays_in_the_stored_step() {
    let (api, fake) = start(
        vec![FakeTurn::text("A pixel."), FakeTurn::text("Still a pixel.")],
        false,
    )
    .await;
    let image = json!({"type": "image", "data": PNG, "mime_type": "image/png"});
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": [{"type": "text", "text": "What is this?"}, image]}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "completed", "{interaction}");
    assert_eq!(
        interaction["steps"][0],
        json!({"type": "user_input", "content": [{"type": "text", "text": "What is this?"}, image]})
    );
    assert_eq!(
        fake.bodies()[0]["messages"][0]["content"][1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}})
    );
    // The next turn still shows the model the image (history), given as a data: URI this time.
    let id = interaction["id"].as_str().unwrap();
    let uri = json!({"type": "image", "uri": format!("data:image/png;base64,{PNG}")});
    let second = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": [uri], "previous_interaction_id": id}),
        )
        .await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    let messages = fake.bodies()[1]["messages"].clone();
    assert_eq!(messages[0]["content"][1]["type"], "image_url");
    assert_eq!(messages[2]["content"][0]["type"], "image_url");

    let invalid = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": [{"type": "text", "text": "x"},
                    {"type": "image", "data": "%%%", "mime_type": "image/png"}]}),
        )
        .await;
    assert_eq!(invalid.status, 400);
    assert!(
        invalid.message().contains("`$.input[1].data`"),
        "{}",
        invalid.message()
    );
    let remote = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": {"type": "image", "uri": "https://example.com/cat.png"}}),
        )
        .await;
    assert_eq!(remote.status, 400);
    assert!(
        remote.message().contains("only inline data"),
        "{}",
        remote.message()
    );
    assert_eq!(fake.requests().len(), 2);
}

/// The google-genai SDK iterates `interactions.create(..., stream=True)` against an agent whose
/// model streams (skipped without `HOOKBOX_PYTHON`).
#[tokio::test]
#[expect(
    clippy::disallowed_methods,
    reason = "the test runs the SDK's Python client"
)]
async fn the_google_genai_sdk_streams_model_text() {
    let Some(python) = std::env::var_os("HOOKBOX_PYTHON").filter(|value| !value.is_empty()) else {
        hookbox_test_support::skip(
            "the_google_genai_sdk_streams_model_text",
            "set HOOKBOX_PYTHON to a python with google-genai>=3.3.0 installed",
        );
        return;
    };
    let turns = (0..4).map(|_| FakeTurn::text(TEXT)).collect();
    let (api, _fake) = start(turns, true).await;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/streaming.py");
    let base_url = format!("http://{}", api.addr);
    let key = api.key.clone();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&python)
            .arg(&script)
            .arg(&base_url)
            .arg(AGENT)
            .arg(TEXT)
            .env("HOOKBOX_API_KEY", key)
            .output()
            .expect("run the SDK script")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "SDK script failed\nstdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.trim_end().ends_with("ok"), "{stdout}");
}

#[tokio::test]
async fn an_interaction_past_its_token_budget_ends_incomplete_before_more_tool_calls() {
    let fake = FakeModelServer::openai(
        MODEL,
        None,
        vec![
            FakeTurn::tool_call("", "c1", "list_files", json!({})),
            FakeTurn::tool_call("", "c2", "list_files", json!({})),
            FakeTurn::text("never reached"),
        ],
    )
    .await
    .unwrap();
    let base_url = fake.base_url();
    let api = Api::start_with(|config| {
        let mut model = ModelConfig::new(ProviderKind::Openai, MODEL);
        model.base_url = Some(base_url);
        model.max_attempts = Some(1);
        config.agents.insert(AGENT.to_owned(), model);
        // The fake reports a few tokens per call: one call is within budget, the next is not.
        config.server.max_tokens = Some(1);
    })
    .await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "look around", "environment": {"type": "remote", "sources": []}}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "incomplete", "{interaction}");
    assert_eq!(
        interaction["errors"][0]["code"], "budget_exceeded",
        "{interaction}"
    );
    assert_eq!(fake.requests().len(), 1);
    let steps = interaction["steps"].as_array().unwrap();
    assert!(
        steps.iter().all(|step| step["type"] != "function_result"),
        "a tool ran past the budget: {interaction}"
    );
}
