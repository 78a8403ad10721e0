//! Interactions: the Interactions agent on the agent loop, and the typed steps it takes and
//! makes.

mod run;
mod steps;

pub use run::{Agent, RunEvent, RunOutcome, RunStatus};
pub use steps::Step;
