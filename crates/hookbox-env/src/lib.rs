//! hookbox environments: what an agent's sandbox contains, and the built-in file tools.
//!
//! * [`EnvironmentSpec`] validates the Interactions API `environment` object (and the
//!   Environments API create body): `sources` (`inline`, `repository`, `gcs`, and the hookbox
//!   extension `local`), `network` (shape-checked only), `env`, `environment_id`,
//!   `from_environment`, and the hookbox extension `agents_writable`. Errors name the JSON path.
//! * [`Environments`] keeps each environment's record (spec, metadata, sources, disk budget…)
//!   in the hookbox database (`$HOOKBOX_HOME/hookbox.db`, hookbox-store's `environments`
//!   table: the one source of truth) and its files under
//!   `$HOOKBOX_HOME/environments/<id>/`: `root/` (the sandbox's top-level entries, always with
//!   `workspace/`), and `network.json` (mode 0600) when the allowlist has `transform` secrets,
//!   which the database never holds. Creation is all-or-nothing (staged, renamed into place,
//!   then recorded). An `environment.json` left by an older hookbox is imported once. The
//!   hook files owners supply are checked by the [`HookFileCheck`] its caller gives
//!   ([`Environments::with_hook_file_check`]; hookbox-agent's `OwnerHookFiles`), so this crate
//!   never depends on hookbox-hooks; clones and bucket copies report [`Progress`] to the
//!   caller's callback ([`Environments::with_progress`]).
//! * [`CredentialStore`] keeps the operator's credentials (`$HOOKBOX_HOME/credentials/`), which
//!   specs name by id and the egress proxy injects; secrets never enter a sandbox.
//! * [`FileTools`] runs `read_file`, `write_file`, `list_files` and `delete_file` on the host,
//!   confined to the environment root by `openat2`: a call's path is resolved once (links
//!   followed inside the root; what hooks are shown), then acted on exactly, following no link.
//! * [`CodingTools`] runs the SDK session tools `Bash`, `Read`, `Write`, `Edit`, `Glob` and
//!   `Grep` in a session's working directory, confined to it (`Bash` in a sandbox over it).
//! * [`EnvironmentFiles`] is the owner's view for the Environments API: listings with
//!   metadata ([`EnvironmentFile`]), downloads and uploads, under the same confinement.
//!
//! Source targets are sandbox paths relative to `/` (`.agents/hooks.json` is
//! `/.agents/hooks.json`); targets in system directories (`/usr`, `/etc`, `/proc`, …) or above
//! `/` are refused. `local` and `gcs` (`file://`) sources and local repository paths read this
//! host's filesystem: a server exposing the API to untrusted clients should refuse them. `gcs`
//! with `gs://BUCKET/PREFIX` copies the objects under the prefix through hookbox-net's guarded
//! client (see [`Environments::with_http_client`]).

mod agents;
mod coding;
mod confined;
mod credentials;
mod disk;
mod egress;
mod env_vars;
mod environment;
mod hook_check;
mod hook_view;
mod json;
mod limits;
mod network;
mod place;
mod progress;
mod sandbox_path;
mod sources;
mod spec;
mod store;
mod target;
mod tools;
mod tree;
mod warm;

pub use coding::{CODING_TOOLS, CodingOutcome, CodingTools, PROTECTED_ENTRIES};
pub use credentials::{
    CredentialError, CredentialInfo, CredentialStore, DEFAULT_HEADER, StoredCredential,
};
pub use egress::{CA_BUNDLE_PATH, EgressError, NetworkDecision, PROXY_PORT, SandboxEgress};
pub use env_vars::{EnvValue, EnvVar};
pub use environment::{Environment, SourceSummary};
pub use hook_check::{HookCommand, HookFileCheck};
pub use hookbox_exec::disk::{DiskBudget, DiskError};
pub use json::SpecError;
pub use limits::Limits;
pub use progress::{Progress, ProgressReport, logged_progress};
pub use sources::{DirectoryKind, Source};
pub use spec::EnvironmentSpec;
pub use store::{Environments, StoreError};
pub use target::Target;
pub use tools::{
    BUILTIN_TOOLS, BuiltinTools, CODE_EXECUTION, DEFAULT_CODE_TIMEOUT, Effect, EnvironmentFile,
    EnvironmentFiles, FileTools, HOST_PATH, Isolation, MAX_LISTED, Resolved, ToolDefinition,
    ToolError, ToolOutcome, Vocabulary, builtin_tool, builtin_tools, mime_type,
};
pub use warm::status::WarmStatus;
pub use warm::{DEFAULT_IDLE_TIMEOUT, WarmSandboxes};
