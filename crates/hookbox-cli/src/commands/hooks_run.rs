//! `hookbox hooks run`: dispatch one event through config files, handlers run on this host.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use hookbox_agent::sandbox_hooks_builder;
use hookbox_hooks::{Dialect, Dispatcher, EventInput, HookEvent, Runners, SessionContext};
use serde_json::{Map, Value, json};

use crate::cli::RunArgs;
use crate::render;

/// Tool events need `--tool`; these are the SDK ones (sandbox events are all tool events).
const SDK_TOOL_EVENTS: [HookEvent; 4] = [
    HookEvent::PreToolUse,
    HookEvent::PostToolUse,
    HookEvent::PostToolUseFailure,
    HookEvent::PermissionRequest,
];

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let event = HookEvent::from_name(&args.event).with_context(|| {
        let names: Vec<&str> = HookEvent::ALL.iter().map(|event| event.name()).collect();
        format!(
            "unknown event `{}`; expected one of: {}",
            args.event,
            names.join(", ")
        )
    })?;
    let tool_args = json_object("--args", &args.args)?;
    let extra = args
        .input
        .as_deref()
        .map(|text| json_object("--input", text))
        .transpose()?;
    let cwd = match &args.cwd {
        Some(cwd) => cwd.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };

    let mut builder = sandbox_hooks_builder();
    for path in &args.configs {
        builder.load_file(path, args.dialect.map(Into::into))?;
    }
    let hooks = builder.build();
    // Problems inside the configs do not stop the run (the runtime would run the rest too),
    // but they are shown.
    for diagnostic in hooks.diagnostics() {
        render::print_error(&format!("{diagnostic}\n"));
    }

    let input = match event.dialect() {
        Dialect::Sandbox => {
            let Some(tool) = &args.tool else {
                bail!("`--tool NAME` is required for {event}");
            };
            let (tool_args, environment_id) = (Value::Object(tool_args), &args.environment_id);
            if event == HookEvent::PostToolExecution {
                EventInput::post_tool_execution(tool, tool_args, environment_id, None, None, None)
            } else {
                EventInput::pre_tool_execution(tool, tool_args, environment_id, None)
            }
        }
        Dialect::Sdk => {
            let session = SessionContext {
                session_id: "hookbox-cli".to_owned(),
                transcript_path: String::new(),
                cwd: cwd.display().to_string(),
                permission_mode: "default".to_owned(),
            };
            let mut fields = Map::new();
            if let Some(tool) = &args.tool {
                fields.insert("tool_name".into(), tool.clone().into());
                fields.insert("tool_input".into(), Value::Object(tool_args));
                fields.insert("tool_use_id".into(), "toolu_hookbox_cli".into());
            }
            let has_tool = fields.contains_key("tool_name")
                || extra
                    .as_ref()
                    .is_some_and(|extra| extra.contains_key("tool_name"));
            if SDK_TOOL_EVENTS.contains(&event) && !has_tool {
                bail!("`--tool NAME` is required for {event}");
            }
            EventInput::sdk_common(event, &session).with_fields(fields)
        }
    };
    let input = match extra {
        Some(extra) => input.with_fields(extra),
        None => input,
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let runners = Runners::host(Some(cwd)).context("cannot build the HTTP client")?;
    let dispatcher = Dispatcher::new(Arc::new(hooks), runners);
    let outcome = runtime.block_on(dispatcher.dispatch(&input));

    if args.json {
        let mut value = serde_json::to_value(&outcome)?;
        if let Value::Object(object) = &mut value {
            object.insert("event".into(), json!(event));
        }
        render::print_json(&value)?;
    } else {
        render::print_text(&render::outcome_text(&outcome))?;
    }
    Ok(ExitCode::from(if outcome.is_blocked() { 2 } else { 0 }))
}

/// Parses a command-line JSON argument that must be an object.
fn json_object(flag: &str, text: &str) -> anyhow::Result<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(other) => {
            bail!("{flag} must be a JSON object such as '{{\"key\":\"value\"}}', got `{other}`")
        }
        Err(err) => bail!("{flag} is not valid JSON: {err}"),
    }
}
