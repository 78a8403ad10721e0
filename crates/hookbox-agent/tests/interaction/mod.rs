//! The agent loop: model → hooks → sandbox → model, with the seeds' gates.

use std::sync::Arc;

use hookbox_agent::SandboxTools;
use hookbox_agent::interaction::{Agent, RunErrorCode, RunStatus, Step};
use hookbox_env::{EnvironmentSpec, Environments, Isolation};
use hookbox_llm::{
    ModelConfig, ProviderKind, ToolDeclaration, ToolResult, build_with_env, client_options,
};
use hookbox_net::{ClientOptions, GuardedClient};
use hookbox_test_support::{FakeModelServer, FakeTurn};
use serde_json::json;

fn seed(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/seeds")
        .join(name);
    std::fs::read_to_string(path).expect("seed file")
}

/// The seeds' privacy-gate environment, verbatim.
async fn privacy_environment(store: &Environments) -> hookbox_env::Environment {
    let spec = json!({"type": "remote", "sources": [
        {"type": "inline", "target": ".agents/hooks.json", "content": seed("privacy-gate.hooks.json")},
        {"type": "inline", "target": ".agents/hooks-scripts/check_privacy.py", "content": seed("check_privacy.py")},
        {"type": "inline", "target": "workspace/private/employees.json",
         "content": "{\"employees\": [{\"id\": 1, \"salary\": 150000, \"ssn\": \"000-00-0000\"}]}"},
        {"type": "inline", "target": "workspace/public/summary.json",
         "content": "{\"department\": \"Engineering\", \"team_size\": 42, \"status\": \"active\"}"}
    ]});
    store
        .create(&EnvironmentSpec::from_json(&spec).expect("spec"))
        .await
        .expect("environment")
}

/// The model's client: the fake model servers listen on plain-HTTP loopback.
fn model_client() -> GuardedClient {
    GuardedClient::new(&client_options()).expect("client")
}

/// The strict client HTTP hooks use.
fn hook_client() -> GuardedClient {
    GuardedClient::new(&ClientOptions::default()).expect("client")
}

async fn agent(server: &FakeModelServer, environment: Option<hookbox_env::Environment>) -> Agent {
    let config = ModelConfig {
        base_url: Some(server.base_url()),
        max_attempts: Some(1),
        ..ModelConfig::new(ProviderKind::Openai, "gpt-test")
    };
    let tools = environment.map(|environment| {
        Arc::new(
            SandboxTools::new(environment, Isolation::Sandboxed, hook_client()).expect("tools"),
        )
    });
    Agent {
        model: build_with_env(&config, model_client(), |_| None).expect("model"),
        tools,
        functions: Vec::new(),
        system: None,
        max_turns: 8,
        max_tokens: None,
    }
}

/// Each step's kind, calls and results with their tool: `call read_file`, `result read_file`.
fn kinds(steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .map(|step| match step {
            Step::UserInput { .. } => "user_input".to_owned(),
            Step::ModelOutput(_) => "model_output".to_owned(),
            Step::Call(call) => format!("call {}", call.name),
            Step::Result(result) => format!("result {}", result.name),
        })
        .collect()
}

/// Step `index` of `steps`, which must be a result.
fn result_at(steps: &[Step], index: usize) -> &ToolResult {
    match &steps[index] {
        Step::Result(result) => result,
        other => panic!("step {index} is not a result: {other:?}"),
    }
}

#[tokio::test]
async fn the_privacy_gate_denies_the_model_sees_why_and_the_second_turn_recovers() {
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    let environment = privacy_environment(&store).await;
    let server = FakeModelServer::openai(
        "gpt-test",
        None,
        vec![
            FakeTurn::tool_call(
                "",
                "call_1",
                "read_file",
                json!({"path": "/workspace/private/employees.json"}),
            ),
            FakeTurn::text(
                "That file is blocked by policy; I can read the public summary instead.",
            ),
            FakeTurn::tool_call(
                "",
                "call_2",
                "read_file",
                json!({"path": "/workspace/public/summary.json"}),
            ),
            FakeTurn::text("Engineering has 42 people and is active."),
        ],
    )
    .await
    .expect("server");
    let agent = agent(&server, Some(environment)).await;

    let mut seen = Vec::new();
    let first = agent
        .run(
            &[],
            vec![Step::user_text("Read /workspace/private/employees.json")],
            Some("int_1"),
            &mut |step| seen.push(step.clone()),
        )
        .await;
    assert_eq!(first.status, RunStatus::Completed, "{:?}", first.error);
    assert_eq!(
        kinds(&first.steps),
        [
            "user_input",
            "call read_file",
            "result read_file",
            "model_output"
        ]
    );
    assert_eq!(seen, first.steps, "every step is reported as it is made");
    let denied = result_at(&first.steps, 2);
    assert!(denied.is_error);
    assert!(
        denied
            .content
            .as_str()
            .expect("text")
            .contains("PII compliance policy"),
        "{denied:?}"
    );
    // The model received the deny reason as the tool result.
    let tool_message = server.bodies()[1]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|message| message["role"] == "tool")
        .cloned()
        .expect("tool message");
    assert!(
        tool_message["content"]
            .as_str()
            .expect("content")
            .contains("PII compliance policy")
    );
    assert_eq!(first.records.len(), 1);
    assert_eq!(first.records[0].1.trace.len(), 1);
    assert_eq!(
        first.records[0].0, 2,
        "the trace belongs to the result step"
    );

    // Second turn: history plus the new input; the public summary is read.
    let second = agent
        .run(
            &first.steps,
            vec![Step::user_text("Read the public summary instead")],
            Some("int_2"),
            &mut |_| {},
        )
        .await;
    assert_eq!(second.status, RunStatus::Completed);
    let read = result_at(&second.steps, 2);
    assert!(!read.is_error);
    assert_eq!(
        read.content["content"],
        "{\"department\": \"Engineering\", \"team_size\": 42, \"status\": \"active\"}"
    );
    // The model saw the first interaction's history.
    let messages = server.bodies()[2]["messages"]
        .as_array()
        .expect("messages")
        .len();
    assert!(messages >= 5, "history was not sent: {messages} messages");
}

#[tokio::test]
async fn code_execution_runs_in_the_sandbox_and_uses_code_steps() {
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    let environment = store
        .create(&EnvironmentSpec::from_json(&json!({})).expect("spec"))
        .await
        .expect("env");
    let server = FakeModelServer::openai(
        "gpt-test",
        None,
        vec![
            FakeTurn::tool_call(
                "Let me check.",
                "c1",
                "code_execution",
                json!({"code": "echo $((6*7))", "language": "bash"}),
            ),
            FakeTurn::text("42"),
        ],
    )
    .await
    .expect("server");
    let outcome = agent(&server, Some(environment))
        .await
        .run(&[], vec![Step::user_text("6*7?")], None, &mut |_| {})
        .await;
    assert_eq!(
        kinds(&outcome.steps),
        [
            "user_input",
            "model_output",
            "call code_execution",
            "result code_execution",
            "model_output"
        ]
    );
    let Step::Call(call) = &outcome.steps[2] else {
        panic!("step 2 is not a call: {:?}", outcome.steps[2]);
    };
    assert_eq!(
        call.args,
        json!({"code": "echo $((6*7))", "language": "bash"})
    );
    let result = result_at(&outcome.steps, 3);
    assert_eq!(result.content, "42\n");
    assert!(!result.is_error);
    assert!(outcome.usage.total() > 0);
    // The five built-in tools were offered with exactly their names.
    let offered: Vec<String> = server.bodies()[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|tool| tool["function"]["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(
        offered,
        [
            "code_execution",
            "read_file",
            "write_file",
            "list_files",
            "delete_file"
        ]
    );
}

#[tokio::test]
async fn a_function_tool_stops_with_requires_action() {
    let server = FakeModelServer::openai(
        "gpt-test",
        None,
        vec![FakeTurn::tool_call(
            "",
            "f1",
            "get_weather",
            json!({"city": "Paris"}),
        )],
    )
    .await
    .expect("server");
    let mut agent = agent(&server, None).await;
    agent.functions.push(ToolDeclaration {
        name: "get_weather".into(),
        description: "Weather by city.".into(),
        parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
    });
    let outcome = agent
        .run(&[], vec![Step::user_text("Weather?")], None, &mut |_| {})
        .await;
    assert_eq!(outcome.status, RunStatus::RequiresAction);
    assert_eq!(kinds(&outcome.steps), ["user_input", "call get_weather"]);
}

#[tokio::test]
async fn the_turn_limit_ends_incomplete_and_model_errors_fail() {
    let call = || FakeTurn::tool_call("", "x", "list_files", json!({}));
    let server = FakeModelServer::openai("gpt-test", None, vec![call(), call(), call()])
        .await
        .expect("server");
    let home = tempfile::tempdir().expect("home");
    let store = crate::small_store(home.path());
    let environment = store
        .create(&EnvironmentSpec::from_json(&json!({})).expect("spec"))
        .await
        .expect("env");
    let mut looping = agent(&server, Some(environment)).await;
    looping.max_turns = 2;
    let outcome = looping
        .run(&[], vec![Step::user_text("loop")], None, &mut |_| {})
        .await;
    assert_eq!(outcome.status, RunStatus::Incomplete);
    assert_eq!(outcome.error.expect("error").code, RunErrorCode::MaxTurns);

    let failing = FakeModelServer::openai("gpt-test", None, vec![FakeTurn::error(500, "boom")])
        .await
        .expect("server");
    let outcome = agent(&failing, None)
        .await
        .run(&[], vec![Step::user_text("hi")], None, &mut |_| {})
        .await;
    assert_eq!(outcome.status, RunStatus::Failed);
    let error = outcome.error.expect("error");
    assert_eq!(error.code, RunErrorCode::ModelError);
    assert!(error.message.contains("boom"), "{error:?}");
}
