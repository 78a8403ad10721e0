//! SDK mode: the `hookbox` binary driven over the stream-json control protocol, by the
//! published Python SDKs (seed 002's examples, as written), the TypeScript SDK (the seed's
//! JavaScript examples) and by the test itself for the protocol's edge cases. The model is a fake Anthropic API configured as a hookbox.toml agent.

mod agents;
mod mcp;
mod mcp_config;
mod mcp_trust;
mod network;
mod output_styles;
mod protocol;
mod python;
mod sessions;
mod taint;
mod typescript;

use std::path::{Path, PathBuf};

use hookbox_test_support::{FakeModelServer, FakeTurn};
use serde_json::Value;

/// The agent name the SDKs pass as `model`.
const AGENT: &str = "fake-agent";
/// The environment variable holding the fake model's key.
const KEY_ENV: &str = "HOOKBOX_SDK_TEST_KEY";
const KEY: &str = "sdk-test-key";

/// A fake model, a `HOOKBOX_HOME` whose hookbox.toml names it, and a working directory.
struct World {
    runtime: tokio::runtime::Runtime,
    server: FakeModelServer,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
}

impl World {
    fn new(turns: Vec<FakeTurn>) -> Self {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let server = runtime
            .block_on(FakeModelServer::anthropic("fake-model", KEY, turns))
            .unwrap();
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("hookbox.toml"),
            format!(
                "[agents.\"{AGENT}\"]\nprovider = \"anthropic\"\nmodel = \"fake-model\"\nbase_url = \"{}\"\napi_key_env = \"{KEY_ENV}\"\nmax_attempts = 1\n",
                server.base_url()
            ),
        )
        .unwrap();
        let work = tempfile::tempdir().unwrap();
        Self {
            runtime,
            server,
            home,
            work,
        }
    }

    fn work(&self) -> &Path {
        self.work.path()
    }

    /// Every request body the model received, as one string each.
    fn bodies(&self) -> Vec<String> {
        let _guard = self.runtime.enter();
        self.server.bodies().iter().map(Value::to_string).collect()
    }

    /// The tool results the model saw (all requests), as `(content, is_error)`.
    fn tool_results(&self) -> Vec<(String, bool)> {
        let _guard = self.runtime.enter();
        self.server
            .bodies()
            .last()
            .map(tool_results_in)
            .unwrap_or_default()
    }
}

/// The tool results in the messages of request `body`, as `(content, is_error)`.
fn tool_results_in(body: &Value) -> Vec<(String, bool)> {
    let mut results = Vec::new();
    for message in body["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                let content = match &block["content"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                results.push((content, block["is_error"] == true));
            }
        }
    }
    results
}

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_hookbox"))
}

/// A tool call turn of the fake model.
fn call(id: &str, name: &str, input: Value) -> FakeTurn {
    FakeTurn::tool_call("", id, name, input)
}
