//! SDK mode: the stream-json control protocol that the Python agent SDKs
//! (`claude-agent-sdk`, `cortex-code-agent-sdk`) speak to the program named by their
//! `cli_path` option, so they drive a hookbox session with their hooks as Python callbacks.
//! `docs/wire/sdk-control-protocol.md` is the protocol as the SDKs pin it (the `§` numbers in
//! this crate's comments are its sections); `docs/sdk-sessions.md` says where hookbox's
//! sessions decide what the protocol leaves open.
//!
//! # Using it
//!
//! 1. [`is_version_probe`] and [`is_sdk_mode`] tell from a command line (without the program
//!    name) whether an SDK launched the program: the cortex SDK first probes the version with
//!    `-v`, then both SDKs pass `--input-format stream-json` or `--output-format stream-json`.
//! 2. [`parse_args`] reads that command line into [`SdkArgs`]; it never fails (unknown flags
//!    are skipped, unusable values noted in [`SdkArgs::problems`]).
//! 3. [`Setup::new`] takes those arguments, Claude Code's configuration directory
//!    ([`config_dir`]: where transcripts go and resumed sessions are found) and the
//!    [`SessionHost`] that turns an agent name (the SDK's `model` option) into a
//!    [`hookbox_llm::Model`] and says how the sessions' HTTP hooks are sent (and where
//!    durable ones are stored).
//! 4. [`run`] speaks the protocol over any reader and writer (the process's stdin and stdout
//!    in the binary) until the input ends, then returns. Its reading task may still be
//!    blocked on the input then: with the process's stdin, shut the runtime down without
//!    waiting for it (`Runtime::shutdown_background`).
//!
//! ```ignore
//! let args: Vec<String> = std::env::args().skip(1).collect();
//! if hookbox_stream_json::is_sdk_mode(&args) {
//!     let args = hookbox_stream_json::parse_args(&args);
//!     let host: Arc<dyn SessionHost> = Arc::new(my_host);
//!     let setup = Setup::new(args, hookbox_stream_json::config_dir(), Ok(host));
//!     let (stdin, stdout) = (tokio::io::stdin(), tokio::io::stdout());
//!     tokio_runtime.block_on(hookbox_stream_json::run(setup, stdin, stdout));
//! }
//! ```
//!
//! # How it runs
//!
//! Three tasks: a reader on the input (responses go straight to their waiting requests,
//! everything else to the driver), the driver (SDK requests, the prompt queue, the running
//! query), and a writer that alone owns the output. The output carries only JSON lines
//! ([`frame`]; a session's messages as [`messages`] writes them); the driver also writes the
//! session's transcript where Claude Code keeps it (`transcript`: `CLAUDE_CONFIG_DIR` or
//! `~/.claude`, `projects/<cwd>/<session_id>.jsonl`), which `--resume`, `--continue` and
//! `--fork-session` read back; diagnostics go to the process's stderr, each line starting
//! `hookbox: `. The session is built on the first prompt, after
//! `initialize`, by [`Setup`]; a session that cannot be built ends every prompt with an error
//! result. The input ending ends the run once the current query has finished (at once when
//! SDK callbacks are involved: they can no longer be answered, so pending ones fail and
//! block, and the query is interrupted).
//!
//! This crate is an interface over `hookbox-agent` sessions: it knows nothing of
//! `hookbox.toml`, the terminal or the REST server; the program embedding it supplies the
//! agents and hook transports ([`SessionHost`]).

mod agent_files;
mod argv;
mod bridge;
mod control;
pub mod frame;
mod init;
mod mcp;
mod md_files;
pub mod messages;
mod output_styles;
mod settings;
mod setup;
mod transcript;

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use futures_util::FutureExt;
use hookbox_agent::session::{
    MessageStream, PermissionMode, QueryResult, ResultSubtype, Session, SessionControl,
    SessionMessage, new_uuid, slash_command,
};
use hookbox_llm::Model;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;

pub use argv::{SdkArgs, is_sdk_mode, is_version_probe, parse as parse_args};
pub use setup::{SessionHost, SessionNetwork, Setup};
pub use transcript::config_dir;

use self::control::{ControlClient, Incoming, Outbox, Prompt};
use self::frame::InputLine;
use self::init::InitOptions;
use self::transcript::TranscriptWriter;

/// How a run ended, for the process's exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// The last `result` was not an error (or there was none): exit 0.
    Clean,
    /// The last `result` was an error (`is_error: true`: a model API failure, an unknown
    /// agent, the turn limit, an interrupt…): exit non-zero, as Claude Code does, so the SDK
    /// raises its `ResultError`.
    AfterErrorResult,
}

/// Runs one SDK session: reads the SDK's lines from `input`, writes hookbox's to `output`,
/// and returns when `input` ends and the session is closed, saying whether the last result
/// was an error. Problems with the command line ([`SdkArgs::problems`]) are reported on
/// stderr first.
pub async fn run<R, W>(setup: Setup, input: R, output: W) -> RunEnd
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    for problem in &setup.args.problems {
        warn(problem);
    }
    let (outbox, outgoing) = mpsc::unbounded_channel();
    let writer = tokio::spawn(write_output(output, outgoing));
    // Requests from hook callbacks pass through the driver, which first writes the messages
    // the query emitted before them (the tool call precedes its hook_callback); their
    // cancellations go straight out (before what the query emits after a callback timed out).
    let (requests, requests_rx) = mpsc::unbounded_channel();
    let client = ControlClient::new(requests, outbox.clone());
    let (incoming_tx, incoming) = mpsc::unbounded_channel();
    tokio::spawn(read_input(input, client.clone(), incoming_tx));
    let mut driver = Driver::new(setup, outbox.clone(), client);
    driver.run(incoming, requests_rx).await;
    if let Some(session) = driver.session.take() {
        let session_id = driver.session_id.clone();
        for message in session.close("prompt_input_exit").await {
            if let Some(warning) = message.hook_failure_warning() {
                warn(&warning);
            }
            let _ = outbox.send(messages::to_wire(&message, &session_id, &new_uuid()));
        }
    }
    // Every entry of the transcript on disk before the process exits (a failure was
    // reported when it happened).
    if let Some(mut transcript) = driver.transcript.take() {
        transcript.finish();
    }
    let end = if driver.last_result_failed {
        RunEnd::AfterErrorResult
    } else {
        RunEnd::Clean
    };
    drop(driver);
    // `null` tells the writer to stop after everything queued before it.
    let _ = outbox.send(Value::Null);
    let _ = writer.await;
    end
}

/// Reports `message` on stderr as `hookbox: message`, ignoring failures (there is nowhere
/// left to report them).
pub(crate) fn warn(message: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(format!("hookbox: {message}\n").as_bytes());
}

/// `err` and its causes joined with `: `, each cause once: many error types write their source
/// into their own message and also return it as `source()`, which `{:#}` would repeat.
pub fn error_message(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let cause = cause.to_string();
        if message.is_empty() {
            message = cause;
        } else if !message.contains(&cause) {
            message.push_str(": ");
            message.push_str(&cause);
        }
    }
    message
}

/// The only code that writes the output: one frame per message. After the SDK has gone (a
/// write fails), messages are dropped.
async fn write_output<W: AsyncWrite + Unpin>(
    mut output: W,
    mut outgoing: mpsc::UnboundedReceiver<Value>,
) {
    let mut open = true;
    while let Some(message) = outgoing.recv().await {
        if message.is_null() {
            break;
        }
        if !open {
            continue;
        }
        if let Err(err) = frame::write_message(&mut output, &message).await {
            if err.kind() == std::io::ErrorKind::Other {
                warn(&format!("dropping a message: {err}"));
            } else {
                warn(&format!(
                    "stdout is closed ({err}); later messages are dropped"
                ));
                open = false;
            }
        }
    }
}

/// Reads the input: responses resolve their requests here (so they arrive while the driver
/// waits on a hook), everything else goes to the driver. At end of input the client is
/// closed: it interrupts a query that depends on the SDK and only then fails the pending
/// requests, so a query never goes on past a callback that failed because the SDK left.
async fn read_input<R: AsyncRead + Unpin>(
    input: R,
    client: ControlClient,
    incoming: mpsc::UnboundedSender<Incoming>,
) {
    let mut input = tokio::io::BufReader::new(input);
    loop {
        let line = match frame::read_line(&mut input).await {
            Ok(Some(InputLine::Json(value))) => value,
            Ok(Some(InputLine::Invalid(problem))) => {
                warn(&format!("ignoring a line that is not JSON: {problem}"));
                continue;
            }
            Ok(None) => break,
            Err(err) => {
                warn(&format!("cannot read stdin: {err}"));
                break;
            }
        };
        match control::classify(line) {
            Incoming::Response { request_id, reply } => {
                if !client.resolve(&request_id, reply) {
                    warn(&format!(
                        "ignoring a response to unknown or withdrawn request `{request_id}`"
                    ));
                }
            }
            Incoming::Other(what) => warn(&format!("ignoring {what}")),
            other => {
                if incoming.send(other).is_err() {
                    break;
                }
            }
        }
    }
    client.close();
}

/// The session's state between the SDK's lines and the running query.
struct Driver {
    setup: Setup,
    outbox: Outbox,
    client: ControlClient,
    init: InitOptions,
    session: Option<Session>,
    control: Option<SessionControl>,
    mode: Option<PermissionMode>,
    model: Option<Arc<dyn Model>>,
    /// Why the session cannot be built (every prompt then ends with this error).
    failed: Option<String>,
    /// The id the messages written carry: the session's (a new one after `/clear`), or the
    /// one used before (or without) a session.
    session_id: String,
    /// The session's transcript, when it keeps one.
    transcript: Option<TranscriptWriter>,
    /// The running query's prompt and its uuid, until the model's first turn answers it and
    /// it is written to the transcript.
    unanswered: Option<(String, String)>,
    init_sent: bool,
    prompts: VecDeque<Prompt>,
    running: Option<MessageStream>,
    /// The prompt of the running query (its result echoes `origin` and `uuid`).
    current: Option<Prompt>,
    /// Whether the last `result` written was an error.
    last_result_failed: bool,
    /// The session's output style, which `system/init` names.
    output_style: String,
    /// Whether the session has MCP servers hosted by the SDK.
    sdk_mcp: bool,
    keep: Vec<tempfile::NamedTempFile>,
}

impl Driver {
    fn new(setup: Setup, outbox: Outbox, client: ControlClient) -> Self {
        let session_id = setup.args.session_id.clone().unwrap_or_else(new_uuid);
        Self {
            setup,
            outbox,
            client,
            init: InitOptions::default(),
            session: None,
            control: None,
            mode: None,
            model: None,
            failed: None,
            session_id,
            transcript: None,
            unanswered: None,
            init_sent: false,
            prompts: VecDeque::new(),
            running: None,
            current: None,
            last_result_failed: false,
            output_style: output_styles::DEFAULT.to_owned(),
            sdk_mcp: false,
            keep: Vec::new(),
        }
    }

    fn send(&self, message: Value) {
        let _ = self.outbox.send(message);
    }

    /// Whether the session depends on the SDK answering (hook callbacks, `can_use_tool`, MCP
    /// servers it hosts).
    fn needs_sdk(&self) -> bool {
        self.sdk_mcp
            || !self.init.hooks.is_empty()
            || self.init.sdk_managed_permissions
            || self.setup.args.permission_prompt_stdio
    }

    async fn run(
        &mut self,
        mut incoming: mpsc::UnboundedReceiver<Incoming>,
        mut requests: mpsc::UnboundedReceiver<Value>,
    ) {
        let mut stdin_open = true;
        loop {
            if self.running.is_none() {
                if let Some(prompt) = self.prompts.pop_front() {
                    self.start(prompt).await;
                    continue;
                }
                if !stdin_open {
                    return;
                }
            }
            tokio::select! {
                line = incoming.recv(), if stdin_open => match line {
                    Some(line) => self.handle(line),
                    None => {
                        stdin_open = false;
                        // The control client interrupted it already (`interrupt_on_close`).
                        if self.running.is_some() && self.needs_sdk() {
                            warn("stdin closed during a query that needs the SDK's callbacks; interrupting it");
                        }
                    }
                },
                Some(request) = requests.recv() => {
                    self.drain_ready();
                    self.send(request);
                }
                message = next(&mut self.running) => self.forward(message),
            }
        }
    }

    /// Writes one message of the running query (`None`: the query is over).
    fn forward(&mut self, message: Option<SessionMessage>) {
        match message {
            Some(message) => {
                let done = matches!(message, SessionMessage::Result(_));
                self.emit(&message);
                if done {
                    self.running = None;
                }
            }
            None => self.running = None,
        }
    }

    /// Writes the running query's messages that are already there.
    fn drain_ready(&mut self) {
        while let Some(stream) = &mut self.running {
            match stream.next_message().now_or_never() {
                Some(message) => self.forward(message),
                None => break,
            }
        }
    }

    /// Writes `message`; a `result` echoes its prompt's `origin` and `uuid`.
    fn emit(&mut self, message: &SessionMessage) {
        if let Some(warning) = message.hook_failure_warning() {
            warn(&warning);
        }
        let mut line = messages::to_wire(message, &self.session_id, &new_uuid());
        if matches!(message, SessionMessage::Init { .. }) {
            line["output_style"] = json!(self.output_style);
        }
        if let Some(transcript) = &mut self.transcript {
            // The prompt goes to the transcript when its first turn comes: a prompt that a
            // `UserPromptSubmit` hook blocked (a secret pasted by mistake) never reaches the
            // model, so it is never written either, and a resume cannot send it.
            let answered = matches!(
                message,
                SessionMessage::Assistant {
                    parent_tool_use_id: None,
                    ..
                } | SessionMessage::StreamEvent {
                    parent_tool_use_id: None,
                    ..
                }
            );
            if answered && let Some((text, uuid)) = self.unanswered.take() {
                transcript.prompt(&text, &uuid);
            }
            transcript.message(message, &line);
        }
        if let SessionMessage::ConversationReset { session_id, .. } = message {
            if let Some(uuid) = self
                .current
                .as_ref()
                .and_then(|prompt| prompt.uuid.as_ref())
            {
                line["user_message_uuid"] = json!(uuid);
            }
            self.session_id.clone_from(session_id);
        }
        if let SessionMessage::Result(result) = message {
            self.last_result_failed = result.is_error;
            if let Some(prompt) = self.current.take() {
                if let Some(origin) = prompt.origin {
                    line["origin"] = origin;
                }
                if let Some(uuid) = prompt.uuid {
                    line["user_message_uuid"] = json!(uuid);
                    line["user_message_uuids"] = json!([uuid]);
                }
            }
        }
        // The transcript keeps all of a sub-agent's turns; the SDK gets its text only when it
        // asked for it.
        if !self.init.forward_subagent_text && !messages::without_subagent_text(&mut line) {
            return;
        }
        self.send(line);
    }

    fn handle(&mut self, line: Incoming) {
        match line {
            Incoming::User(prompt) => self.prompts.push_back(prompt),
            Incoming::Request {
                request_id,
                subtype,
                request,
            } => {
                let reply = self.request(&subtype, &request);
                self.send(match reply {
                    Ok(response) => control::success(&request_id, response),
                    Err(message) => control::error(&request_id, &message),
                });
            }
            // The SDK's requests are answered at once; nothing to cancel.
            Incoming::Cancel { .. } | Incoming::Response { .. } | Incoming::Other(_) => {}
        }
    }

    /// Answers one SDK request.
    fn request(&mut self, subtype: &str, request: &Map<String, Value>) -> Result<Value, String> {
        match subtype {
            "initialize" => {
                if self.session.is_some() {
                    warn("ignoring an initialize after the session started");
                } else {
                    self.init = init::parse(request);
                    for warning in &self.init.warnings {
                        warn(warning);
                    }
                }
                Ok(self.setup.server_info(&self.init))
            }
            "interrupt" => {
                if let Some(control) = self.control.as_ref().filter(|_| self.running.is_some()) {
                    control.interrupt();
                }
                Ok(json!({}))
            }
            "set_permission_mode" => {
                let name = request
                    .get("mode")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let mode: PermissionMode = name.parse().map_err(|err| format!("{err}"))?;
                match &self.control {
                    Some(control) => control.set_permission_mode(mode),
                    None => self.mode = Some(mode),
                }
                Ok(json!({}))
            }
            "set_model" => {
                let name = match request.get("model").and_then(Value::as_str) {
                    Some(name) if !name.is_empty() => name.to_owned(),
                    _ => self.setup.agent_name().map_err(|err| error_message(&err))?,
                };
                let model = self.setup.model(&name).map_err(|err| error_message(&err))?;
                match &self.control {
                    Some(control) => control.set_model(model),
                    None => self.model = Some(model),
                }
                Ok(json!({}))
            }
            "mcp_status" => match &self.session {
                Some(session) => Ok(mcp::status(Some(session.mcp_servers()), &[])),
                None => {
                    let configured = mcp::configured(&self.setup, &self.init)
                        .map_err(|err| error_message(&err))?;
                    Ok(mcp::status(None, &configured))
                }
            },
            other => Err(format!(
                "unsupported control request `{other}`: hookbox does not implement it"
            )),
        }
    }

    /// Starts the query for `prompt`, building the session first if needed.
    async fn start(&mut self, prompt: Prompt) {
        if self.session.is_none() && self.failed.is_none() {
            match self.build().await {
                Ok(built) => {
                    let session = built.session;
                    if self.needs_sdk() {
                        self.client.interrupt_on_close(session.control());
                    }
                    self.control = Some(session.control());
                    self.session_id = session.session_id();
                    self.session = Some(session);
                    self.transcript = built.transcript;
                    self.output_style = built.output_style;
                }
                Err(err) => {
                    let message = error_message(&err);
                    warn(&message);
                    self.failed = Some(message);
                }
            }
        }
        let text = prompt.text.clone();
        // A command (`/compact`, `/clear`, an unknown one) is not a message of the
        // conversation; a prompt is written once the model answers it (`emit`).
        self.unanswered = (self.transcript.is_some() && slash_command(&text).is_none())
            .then(|| (text.clone(), prompt.uuid.clone().unwrap_or_else(new_uuid)));
        self.current = Some(prompt);
        match (&self.session, &self.failed) {
            (Some(session), _) => {
                self.init_sent = true;
                self.running = Some(session.query(text));
            }
            (None, failed) => {
                let message = failed.clone().unwrap_or_default();
                self.fail(message);
            }
        }
    }

    /// Builds the session, connecting its SDK-hosted MCP servers first (the SDK answers their
    /// requests while the driver waits here: they go straight to the output), then those
    /// hookbox connects itself (a stdio one runs in the session's sandbox).
    async fn build(&mut self) -> anyhow::Result<setup::Built> {
        let mode = match self.mode {
            Some(mode) => mode,
            None => self.setup.permission_mode()?,
        };
        let model = match self.model.clone() {
            Some(model) => model,
            None => self.setup.model(&self.setup.agent_name()?)?,
        };
        let (mut external, hosted): (Vec<_>, Vec<_>) = mcp::configured(&self.setup, &self.init)?
            .into_iter()
            .partition(mcp::connected_by_hookbox);
        let protected = mcp::protect(&mut external, &self.setup);
        self.sdk_mcp = hosted.iter().any(|server| server.kind == "sdk");
        let hosted = mcp::connect(hosted, &self.init, &self.client, &self.client.direct()).await;
        let mut built = self.setup.build(
            &self.init,
            &self.client,
            mode,
            model,
            mcp::ForSession { hosted, protected },
            &mut self.keep,
        )?;
        mcp::connect_to(&mut built.session, external, &self.setup.mcp_http()?).await;
        Ok(built)
    }

    /// Ends a prompt with an error result (after `system/init` the first time, which the
    /// cortex SDK needs before anything else).
    fn fail(&mut self, message: String) {
        if !self.init_sent {
            self.init_sent = true;
            let mode = self.mode.unwrap_or_default();
            self.emit(&SessionMessage::Init {
                cwd: self.setup.cwd.display().to_string(),
                model: self
                    .setup
                    .args
                    .model
                    .clone()
                    .unwrap_or_else(|| "none".to_owned()),
                tools: Vec::new(),
                permission_mode: mode.name().to_owned(),
                agents: Vec::new(),
                mcp_servers: Vec::new(),
            });
        }
        self.emit(&SessionMessage::Result(QueryResult {
            subtype: ResultSubtype::ErrorDuringExecution,
            is_error: true,
            result: Some(message.clone()),
            num_turns: 0,
            duration_ms: 0,
            duration_api_ms: 0,
            usage: (0, 0),
            stop_reason: None,
            errors: vec![message],
            permission_denials: Vec::new(),
            terminal_reason: None,
            api_error_status: None,
            structured_output: None,
        }));
    }
}

/// The running query's next message; never resolves when nothing runs.
async fn next(running: &mut Option<MessageStream>) -> Option<SessionMessage> {
    match running {
        Some(stream) => stream.next_message().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::error_message;

    #[test]
    fn error_messages_name_each_cause_once() {
        let inner = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
        let err = anyhow::Error::new(inner)
            .context("cannot read `x`: no such file")
            .context("cannot start");
        assert_eq!(
            error_message(&err),
            "cannot start: cannot read `x`: no such file"
        );
        let err = anyhow::anyhow!("c").context("b").context("a");
        assert_eq!(error_message(&err), "a: b: c");
    }
}
