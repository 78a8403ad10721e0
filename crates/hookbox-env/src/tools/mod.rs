//! The sandbox's built-in file tools, run on the host but confined to the environment root.

pub(crate) mod args;
mod builtin;
mod code;
mod delete;
pub(crate) mod error;
mod files;
pub(crate) mod list;
mod owner;
mod read;
mod resolve;
pub(crate) mod write;

pub use builtin::{BuiltinTools, Isolation, ToolOutcome};
pub use code::HOST_PATH;
pub use error::ToolError;
pub use files::FileTools;
pub use owner::{EnvironmentFile, EnvironmentFiles, MAX_LISTED, mime_type};
