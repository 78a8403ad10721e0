use std::path::Path;
use std::time::Duration;

use hookbox_llm::{ModelConfig, ProviderKind};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::Api;

const AGENT: &str = "antigravity-preview-05-2026";

fn fixture(path: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures")
            .join(path),
    )
    .unwrap()
}

/// A server whose agent `AGENT` replays `script` (written next to the home).
async fn start(script: &Value) -> (Api, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.script.json");
    std::fs::write(&path, script.to_string()).unwrap();
    let api = Api::start_with(|config| {
        let mut model = ModelConfig::new(ProviderKind::Scripted, "");
        model.script = Some(path);
        config.agents.insert(AGENT.to_owned(), model);
    })
    .await;
    (api, dir)
}

fn script(name: &str) -> Value {
    serde_json::from_str(&fixture(&format!("demo/{name}"))).unwrap()
}

fn types(interaction: &Value) -> Vec<String> {
    interaction["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["type"].as_str().unwrap().to_owned())
        .collect()
}

fn security_body() -> Value {
    json!({
        "agent": AGENT,
        "input": "Run `rm -rf /tmp/forbidden` using code_execution.",
        "tools": [{"type": "code_execution"}],
        "environment": {"type": "remote", "sources": [
            {"type": "inline", "target": ".agents/hooks.json", "content": fixture("seeds/security-gate.hooks.json")},
            {"type": "inline", "target": ".agents/hooks-scripts/gate.py", "content": fixture("seeds/gate.py")},
        ]},
    })
}

fn privacy_body() -> Value {
    json!({
        "agent": AGENT,
        "input": "Use your filesystem tool to read `/workspace/private/employees.json` and summarize the employee details.",
        "environment": {"type": "remote", "sources": [
            {"type": "inline", "target": ".agents/hooks.json", "content": fixture("seeds/privacy-gate.hooks.json")},
            {"type": "inline", "target": ".agents/hooks-scripts/check_privacy.py", "content": fixture("seeds/check_privacy.py")},
            {"type": "inline", "target": "workspace/private/employees.json",
             "content": "{\"employees\": [{\"id\": 1, \"salary\": 150000, \"ssn\": \"000-00-0000\"}]}"},
            {"type": "inline", "target": "workspace/public/summary.json",
             "content": "{\"department\": \"Engineering\", \"team_size\": 42, \"status\": \"active\"}"},
        ]},
    })
}

/// The hook traces stored for `id`.
fn traces(api: &Api, id: &str) -> Vec<Value> {
    use hookbox_store::Store;
    let store =
        hookbox_store::SqliteStore::open_without_recovery(api.home().join("hookbox.db")).unwrap();
    store
        .list_traces(id)
        .unwrap()
        .into_iter()
        .map(|trace| trace.entry)
        .collect()
}

#[tokio::test]
async fn the_security_gate_denies_and_the_model_sees_the_reason() {
    let (api, _dir) = start(&script("security-gate.script.json")).await;
    let reply = api
        .post_json("/v1beta/interactions", &security_body())
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "completed");
    assert_eq!(interaction["agent"], AGENT);
    assert!(interaction["id"].as_str().unwrap().starts_with("int_"));
    let environment_id = interaction["environment_id"].as_str().unwrap();
    assert!(environment_id.starts_with("env_"));
    // The environment the interaction created is recorded in the database too.
    {
        use hookbox_store::Store;
        let store =
            hookbox_store::SqliteStore::open_without_recovery(api.home().join("hookbox.db"))
                .unwrap();
        assert_eq!(
            store.get_environment(environment_id).unwrap().metadata["id"],
            environment_id
        );
    }
    assert_eq!(
        types(&interaction),
        [
            "user_input",
            "code_execution_call",
            "code_execution_result",
            "model_output"
        ]
    );
    let result = &interaction["steps"][2];
    assert_eq!(result["is_error"], true);
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("Destructive command blocked by security gate."),
        "{result}"
    );
    assert!(
        interaction["steps"][3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("security gate blocks")
    );
    assert!(interaction["created"].as_str().unwrap().ends_with('Z'));

    let id = interaction["id"].as_str().unwrap();
    let got = api
        .get(&format!("/v1/interactions/{id}?stream=false"))
        .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.json()["steps"], interaction["steps"]);
    let traces = traces(&api, id);
    assert_eq!(traces.len(), 1, "{traces:?}");
    assert_eq!(traces[0]["result"], json!({"decided": "deny"}));
}

#[tokio::test]
async fn the_privacy_gate_then_a_second_turn_in_the_same_environment() {
    let (api, _dir) = start(&script("privacy-gate.script.json")).await;
    let first = api.post_json("/v1/interactions", &privacy_body()).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let first = first.json();
    assert_eq!(
        types(&first),
        [
            "user_input",
            "function_call",
            "function_result",
            "model_output"
        ]
    );
    assert_eq!(first["steps"][1]["name"], "read_file");
    assert!(
        first["steps"][2]["result"].to_string().contains(
            "Access to confidential `/private/` records is blocked by PII compliance policy"
        ),
        "{}",
        first["steps"][2]
    );
    let environment = first["environment_id"].as_str().unwrap();
    let id = first["id"].as_str().unwrap();

    let second = api
        .post_json(
            "/v1/interactions",
            &json!({
                "agent": AGENT,
                "input": "Understood. Please read the approved `/workspace/public/summary.json` file instead and provide the summary.",
                "environment": environment,
                "previous_interaction_id": id,
            }),
        )
        .await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    let second = second.json();
    assert_eq!(second["status"], "completed");
    assert_eq!(second["environment_id"], environment);
    assert_eq!(second["previous_interaction_id"], id);
    assert_eq!(
        types(&second),
        [
            "user_input",
            "function_call",
            "function_result",
            "model_output"
        ]
    );
    assert_eq!(second["steps"][2]["is_error"], false);
    assert!(
        second["steps"][2]["result"]
            .to_string()
            .contains("team_size")
    );
    assert!(
        second["steps"][3]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("42 people")
    );

    // Without `environment`, the previous interaction's is reused.
    let (api2, _dir2) = start(&script("privacy-gate.script.json")).await;
    let first = api2
        .post_json("/v1/interactions", &privacy_body())
        .await
        .json();
    let second = api2
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "Read the public one.", "previous_interaction_id": first["id"]}),
        )
        .await
        .json();
    assert_eq!(second["environment_id"], first["environment_id"]);
    assert!(
        second["steps"][2]["result"]
            .to_string()
            .contains("team_size")
    );
}

#[tokio::test]
async fn a_function_tool_requires_action_and_a_function_result_continues() {
    let (api, _dir) = start(&json!({"turns": [
        {"tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "call-w"}]},
        {"text": "It is 20 degrees in Paris."}
    ]}))
    .await;
    let tools = json!([{"type": "function", "name": "get_weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}]);
    let first = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "Weather in Paris?", "tools": tools}),
        )
        .await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let first = first.json();
    assert_eq!(first["status"], "requires_action");
    assert_eq!(types(&first), ["user_input", "function_call"]);
    assert_eq!(first["steps"][1]["arguments"], json!({"city": "Paris"}));
    assert!(first.get("environment_id").is_none());

    let second = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "tools": tools, "previous_interaction_id": first["id"],
                    "input": [{"type": "function_result", "call_id": "call-w", "name": "get_weather", "result": {"temp_c": 20}}]}),
        )
        .await;
    assert_eq!(second.status, 200, "{:?}", second.body);
    let second = second.json();
    assert_eq!(second["status"], "completed");
    assert_eq!(types(&second), ["function_result", "model_output"]);
    assert_eq!(
        second["steps"][1]["content"][0]["text"],
        "It is 20 degrees in Paris."
    );
}

#[tokio::test]
async fn bad_requests_are_400_with_json_paths_and_unknown_ids_404() {
    let (api, _dir) = start(&json!([{"text": "hi"}])).await;
    let unknown = api
        .post_json("/v1/interactions", &json!({"agent": "nope", "input": "hi"}))
        .await;
    assert_eq!(unknown.status, 400);
    assert_eq!(unknown.error_code(), "invalid_argument");
    assert!(
        unknown
            .message()
            .contains(&format!("configured agents: {AGENT}")),
        "{}",
        unknown.message()
    );

    let cases = [
        (
            json!({"agent": AGENT, "input": "hi", "bogus": 1}),
            "`$.bogus`",
        ),
        (
            json!({"agent": AGENT, "input": "hi", "tools": [{"type": "google_search"}]}),
            "`$.tools[0].type`",
        ),
        (json!({"agent": AGENT, "input": 3}), "`$.input`"),
        (
            json!({"agent": AGENT, "input": "hi", "environment": {"type": "remote", "sources": [{"type": "inline"}]}}),
            "$.environment.sources[0]",
        ),
        (
            json!({"agent": AGENT, "input": "hi", "background": "yes"}),
            "`$.background`",
        ),
    ];
    for (body, path) in cases {
        let reply = api.post_json("/v1/interactions", &body).await;
        assert_eq!(reply.status, 400, "{body}");
        assert!(
            reply.message().contains(path),
            "{path}: {}",
            reply.message()
        );
    }
    let malformed = api
        .send(
            "POST",
            "/v1/interactions",
            &[("content-type", "application/json")],
            "{\"agent\":",
        )
        .await;
    assert_eq!(malformed.status, 400);
    assert_eq!(malformed.error_code(), "invalid_json");

    let missing = "int_aaaaaaaaaaaaaaaaaaaaaaaaaa";
    assert_eq!(
        api.get(&format!("/v1/interactions/{missing}")).await.status,
        404
    );
    let cancel = api
        .send(
            "POST",
            &format!("/v1/interactions/{missing}/cancel"),
            &[],
            "",
        )
        .await;
    assert_eq!(cancel.status, 404);
    let delete = api
        .send("DELETE", &format!("/v1/interactions/{missing}"), &[], "")
        .await;
    assert_eq!(delete.status, 404);
    assert_eq!(delete.error_code(), "not_found");
    let previous = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "hi", "previous_interaction_id": missing}),
        )
        .await;
    assert_eq!(previous.status, 404);
}

#[tokio::test]
async fn a_background_run_is_polled_and_cancelled_and_deleted() {
    let (api, _dir) = start(&json!([
        {"tool_calls": [{"name": "code_execution", "args": {"code": "sleep 20", "language": "bash"}}]},
        {"text": "done"}
    ]))
    .await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "sleep", "tools": [{"type": "code_execution"}], "background": true}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "in_progress");
    let id = interaction["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/interactions/{id}");
    // Wait for the tool call to start.
    for _ in 0..100 {
        if types(&api.get(&path).await.json()).contains(&"code_execution_call".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = api.send("POST", &format!("{path}/cancel"), &[], "").await;
    assert_eq!(cancelled.status, 200);
    assert_eq!(cancelled.json()["status"], "cancelled");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = api.get(&path).await.json();
    assert_eq!(got["status"], "cancelled");
    assert!(!types(&got).contains(&"model_output".to_owned()), "{got}");
    // Cancelling a stopped interaction returns it unchanged.
    let again = api.send("POST", &format!("{path}/cancel"), &[], "").await;
    assert_eq!(again.json()["status"], "cancelled");

    let deleted = api.send("DELETE", &path, &[], "").await;
    assert_eq!(deleted.status, 200);
    assert_eq!(deleted.json(), json!({}));
    assert_eq!(api.get(&path).await.status, 404);
}

#[tokio::test]
async fn a_cancelled_run_keeps_the_hook_traces_of_the_calls_it_made() {
    let (api, _dir) = start(&json!([
        {"tool_calls": [{"name": "code_execution", "args": {"code": "echo first", "language": "bash"}}]},
        {"tool_calls": [{"name": "code_execution", "args": {"code": "sleep 20", "language": "bash"}}]},
        {"text": "done"}
    ]))
    .await;
    let hooks = json!({"audit": {"pre_tool_execution": [{"matcher": "code_execution", "hooks": [
        {"type": "command", "command": "cat > /dev/null; echo '{\"decision\":\"allow\"}'", "timeout": 10}
    ]}]}});
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({
                "agent": AGENT,
                "input": "twice",
                "tools": [{"type": "code_execution"}],
                "background": true,
                "environment": {"type": "remote", "sources": [
                    {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()},
                ]},
            }),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/interactions/{id}");
    // Wait for the second call (the first one's result, and its traces, are stored by then).
    for _ in 0..200 {
        let calls = types(&api.get(&path).await.json())
            .iter()
            .filter(|kind| *kind == "code_execution_call")
            .count();
        if calls == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let cancelled = api.send("POST", &format!("{path}/cancel"), &[], "").await;
    assert_eq!(cancelled.json()["status"], "cancelled");
    assert_eq!(
        types(&cancelled.json()),
        [
            "user_input",
            "code_execution_call",
            "code_execution_result",
            "code_execution_call"
        ]
    );

    use hookbox_store::Store;
    let store =
        hookbox_store::SqliteStore::open_without_recovery(api.home().join("hookbox.db")).unwrap();
    let traces = store.list_traces(&id).unwrap();
    assert_eq!(traces.len(), 1, "{traces:?}");
    // The first call's hook, on its result step.
    assert_eq!(traces[0].step_index, Some(2));
    assert_eq!(traces[0].entry["result"], json!({"decided": "allow"}));
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

#[tokio::test]
async fn streaming_create_sends_the_events_in_order_and_get_replays_them() {
    let (api, _dir) = start(&script("security-gate.script.json")).await;
    let mut body = security_body();
    body["stream"] = true.into();
    let reply = api.post_json("/v1/interactions", &body).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = sse_events(&reply.body);
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    let mut expected = vec!["interaction.created"];
    for _ in 0..4 {
        expected.extend(["step.start", "step.delta", "step.stop"]);
    }
    expected.extend(["interaction.status_update", "interaction.completed"]);
    assert_eq!(kinds, expected);
    let ids: Vec<String> = events
        .iter()
        .map(|e| e["event_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        ids,
        (0..expected.len())
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(events[0]["interaction"]["status"], "in_progress");
    assert_eq!(
        events[2]["delta"]["text"],
        "Run `rm -rf /tmp/forbidden` using code_execution."
    );
    assert_eq!(
        events[5]["delta"]["arguments"]["code"],
        "rm -rf /tmp/forbidden"
    );
    assert_eq!(events[13]["status"], "completed");
    let last = &events[14]["interaction"];
    assert_eq!(last["status"], "completed");
    assert_eq!(types(last).len(), 4);

    let id = last["id"].as_str().unwrap();
    let replay = api
        .get(&format!(
            "/v1/interactions/{id}?stream=true&last_event_id=10"
        ))
        .await;
    assert_eq!(replay.header("content-type"), Some("text/event-stream"));
    let replayed = sse_events(&replay.body);
    assert_eq!(replayed, events[11..].to_vec());
}

#[tokio::test]
async fn identical_creates_are_two_interactions_and_keyed_retries_run_once() {
    let (api, _dir) = start(&json!([
        {"tool_calls": [{"name": "code_execution", "args": {"code": "echo hi", "language": "bash"}}]},
        {"text": "said hi"}
    ]))
    .await;
    let hooks = json!({"count": {"post_tool_execution": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "echo run >> /workspace/runs.log"}
    ]}]}});
    let body = json!({
        "agent": AGENT, "input": "say hi", "tools": [{"type": "code_execution"}],
        "environment": {"type": "remote", "sources": [
            {"type": "inline", "target": ".agents/hooks.json", "content": hooks.to_string()}
        ]},
    });
    // The same body sent again after the first was answered is re-run on purpose: a second
    // interaction (in a second environment), its tools run again. (An identical body while
    // the first request is still open is a retry: see the service's idempotency tests.)
    let first = api.post_json("/v1/interactions", &body).await.json();
    let second = api.post_json("/v1/interactions", &body).await.json();
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(second["status"], "completed", "{second}");
    assert_ne!(second["id"], first["id"]);
    assert_ne!(second["environment_id"], first["environment_id"]);
    let environment = first["environment_id"].as_str().unwrap();
    let log = std::fs::read_to_string(api.root(environment).join("workspace/runs.log")).unwrap();
    assert_eq!(log, "run\n");
    let environments = api.get("/v1/environments").await.json();
    assert_eq!(environments["environments"].as_array().unwrap().len(), 2);

    // An Idempotency-Key header makes the key explicit; another key is another interaction.
    let mut other = body.clone();
    other["environment"] = environment.into();
    let keyed = |key: &'static str| {
        let other = other.to_string();
        let api = &api;
        async move {
            api.send(
                "POST",
                "/v1/interactions",
                &[
                    ("content-type", "application/json"),
                    ("idempotency-key", key),
                ],
                other,
            )
            .await
            .json()
        }
    };
    let a = keyed("k1").await;
    let b = keyed("k1").await;
    let c = keyed("k2").await;
    assert_eq!(a["id"], b["id"]);
    assert_ne!(a["id"], c["id"]);
    let reused = api
        .send(
            "POST",
            "/v1/interactions",
            &[
                ("content-type", "application/json"),
                ("idempotency-key", "k1"),
            ],
            body.to_string(),
        )
        .await;
    assert_eq!(reused.status, 400, "a key reused for another body");
    let log = std::fs::read_to_string(api.root(environment).join("workspace/runs.log")).unwrap();
    assert_eq!(log, "run\nrun\nrun\n");
}

#[tokio::test]
async fn interactions_survive_a_restart() {
    let (mut api, _dir) = start(&script("security-gate.script.json")).await;
    let created = api
        .post_json("/v1/interactions", &security_body())
        .await
        .json();
    let id = created["id"].as_str().unwrap();
    api.restart().await;
    let got = api
        .get(&format!("/v1/interactions/{id}?stream=false"))
        .await;
    assert_eq!(got.status, 200);
    let got = got.json();
    assert_eq!(got["steps"], created["steps"]);
    assert_eq!(got["status"], "completed");
    assert!(api.home().join("hookbox.db").exists());
}

#[tokio::test]
async fn a_failed_run_reports_its_errors() {
    let (api, _dir) = start(&json!([])).await;
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "hi", "store": false}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "failed");
    assert_eq!(types(&interaction), ["user_input"]);
    assert_eq!(interaction["errors"][0]["code"], "model_error");
    assert!(
        interaction["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("script")
    );
    // `store: false` is stored anyway.
    let id = interaction["id"].as_str().unwrap();
    assert_eq!(api.get(&format!("/v1/interactions/{id}")).await.status, 200);
}

#[tokio::test]
async fn an_interaction_past_max_turns_ends_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.script.json");
    let script = json!({"turns": [
        {"tool_calls": [{"name": "list_files", "args": {}}]},
        {"tool_calls": [{"name": "list_files", "args": {}}]},
        {"text": "too late"}
    ]});
    std::fs::write(&path, script.to_string()).unwrap();
    let api = Api::start_with(|config| {
        let mut model = ModelConfig::new(ProviderKind::Scripted, "");
        model.script = Some(path);
        config.agents.insert(AGENT.to_owned(), model);
        config.server.max_turns = Some(2);
    })
    .await;
    let body = json!({"agent": AGENT, "input": "look around", "environment": {"type": "remote", "sources": []}});
    let reply = api.post_json("/v1beta/interactions", &body).await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let interaction = reply.json();
    assert_eq!(interaction["status"], "incomplete", "{interaction}");
    assert_eq!(
        interaction["errors"][0]["code"], "max_turns",
        "{interaction}"
    );
    assert!(!interaction.to_string().contains("too late"));
}

/// Whether a process on this host has `marker` in its command line.
fn process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(marker)
        })
    })
}

#[tokio::test]
async fn deleting_an_environment_stops_the_runs_in_it_first() {
    // A call that would run on (a marker in its command line) if nothing stopped it.
    let (api, _dir) = start(&json!([
        {"tool_calls": [{"name": "code_execution", "args": {"code": "exec sleep 987.25", "language": "bash"}}]},
        {"text": "done"}
    ]))
    .await;
    let environment = api.post_json("/v1/environments", &json!({})).await;
    assert_eq!(environment.status, 200, "{:?}", environment.body);
    let environment = environment.json()["id"].as_str().unwrap().to_owned();
    let reply = api
        .post_json(
            "/v1/interactions",
            &json!({"agent": AGENT, "input": "sleep", "tools": [{"type": "code_execution"}],
                    "background": true, "environment": environment}),
        )
        .await;
    assert_eq!(reply.status, 200, "{:?}", reply.body);
    let id = reply.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/interactions/{id}");
    for _ in 0..200 {
        if process_with("sleep 987.25") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(process_with("sleep 987.25"), "the call never started");

    let deleted = api
        .send(
            "DELETE",
            &format!("/v1/environments/{environment}"),
            &[],
            "",
        )
        .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    // The run ended with the deletion, failed, saying why; its call is gone with it.
    let got = api.get(&path).await.json();
    assert_eq!(got["status"], "failed", "{got}");
    let message = got["errors"][0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&environment) && message.contains("deleted"),
        "{got}"
    );
    for _ in 0..200 {
        if !process_with("sleep 987.25") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !process_with("sleep 987.25"),
        "the call outlived its environment"
    );
    assert!(!types(&got).contains(&"model_output".to_owned()), "{got}");
}
