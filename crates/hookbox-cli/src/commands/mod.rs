//! One module per command.

pub(crate) mod check;
pub(crate) mod demo;
pub(crate) mod hooks_run;
