//! The fixture of the session tests: a working directory and a fake OpenAI-compatible model
//! playing scripted turns, the session builder over both, one-query runs, hook recorders, and
//! what the tests read from a query's messages.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookbox_agent::session::{HookMatcher, Session, SessionBuilder, SessionMessage};
use hookbox_hooks::CallbackError;
use hookbox_llm::{ModelConfig, ProviderKind, build_with_env, client_options};
use hookbox_net::GuardedClient;
use hookbox_test_support::{FakeModelServer, FakeTurn};
use serde_json::{Value, json};

/// A working directory and a fake model that plays `turns`.
pub(super) struct Fixture {
    pub(super) dir: tempfile::TempDir,
    pub(super) server: FakeModelServer,
}

pub(super) async fn fixture(turns: Vec<FakeTurn>) -> Fixture {
    Fixture {
        dir: tempfile::tempdir().expect("cwd"),
        server: FakeModelServer::openai("gpt-test", None, turns)
            .await
            .expect("fake model"),
    }
}

impl Fixture {
    /// A session over the fixture's directory and model, with `Bash` on the host.
    pub(super) fn session(&self) -> SessionBuilder {
        // Bash on the host keeps these tests independent of namespace support; the sandboxed
        // path has its own tests.
        self.sandboxed().unsandboxed()
    }

    /// A sandboxed session (the default) over the fixture's directory and model.
    pub(super) fn sandboxed(&self) -> SessionBuilder {
        let config = ModelConfig {
            base_url: Some(self.server.base_url()),
            max_attempts: Some(1),
            ..ModelConfig::new(ProviderKind::Openai, "gpt-test")
        };
        let client = GuardedClient::new(&client_options()).expect("client");
        Session::builder(self.dir.path())
            .model(build_with_env(&config, client, |_| None).expect("model"))
            .session_id("test-session")
    }

    /// Every message the model was sent in request `index`, as one string.
    pub(super) fn request_text(&self, index: usize) -> String {
        self.server.bodies()[index]["messages"].to_string()
    }
}

/// Records the inputs it sees and answers `reply`.
pub(super) type Seen = Arc<Mutex<Vec<Value>>>;

pub(super) fn recorder(reply: Value) -> (Seen, HookMatcher) {
    recorder_on(None, reply)
}

pub(super) fn recorder_on(matcher: Option<&str>, reply: Value) -> (Seen, HookMatcher) {
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let matcher = HookMatcher::new(matcher).hook(move |input: Value, _id: Option<String>| {
        log.lock().expect("log").push(input);
        let reply = reply.clone();
        async move { Ok::<_, CallbackError>(reply) }
    });
    (seen, matcher)
}

pub(super) fn seen(seen: &Seen) -> Vec<Value> {
    seen.lock().expect("log").clone()
}

/// Builds `session` and runs one query of `prompt` in it, to its result.
pub(super) async fn run_once(session: SessionBuilder, prompt: &str) -> Vec<SessionMessage> {
    run(&session.build().expect("session"), prompt).await
}

/// Runs one query of `prompt` in `session`, to its result (within a minute).
pub(super) async fn run(session: &Session, prompt: &str) -> Vec<SessionMessage> {
    tokio::time::timeout(Duration::from_secs(60), session.query(prompt).collect_all())
        .await
        .expect("the query finished")
}

pub(super) fn result(messages: &[SessionMessage]) -> &hookbox_agent::session::QueryResult {
    match messages.last() {
        Some(SessionMessage::Result(result)) => result,
        other => panic!("the last message is not a result: {other:?}"),
    }
}

pub(super) fn tool_results(messages: &[SessionMessage]) -> Vec<(String, bool)> {
    messages
        .iter()
        .filter_map(|message| match message {
            SessionMessage::User { content, .. } => Some(content),
            _ => None,
        })
        .flatten()
        .filter_map(|block| match block {
            hookbox_agent::session::ContentBlock::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

pub(super) fn bash(id: &str, command: &str) -> FakeTurn {
    FakeTurn::tool_call("", id, "Bash", json!({ "command": command }))
}
