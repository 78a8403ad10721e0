//! Interactions: the agent loop and the Interactions API steps it produces.

mod run;
mod steps;
mod tools;

pub use run::{Agent, RunEvent, RunOutcome, RunStatus};
pub use steps::{model_output, parse_data_uri, user_input};
