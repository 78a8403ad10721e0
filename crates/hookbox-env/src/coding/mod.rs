//! The coding tools of an SDK session (`Bash`, `Read`, `Write`, `Edit`, `Glob`, `Grep`), with
//! Claude Code's inputs and `tool_response` shapes, confined to the session's working
//! directory.
//!
//! Every path must lie beneath the working directory: relative ones are resolved against it,
//! absolute ones outside it are refused, and every access is resolved by the kernel from one
//! descriptor on it (`openat2` with `RESOLVE_BENEATH`), so no symlink or `..` leads out.
//! Writes go through a temporary file renamed over the target, never through a link. `Bash`
//! runs in a sandbox whose only host directory is the working directory, bound read-write at
//! its own path ([`hookbox_exec::Sandbox::over_directory`]) but for what the host runs later
//! (`.claude`, `.git`, `.agents`, hook scripts: see [`CodingTools::protected`]), which is
//! read-only there, unless the session runs [`Isolation::Unsandboxed`].

pub(crate) mod bash;
mod dirs;
pub(crate) mod edit;
pub(crate) mod glob;
pub(crate) mod grep;
mod paths;
mod pattern;
mod protect;
pub(crate) mod read;
mod walk;
pub(crate) mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Vocabulary;
use serde_json::{Value, json};

pub use protect::PROTECTED_ENTRIES;

use crate::confined::Confined;
use crate::egress::SandboxEgress;
use crate::tools::definition::{self, Run};
use crate::tools::{Isolation, ToolError};
use crate::warm::WarmSandboxes;
use std::sync::atomic::{AtomicU64, Ordering};

/// The names of the coding tools, as models call them: those of
/// [`builtin_tools(Vocabulary::Sdk)`](crate::builtin_tools).
pub const CODING_TOOLS: [&str; 6] = ["Bash", "Read", "Write", "Edit", "Glob", "Grep"];

/// The coding tools of one session, working in (and confined to) its working directory.
#[derive(Debug)]
pub struct CodingTools {
    /// The working directory, canonical.
    cwd: PathBuf,
    /// The working directory as the caller named it (absolute, normalised), also accepted as
    /// a prefix of absolute paths.
    named: PathBuf,
    /// How `Bash` runs.
    isolation: Isolation,
    /// A descriptor on the working directory, resolving paths strictly beneath it.
    root: Confined,
    /// Files beneath the working directory kept read-only besides [`PROTECTED_ENTRIES`] (hook
    /// scripts, settings files), as components relative to it.
    protected_files: Vec<Vec<String>>,
    /// The directories added to the session ([`CodingTools::add_directory`]), each with its
    /// own tools.
    added: Vec<CodingTools>,
    /// How sandboxed `Bash` reaches the network (`None`: it has none).
    egress: Option<Arc<SandboxEgress>>,
    /// Where sandboxed `Bash` runs warm, and this session's key there (`None`: a sandbox
    /// built per call).
    warm: Option<(WarmSandboxes, String)>,
}

/// What one coding-tool call produced.
#[derive(Debug, Clone, PartialEq)]
pub struct CodingOutcome {
    /// Claude Code's `tool_response` shape (goes to PostToolUse hooks).
    pub response: Value,
    /// What the model sees in the tool_result (text).
    pub text: String,
    /// The failure text when the tool failed (goes to PostToolUseFailure's `error`); `None` on
    /// success.
    pub error: Option<String>,
}

impl CodingOutcome {
    /// A successful call.
    pub(crate) fn ok(response: Value, text: String) -> Self {
        Self {
            response,
            text,
            error: None,
        }
    }

    /// A call that failed with `message` (shown to the model too).
    pub fn failed(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            response: json!({ "error": message }),
            text: message.clone(),
            error: Some(message),
        }
    }
}

impl CodingTools {
    /// Opens `cwd` (must be an existing directory; canonicalised) for a session whose `Bash`
    /// runs with `isolation`.
    pub fn new(cwd: &Path, isolation: Isolation) -> Result<Self, ToolError> {
        let io = |action, source| ToolError::Io {
            tool: "coding tools",
            action,
            path: cwd.display().to_string(),
            source,
        };
        let canonical = cwd
            .canonicalize()
            .map_err(|source| io("resolve the working directory", source))?;
        let root = Confined::strictly_beneath(&canonical)
            .map_err(|errno| io("open the working directory", errno.into()))?;
        let named = if cwd.is_absolute() {
            paths::normalise(cwd)
        } else {
            canonical.clone()
        };
        Ok(Self {
            cwd: canonical,
            named,
            isolation,
            root,
            protected_files: Vec::new(),
            added: Vec::new(),
            egress: None,
            warm: None,
        })
    }

    /// Lets sandboxed `Bash` reach the network through `egress` (the proxy on `127.0.0.1`
    /// inside, under the session's domain lists); without it `Bash` has no network.
    pub fn with_egress(mut self, egress: Arc<SandboxEgress>) -> Self {
        self.egress = Some(egress);
        self
    }

    /// How sandboxed `Bash` reaches the network, if it does.
    pub(crate) fn egress(&self) -> Option<&SandboxEgress> {
        self.egress.as_deref()
    }

    /// Runs sandboxed `Bash` calls in one warm sandbox of `warm` for this session (built by
    /// the first call, rebuilt when the session's sandbox changes, say after a protected
    /// file is added) instead of building a sandbox per call; each call is still confined,
    /// limited and killed whole at its end exactly as a cold one.
    pub fn with_warm_sandboxes(mut self, warm: WarmSandboxes) -> Self {
        /// Tells apart the sessions of one process in the registry.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let key = format!("session-{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.warm = Some((warm, key));
        self
    }

    /// The warm sandboxes sandboxed `Bash` runs in, and this session's key there.
    pub(crate) fn warm(&self) -> Option<(&WarmSandboxes, &str)> {
        self.warm.as_ref().map(|(warm, key)| (warm, key.as_str()))
    }

    /// The session's working directory (canonical).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// How `Bash` runs.
    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Runs tool `name` with Claude Code's `input`; an unknown name or a bad input gives a
    /// failed outcome, never a panic.
    pub async fn call(&self, name: &str, input: &Value) -> CodingOutcome {
        if let Some(added) = self.holder_of_call(name, input) {
            return Box::pin(added.call(name, input)).await;
        }
        let result = match definition::builtin_tool(Vocabulary::Sdk, name).map(|tool| tool.run) {
            Some(Run::Bash) => return bash::run(self, input).await,
            Some(Run::Coding(run)) => run(self, input),
            _ => Err(format!(
                "unknown tool `{name}`; the coding tools are {}",
                definition::names(Vocabulary::Sdk)
            )),
        };
        result.unwrap_or_else(CodingOutcome::failed)
    }

    /// The descriptor on the working directory.
    pub(crate) fn root(&self) -> &Confined {
        &self.root
    }
}

/// A tool's failure text.
pub(crate) type Failure = String;

/// The message of an argument error.
pub(crate) fn invalid(error: &ToolError) -> Failure {
    error.to_string()
}
