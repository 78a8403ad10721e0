//! hookbox's agent side. For now: built-in tool calls in an environment, each wrapped in the
//! environment's hooks.
//!
//! [`SandboxTools::call`] discovers `/.agents/hooks.json` and `/workspace/.agents/hooks.json`
//! in the environment (through the confined file tools, re-parsed only when they change), runs
//! the `pre_tool_execution` hooks (command hooks inside the environment's sandbox), runs the
//! tool unless a hook denied it, then runs the `post_tool_execution` hooks with the tool's
//! `result` and, when it failed, `error`. A denied call never touches the sandbox.

mod discovery;
mod runner;
mod tool_call;

pub use discovery::{HOOK_FILES, HookDiscovery};
pub use runner::EnvironmentCommandRunner;
pub use tool_call::{SandboxTools, ToolCallError, ToolCallReport};
