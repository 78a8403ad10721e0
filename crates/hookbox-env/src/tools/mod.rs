//! The sandbox's built-in file tools, run on the host but confined to the environment root.

mod args;
mod builtin;
mod code;
mod delete;
mod error;
mod files;
mod list;
mod owner;
mod read;
mod write;

pub use builtin::{BuiltinTools, Isolation, ToolOutcome};
pub use code::environment_for;
pub use error::ToolError;
pub use files::FileTools;
pub use owner::{EnvironmentFile, EnvironmentFiles, MAX_LISTED, mime_type};
