//! The sandbox's built-in tools: `code_execution` in the environment's sandbox, and the file
//! tools, run on the host but confined to the environment root; and the registry of every
//! built-in tool's definition ([`BUILTIN_TOOLS`]).

pub(crate) mod args;
mod builtin;
mod code;
pub(crate) mod definition;
mod delete;
pub(crate) mod error;
mod files;
pub(crate) mod list;
mod owner;
mod read;
mod resolve;
pub(crate) mod write;

pub use builtin::{BuiltinTools, Isolation, ToolOutcome};
pub use code::{CODE_EXECUTION, DEFAULT_CODE_TIMEOUT, HOST_PATH};
pub use definition::{
    BUILTIN_TOOLS, Effect, ToolDefinition, Vocabulary, builtin_tool, builtin_tools,
};
pub use error::ToolError;
pub use files::{FileTools, Resolved};
pub use owner::{EnvironmentFile, EnvironmentFiles, MAX_LISTED, mime_type};
