//! Interactions: the Interactions agent on the agent loop, and the Interactions API steps it
//! produces.

mod run;
mod steps;

pub use run::{Agent, RunEvent, RunOutcome, RunStatus};
pub use steps::{model_output, parse_data_uri, user_input};
