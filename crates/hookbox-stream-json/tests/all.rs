//! hookbox-stream-json integration tests: the protocol run over an in-memory pipe, the test
//! playing the SDK, with a scripted model. (The real Python SDKs drive the real binary in
//! hookbox-cli's `sdk_mode` tests.)

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    reason = "test helpers stop the test on setup failure"
)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::anyhow;
use hookbox_llm::{Model, ScriptedModel};
use hookbox_stream_json::{RunEnd, SessionHost, Setup, frame, parse_args};
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, BufReader, DuplexStream};
use tokio::task::JoinHandle;

const PATIENCE: Duration = Duration::from_secs(20);

/// One agent, `scripted`, replaying `script`.
struct OneAgent {
    script: String,
    dir: tempfile::TempDir,
}

impl SessionHost for OneAgent {
    fn default_agent(&self) -> Option<String> {
        None
    }

    fn agent_names(&self) -> Vec<String> {
        vec!["scripted".to_owned()]
    }

    fn model(&self, name: &str) -> anyhow::Result<Arc<dyn Model>> {
        if name != "scripted" {
            return Err(anyhow!("no agent named `{name}`"));
        }
        let path = self.dir.path().join("script.json");
        Ok(Arc::new(ScriptedModel::from_json(&path, &self.script)?))
    }
}

/// The SDK's end of a running session.
struct Sdk {
    input: Option<DuplexStream>,
    output: BufReader<DuplexStream>,
    session: JoinHandle<RunEnd>,
}

impl Sdk {
    fn start(
        work: &Path,
        extra_args: &[&str],
        agents: anyhow::Result<Arc<dyn SessionHost>>,
    ) -> Self {
        let mut args = vec![
            "--output-format".to_owned(),
            "stream-json".to_owned(),
            "--input-format".to_owned(),
            "stream-json".to_owned(),
            format!("--workdir={}", work.display()),
            "--setting-sources=".to_owned(),
        ];
        args.extend(extra_args.iter().map(|arg| (*arg).to_owned()));
        assert!(hookbox_stream_json::is_sdk_mode(&args));
        let setup = Setup::new(parse_args(&args), None, agents);
        let (input, session_input) = tokio::io::duplex(64 * 1024);
        let (session_output, output) = tokio::io::duplex(64 * 1024);
        let session = tokio::spawn(hookbox_stream_json::run(
            setup,
            session_input,
            session_output,
        ));
        Self {
            input: Some(input),
            output: BufReader::new(output),
            session,
        }
    }

    async fn send(&mut self, message: Value) {
        let input = self.input.as_mut().expect("input open");
        input
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    /// The next message hookbox wrote.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(PATIENCE, frame::read_line(&mut self.output))
            .await
            .expect("a message in time")
            .unwrap();
        match line {
            Some(frame::InputLine::Json(value)) => value,
            other => panic!("not a JSON message: {other:?}"),
        }
    }

    /// Messages up to and including the first that `wanted` accepts.
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let message = self.next().await;
            let done = wanted(&message);
            seen.push(message);
            if done {
                return seen;
            }
        }
    }

    async fn initialize(&mut self, hooks: Value) {
        self.send(json!({"type": "control_request", "request_id": "req_init", "request": {"subtype": "initialize", "hooks": hooks}}))
            .await;
        let response = self.next().await;
        assert_eq!(response["type"], "control_response");
        assert_eq!(response["response"]["request_id"], "req_init");
        assert_eq!(response["response"]["subtype"], "success");
    }

    async fn prompt(&mut self, text: &str) {
        self.send(json!({"type": "user", "message": {"role": "user", "content": text}}))
            .await;
    }

    /// Closes the input and waits for the run to end.
    async fn finish(mut self) -> RunEnd {
        self.input = None;
        tokio::time::timeout(PATIENCE, self.session)
            .await
            .expect("the run ends when its input does")
            .unwrap()
    }
}

fn agents(script: Value) -> anyhow::Result<Arc<dyn SessionHost>> {
    Ok(Arc::new(OneAgent {
        script: script.to_string(),
        dir: tempfile::tempdir().unwrap(),
    }))
}

#[tokio::test]
async fn a_prompt_gets_init_the_answer_and_a_result() {
    let work = tempfile::tempdir().unwrap();
    let mut sdk = Sdk::start(
        work.path(),
        &["--model", "scripted", "--session-id", "s-1"],
        agents(json!([{"text": "hello from the script"}])),
    );
    sdk.initialize(Value::Null).await;
    sdk.prompt("hi").await;
    let messages = sdk.until(|message| message["type"] == "result").await;
    assert_eq!(messages[0]["type"], "system");
    assert_eq!(messages[0]["subtype"], "init");
    assert!(
        messages
            .iter()
            .all(|message| message["session_id"] == "s-1")
    );
    let text = messages.iter().any(|message| {
        message["type"] == "assistant"
            && message["message"]["content"][0]["text"] == "hello from the script"
    });
    assert!(text, "{messages:#?}");
    let result = messages.last().unwrap();
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["terminal_reason"], "completed", "{result}");
    assert_eq!(sdk.finish().await, RunEnd::Clean);
}

#[tokio::test]
async fn a_model_failure_is_an_api_error_result_and_the_run_ends_failed() {
    let work = tempfile::tempdir().unwrap();
    let mut sdk = Sdk::start(
        work.path(),
        &["--model", "scripted"],
        agents(json!([{"text": "only one turn"}])),
    );
    sdk.initialize(Value::Null).await;
    sdk.prompt("first").await;
    let first = sdk.until(|message| message["type"] == "result").await;
    assert_eq!(first.last().unwrap()["is_error"], false);
    // The script has no second turn: the model fails.
    sdk.prompt("second").await;
    let second = sdk.until(|message| message["type"] == "result").await;
    let result = second.last().unwrap();
    assert_eq!(result["is_error"], true, "{result}");
    assert_eq!(result["subtype"], "success", "{result}");
    assert_eq!(result["terminal_reason"], "api_error", "{result}");
    assert!(result.get("api_error_status").is_none(), "{result}");
    let text = result["result"].as_str().unwrap();
    assert!(
        text.starts_with("API Error: ") && text.contains("has only 1 turn(s)"),
        "{text}"
    );
    assert_eq!(sdk.finish().await, RunEnd::AfterErrorResult);
}

#[tokio::test]
async fn a_hook_callback_is_a_control_request_the_sdk_answers() {
    let work = tempfile::tempdir().unwrap();
    std::fs::write(work.path().join("secret.txt"), "s3cret").unwrap();
    let read = json!({"name": "Read", "args": {"file_path": work.path().join("secret.txt")}});
    let mut sdk = Sdk::start(
        work.path(),
        &["--model=scripted"],
        agents(json!([{"tool_calls": [read]}, {"text": "done"}])),
    );
    sdk.initialize(json!({"PreToolUse": [{"matcher": "Read", "hookCallbackIds": ["hook_0"]}]}))
        .await;
    sdk.prompt("read it").await;
    let messages = sdk
        .until(|message| message["type"] == "control_request")
        .await;
    let request = messages.last().unwrap();
    assert_eq!(request["request"]["subtype"], "hook_callback");
    assert_eq!(request["request"]["callback_id"], "hook_0");
    assert_eq!(request["request"]["input"]["tool_name"], "Read");
    sdk.send(json!({"type": "control_response", "response": {"subtype": "success", "request_id": request["request_id"], "response": {"decision": "block", "reason": "not today"}}}))
        .await;
    let messages = sdk.until(|message| message["type"] == "result").await;
    let text = serde_json::to_string(&messages).unwrap();
    assert!(text.contains("not today"), "{text}");
    assert!(!text.contains("s3cret"), "{text}");
    sdk.finish().await;
}

#[tokio::test]
async fn unreadable_agents_fail_every_prompt_with_the_reason() {
    let work = tempfile::tempdir().unwrap();
    let mut sdk = Sdk::start(
        work.path(),
        &[],
        Err(anyhow!("cannot read the config file /x").context("while starting")),
    );
    sdk.initialize(Value::Null).await;
    sdk.prompt("hi").await;
    let messages = sdk.until(|message| message["type"] == "result").await;
    assert_eq!(messages[0]["subtype"], "init");
    let result = messages.last().unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(
        result["errors"][0], "while starting: cannot read the config file /x",
        "{result}"
    );
    sdk.prompt("again").await;
    let again = sdk.until(|message| message["type"] == "result").await;
    assert_eq!(again.len(), 1, "init is sent once: {again:#?}");
    assert_eq!(sdk.finish().await, RunEnd::AfterErrorResult);
}

#[tokio::test]
async fn a_session_that_cannot_start_names_each_cause_once() {
    let work = tempfile::tempdir().unwrap();
    let missing = work.path().join("missing");
    let mut sdk = Sdk::start(&missing, &["--model", "scripted"], agents(json!([])));
    sdk.initialize(Value::Null).await;
    sdk.prompt("hi").await;
    let messages = sdk.until(|message| message["type"] == "result").await;
    let error = messages.last().unwrap()["errors"][0]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(error.starts_with("cannot start the session in"), "{error}");
    assert_eq!(
        error.matches("No such file or directory").count(),
        1,
        "{error}"
    );
    sdk.finish().await;
}

#[tokio::test]
async fn unknown_control_requests_get_an_error_response() {
    let work = tempfile::tempdir().unwrap();
    let mut sdk = Sdk::start(work.path(), &[], agents(json!([])));
    sdk.send(json!({"type": "control_request", "request_id": "r9", "request": {"subtype": "rewind_files"}}))
        .await;
    let response = sdk.next().await;
    assert_eq!(response["response"]["subtype"], "error");
    assert_eq!(response["response"]["request_id"], "r9");
    assert_eq!(sdk.finish().await, RunEnd::Clean, "no result, no error");
}

#[test]
fn the_frame_reader_decodes_one_line_from_bytes() {
    assert!(matches!(
        frame::parse_line(b"{\"type\":\"user\"}\n"),
        Some(frame::InputLine::Json(value)) if value["type"] == "user"
    ));
    assert!(matches!(
        frame::parse_line(b"{\"type\""),
        Some(frame::InputLine::Invalid(_))
    ));
    assert!(frame::parse_line(b"\r\n").is_none());
}
