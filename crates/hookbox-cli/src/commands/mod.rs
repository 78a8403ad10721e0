//! One module per command.

pub(crate) mod api_keys;
pub(crate) mod audit;
pub(crate) mod check;
pub(crate) mod credentials;
pub(crate) mod daemon;
pub(crate) mod demo;
pub(crate) mod env;
pub(crate) mod exec;
pub(crate) mod hook;
pub(crate) mod hooks_run;
pub(crate) mod install;
pub(crate) mod log;
pub(crate) mod mcp;
pub(crate) mod serve;
pub(crate) mod traces;
