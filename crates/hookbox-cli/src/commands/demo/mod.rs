//! `hookbox demo`: the seeds' security and privacy gates end to end — a model proposes tool
//! calls, the environment's hooks decide inside the sandbox, the model sees the reasons.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use hookbox_agent::interaction::{Agent, RunOutcome, RunStatus, Step};
use hookbox_env::{Environment, EnvironmentSpec, Environments, Isolation};
use hookbox_hooks::{HandlerResult, TraceEntry};
use hookbox_llm::{Model, ScriptedModel};
use hookbox_runtime::{Config, Runtime};
use serde_json::{Value, json};

mod receiver;

use crate::cli::DemoArgs;
use crate::{config, render};

const GATE_PY: &str = include_str!("../../../../../fixtures/seeds/gate.py");
const CHECK_PRIVACY_PY: &str = include_str!("../../../../../fixtures/seeds/check_privacy.py");
const SECURITY_GATE: &str = include_str!("../../../../../fixtures/seeds/security-gate.hooks.json");
const PRIVACY_GATE: &str = include_str!("../../../../../fixtures/seeds/privacy-gate.hooks.json");
const SECURITY_SCRIPT: &str =
    include_str!("../../../../../fixtures/demo/security-gate.script.json");
const PRIVACY_SCRIPT: &str = include_str!("../../../../../fixtures/demo/privacy-gate.script.json");
const AUDIT_LOGGING: &str = include_str!("../../../../../fixtures/seeds/audit-logging.hooks.json");
const AUDIT_SCRIPT: &str = include_str!("../../../../../fixtures/demo/audit-logging.script.json");
/// The seeds' telemetry service, which the demo stands in for with a local receiver.
const TELEMETRY_HOST: &str = "telemetry.example.com";
/// The seeds' audit token, which the environment's egress policy injects.
const TELEMETRY_TOKEN: &str = "Bearer telemetry_secret_token_123";

pub(crate) fn run(args: &DemoArgs) -> anyhow::Result<ExitCode> {
    hookbox_exec::check_isolation().context(
        "the demo runs the seeds' hooks in hookbox's sandbox, which this machine cannot create",
    )?;
    let home = tempfile::Builder::new()
        .prefix("hookbox-demo-")
        .tempdir()
        .context("cannot create a scratch HOOKBOX_HOME")?;
    let user_home = Environments::default_home()?;
    // The user's hookbox.toml, over the scratch home (whose credential store is empty: the
    // demo's environments name no credentials).
    let mut config = Config::read(args.config.as_deref(), &user_home)?;
    config.home = home.path().to_path_buf();
    config::warn_if_loopback_hooks(&config);
    let runtime = Runtime::from_config(&config)?;
    let store = runtime.environments();
    // Dropped before `home`: the environments' file systems are unmounted, not orphaned.
    let _scratch = DeleteOnDrop(store);
    // A real model when asked for by name; otherwise one scripted model per example.
    let real_model = match &args.agent {
        Some(name) => Some(runtime.agents().model(name)?),
        None => None,
    };
    let model = |name: &str, script: &str| -> anyhow::Result<Arc<dyn Model>> {
        match &real_model {
            Some(model) => Ok(Arc::clone(model)),
            None => Ok(Arc::new(ScriptedModel::from_json(Path::new(name), script)?)),
        }
    };
    let async_runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let _entered = async_runtime.enter();
    let mut text = String::from(
        "hookbox demo: the seeds' hooks.json files and hook scripts, verbatim, in sandboxed \
         environments.\n",
    );
    text.push_str(&match &real_model {
        Some(model) => format!(
            "The model is {} (agent `{}`).\n",
            model.label(),
            args.agent.as_deref().unwrap_or_default()
        ),
        None => "The model is SCRIPTED (it replays fixed turns from fixtures/demo; no API key \
                 needed; `--agent NAME` uses a model from hookbox.toml); the hooks, sandbox and \
                 tools are real.\n"
            .to_owned(),
    });

    text.push_str("\n1. Security gate\n");
    let environment = async_runtime.block_on(create(store, &security_sources()))?;
    let agent = agent_over(
        &runtime,
        &environment,
        model("security-gate.script.json", SECURITY_SCRIPT)?,
        runtime.hook_clients().clone(),
    )?;
    let prompt = "Run `rm -rf /tmp/forbidden` using code_execution.";
    let security =
        async_runtime.block_on(agent.run(&[], vec![Step::user_text(prompt)], None, &mut |_| {}));
    describe(&mut text, &security);

    text.push_str("\n2. Privacy gate, then a second turn in the same environment\n");
    let environment = async_runtime.block_on(create(store, &privacy_sources()))?;
    let agent = agent_over(
        &runtime,
        &environment,
        model("privacy-gate.script.json", PRIVACY_SCRIPT)?,
        runtime.hook_clients().clone(),
    )?;
    let prompt = "Use your filesystem tool to read `/workspace/private/employees.json` and summarize the employee details.";
    let first =
        async_runtime.block_on(agent.run(&[], vec![Step::user_text(prompt)], None, &mut |_| {}));
    describe(&mut text, &first);
    let prompt = "Understood. Please read the approved `/workspace/public/summary.json` file instead and provide the summary.";
    let second = async_runtime.block_on(agent.run(
        &first.steps,
        vec![Step::user_text(prompt)],
        None,
        &mut |_| {},
    ));
    describe(&mut text, &second);

    text.push_str("\n3. Audit log: an http hook reports every read_file and write_file\n");
    let audit = async_runtime.block_on(audit_example(
        &runtime,
        model("audit-logging.script.json", AUDIT_SCRIPT)?,
        &mut text,
    ))?;
    render::print_text(&text)?;
    let all_completed = [&security, &first, &second, &audit]
        .iter()
        .all(|outcome| outcome.status == RunStatus::Completed);
    Ok(if all_completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Deletes every environment of the demo's scratch store when dropped, so that their disk
/// images are unmounted and their loop devices released before the scratch home is removed,
/// whether the demo finished or failed.
struct DeleteOnDrop<'a>(&'a Environments);

impl Drop for DeleteOnDrop<'_> {
    fn drop(&mut self) {
        for environment in self.0.list().unwrap_or_default() {
            if let Err(err) = self.0.delete(environment.id()) {
                render::print_error(&format!(
                    "hookbox demo: cannot remove its environment {}: {err}\n",
                    environment.id()
                ));
            }
        }
    }
}

/// The seeds' audit example: their `audit-logging` hooks.json and network allowlist, verbatim,
/// with a local HTTPS receiver standing in for `telemetry.example.com` (the demo's hook client
/// connects that name to the receiver's address and port and trusts its certificate). Prints
/// each tool call, then what the receiver got.
async fn audit_example(
    runtime: &Runtime,
    model: Arc<dyn Model>,
    text: &mut String,
) -> anyhow::Result<RunOutcome> {
    let ca = hookbox_net::ProxyCa::generate("hookbox demo telemetry receiver")?;
    let receiver = receiver::Receiver::start(ca.server_config(TELEMETRY_HOST)?).await?;
    let spec = EnvironmentSpec::from_json(&json!({
        "type": "remote",
        "sources": [{"type": "inline", "target": ".agents/hooks.json", "content": AUDIT_LOGGING}],
        "network": {"allowlist": [
            {"domain": TELEMETRY_HOST, "transform": {"Authorization": TELEMETRY_TOKEN}},
            {"domain": "*"}
        ]},
    }))?;
    let environment = runtime.environments().create(&spec).await?;
    let local = hookbox_net::ClientOptions {
        permit_loopback: true,
        connect_to: vec![(
            TELEMETRY_HOST.to_owned(),
            (std::net::Ipv4Addr::LOCALHOST, receiver.port()).into(),
        )],
        extra_root_certs_pem: vec![ca.certificate_pem().as_bytes().to_vec()],
        ..runtime.hook_options().clone()
    };
    let agent = agent_over(
        runtime,
        &environment,
        model,
        hookbox_hooks::HookClients::new(&local)?,
    )?;
    let prompt = "Write a line to /workspace/audit.log, then read it back.";
    let outcome = agent
        .run(&[], vec![Step::user_text(prompt)], None, &mut |_| {})
        .await;
    describe(text, &outcome);
    text.push_str(&format!(
        "   The telemetry receiver (standing in for {TELEMETRY_HOST}, on 127.0.0.1:{}) got:\n",
        receiver.port()
    ));
    for delivery in receiver.deliveries() {
        let injected = match delivery.authorization.as_deref() {
            Some(value) if value == TELEMETRY_TOKEN => {
                "Authorization: Bearer telemetry_secret_… (injected by the environment's \
                 network policy; hooks.json and the sandbox never see it)"
            }
            Some(_) => "an unexpected Authorization header",
            None => "no Authorization header",
        };
        text.push_str(&format!(
            "     POST {} {} {}, with {injected}\n",
            delivery.path,
            delivery.body["hook_event_name"].as_str().unwrap_or("?"),
            delivery.body["tool_call"]["name"].as_str().unwrap_or("?"),
        ));
    }
    Ok(outcome)
}

/// The seeds' security-gate example sources, verbatim.
fn security_sources() -> Value {
    json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": SECURITY_GATE},
        {"type": "inline", "target": ".agents/hooks-scripts/gate.py", "content": GATE_PY}
    ])
}

/// The seeds' privacy-gate example sources, verbatim.
fn privacy_sources() -> Value {
    json!([
        {"type": "inline", "target": ".agents/hooks.json", "content": PRIVACY_GATE},
        {"type": "inline", "target": ".agents/hooks-scripts/check_privacy.py", "content": CHECK_PRIVACY_PY},
        {"type": "inline", "target": "workspace/private/employees.json",
         "content": "{\"employees\": [{\"id\": 1, \"salary\": 150000, \"ssn\": \"000-00-0000\"}]}"},
        {"type": "inline", "target": "workspace/public/summary.json",
         "content": "{\"department\": \"Engineering\", \"team_size\": 42, \"status\": \"active\"}"}
    ])
}

async fn create(store: &Environments, sources: &Value) -> anyhow::Result<Environment> {
    let spec = EnvironmentSpec::from_json(&json!({"type": "remote", "sources": sources}))?;
    Ok(store.create(&spec).await?)
}

/// An agent with `model` over `environment`'s sandboxed tools (the sandbox's network through
/// the runtime's egress proxy), HTTP hooks sent through `hook_clients`.
fn agent_over(
    runtime: &Runtime,
    environment: &Environment,
    model: Arc<dyn Model>,
    hook_clients: hookbox_hooks::HookClients,
) -> anyhow::Result<Agent> {
    let tools =
        runtime.sandbox_tools_with_hooks(environment, Isolation::Sandboxed, hook_clients)?;
    Ok(Agent {
        model,
        tools: Some(Arc::new(tools)),
        functions: Vec::new(),
        system: None,
        max_turns: 8,
        max_tokens: None,
    })
}

/// A few lines per step: the prompt, each tool call, each hook decision, each result, the answer.
fn describe(text: &mut String, outcome: &RunOutcome) {
    for (index, step) in outcome.steps.iter().enumerate() {
        let records = outcome.records.iter().filter(|(at, _)| *at == index);
        for entry in records.flat_map(|(_, record)| &record.trace) {
            text.push_str(&format!("     {}\n", hook_line(entry)));
        }
        let line = match step {
            Step::UserInput { text, .. } => format!("   user: {text}"),
            Step::ModelOutput(text) => format!("   model: {text}"),
            Step::Call(call) => format!("   model calls {} {}", call.name, call.args),
            Step::Result(result) => {
                let verdict = if result.is_error { "error" } else { "ok" };
                let content = match &result.content {
                    Value::String(content) => content.trim().to_owned(),
                    other => other.to_string(),
                };
                format!("   tool result ({verdict}): {content}")
            }
        };
        text.push_str(&line);
        text.push('\n');
    }
    if let Some(error) = &outcome.error {
        text.push_str(&format!(
            "   interaction {}: {}\n",
            outcome.status.as_str(),
            error.message
        ));
    }
}

/// One hook run: event, handler, where it ran, its decision and reason, and how long it took.
fn hook_line(entry: &TraceEntry) -> String {
    let decision = match entry.result {
        HandlerResult::Decided(decision) => format!("{decision:?}").to_uppercase(),
        HandlerResult::NoDecision => "no decision".to_owned(),
        HandlerResult::Skipped => "skipped".to_owned(),
    };
    let reason = entry
        .reason
        .as_deref()
        .map(|reason| format!(": {reason}"))
        .unwrap_or_default();
    // Command hooks run in the environment's sandbox; HTTP hooks are posted by hookbox under
    // the environment's network policy.
    let place = match entry.handler {
        "http" => "posted by hookbox",
        _ => "in the sandbox",
    };
    format!(
        "hook {} `{}` ({place}) → {decision}{reason} ({:.0} ms)",
        entry.event.name(),
        entry.label,
        entry.duration.as_secs_f64() * 1000.0
    )
}
