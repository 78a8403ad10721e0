//! Interactions: the Interactions agent on the agent loop, and the typed steps it takes and
//! makes.

mod run;
mod steps;

pub use run::{Agent, RunError, RunErrorCode, RunEvent, RunOutcome, RunStatus, Usage};
pub use steps::Step;
