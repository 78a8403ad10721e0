//! Seed 002's four JavaScript examples run by the TypeScript SDK (`@anthropic-ai/claude-agent-sdk`
//! from npm, on Node) against the `hookbox` binary (`pathToClaudeCodeExecutable`), with the
//! same outcomes as their Python versions. The SDK comes from `HOOKBOX_TS_SDK_DIR` (an `npm
//! install --prefix` folder; `.ci/run` installs the pinned version); without it the tests
//! skip with the reason, unless `HOOKBOX_REQUIRE_AGENTS=1` (set by `.ci/run`): then they fail.
//! (`cortex-code-agent-sdk`, which the seed's JavaScript imports, is not published on npm.)

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use super::World;
use super::python::{
    run_program, seed_add_timeout, seed_audit_log, seed_auto_approve_reads, seed_block_dangerous,
};

/// The pinned TypeScript SDK, the one whose protocol hookbox supports.
const TS_SDK: &str = "@anthropic-ai/claude-agent-sdk@0.3.332";

/// A folder holding the seed's script beside a `node_modules` link to the SDK's install, or
/// `None` (and a SKIPPED line) without the SDK.
fn seed_folder(test: &str) -> Option<tempfile::TempDir> {
    let required = std::env::var_os("HOOKBOX_REQUIRE_AGENTS").is_some_and(|value| value == "1");
    let problem = match std::env::var_os("HOOKBOX_TS_SDK_DIR").filter(|dir| !dir.is_empty()) {
        None => "HOOKBOX_TS_SDK_DIR is not set".to_owned(),
        Some(dir) => {
            let modules = PathBuf::from(dir).join("node_modules");
            if modules
                .join("@anthropic-ai/claude-agent-sdk/package.json")
                .is_file()
            {
                let folder = tempfile::tempdir().unwrap();
                std::os::unix::fs::symlink(&modules, folder.path().join("node_modules")).unwrap();
                std::fs::copy(
                    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/sdk_mode/seed_002_ts.mjs"),
                    folder.path().join("seed_002_ts.mjs"),
                )
                .unwrap();
                return Some(folder);
            }
            format!(
                "{} has no @anthropic-ai/claude-agent-sdk",
                modules.display()
            )
        }
    };
    let reason = format!(
        "{problem}: install the TypeScript SDK with `npm install --prefix DIR --no-audit --no-fund \
         --omit=optional {TS_SDK}` and set HOOKBOX_TS_SDK_DIR=DIR (.ci/run does)"
    );
    assert!(!required, "{test}: HOOKBOX_REQUIRE_AGENTS=1 but {reason}");
    hookbox_test_support::skip(test, reason);
    None
}

/// Runs the seed's `example` with `prompt` under Node; each message the SDK yields gains the
/// `message_class` the Python SDKs would give it, so the Python versions' checks apply.
fn node_seed(folder: &tempfile::TempDir) -> impl Fn(&World, &str, &str) -> (Output, Vec<Value>) {
    let script = folder.path().join("seed_002_ts.mjs");
    move |world, example, prompt| {
        let (output, mut messages) =
            run_program("node".as_ref(), world, &script, &[example, prompt]);
        for message in &mut messages {
            let class = match message["type"].as_str() {
                Some("assistant") => "AssistantMessage",
                Some("user") => "UserMessage",
                Some("system") => "SystemMessage",
                Some("result") => "ResultMessage",
                _ => continue,
            };
            message["message_class"] = class.into();
        }
        (output, messages)
    }
}

#[test]
fn typescript_seed_block_dangerous() {
    let Some(folder) = seed_folder("typescript_seed_block_dangerous") else {
        return;
    };
    seed_block_dangerous(&node_seed(&folder));
}

#[test]
fn typescript_seed_auto_approve_reads() {
    let Some(folder) = seed_folder("typescript_seed_auto_approve_reads") else {
        return;
    };
    seed_auto_approve_reads(&node_seed(&folder));
}

#[test]
fn typescript_seed_add_timeout() {
    let Some(folder) = seed_folder("typescript_seed_add_timeout") else {
        return;
    };
    seed_add_timeout(&node_seed(&folder));
}

#[test]
fn typescript_seed_audit_log() {
    let Some(folder) = seed_folder("typescript_seed_audit_log") else {
        return;
    };
    seed_audit_log(&node_seed(&folder), "sessionId");
}
