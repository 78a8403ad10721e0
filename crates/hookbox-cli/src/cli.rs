//! The command-line interface's shape: commands, arguments and their help.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use hookbox_hooks::Dialect;
use hookbox_hooks::adapter::Agent;

/// hookbox runs an AI agent's tools with hooks: programs, HTTPS endpoints or in-process
/// callbacks that run before and after every tool call to block, rewrite, audit or enrich it.
#[derive(Debug, Parser)]
#[command(
    name = "hookbox",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Validate hook configuration files and show what they define.
    ///
    /// Reads sandbox-dialect `.agents/hooks.json` files and SDK-dialect (Claude-style
    /// `settings.json`) files, detecting the dialect of each. Prints every binding and every
    /// problem with its JSON path and a hint. Exits 0 when all files are valid (warnings
    /// allowed), 1 when any has an error.
    Check(CheckArgs),
    /// Show the seeds' three examples deciding a model's tool calls (no API key).
    ///
    /// Builds the seeds' environments (their `hooks.json` files and hook scripts, verbatim, with
    /// a local HTTPS receiver standing in for telemetry.example.com) in a scratch
    /// `HOOKBOX_HOME`, and runs the agent loop with a scripted model (labelled as such) whose tool calls go through the hooks, inside the
    /// sandbox: each call, each hook decision with its reason, each result, the model's answers
    /// and what the receiver got (with the header the network policy injected) are printed.
    Demo(DemoArgs),
    /// Run, start, inspect or stop your per-user daemon for `hookbox hook`.
    ///
    /// The daemon answers `hookbox hook` calls for one user through a Unix socket in
    /// `$HOOKBOX_HOME/daemon/` (when `HOOKBOX_HOME` is set), else `$XDG_RUNTIME_DIR/hookbox/`,
    /// else `<home>/daemon/`: the directory is mode 0700 and the socket 0600, both owned by you,
    /// and a client of another user is refused. It re-reads the policy files whenever they
    /// change, and exits after `HOOKBOX_DAEMON_IDLE` seconds (default 600) without a call.
    /// Your command hooks that are exactly `python3 SCRIPT.py [ARG…]` run forked from a warm
    /// interpreter (`HOOKBOX_WARM_INTERPRETERS=off` in the caller's environment: not).
    /// `hookbox hook` starts it on demand; its output goes to `$HOOKBOX_HOME/daemon.log`.
    Daemon {
        #[command(subcommand)]
        command: DaemonCommand,
    },
    /// Answer one hook event of an agent you already run, with one hookbox policy.
    ///
    /// Configure the agent (Claude Code, Gemini CLI, Codex, Cursor, Copilot; `hookbox install`
    /// does it) to run `hookbox hook AGENT` as its command hook for every event. Reads the event JSON the agent writes on stdin, evaluates
    /// the policy (sandbox-dialect files see the seeds' tool names: Bash is `code_execution`
    /// `{code, language}`, Read is `read_file` `{path}`…; Claude-style files see the event as
    /// Claude Code names it) and answers in the agent's own output format and exit codes. The
    /// policy is `--policy FILE`, else `/etc/hookbox/policy.json` (or `[policy] managed` in
    /// hookbox.toml), `$HOOKBOX_HOME/policy.json` and `<project>/.agents/hooks.json` (only once
    /// trusted with `hookbox trust`; its command hooks run in a read-only sandbox showing the
    /// snapshot of the trusted files at the project's path), in that order, a later file only adding. Unreadable
    /// input: a message on stderr and the agent's non-blocking error code, or its blocking code
    /// when a handler says `on_error: "deny"`; a policy that cannot be loaded blocks.
    ///
    /// The call is answered by your `hookbox daemon` (started on the first call, detached,
    /// exiting when idle), which keeps the policy parsed and the async runtime and HTTP client
    /// built, with the caller's working directory and environment; without one it is answered
    /// here, exactly the same way. `HOOKBOX_DAEMON=off` answers every call here.
    /// `hookbox-hook AGENT [...]`, installed next to hookbox, is the same command in a small
    /// program that starts faster (what `hookbox install` writes). See docs/agent-adapters.md.
    Hook(HookArgs),
    /// Configure an agent you run to ask `hookbox hook` about its hook events.
    ///
    /// Writes or merges the agent's hook file so that every event `hookbox hook AGENT` answers
    /// (the mapped ones and the agent's own passed through under their names, such as
    /// `BeforeModel`) runs `<dir>/hookbox-hook AGENT --home HOME [--policy FILE]` (the home
    /// pinned: a `HOOKBOX_HOME` a project hands the hook is ignored), the thin client installed
    /// next to this binary (`<this binary's absolute path> hook AGENT [...]` when it is not
    /// there; entries of either form, and older ones without `--home`, are recognised, replaced
    /// and removed; an entry running the same command only sometimes, a look-alike, is
    /// replaced): claude-code
    /// `.claude/settings.json`, gemini-cli `.gemini/settings.json`, codex `.codex/hooks.json`,
    /// cursor `.cursor/hooks.json` (under the project, or under your home with `--user`), copilot
    /// `.github/hooks/hookbox.json` (`~/.copilot/hooks/hookbox.json` with `--user`). The user's
    /// own hooks and unknown keys are kept; running it twice changes nothing; the original file
    /// is backed up (in `$HOOKBOX_HOME/install-backups/`) and `--uninstall` restores it byte for
    /// byte, or, when the file was edited since, removes only hookbox's entries and keeps the
    /// edits. A file (or directory to it) that is a symbolic link, or that is not valid JSON
    /// of the agent's shape, is refused and nothing is written. Exit status: 0 done (or nothing
    /// to change), 1 error. See docs/agent-adapters.md.
    Install(InstallArgs),
    /// Say whether an agent's hooks will really ask hookbox's policy, event by event.
    ///
    /// Reads the agent's settings as the agent merges them (Claude Code: managed, user,
    /// project and local; Gemini CLI: system defaults, user, project and system; Codex:
    /// config.toml and hooks.json of the user and the project, and /etc/codex/requirements.toml)
    /// and says, per event, whether an entry running `hookbox hook AGENT` fires, and what
    /// switches it off: `disableAllHooks` (and `allowManagedHooksOnly`, Gemini CLI's
    /// `hooksConfig`, Codex's `[features] hooks`), a look-alike entry (hookbox's command under a
    /// matcher that matches nothing…), a project's `HOOKBOX_HOME`, an untrusted or changed
    /// project policy, a gate that cannot start; each with the command that fixes it. Exit
    /// status: 0 every event reaches the policy, 1 something will not fire (or an error).
    Doctor(DoctorArgs),
    /// Trust a project's policy (`<project>/.agents/hooks.json`) and the files its hooks run.
    ///
    /// The agent itself can write the project, so `hookbox hook` loads the policy only while
    /// it and every project file its command hooks name are the ones trusted here for this
    /// project (their SHA-256, keyed by the project's root, in
    /// `$HOOKBOX_HOME/trusted-projects.json`), and runs its hooks from a snapshot of them
    /// (`$HOOKBOX_HOME/trusted/`). A symbolic link among them is refused. Review them first.
    Trust(TrustArgs),
    /// Show the decisions `hookbox hook` made, oldest first.
    ///
    /// Every event an agent hands to `hookbox hook` is logged with its agent, session, event,
    /// tool, decision (`allow`, `ask`, `deny`, `block`, `stop`, or `none` when no handler
    /// decided), reason, latency, and the handler and policy file that decided: appended to
    /// `$HOOKBOX_HOME/decisions.journal`, and moved into `$HOOKBOX_HOME/hookbox.db` by this
    /// command (or by `hookbox hook` once the journal passes 256 KiB). The log keeps the newest
    /// `[policy] keep_decisions` (default 100000; 0 turns logging off).
    Log(LogArgs),
    /// Run hooks by hand.
    Hooks {
        #[command(subcommand)]
        command: HooksCommand,
    },
    /// Manage the server-side secrets that environments' `network.allowlist` entries name.
    ///
    /// An entry `{"domain": "api.example.com", "credential": "NAME"}` makes hookbox inject
    /// credential NAME as a header on the requests it admits (HTTP hooks; replacing a header of
    /// the same name), without the secret ever entering the sandbox. Credentials live in
    /// `$HOOKBOX_HOME/credentials/`, one mode-0600 file each; values are never printed.
    Credentials {
        #[command(subcommand)]
        command: CredentialsCommand,
    },
    /// Create, inspect and delete sandbox environments.
    Env {
        #[command(subcommand)]
        command: EnvCommand,
    },
    /// Run one built-in tool in an environment, through its hooks.
    ///
    /// Discovers `/.agents/hooks.json` and `/workspace/.agents/hooks.json` in the environment,
    /// runs the `pre_tool_execution` hooks (inside the sandbox), the tool unless a hook denied
    /// it, then the `post_tool_execution` hooks. Prints whether it was denied and why, the
    /// tool's result or error, and the hook trace. HTTP hooks use the `[network]` settings of
    /// hookbox.toml and the credentials of `hookbox credentials`. Exit status: 0 the tool ran
    /// and succeeded, 2 denied by a hook, 3 the tool ran and failed, 1 usage or config error.
    Exec(ExecArgs),
    /// Serve the REST API (the Environments API of the google-genai SDK) over HTTP.
    ///
    /// Every request needs an API key from `hookbox api-keys create` (the server refuses to
    /// start without one unless `--no-auth`). Point the SDK at it with
    /// `genai.Client(api_key=KEY, http_options={"base_url": "http://ADDR"})`. Settings come from
    /// `--config FILE`, else `$HOOKBOX_HOME/hookbox.toml` when it exists (`[server] listen =
    /// "127.0.0.1:8080"`, `allowed_hosts`, `max_connections`, `header_read_timeout_secs`,
    /// `idle_timeout_secs`, `shutdown_timeout_secs`, `max_body_bytes`,
    /// `max_upload_bytes`, `allow_host_sources`, `max_turns`, `max_tokens`; `[network]` for HTTP hooks:
    /// `permit_loopback_hooks`, `allow_private_cidrs`, `extra_ca_certs`, `resolve`; `[audit]`
    /// for `at_least_once` HTTP hooks, see `hookbox audit`). HTTP hooks inject the credentials
    /// of `hookbox credentials`; the events of `at_least_once` ones are delivered from the
    /// outbox in the background, and the log says when a destination starts and stops failing. Logs go to stderr (`RUST_LOG` filters
    /// them). SIGINT or SIGTERM closes the listener, then lets the requests and runs in flight
    /// finish for `shutdown_timeout_secs` (default 30); those left then, or at a second signal,
    /// end `failed` and are answered.
    Serve(ServeArgs),
    /// Serve one environment's tools to an MCP client (Claude Code, Codex, Gemini CLI, Cursor).
    ///
    /// The tools are the five the Interactions agent offers models (`code_execution`,
    /// `read_file`, `write_file`, `list_files`, `delete_file`, same schemas); every call runs
    /// through the environment's hooks (`/.agents/hooks.json`, `/workspace/.agents/hooks.json`)
    /// and in its sandbox, exactly as an interaction's tool call. A call a hook denies is a tool
    /// error whose text is "Blocked by a pre_tool_execution hook: REASON". Over stdio by
    /// default (the client starts `hookbox mcp --env ID`); with `--listen ADDR`, over
    /// streamable HTTP at `http://ADDR/mcp`, where every request needs the API key the
    /// environment belongs to (`Authorization: Bearer KEY`; see `--owner`), `Host` must name
    /// this server and no browser `Origin` is answered. Logs go to stderr. See docs/agent-adapters.md.
    Mcp(McpArgs),
    /// Manage the API keys `hookbox serve` accepts.
    ///
    /// Keys are stored hashed in `$HOOKBOX_HOME/hookbox.db`; a key is printed once, when it is
    /// created. Clients send it as `x-goog-api-key` (google-genai's `api_key=`),
    /// `Authorization: Bearer KEY` or `?key=KEY`. What a key creates only that key can see.
    ApiKeys {
        #[command(subcommand)]
        command: ApiKeysCommand,
    },
    /// Print the hook traces of an interaction: each handler's decision, failure cause and
    /// duration, with fail-opens marked `FAIL-OPEN`.
    ///
    /// Reads `$HOOKBOX_HOME/hookbox.db` (safe while `hookbox serve` runs). Over the API:
    /// `GET /{v}/interactions/{id}/hook_traces`.
    Traces(TracesArgs),
    /// Inspect and retry the audit outbox: the events of `"delivery": "at_least_once"` HTTP
    /// hooks that `hookbox serve` (or an SDK session's process) delivers.
    ///
    /// Reads `$HOOKBOX_HOME/hookbox.db` (safe while `hookbox serve` runs). Delivery is tuned
    /// by hookbox.toml's `[audit]`: `max_age` (default "24h"), `max_backoff` (default "5m"),
    /// `max_pending` (default 100000), `dead_letter_after_attempts` (default 3) and
    /// `signing_secret` (`whsec_…`, Standard Webhooks).
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum DaemonCommand {
    /// Serve in the foreground (what `hookbox hook` starts, detached). Exits 1 when another
    /// daemon already serves this socket or its directory is not safe to use.
    Run {
        /// Exit after this many seconds without a call (default: `HOOKBOX_DAEMON_IDLE`, else
        /// 600).
        #[arg(long, value_name = "SECONDS")]
        idle: Option<u64>,
    },
    /// Start the daemon unless it runs, and wait until it answers (at most 10 seconds).
    Start,
    /// Print whether the daemon runs: its pid, calls answered and seconds idle. Exits 0 when
    /// it runs, 3 when it does not.
    Status,
    /// Stop the daemon: it takes no new call and exits once the calls in progress are
    /// answered. Exits 0 also when none ran.
    Stop,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Per destination URL: events pending and the age of the oldest, dead events, delivered
    /// events kept, and the last error; then the newest 50 dead events, each with its
    /// attempts, refusals and last error.
    Status {
        /// Print JSON (`[{"url", "pending", "oldest_pending", "dead", "delivered",
        /// "last_error", "dead_events": [{"id", "queue", "handler", "created", "died",
        /// "attempts", "refusals", "last_error"}]}]`).
        #[arg(long)]
        json: bool,
    },
    /// Make every dead event pending again, with a fresh `max_age` window and no refusals
    /// counted; each goes back to its place in its queue (before the events still pending). A
    /// running `hookbox serve` sends them within a second, a stopped one when it starts.
    Retry,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ApiKeysCommand {
    /// Create a key and print it, alone on the last line of standard output (shown only now).
    Create {
        /// A unique name for the key (who or what uses it), 1 to 200 characters.
        name: String,
    },
    /// List keys: name, when created, when last used (never the keys).
    List {
        /// Print JSON (`[{"name", "id", "created", "last_used"}]`).
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key: requests with it fail from now on; what it created stays its own.
    Revoke {
        /// The key's name.
        name: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct TracesArgs {
    /// The interaction's id (`int_…`).
    pub(crate) interaction: String,
    /// Print the traces as JSON (the API's `hook_traces` array).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("environment").required(true).args(["env", "spec"])))]
pub(crate) struct McpArgs {
    /// The environment whose tools are served (`env_…`, from `hookbox env create`).
    #[arg(long, value_name = "ENV_ID")]
    pub(crate) env: Option<String>,
    /// Create a new environment from this spec file (the format of `hookbox env create`; `-`,
    /// standard input, only with `--listen`) and serve its tools; its id is printed on stderr.
    #[arg(long, value_name = "FILE|-")]
    pub(crate) spec: Option<PathBuf>,
    /// Serve streamable HTTP on this address (`127.0.0.1:0` picks a free port, printed on
    /// stderr) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<String>,
    /// With `--listen`: accept requests without an API key. Allowed only on a loopback
    /// address; prints a warning.
    #[arg(long, requires = "listen")]
    pub(crate) no_auth: bool,
    /// With `--listen`: the name of the API key the environment belongs to (given to it if it
    /// belongs to no key yet, as one made by `hookbox env create` or `--spec`). Only the key
    /// an environment belongs to may use it, here as through the REST API.
    #[arg(
        long,
        value_name = "KEY_NAME",
        requires = "listen",
        conflicts_with = "no_auth"
    )]
    pub(crate) owner: Option<String>,
    /// The config file (default: `$HOOKBOX_HOME/hookbox.toml`, when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// Address to listen on (default: the config's `[server] listen`, else 127.0.0.1:8080;
    /// port 0 picks a free port, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<String>,
    /// The config file (default: `$HOOKBOX_HOME/hookbox.toml`, when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Accept requests without an API key (all callers are one anonymous owner). Allowed only
    /// on a loopback address; prints a warning.
    #[arg(long)]
    pub(crate) no_auth: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CredentialsCommand {
    /// Add a credential, or replace the one of that name, reading its value from standard input.
    ///
    /// On a terminal the value is prompted for and not echoed. From a pipe, one trailing
    /// newline of the input is removed. An empty value is an error. Example:
    /// `printf %s "$TOKEN" | hookbox credentials add github --domain api.github.com --prefix
    /// "Bearer "`.
    Add {
        /// The credential's name, as `"credential": "NAME"` refers to it: 1 to 64 of
        /// `A-Z a-z 0-9 _ . -`.
        name: String,
        /// A host the credential may be sent to: `api.example.com`, or `*.example.com` for its
        /// subdomains (matched like allowlist domains). Required; repeat for more hosts. An
        /// allowlist entry naming the credential for any other domain is refused.
        #[arg(long = "domain", value_name = "DOMAIN", required = true)]
        domains: Vec<String>,
        /// The header the credential is sent as.
        #[arg(long, value_name = "HEADER", default_value = hookbox_env::DEFAULT_HEADER)]
        header: String,
        /// Text put before the value, e.g. `"Bearer "` to send `Bearer <secret>`.
        #[arg(long, value_name = "PREFIX")]
        prefix: Option<String>,
    },
    /// List credentials: name, header, domains and when each was added (never values).
    List {
        /// Print JSON (`[{"name", "header", "domains", "created"}]`) instead of one line per
        /// credential.
        #[arg(long)]
        json: bool,
    },
    /// Delete a credential.
    Rm {
        /// The credential's name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum EnvCommand {
    /// Create an environment from a spec (the Interactions API `environment` object) and print
    /// its id.
    ///
    /// `repository` sources are cloned over https:// or http:// through the `[network]` rules
    /// of hookbox.toml; paths and `file://` URLs on this machine need `[network]
    /// allow_host_sources = true`.
    Create {
        /// The spec file, or `-` for standard input.
        #[arg(long, value_name = "FILE|-")]
        spec: PathBuf,
        /// Print the whole environment object as JSON instead of the id.
        #[arg(long)]
        json: bool,
    },
    /// Apply a spec's sources (and `network`/`env`, when given) to an existing environment.
    Update {
        /// The environment's id (`env_…`).
        id: String,
        /// The spec file, or `-` for standard input.
        #[arg(long, value_name = "FILE|-")]
        spec: PathBuf,
        /// Print the whole environment object as JSON instead of the id.
        #[arg(long)]
        json: bool,
    },
    /// List environments.
    List {
        /// Print JSON instead of one line per environment.
        #[arg(long)]
        json: bool,
    },
    /// Show one environment as JSON.
    Show {
        /// The environment's id (`env_…`).
        id: String,
    },
    /// Delete an environment and its files.
    Rm {
        /// The environment's id (`env_…`).
        id: String,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ExecArgs {
    /// The environment's id (`env_…`).
    #[arg(value_name = "ENV_ID")]
    pub(crate) environment: String,
    /// The tool: `code_execution`, `read_file`, `write_file`, `list_files` or `delete_file`.
    #[arg(value_name = "TOOL")]
    pub(crate) tool: String,
    /// The tool's arguments, a JSON object, e.g. `{"code":"ls","language":"bash"}`.
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
    /// Print one JSON object (denied, reason, result, error, trace) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
    /// Run code and command hooks WITHOUT isolation, on this host, as this user. Only for
    /// machines where the sandbox cannot be created; hookbox warns loudly.
    #[arg(long)]
    pub(crate) unsandboxed: bool,
    /// The config file whose `[network]` section HTTP hooks use (default:
    /// `$HOOKBOX_HOME/hookbox.toml`, when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    /// The agent whose hook event is on stdin.
    #[arg(value_enum)]
    pub(crate) agent: AgentArg,
    /// Use only this policy file (either dialect) instead of the managed, user and project ones.
    #[arg(long, value_name = "FILE")]
    pub(crate) policy: Option<PathBuf>,
    /// hookbox's home for this call (its policy, trust store, log and daemon), whatever
    /// `HOOKBOX_HOME` the agent hands the hook: an environment that disagrees (a project's
    /// settings can set one) is ignored with a warning. `hookbox install` writes it.
    #[arg(long, value_name = "DIR")]
    pub(crate) home: Option<PathBuf>,
    /// The config file whose `[policy] managed` and `[network]` settings apply (default:
    /// `$HOOKBOX_HOME/hookbox.toml`, when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// The event's name, for Copilot, whose input does not name it (`preToolUse`…);
    /// `hookbox install copilot` writes it.
    #[arg(long, value_name = "NAME")]
    pub(crate) event: Option<String>,
    /// A hook that fails (cannot start, crashes, times out, answers nonsense) denies, unless
    /// it or its policy file's top-level `on_error` says `allow`.
    #[arg(long)]
    pub(crate) fail_closed: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LogArgs {
    /// Only this agent's decisions (`claude-code`, `gemini-cli`, `codex`, …).
    #[arg(long, value_name = "AGENT")]
    pub(crate) agent: Option<String>,
    /// Only decisions since this UTC time (`2026-01-01T00:00:00Z`) or this long ago (`30m`,
    /// `24h`, `7d`).
    #[arg(long, value_name = "WHEN")]
    pub(crate) since: Option<String>,
    /// At most this many (the newest).
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub(crate) limit: u32,
    /// Print the decisions as a JSON array.
    #[arg(long)]
    pub(crate) json: bool,
    /// The config file whose `[policy] keep_decisions` applies (default:
    /// `$HOOKBOX_HOME/hookbox.toml`, when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct InstallArgs {
    /// The agent whose hook file to change.
    #[arg(value_enum, required_unless_present = "list")]
    pub(crate) agent: Option<AgentArg>,
    /// Change this project's hook file (or, with --list, show this project's).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub(crate) project: Option<PathBuf>,
    /// Change your own hook file, under your home directory (every project).
    #[arg(long)]
    pub(crate) user: bool,
    /// Whose configuration to change: `user` (as --user), `project` (with --project DIR), or
    /// `managed`: the agent's managed settings, which no project or user setting can override
    /// (Claude Code `/etc/claude-code/managed-settings.json`, Gemini CLI
    /// `/etc/gemini-cli/settings.json`; as root, with --policy: the entry serves every user).
    #[arg(long, value_enum, value_name = "SCOPE", conflicts_with = "list")]
    pub(crate) scope: Option<crate::commands::install::Scope>,
    /// The policy the hooks use (`hook AGENT --policy FILE`, made absolute); without it,
    /// `hookbox hook` loads the managed, user and trusted project policies.
    #[arg(long, value_name = "FILE", conflicts_with = "uninstall")]
    pub(crate) policy: Option<PathBuf>,
    /// Install even when a command hook of the policy cannot start here (its program or
    /// script is missing): it is reported as a warning.
    #[arg(long, conflicts_with = "uninstall")]
    pub(crate) allow_missing: bool,
    /// Install even when there is no policy, or it has no hooks (every call is let through).
    #[arg(long, conflicts_with = "uninstall")]
    pub(crate) allow_empty: bool,
    /// Install `hookbox hook AGENT --fail-closed`: a hook that fails denies the call, unless it
    /// or its policy file says `"on_error": "allow"`.
    #[arg(long, conflicts_with = "uninstall")]
    pub(crate) fail_closed: bool,
    /// Undo `hookbox install` for this agent and place.
    #[arg(long)]
    pub(crate) uninstall: bool,
    /// Show, for every agent, which events of your and the project's (current directory, or
    /// --project) hook files run `hookbox hook`, and every other recorded install.
    #[arg(long, conflicts_with_all = ["agent", "user", "policy", "uninstall"])]
    pub(crate) list: bool,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    /// The agent whose settings to read.
    #[arg(value_enum)]
    pub(crate) agent: AgentArg,
    /// The project the agent runs in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct TrustArgs {
    /// The project's policy file (or the project's directory) to trust as it is now.
    #[arg(value_name = "FILE")]
    pub(crate) file: PathBuf,
}

/// An agent `hookbox hook` speaks to.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum AgentArg {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// Google's Gemini CLI.
    GeminiCli,
    /// OpenAI's Codex.
    Codex,
    /// Cursor's agent.
    Cursor,
    /// GitHub Copilot (CLI and coding agent).
    Copilot,
}

impl From<AgentArg> for Agent {
    fn from(arg: AgentArg) -> Self {
        match arg {
            AgentArg::ClaudeCode => Self::ClaudeCode,
            AgentArg::GeminiCli => Self::GeminiCli,
            AgentArg::Codex => Self::Codex,
            AgentArg::Cursor => Self::Cursor,
            AgentArg::Copilot => Self::Copilot,
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum HooksCommand {
    /// Dispatch one event through the hooks of some config files, running handlers on this host.
    ///
    /// Builds the event payload the way the runtime would, runs every matching handler, and
    /// prints the merged decision and a trace of each handler run. An agent's own event
    /// (`--event BeforeModel --agent gemini-cli`) is built as that agent's input, answered as
    /// `hookbox hook AGENT` answers it, and the agent's answer is printed too. Exit status:
    /// 0 allowed, 2 denied or blocked (or `continue: false`), 1 usage or config error.
    Run(RunArgs),
}

/// The dialect to read a config file as.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum DialectArg {
    /// `.agents/hooks.json`: named groups of pre/post_tool_execution rules.
    Sandbox,
    /// Claude-style settings: `{"hooks": {"PreToolUse": [...]}}`.
    Sdk,
}

impl From<DialectArg> for Dialect {
    fn from(arg: DialectArg) -> Self {
        match arg {
            DialectArg::Sandbox => Self::Sandbox,
            DialectArg::Sdk => Self::Sdk,
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Use the agent of this name from `hookbox.toml` (a real model) instead of the scripted one.
    #[arg(long, value_name = "NAME")]
    pub(crate) agent: Option<String>,
    /// The config file with `[agents."NAME"]` tables and the `[network]` settings for HTTP
    /// hooks (default: `$HOOKBOX_HOME/hookbox.toml`, when it exists).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// Config files to check.
    #[arg(required = true, value_name = "PATH")]
    pub(crate) paths: Vec<PathBuf>,
    /// Read every file as this dialect instead of detecting it.
    #[arg(long, value_enum)]
    pub(crate) dialect: Option<DialectArg>,
    /// Report a command hook that cannot start here (its program or script is missing) as a
    /// warning, not an error: for hooks that exist only where they run (in a sandbox).
    #[arg(long)]
    pub(crate) allow_missing: bool,
    /// Print one JSON object for machines instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// A config file; repeat to load several (later sandbox groups replace same-named ones).
    #[arg(long = "config", required = true, value_name = "FILE")]
    pub(crate) configs: Vec<PathBuf>,
    /// Read every config as this dialect instead of detecting it.
    #[arg(long, value_enum)]
    pub(crate) dialect: Option<DialectArg>,
    /// The event: `pre_tool_execution`, `post_tool_execution`, an SDK event such as
    /// `PreToolUse`, `PostToolUse`, `UserPromptSubmit`, `Stop`, `Notification`, or an agent's
    /// own event passed through under its name (`BeforeModel`, `TaskCreated`…; with --agent).
    #[arg(long, value_name = "EVENT")]
    pub(crate) event: String,
    /// Whose own event --event is (`BeforeModel`: gemini-cli): the event is built as that
    /// agent's input and answered as `hookbox hook AGENT` answers it (the hooks that name it
    /// in either dialect, matched on the agent's matcher field), and the agent's answer is
    /// printed too. Only for agents' own events.
    #[arg(long, value_enum, value_name = "AGENT")]
    pub(crate) agent: Option<AgentArg>,
    /// The tool being called (required for tool events), e.g. `code_execution` or `Bash`.
    #[arg(long, value_name = "NAME")]
    pub(crate) tool: Option<String>,
    /// The tool call's arguments, a JSON object (`tool_call.args` / `tool_input`).
    #[arg(long, value_name = "JSON", default_value = "{}")]
    pub(crate) args: String,
    /// Extra payload fields, a JSON object merged last (e.g. `{"error":"…"}` for a post event,
    /// `{"prompt":"…"}` for UserPromptSubmit, `{"notification_type":"idle_prompt"}`).
    #[arg(long, value_name = "JSON")]
    pub(crate) input: Option<String>,
    /// `environment_id` for sandbox events.
    #[arg(long, value_name = "ID", default_value = "env_local")]
    pub(crate) environment_id: String,
    /// Working directory of command hooks, and the SDK payload's `cwd` (default: current).
    #[arg(long, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// Print one JSON object (decision, reason, updated_input, additional_context, continue,
    /// trace, …) instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}
