//! Interactions: the agent loop and the Interactions API steps it produces.

mod run;
mod steps;
mod tools;

pub use run::{Agent, RunOutcome, RunStatus};
pub use steps::user_input;
