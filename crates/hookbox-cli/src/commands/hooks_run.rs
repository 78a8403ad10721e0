//! `hookbox hooks run`: dispatch one event through config files, handlers run on this host.
//!
//! The event is one of hookbox's own, or an agent's own event passed through under its name
//! (`--agent` says whose): that one is built as the agent's input and answered exactly as
//! `hookbox hook AGENT` answers it, and the agent's answer is shown too.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::ValueEnum;
use hookbox_agent::sandbox_hooks_builder;
use hookbox_hooks::adapter::{self, Agent, Reply};
use hookbox_hooks::config::did_you_mean;
use hookbox_hooks::{
    AgentEvent, Dialect, Dispatcher, EventInput, HookEvent, HookOutcome, Runners, SessionContext,
};
use serde_json::{Map, Value, json};

use crate::cli::{AgentArg, RunArgs};
use crate::render;

/// Tool events need `--tool`; these are the SDK ones (sandbox events are all tool events).
const SDK_TOOL_EVENTS: [HookEvent; 4] = [
    HookEvent::PreToolUse,
    HookEvent::PostToolUse,
    HookEvent::PostToolUseFailure,
    HookEvent::PermissionRequest,
];

/// The session id of the events `hooks run` builds.
const SESSION: &str = "hookbox-cli";

/// The event `--event` (and `--agent`) name.
enum Named {
    /// One of hookbox's own events.
    Hookbox(HookEvent),
    /// An agent's own event, passed through under its name.
    Agent(Agent, AgentEvent),
}

/// What `hooks run` was given besides the event, parsed.
struct Given {
    /// `--args`.
    tool_args: Map<String, Value>,
    /// `--input`.
    extra: Option<Map<String, Value>>,
    /// `--cwd`, or the current directory.
    cwd: PathBuf,
}

pub(crate) fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let named = resolve(args)?;
    let given = Given {
        tool_args: json_object("--args", &args.args)?,
        extra: args
            .input
            .as_deref()
            .map(|text| json_object("--input", text))
            .transpose()?,
        cwd: match &args.cwd {
            Some(cwd) => cwd.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        },
    };

    let mut builder = sandbox_hooks_builder();
    if let Named::Agent(..) = named {
        builder.answers_agents();
    }
    for path in &args.configs {
        builder.load_file(path, args.dialect.map(Into::into))?;
    }
    let hooks = builder.build();
    // Problems inside the configs do not stop the run (the runtime would run the rest too),
    // but they are shown.
    for diagnostic in hooks.diagnostics() {
        render::print_error(&format!("{diagnostic}\n"));
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let runners = Runners::host(Some(given.cwd.clone())).context("cannot build the HTTP client")?;
    let dispatcher = Dispatcher::new(Arc::new(hooks), runners);
    let (outcome, answer) = match named {
        Named::Hookbox(event) => {
            let input = hookbox_input(event, args, given)?;
            (runtime.block_on(dispatcher.dispatch(&input)), None)
        }
        Named::Agent(agent, event) => {
            let translated = agent_input(agent, event, args, given)?;
            let outcome = runtime.block_on(adapter::evaluate(&dispatcher, &translated));
            let reply = agent.answer(&translated, &outcome);
            (outcome, Some((agent, reply)))
        }
    };
    print(&args.event, &outcome, answer.as_ref(), args.json)?;
    Ok(ExitCode::from(if outcome.is_blocked() { 2 } else { 0 }))
}

/// The event `--event` names: hookbox's own, or (with `--agent`) an agent's own; an unknown
/// name is an error with the closest known one.
fn resolve(args: &RunArgs) -> anyhow::Result<Named> {
    let name = args.event.as_str();
    if let Some(event) = HookEvent::from_name(name) {
        if let Some(agent) = args.agent {
            bail!(
                "`{name}` is one of hookbox's own events, which --agent does not apply to; \
                 drop `--agent {}` (--agent names whose event an agent's own event is, e.g. \
                 `--event BeforeModel --agent gemini-cli`)",
                Agent::from(agent).name()
            );
        }
        return Ok(Named::Hookbox(event));
    }
    if let Some(event) = AgentEvent::find(name, Dialect::Sdk) {
        let senders: Vec<&str> = AgentArg::value_variants()
            .iter()
            .map(|&arg| Agent::from(arg))
            .filter(|&agent| event.is_sent_by(agent))
            .map(Agent::name)
            .collect();
        return match args.agent.map(Agent::from) {
            Some(agent) if event.is_sent_by(agent) => Ok(Named::Agent(agent, event)),
            Some(agent) => bail!(
                "{} does not send `{name}`; it is an event of {}: use --agent {}",
                agent.name(),
                senders.join(" and "),
                senders[0]
            ),
            None => bail!(
                "`{name}` is an agent's own event, answered as `hookbox hook AGENT` answers it: \
                 say whose with --agent {}",
                senders.join(" or --agent ")
            ),
        };
    }
    let names = HookEvent::ALL
        .iter()
        .map(|event| event.name())
        .chain(AgentEvent::names());
    let hint = did_you_mean(name, names)
        .map(|closest| format!("did you mean `{closest}`? "))
        .unwrap_or_default();
    let own: Vec<&str> = HookEvent::ALL.iter().map(|event| event.name()).collect();
    bail!(
        "unknown event `{name}`; {hint}expected one of hookbox's events ({}) or an agent's own \
         event with --agent (docs/agent-adapters.md, \"Events passed through\")",
        own.join(", ")
    )
}

/// The payload of hookbox's own `event`, built the way the runtime would build it.
fn hookbox_input(event: HookEvent, args: &RunArgs, given: Given) -> anyhow::Result<EventInput> {
    let input = match event.dialect() {
        Dialect::Sandbox => {
            let Some(tool) = &args.tool else {
                bail!("`--tool NAME` is required for {event}");
            };
            let (tool_args, environment_id) =
                (Value::Object(given.tool_args), &args.environment_id);
            if event == HookEvent::PostToolExecution {
                EventInput::post_tool_execution(tool, tool_args, environment_id, None, None, None)
            } else {
                EventInput::pre_tool_execution(tool, tool_args, environment_id, None)
            }
        }
        Dialect::Sdk => {
            let session = SessionContext {
                session_id: SESSION.to_owned(),
                transcript_path: String::new(),
                cwd: given.cwd.display().to_string(),
                permission_mode: "default".to_owned(),
            };
            let fields = tool_fields(args, given.tool_args);
            let has_tool = fields.contains_key("tool_name")
                || given
                    .extra
                    .as_ref()
                    .is_some_and(|extra| extra.contains_key("tool_name"));
            if SDK_TOOL_EVENTS.contains(&event) && !has_tool {
                bail!("`--tool NAME` is required for {event}");
            }
            EventInput::sdk_common(event, &session).with_fields(fields)
        }
    };
    Ok(match given.extra {
        Some(extra) => input.with_fields(extra),
        None => input,
    })
}

/// `agent`'s own `event` as the agent would send it (a session id, `cwd`, `--tool`/`--args`
/// as `tool_name`/`tool_input`, `--input`'s fields, then its name), read the way `hookbox hook
/// AGENT` reads it.
fn agent_input(
    agent: Agent,
    event: AgentEvent,
    args: &RunArgs,
    given: Given,
) -> anyhow::Result<adapter::Translated> {
    let mut payload = Map::new();
    payload.insert("session_id".into(), SESSION.into());
    payload.insert("cwd".into(), given.cwd.display().to_string().into());
    payload.extend(tool_fields(args, given.tool_args));
    payload.extend(given.extra.unwrap_or_default());
    // The event is --event's, whatever --input says. Copilot's input does not name its event:
    // its command line does.
    let named_by_command_line = (agent == Agent::Copilot).then_some(event.name());
    if named_by_command_line.is_none() {
        payload.insert("hook_event_name".into(), event.name().into());
    }
    let bytes = Value::Object(payload).to_string().into_bytes();
    agent
        .translate(&bytes, named_by_command_line)
        .map_err(|problem| anyhow::anyhow!("{} {}: {problem}", agent.name(), event.name()))
}

/// `--tool` and `--args` as an SDK payload's `tool_name`, `tool_input` and `tool_use_id`.
fn tool_fields(args: &RunArgs, tool_args: Map<String, Value>) -> Map<String, Value> {
    let mut fields = Map::new();
    if let Some(tool) = &args.tool {
        fields.insert("tool_name".into(), tool.clone().into());
        fields.insert("tool_input".into(), Value::Object(tool_args));
        fields.insert("tool_use_id".into(), "toolu_hookbox_cli".into());
    }
    fields
}

/// Prints `outcome` of `event` (and, for an agent's own event, the agent's answer) as text
/// or JSON.
fn print(
    event: &str,
    outcome: &HookOutcome,
    answer: Option<&(Agent, Reply)>,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        let mut value = serde_json::to_value(outcome)?;
        if let Value::Object(object) = &mut value {
            object.insert("event".into(), json!(event));
            if let Some((agent, reply)) = answer {
                object.insert("agent".into(), json!(agent.name()));
                object.insert(
                    "answer".into(),
                    json!({"exit_code": reply.exit_code, "stdout": reply.stdout,
                        "stderr": reply.stderr}),
                );
            }
        }
        return render::print_json(&value);
    }
    let mut text = render::outcome_text(outcome);
    if let Some((agent, reply)) = answer {
        let stdout = if reply.stdout.is_empty() {
            "nothing"
        } else {
            &reply.stdout
        };
        text.push_str(&format!(
            "{} gets: exit {}, stdout {stdout}",
            agent.name(),
            reply.exit_code
        ));
        match reply.stderr.trim_end() {
            "" => text.push('\n'),
            stderr => text.push_str(&format!(", stderr {stderr}\n")),
        }
    }
    render::print_text(&text)?;
    Ok(())
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
