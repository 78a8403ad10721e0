//! hookbox-llm integration tests: the model providers against fake model servers speaking each
//! provider's exact wire format.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookbox_llm::{
    Conversation, Delta, FinishReason, Model, ModelConfig, ModelError, ProviderKind,
    ToolDeclaration, ToolResult, build_with_env, client_options,
};
use hookbox_net::GuardedClient;
use hookbox_test_support::{
    FAKE_INPUT_TOKENS, FAKE_OUTPUT_TOKENS, FakeModelServer, FakeToolCall, FakeTurn, Reply,
};
use serde_json::{Value, json};

const KEY_VARIABLE: &str = "HOOKBOX_TEST_MODEL_KEY";
const KEY: &str = "test-key-123";
const PROVIDERS: [ProviderKind; 3] = [
    ProviderKind::Gemini,
    ProviderKind::Openai,
    ProviderKind::Anthropic,
];

fn model_name(provider: ProviderKind) -> &'static str {
    match provider {
        ProviderKind::Gemini => "gemini-2.5-flash",
        ProviderKind::Openai => "gpt-4.1-mini",
        _ => "claude-sonnet-4-5",
    }
}

async fn fake(provider: ProviderKind, turns: Vec<FakeTurn>) -> FakeModelServer {
    let model = model_name(provider);
    match provider {
        ProviderKind::Gemini => FakeModelServer::gemini(model, KEY, turns).await,
        ProviderKind::Openai => FakeModelServer::openai(model, Some(KEY), turns).await,
        _ => FakeModelServer::anthropic(model, KEY, turns).await,
    }
    .expect("fake server")
}

fn config(provider: ProviderKind, base_url: &str, stream: bool) -> ModelConfig {
    ModelConfig {
        base_url: Some(base_url.to_owned()),
        api_key_env: Some(KEY_VARIABLE.to_owned()),
        stream,
        timeout_secs: Some(20),
        max_attempts: Some(3),
        initial_backoff_ms: Some(10),
        ..ModelConfig::new(provider, model_name(provider))
    }
}

fn client() -> GuardedClient {
    GuardedClient::new(&client_options()).expect("client")
}

fn env(name: &str) -> Option<String> {
    (name == KEY_VARIABLE).then(|| KEY.to_owned())
}

fn model(config: &ModelConfig) -> Arc<dyn Model> {
    build_with_env(config, client(), env).expect("model")
}

fn tools() -> Vec<ToolDeclaration> {
    vec![ToolDeclaration {
        name: "read_file".to_owned(),
        description: "Reads a file in the sandbox.".to_owned(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }]
}

fn conversation() -> Conversation {
    let mut conversation = Conversation::new(Some("You are terse.".to_owned()));
    conversation.push_user("What is in a.txt?");
    conversation
}

#[tokio::test]
async fn text_replies_plain_and_streamed() {
    for provider in PROVIDERS {
        for stream in [false, true] {
            let server = fake(provider, vec![FakeTurn::text("Hello there, world")]).await;
            let model = model(&config(provider, &server.base_url(), stream));
            assert_eq!(
                model.label(),
                format!("{}:{}", provider.name(), model_name(provider))
            );
            let reply = model.complete(&conversation(), &tools()).await;
            let reply = reply.unwrap_or_else(|e| panic!("{provider:?} stream={stream}: {e}"));
            assert_eq!(reply.text, "Hello there, world", "{provider:?} {stream}");
            assert!(reply.tool_calls.is_empty());
            assert_eq!(reply.finish, FinishReason::Stop);
            assert_eq!(reply.usage.input_tokens, Some(FAKE_INPUT_TOKENS));
            assert_eq!(reply.usage.output_tokens, Some(FAKE_OUTPUT_TOKENS));
        }
    }
}

#[tokio::test]
async fn streaming_passes_text_pieces_as_they_arrive() {
    for provider in PROVIDERS {
        // `stream = false` in the config: complete_streaming still uses the streaming endpoint.
        let server = fake(provider, vec![FakeTurn::text("Hello there, world")]).await;
        let model = model(&config(provider, &server.base_url(), false));
        let pieces = Mutex::new(Vec::<String>::new());
        let mut on_delta = |delta: Delta<'_>| match delta {
            Delta::Text(piece) => pieces.lock().unwrap().push(piece.to_owned()),
            Delta::Thinking(piece) => panic!("{provider:?}: unasked thinking {piece:?}"),
        };
        let reply = model
            .complete_streaming(&conversation(), &tools(), &mut on_delta)
            .await
            .unwrap_or_else(|e| panic!("{provider:?}: {e}"));
        let pieces = pieces.into_inner().unwrap();
        assert!(pieces.len() >= 2, "{provider:?}: {pieces:?}");
        assert_eq!(pieces.concat(), reply.text);
        let request = &server.requests()[0];
        match provider {
            ProviderKind::Gemini => {
                assert!(request.path.ends_with(":streamGenerateContent?alt=sse"))
            }
            _ => assert_eq!(request.json()["stream"], json!(true)),
        }
    }
}

/// The tool result as the second request must carry it, in each provider's format.
fn sent_tool_result(provider: ProviderKind, body: &Value) -> Value {
    match provider {
        ProviderKind::Gemini => body["contents"][2]["parts"][0].clone(),
        ProviderKind::Openai => body["messages"][3].clone(),
        _ => body["messages"][2]["content"][0].clone(),
    }
}

fn expected_tool_result(provider: ProviderKind) -> Value {
    match provider {
        ProviderKind::Gemini => json!({"functionResponse": {
            "name": "read_file", "response": {"output": "hi"}, "id": "call_1",
        }}),
        ProviderKind::Openai => json!({"role": "tool", "tool_call_id": "call_1", "content": "hi"}),
        _ => json!({"type": "tool_result", "tool_use_id": "call_1", "content": "hi"}),
    }
}

fn declared_tools(provider: ProviderKind, body: &Value) -> Value {
    match provider {
        ProviderKind::Gemini => body["tools"][0]["functionDeclarations"][0]["name"].clone(),
        ProviderKind::Openai => body["tools"][0]["function"]["name"].clone(),
        _ => body["tools"][0]["name"].clone(),
    }
}

#[tokio::test]
async fn tool_call_round_trip_plain_and_streamed() {
    for provider in PROVIDERS {
        for stream in [false, true] {
            let args = json!({"path": "/workspace/a.txt"});
            let server = fake(
                provider,
                vec![
                    FakeTurn::tool_call("Let me look.", "call_1", "read_file", args.clone()),
                    FakeTurn::text("It says hi."),
                ],
            )
            .await;
            let model = model(&config(provider, &server.base_url(), stream));
            let mut conversation = conversation();
            let first = model
                .complete(&conversation, &tools())
                .await
                .unwrap_or_else(|e| panic!("{provider:?} stream={stream}: {e}"));
            assert_eq!(first.text, "Let me look.");
            assert_eq!(first.finish, FinishReason::ToolCalls);
            assert_eq!(first.tool_calls.len(), 1);
            assert_eq!(first.tool_calls[0].id, "call_1");
            assert_eq!(first.tool_calls[0].name, "read_file");
            assert_eq!(first.tool_calls[0].args, args);

            conversation.push_reply(&first);
            conversation.push_tool_result(ToolResult {
                call_id: "call_1".to_owned(),
                name: "read_file".to_owned(),
                content: json!("hi"),
                is_error: false,
            });
            let second = model
                .complete(&conversation, &tools())
                .await
                .unwrap_or_else(|e| panic!("{provider:?} stream={stream}: {e}"));
            assert_eq!(second.text, "It says hi.");
            assert_eq!(second.finish, FinishReason::Stop);

            let bodies = server.bodies();
            assert_eq!(bodies.len(), 2);
            assert_eq!(declared_tools(provider, &bodies[0]), json!("read_file"));
            assert_eq!(
                sent_tool_result(provider, &bodies[1]),
                expected_tool_result(provider),
                "{provider:?} stream={stream}: {}",
                bodies[1]
            );
        }
    }
}

#[tokio::test]
async fn gemini_calls_without_ids_get_local_ids_that_are_not_sent_back() {
    let server = fake(
        ProviderKind::Gemini,
        vec![
            FakeTurn::tool_call("", "", "read_file", json!({"path": "x"})),
            FakeTurn::text("done"),
        ],
    )
    .await;
    let model = model(&config(ProviderKind::Gemini, &server.base_url(), false));
    let mut conversation = conversation();
    let first = model.complete(&conversation, &tools()).await.unwrap();
    let call = &first.tool_calls[0];
    assert!(!call.id.is_empty());
    conversation.push_reply(&first);
    conversation.push_tool_result(ToolResult {
        call_id: call.id.clone(),
        name: call.name.clone(),
        content: json!("no such file"),
        is_error: true,
    });
    model.complete(&conversation, &tools()).await.unwrap();
    let body = &server.bodies()[1];
    assert_eq!(
        body["contents"][1]["parts"][0],
        json!({"functionCall": {"name": "read_file", "args": {"path": "x"}}})
    );
    assert_eq!(
        body["contents"][2]["parts"][0],
        json!({"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}})
    );
}

#[tokio::test]
async fn rate_limits_are_retried_honouring_retry_after() {
    for provider in PROVIDERS {
        let server = fake(
            provider,
            vec![
                FakeTurn::Error {
                    status: 429,
                    message: "slow down".to_owned(),
                    retry_after: Some(0),
                },
                FakeTurn::error(503, "overloaded"),
                FakeTurn::text("finally"),
            ],
        )
        .await;
        let model = model(&config(provider, &server.base_url(), false));
        let reply = model.complete(&conversation(), &tools()).await;
        assert_eq!(reply.unwrap().text, "finally", "{provider:?}");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn server_errors_give_up_after_the_attempt_limit() {
    for provider in PROVIDERS {
        let boom = || FakeTurn::error(500, "boom inside");
        let server = fake(provider, vec![boom(), boom(), boom(), boom()]).await;
        let model = model(&config(provider, &server.base_url(), true));
        let error = model.complete(&conversation(), &tools()).await.unwrap_err();
        assert!(
            matches!(&error, ModelError::Api { status: 500, attempts: 3, message, .. } if message == "boom inside"),
            "{provider:?}: {error}"
        );
        assert!(error.to_string().contains(&server.base_url()), "{error}");
        assert_eq!(server.requests().len(), 3);
    }
}

#[tokio::test]
async fn client_errors_are_not_retried_and_show_the_provider_message() {
    for provider in PROVIDERS {
        let server = fake(provider, vec![FakeTurn::error(401, "invalid x-api-key")]).await;
        let model = model(&config(provider, &server.base_url(), false));
        let error = model.complete(&conversation(), &tools()).await.unwrap_err();
        assert!(
            matches!(
                &error,
                ModelError::Api {
                    status: 401,
                    attempts: 1,
                    ..
                }
            ),
            "{provider:?}: {error}"
        );
        assert!(error.to_string().contains("invalid x-api-key"), "{error}");
    }
}

#[tokio::test]
async fn a_missing_key_names_the_variable_to_set() {
    for (provider, default_variable) in [
        (ProviderKind::Gemini, "GEMINI_API_KEY"),
        (ProviderKind::Openai, "OPENAI_API_KEY"),
        (ProviderKind::Anthropic, "ANTHROPIC_API_KEY"),
    ] {
        let no_env = |_: &str| None;
        let defaults = ModelConfig::new(provider, model_name(provider));
        let error = build_with_env(&defaults, client(), no_env).err().unwrap();
        assert!(
            matches!(&error, ModelError::MissingApiKey { variable, .. } if variable == default_variable),
            "{error}"
        );
        assert!(error.to_string().contains(default_variable), "{error}");

        let custom = config(provider, "http://127.0.0.1:9", false);
        let error = build_with_env(&custom, client(), |_| Some("  ".to_owned()))
            .err()
            .unwrap();
        assert!(error.to_string().contains(KEY_VARIABLE), "{error}");
    }
}

#[tokio::test]
async fn a_local_openai_compatible_server_needs_no_key() {
    let server = FakeModelServer::openai("llama3.2", None, vec![FakeTurn::text("hi")])
        .await
        .unwrap();
    let config = ModelConfig {
        base_url: Some(server.base_url()),
        ..ModelConfig::new(ProviderKind::Openai, "llama3.2")
    };
    let model = build_with_env(&config, client(), |_| None).unwrap();
    assert_eq!(
        model.complete(&conversation(), &[]).await.unwrap().text,
        "hi"
    );
    assert!(server.requests()[0].header("authorization").is_none());
    assert!(server.bodies()[0].get("tools").is_none());
}

#[tokio::test]
async fn an_unreachable_endpoint_names_the_url() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let base_url = format!("http://127.0.0.1:{port}/v1");
    for provider in PROVIDERS {
        let model = model(&config(provider, &base_url, false));
        let error = model.complete(&conversation(), &tools()).await.unwrap_err();
        assert!(
            matches!(&error, ModelError::Unreachable { url, .. } if url.starts_with(&base_url)),
            "{provider:?}: {error}"
        );
        assert!(error.to_string().contains(&base_url), "{error}");
    }
}

#[tokio::test]
async fn malformed_answers_are_reported() {
    let cases = [
        (false, Reply::text(200, "this is not JSON")),
        (false, Reply::json(200, &json!({"unexpected": true}))),
        (true, Reply::text(200, "data: {not json\n\n")),
        (true, Reply::text(200, "")),
    ];
    for provider in PROVIDERS {
        for (stream, reply) in cases.clone() {
            let server = fake(provider, vec![FakeTurn::Raw(reply.clone())]).await;
            let model = model(&config(provider, &server.base_url(), stream));
            let error = model.complete(&conversation(), &tools()).await.unwrap_err();
            assert!(
                matches!(error, ModelError::Malformed { .. }),
                "{provider:?} {reply:?}: {error}"
            );
        }
    }
}

#[tokio::test]
async fn an_error_event_inside_an_anthropic_stream_is_reported() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n\
                event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let server = fake(
        ProviderKind::Anthropic,
        vec![FakeTurn::Raw(Reply::text(200, body))],
    )
    .await;
    let model = model(&config(ProviderKind::Anthropic, &server.base_url(), true));
    let error = model.complete(&conversation(), &tools()).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { message, .. } if message == "Overloaded"),
        "{error}"
    );
}

#[tokio::test]
async fn the_overall_timeout_bounds_a_slow_server() {
    let slow = Reply::text(200, "{}").after(Duration::from_secs(5));
    let server = fake(ProviderKind::Openai, vec![FakeTurn::Raw(slow)]).await;
    let config = ModelConfig {
        timeout_secs: Some(1),
        ..config(ProviderKind::Openai, &server.base_url(), false)
    };
    let error = model(&config)
        .complete(&conversation(), &tools())
        .await
        .unwrap_err();
    assert!(matches!(error, ModelError::Timeout { .. }), "{error}");
}

#[tokio::test]
async fn the_fake_servers_refuse_requests_a_real_api_would_refuse() {
    for provider in PROVIDERS {
        let server = fake(provider, vec![FakeTurn::text("unused")]).await;
        // A tool result answering a call that was never made.
        let mut conversation = conversation();
        conversation.push_tool_result(ToolResult {
            call_id: "nope".to_owned(),
            name: "read_file".to_owned(),
            content: json!("x"),
            is_error: false,
        });
        let model = model(&config(provider, &server.base_url(), false));
        let error = model.complete(&conversation, &tools()).await.unwrap_err();
        assert!(
            matches!(&error, ModelError::Api { status: 400, message, .. }
                if message.starts_with(&format!("fake {}: bad request", provider.name()))),
            "{provider:?}: {error}"
        );
    }
}

#[tokio::test]
async fn the_scripted_model_replays_its_turns_and_is_labelled() {
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("demo.json");
    std::fs::write(
        &path,
        json!({"turns": [
            {"text": "Looking.", "tool_calls": [{"name": "read_file", "args": {"path": "a.txt"}}]},
            {"text": "Done."},
        ]})
        .to_string(),
    )
    .unwrap();
    let config = ModelConfig {
        script: Some(path.clone()),
        ..ModelConfig::new(ProviderKind::Scripted, "")
    };
    let model = build_with_env(&config, client(), |_| None).unwrap();
    assert_eq!(model.label(), "scripted:demo.json");

    let mut conversation = conversation();
    let first = model.complete(&conversation, &tools()).await.unwrap();
    assert_eq!(first.finish, FinishReason::ToolCalls);
    assert_eq!(first.tool_calls[0].name, "read_file");
    assert_eq!(first.tool_calls[0].args, json!({"path": "a.txt"}));
    // Stateless: asking again for the same conversation gives the same turn.
    assert_eq!(
        model.complete(&conversation, &tools()).await.unwrap(),
        first
    );

    conversation.push_reply(&first);
    conversation.push_tool_result(ToolResult {
        call_id: first.tool_calls[0].id.clone(),
        name: "read_file".to_owned(),
        content: json!("hi"),
        is_error: false,
    });
    let second = model.complete(&conversation, &tools()).await.unwrap();
    assert_eq!(second.text, "Done.");
    assert_eq!(second.finish, FinishReason::Stop);

    conversation.push_reply(&second);
    conversation.push_user("And?");
    let error = model.complete(&conversation, &tools()).await.unwrap_err();
    assert!(
        matches!(
            error,
            ModelError::ScriptExhausted {
                turns: 2,
                requested: 3,
                ..
            }
        ),
        "{error}"
    );
}

#[test]
fn scripted_configuration_errors_are_clear() {
    let missing = ModelConfig::new(ProviderKind::Scripted, "");
    let error = build_with_env(&missing, client(), |_| None).err().unwrap();
    assert!(
        matches!(
            error,
            ModelError::Config {
                field: "script",
                ..
            }
        ),
        "{error}"
    );

    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("bad.json");
    std::fs::write(&path, r#"{"turns": [{"txt": "typo"}]}"#).unwrap();
    let bad = ModelConfig {
        script: Some(path),
        ..ModelConfig::new(ProviderKind::Scripted, "")
    };
    let error = build_with_env(&bad, client(), |_| None).err().unwrap();
    assert!(matches!(error, ModelError::Script { .. }), "{error}");
    assert!(error.to_string().contains("bad.json"), "{error}");
}

#[test]
fn model_config_reads_from_toml_like_json() {
    let config: ModelConfig = serde_json::from_value(json!({
        "provider": "openai",
        "model": "qwen2.5",
        "base_url": "http://127.0.0.1:8080/v1",
        "stream": true,
    }))
    .unwrap();
    assert_eq!(config.provider, ProviderKind::Openai);
    assert!(config.stream);
    let unknown =
        serde_json::from_value::<ModelConfig>(json!({"provider": "gemini", "modle": "x"}));
    assert!(unknown.unwrap_err().to_string().contains("modle"));
}

/// A user message with an image and a PDF, as each provider must receive it.
#[tokio::test]
async fn media_and_generation_settings_reach_each_provider_in_its_format() {
    use hookbox_llm::{Media, Temperature};
    const PNG: &str = "iVBORw0KGgo=";
    const PDF: &str = "JVBERi0xLjQ=";
    for provider in PROVIDERS {
        for stream in [false, true] {
            let server = fake(provider, vec![FakeTurn::text("A cat.")]).await;
            let mut settings = config(provider, &server.base_url(), stream);
            settings.temperature = Some(Temperature(0.25));
            settings.max_tokens = Some(99);
            let mut conversation = Conversation::new(None);
            conversation.push_user_with_media(
                "What is this?",
                vec![
                    Media {
                        mime_type: "image/png".to_owned(),
                        data: PNG.to_owned(),
                    },
                    Media {
                        mime_type: "application/pdf".to_owned(),
                        data: PDF.to_owned(),
                    },
                ],
            );
            let reply = model(&settings)
                .complete(&conversation, &[])
                .await
                .unwrap_or_else(|e| panic!("{provider:?} stream={stream}: {e}"));
            assert_eq!(reply.text, "A cat.");
            let body = &server.bodies()[0];
            match provider {
                ProviderKind::Gemini => {
                    assert_eq!(
                        body["contents"][0]["parts"],
                        json!([
                            {"text": "What is this?"},
                            {"inline_data": {"mime_type": "image/png", "data": PNG}},
                            {"inline_data": {"mime_type": "application/pdf", "data": PDF}},
                        ])
                    );
                    assert_eq!(
                        body["generationConfig"],
                        json!({"maxOutputTokens": 99, "temperature": 0.25})
                    );
                }
                ProviderKind::Openai => {
                    assert_eq!(
                        body["messages"][0]["content"],
                        json!([
                            {"type": "text", "text": "What is this?"},
                            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG}")}},
                            {"type": "file", "file": {"filename": "document-2.pdf",
                             "file_data": format!("data:application/pdf;base64,{PDF}")}},
                        ])
                    );
                    assert_eq!(body["temperature"], json!(0.25));
                    assert_eq!(body["max_tokens"], json!(99));
                }
                _ => {
                    assert_eq!(
                        body["messages"][0]["content"],
                        json!([
                            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
                            {"type": "text", "text": "What is this?"},
                        ])
                    );
                    assert_eq!(body["temperature"], json!(0.25));
                    assert_eq!(body["max_tokens"], json!(99));
                }
            }
        }
    }
}

#[tokio::test]
async fn the_fake_servers_refuse_media_that_is_not_base64() {
    use hookbox_llm::Media;
    for provider in PROVIDERS {
        let server = fake(provider, vec![FakeTurn::text("no")]).await;
        let mut conversation = Conversation::new(None);
        conversation.push_user_with_media(
            "What is this?",
            vec![Media {
                mime_type: "image/png".to_owned(),
                data: "not base64!".to_owned(),
            }],
        );
        let error = model(&config(provider, &server.base_url(), false))
            .complete(&conversation, &[])
            .await
            .expect_err("refused");
        assert!(error.to_string().contains("fake"), "{provider:?}: {error}");
    }
}

#[tokio::test]
async fn thinking_is_asked_for_streamed_and_sent_back_by_providers_that_think() {
    for provider in [ProviderKind::Anthropic, ProviderKind::Gemini] {
        for stream in [false, true] {
            let turns = vec![
                FakeTurn::Reply {
                    thinking: "a.txt, so read it".to_owned(),
                    text: String::new(),
                    tool_calls: vec![FakeToolCall {
                        id: "call_1".to_owned(),
                        name: "read_file".to_owned(),
                        args: json!({"path": "a.txt"}),
                    }],
                },
                FakeTurn::thought("it says hello", "It says hello."),
            ];
            let server = fake(provider, turns).await;
            let model = model(&config(provider, &server.base_url(), stream));
            let mut conversation = Conversation {
                // Above the default `max_tokens` (4096), which must then grow past it.
                thinking_budget: Some(5000),
                ..conversation()
            };
            let thoughts = Mutex::new(String::new());
            let mut on_delta = |delta: Delta<'_>| {
                if let Delta::Thinking(piece) = delta {
                    thoughts.lock().unwrap().push_str(piece);
                }
            };
            let first = model
                .complete_streaming(&conversation, &tools(), &mut on_delta)
                .await
                .unwrap_or_else(|e| panic!("{provider:?} {stream}: {e}"));
            assert_eq!(first.thinking.len(), 1, "{provider:?} {stream}");
            assert_eq!(first.thinking[0].text, "a.txt, so read it");
            assert_eq!(*thoughts.lock().unwrap(), "a.txt, so read it");
            conversation.push_reply(&first);
            conversation.push_tool_result(ToolResult {
                call_id: first.tool_calls[0].id.clone(),
                name: "read_file".to_owned(),
                content: json!("hello"),
                is_error: false,
            });
            // The fake Anthropic refuses a thinking block that is not sent back first with
            // its signature, as the API does during tool use.
            let second = model
                .complete(&conversation, &tools())
                .await
                .unwrap_or_else(|e| panic!("{provider:?} {stream}: {e}"));
            assert_eq!(second.text, "It says hello.");
            assert_eq!(second.thinking[0].text, "it says hello");
            let body: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
            match provider {
                ProviderKind::Gemini => assert_eq!(
                    body["generationConfig"]["thinkingConfig"],
                    json!({"thinkingBudget": 5000, "includeThoughts": true})
                ),
                _ => {
                    assert_eq!(first.thinking[0].signature, "fake-signature");
                    assert_eq!(
                        body["thinking"],
                        json!({"type": "enabled", "budget_tokens": 5000})
                    );
                    assert!(body["max_tokens"].as_u64().unwrap() > 5000, "{body}");
                }
            }
        }
    }
}
