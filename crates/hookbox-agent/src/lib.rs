//! hookbox's agent side: built-in tool calls in an environment, each wrapped in the
//! environment's hooks, and the model providers the agent loop will drive.
//!
//! [`SandboxTools::call`] discovers `/.agents/hooks.json` and `/workspace/.agents/hooks.json`
//! in the environment (through the confined file tools, re-parsed only when they change), runs
//! the `pre_tool_execution` hooks (command hooks inside the environment's sandbox), runs the
//! tool unless a hook denied it, then runs the `post_tool_execution` hooks with the tool's
//! `result` and, when it failed, `error`. A denied call never touches the sandbox.
//!
//! [`model`] speaks the real wire formats of Gemini `generateContent`, OpenAI-compatible chat
//! completions and Anthropic messages (plain and streamed, with tool calls, retries on 429/5xx
//! and one overall deadline), plus a `scripted` model that replays a file of turns and says so
//! in its label. [`interaction`] is the agent loop that ties models, tools and hooks together;
//! [`service`] runs it for the Interactions API (request parsing, environments, the store,
//! background runs, cancel, idempotent retries, streaming events), so the HTTP server only maps
//! HTTP onto it. [`session`] is the agent of the SDK hooks (seed 002): coding tools in a
//! directory, the ten lifecycle events, permission modes, sub-agents and compaction; the Rust
//! SDK (`hookbox-sdk`) and the stream-json CLI drive it.

mod discovery;
pub mod interaction;
pub mod model;
mod runner;
pub mod service;
pub mod session;
mod tool_call;

pub use discovery::{Discovered, HOOK_FILES, HookDiscovery};
pub use runner::EnvironmentCommandRunner;
pub use tool_call::{SandboxTools, ToolCallError, ToolCallReport};
