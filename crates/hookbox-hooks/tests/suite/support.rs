use std::path::{Path, PathBuf};
use std::sync::Arc;

use hookbox_hooks::{
    Dispatcher, EventInput, HookOutcome, HookSet, Runners, SdkEvent, SessionContext, ToolUse,
};
use hookbox_net::ClientOptions;
use serde_json::{Value, json};

/// The repository's `fixtures/seeds` folder (the seeds' scripts and hooks.json, verbatim).
pub(super) fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/seeds")
}

/// A dispatcher over config documents given as JSON values, with host runners in `cwd`. The HTTP
/// client may post to the tests' plain-HTTP loopback receivers.
pub(super) fn dispatcher(configs: &[Value], cwd: Option<&Path>) -> Dispatcher {
    Dispatcher::new(hookset(configs), local_runners(cwd))
}

/// Host runners in `cwd` whose HTTP client may post to plain-HTTP loopback receivers.
pub(super) fn local_runners(cwd: Option<&Path>) -> Runners {
    let local_receivers = ClientOptions {
        permit_loopback: true,
        https_only: false,
        ..ClientOptions::default()
    };
    Runners::host_with_http_options(cwd.map(Path::to_path_buf), &local_receivers).expect("runners")
}

/// A dispatcher like [`dispatcher`] with the strict default runners ([`Runners::host`]).
pub(super) fn strict_dispatcher(configs: &[Value]) -> Dispatcher {
    Dispatcher::new(hookset(configs), Runners::host(None).expect("runners"))
}

/// The hooks of config documents given as JSON values (`config0.json`, …).
pub(super) fn hookset(configs: &[Value]) -> Arc<HookSet> {
    let mut builder = HookSet::builder();
    for (index, config) in configs.iter().enumerate() {
        builder
            .load_str(&format!("config{index}.json"), &config.to_string(), None)
            .expect("config loads");
    }
    Arc::new(builder.build())
}

/// A sandbox config with one `pre_tool_execution` rule holding the given handlers.
pub(super) fn pre_rule(matcher: &str, handlers: Value) -> Value {
    json!({"gate": {"pre_tool_execution": [{"matcher": matcher, "hooks": handlers}]}})
}

/// A command handler with a timeout in seconds.
pub(super) fn command(command: &str, timeout: u64) -> Value {
    json!({"type": "command", "command": command, "timeout": timeout})
}

/// A `PreToolUse` of `Bash` running `ls`, id `toolu_1`, in a default session.
pub(super) fn bash_call() -> EventInput {
    let input = json!({"command": "ls"});
    let tool = ToolUse {
        tool_name: "Bash",
        tool_input: &input,
        tool_use_id: "toolu_1",
    };
    EventInput::sdk(
        &SessionContext::default(),
        SdkEvent::PreToolUse { agent: None, tool },
    )
}

/// Dispatches a `pre_tool_execution` of `tool` with `args`.
pub(super) async fn pre(dispatcher: &Dispatcher, tool: &str, args: Value) -> HookOutcome {
    dispatcher
        .dispatch(&EventInput::pre_tool_execution(
            tool, args, "env_test", None,
        ))
        .await
}
