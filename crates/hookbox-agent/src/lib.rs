//! hookbox's agent side: built-in tool calls in an environment, each wrapped in the
//! environment's hooks, driven by the model clients of `hookbox-llm`.
//!
//! [`SandboxTools::call`] discovers `/.agents/hooks.json` and `/workspace/.agents/hooks.json`
//! in the environment (through the confined file tools, re-parsed only when they change), runs
//! the `pre_tool_execution` hooks (command hooks inside the environment's sandbox), runs the
//! tool unless a hook denied it, then runs the `post_tool_execution` hooks with the tool's
//! `result` and, when it failed, `error`. A denied call never touches the sandbox.
//!
//! One agent loop (model turn → tool calls through permissions and hooks → results → next
//! turn) serves both agents below; each fills in its lifecycle points on it (turn limit,
//! compaction, how the model is asked, `Stop` hooks, token budget, how a call runs). The tools
//! they offer models come from the registry of built-in tools in `hookbox-env`
//! ([`hookbox_env::BUILTIN_TOOLS`]): the sandbox dialect's `code_execution`, `read_file`… for
//! Interactions, the SDK dialect's `Bash`, `Read`… for sessions.
//!
//! [`interaction`] is the Interactions agent on that loop, tying models (`hookbox-llm`), tools
//! and hooks together (the Interactions API's wire format, runs and store records are
//! `hookbox-server`'s). [`session`] is the agent of the SDK hooks (seed 002): coding tools in a
//! directory, the ten lifecycle events, permission modes, sub-agents and compaction; the Rust
//! SDK (`hookbox-sdk`) and the stream-json CLI drive it.

mod agent_loop;
mod declarations;
mod discovery;
pub mod interaction;
mod owner_hook_files;
mod runner;
pub mod session;
mod tool_call;
mod tool_result;

pub use declarations::{builtin_declarations, sandbox_hooks_builder};
pub use discovery::{Discovered, HOOK_FILES, HookDiscovery};
pub use owner_hook_files::OwnerHookFiles;
pub use runner::EnvironmentCommandRunner;
pub use tool_call::{SandboxTools, ToolCallError, ToolCallReport};
